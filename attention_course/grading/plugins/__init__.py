"""The course's grading, plugged into nbgrader's own extension points: one module per point.

The course's nbgrader_config.py puts these preprocessors into `Autograde.autograde_preprocessors`,
so `make grade`, plain `nbgrader autograde` and formgrader's autograde button all grade the
same way:
- `submitted.SubmittedNotebookExporter` is Autograde's exporter: a submission is read safely;
- `tidy.TidySubmission` is the first sanitize step: what would stop nbgrader is put right;
- `execute.ConfinedExecute` replaces nbgrader's `Execute`: every notebook runs in a kernel confined to
  the student's workspace (`attention_course.grading.workspace`), started through the `attention-confined`
  kernelspec, talking to nbgrader over unix sockets in the workspace (no network); after a cell
  runs out of time or the kernel dies, the rest of the notebook is not run;
- `readable.ReadableGrades` comes before nbgrader's own `SaveAutoGrades`: a test cell whose output nbgrader
  cannot read as a grade loses it (and is saved as 0), so it no longer stops the notebook;
- `trusted_grades.TrustedGrades` comes right after `SaveAutoGrades` (and before `AssignLatePenalties`, so late
  penalties apply to the trusted score): the trusted verdict (`attention_course.grading.trusted`) decides every
  test cell's `auto_score`, leaves a teacher's `manual_score` and extra credit alone, writes the
  reason as the answer cell's automatic comment, and puts a grading summary at the top of the
  autograded notebook (it reaches the feedback).
A student whose confinement cannot be set up is not graded: the notebook fails in nbgrader (which
keeps nothing of it) and the fault is recorded for `make grade` to report. `run` holds what one
nbgrader process shares between the notebooks it grades.
"""
