"""The attention course's own code, one subpackage per role (the notebooks' helpers are the separate
package `helpers`, in course_helpers/, which students install alone).

- `model`: the course as grading needs it: the manifest, the cases, the reference solutions,
  their expected results and the translation catalogues.
- `authoring`: building the course: the case file, the editions, the stored outputs, the
  releases, the student folder, the reading times.
- `grading`: `make grade`, nbgrader's plugins, the trusted grader, the gradebook, feedback and
  the grade tables.
- `sandbox`: the driver of the trusted sandbox, which runs a student's functions on the grader's
  cases.
- `confinement`: running untrusted code confined (standard library and libseccomp only).

Dependencies go one way: authoring -> model; grading -> model, sandbox, confinement; model and
sandbox -> helpers (tests/course/test_packages.py checks it).
"""
