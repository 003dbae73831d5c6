"""Grading on the teacher's machine or a cluster: `make grade`, nbgrader's plugins and the trusted
grader, the gradebook, the feedback pages and the grade tables. It builds on `model` (the
manifest), runs the `sandbox` and confines everything through `confinement`."""
