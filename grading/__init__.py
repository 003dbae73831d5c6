"""The course's instructor tools (never released to students): the manifest, the case builder,
the trusted grader and its confinement, and nbgrader's extension points for this course."""
