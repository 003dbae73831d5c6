"""The one writer of a grading run: each graded student into the course (gradebook rows, the
graded notebooks and feedback a Dask worker sent back, or a row of 0 with the reason for what was
not finished), and at the end the two grade tables, through the course's nbgrader export plugins."""

from __future__ import annotations

import json
import shutil

from attention_course.model.manifest import Course

from . import as_data
from . import gradebook as records
from .coursedir import paths
from .nbgrader_process import nbgrader
from .submission import Graded, Submission


def merge(course: Course, graded: Graded) -> None:
    """One writer: a graded student into the course gradebook, their autograded folder and
    feedback home; what nbgrader did not finish (or a refused submission) gets a row of 0 with
    the reason. A student whose confinement failed is not graded at all."""
    sub = graded.sub
    if any(f.startswith("confinement") for f in sub.faults):
        return
    home = paths(course.root)
    if graded.shipped:  # from a Dask worker: what it graded replaces what an earlier run left
        for step, data in (("autograded", graded.autograded), ("feedback", graded.feedback)):
            dest = home.of(step, sub.student, sub.assignment)
            shutil.rmtree(dest, ignore_errors=True)
            if data:
                as_data.unpack(data, dest)
    if graded.rows is not None:
        records.merge_rows(graded.rows, home.gradebook, sub.assignment, sub.student)
    if graded.left:
        reason = sub.refused or "; ".join(sub.faults) or "it could not be graded"
        records.zero_notebooks(course, home.gradebook, sub.assignment, sub.student, graded.left, reason)
    sub.graded = True


def write_tables(course: Course, subs: list[Submission], seed, layers: list[str]) -> None:
    """grades.csv and grades_by_cell.csv, written by the course's nbgrader export plugins
    (attention_course/grading/export.py) from the course gradebook. The seed and the confinement layers are those
    of this run for the students it graded, and those of the run that graded them for a student
    it kept (the journal's line); they reach the plugins in a run record beside the logs."""
    record = course.root / "build" / "grading" / "run.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    confinement = "+".join(layers) or "none"
    record.write_text(
        json.dumps(
            [
                {
                    "student": s.student,
                    "assignment": s.assignment,
                    "seed": s.kept["seed"] if s.kept else seed(s),
                    "confinement": s.kept["confinement"] if s.kept else confinement,
                    "problems": s.kept["problems"] if s.kept else "; ".join(s.problems + s.faults),
                }
                for s in subs
            ]
        ),
        encoding="utf-8",
    )
    runs = [
        [
            f"--exporter=attention_course.grading.export.{exporter}",
            f"--to={course.root / table}",
            f"--{exporter}.run_record={record}",
        ]
        for exporter, table in (("NotebookGrades", "grades.csv"), ("CellGrades", "grades_by_cell.csv"))
    ]
    proc = nbgrader(["export-tables", json.dumps(runs)], course.root, course.root)
    if proc.returncode != 0:
        raise SystemExit(f"nbgrader export (grades.csv, grades_by_cell.csv) failed:\n{proc.last_error()}")
