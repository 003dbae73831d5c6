"""Building the course (never released to students): the case file of the checks, the editions,
the releases, the student folder, the stored outputs and the reading times. It builds on `model`."""
