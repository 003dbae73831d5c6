"""Helper code of the attention course: checks, demos and plots used by the notebooks."""
