"""Confinement of a student's code (standard library and libseccomp only): the policy and the inner
stage, prctl and Landlock, the seccomp rules, bubblewrap's command line and the supervisor."""
