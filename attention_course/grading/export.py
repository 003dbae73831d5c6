"""The course's grade tables as nbgrader export plugins (`nbgrader export --exporter=...`).

- `NotebookGrades` writes `grades.csv`: a row per student and notebook, and a total per student
  and assignment (late penalties applied, as nbgrader's own CSV export does), with the student's
  extension (`extensions.csv`, attention_course/grading/late.py).
- `CellGrades` writes `grades_by_cell.csv`: a row per graded cell, with the reason the trusted
  grader gave for a score below full marks.

Both read only nbgrader's gradebook and the course manifest. `make grade` runs them after every
grading run, handing over what the gradebook does not hold (the run's seed, its confinement layers
and each student's problems) in a small JSON file named by `run_record`; a teacher can run them at
any time with `nbgrader export --exporter=attention_course.grading.export.CellGrades --to grades_by_cell.csv`.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.plugins import ExportPlugin
from traitlets import Unicode

from attention_course.model.manifest import Course, load

from . import gradebook as records
from . import late
from .coursedir import paths

NOTEBOOK_COLUMNS = [
    "student",
    "assignment",
    "notebook",
    "score",
    "max_score",
    "late_penalty",
    "problems",
    "seed",
    "confinement",
    "extension",
]
CELL_COLUMNS = ["student", "assignment", "notebook", "cell", "score", "max_score", "reason"]


class _CourseExport(ExportPlugin):
    run_record = Unicode(
        "", help="A JSON file from `make grade`: seed, confinement and problems of the students it graded."
    ).tag(config=True)

    default_file = ""

    def course(self) -> Course:
        return load(Path(self.parent.coursedir.root))

    def destination(self) -> Path:
        return Path(self.to or Path(self.parent.coursedir.root) / self.default_file)

    def run(self) -> dict[tuple[str, str], dict]:
        """(student, assignment) -> {seed, confinement, problems} of the last `make grade` run."""
        if not self.run_record:
            return {}
        entries = json.loads(Path(self.run_record).read_text(encoding="utf-8"))
        return {(e["student"], e["assignment"]): e for e in entries}

    def wanted(self, student: str) -> bool:
        return not self.student or student in [str(s) for s in self.student]

    def assignments(self, course: Course) -> list[str]:
        named = [str(a) for a in self.assignment]
        return [e.assignment for e in course.editions if not named or e.assignment in named]


class NotebookGrades(_CourseExport):
    """grades.csv: a row per notebook and a total per student and assignment."""

    default_file = "grades.csv"

    def export(self, gradebook: Gradebook) -> None:
        course, run = self.course(), self.run()
        db = paths(Path(self.parent.coursedir.root)).gradebook
        extensions = late.read(course.root)
        with open(self.destination(), "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(NOTEBOOK_COLUMNS)
            for assignment in self.assignments(course):
                rows = records.grades(db, assignment)
                for student in sorted({r.student for r in rows if self.wanted(r.student)}):
                    own = sorted((r for r in rows if r.student == student), key=lambda r: r.notebook)
                    this_run = run.get((student, assignment))
                    stamp = (this_run["seed"], this_run["confinement"]) if this_run else ("", "")
                    extension = extensions.get((student, assignment))
                    stamp = (*stamp, extension.describe() if extension else "")
                    for r in own:
                        writer.writerow(
                            [
                                student,
                                r.assignment,
                                r.notebook,
                                f"{r.score - r.late_penalty:g}",
                                f"{r.max_score:g}",
                                f"{r.late_penalty:g}",
                                "",
                                *stamp,
                            ]
                        )
                    writer.writerow(
                        [
                            student,
                            assignment,
                            "TOTAL",
                            f"{sum(r.score - r.late_penalty for r in own):g}",
                            f"{sum(r.max_score for r in own):g}",
                            f"{sum(r.late_penalty for r in own):g}",
                            this_run["problems"] if this_run else "",
                            *stamp,
                        ]
                    )


class CellGrades(_CourseExport):
    """grades_by_cell.csv: a row per graded cell, with the grader's reason below full marks."""

    default_file = "grades_by_cell.csv"

    def export(self, gradebook: Gradebook) -> None:
        course = self.course()
        with open(self.destination(), "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(CELL_COLUMNS)
            for assignment in self.assignments(course):
                submissions = sorted(gradebook.assignment_submissions(assignment), key=lambda s: s.student.id)
                for submission in (s for s in submissions if self.wanted(s.student.id)):
                    for notebook in sorted(submission.notebooks, key=lambda n: n.name):
                        comments = {c.name: c.auto_comment or "" for c in notebook.comments}
                        for grade in sorted(notebook.grades, key=lambda g: g.name):
                            item = next((i for i in course.items_in(notebook.name) if i.test_cell == grade.name), None)
                            reason = comments.get(item.answer_cell, "") if item else ""
                            # at full marks (a teacher's manual grade included) no reason stands
                            full = grade.score >= grade.max_score
                            writer.writerow(
                                [
                                    submission.student.id,
                                    assignment,
                                    notebook.name,
                                    grade.name,
                                    f"{grade.score:g}",
                                    f"{grade.max_score:g}",
                                    "" if full else reason,
                                ]
                            )
