"""The trusted sandbox: the driver that runs a student's functions on the grader's cases, confined."""
