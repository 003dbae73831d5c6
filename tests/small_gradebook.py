"""A small nbgrader gradebook built through nbgrader's API (no grading run): one assignment with
two graded notebooks, students with scores, comments, timestamps and late penalties."""

from __future__ import annotations

import datetime
import functools
import shutil
import tempfile
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Configurable

A = "attention"
DUE = datetime.datetime(2026, 11, 1, 12, 0)
# notebook -> [(answer cell, test cell, points)]
NOTEBOOKS = {
    "01_scaling_problem": [("raw_scores", "test_raw_scores", 2.0)],
    "02_scaled_dot_product_attention": [("scaled_dot_product_attention", "test_scaled_dot_product_attention", 4.0)],
}


@functools.cache
def _blank() -> bytes:
    """An empty gradebook, made by nbgrader once (each new one asks the `alembic` command)."""
    with tempfile.TemporaryDirectory() as tmp:
        Gradebook(f"sqlite:///{tmp}/blank.db").close()
        return Path(tmp, "blank.db").read_bytes()


def url(path) -> str:
    return f"sqlite:///{path}"


def gradebook(path: Path, students=("ada", "bo"), due=DUE) -> Path:
    """A gradebook with the assignment, its cells and the students (nothing submitted)."""
    path.write_bytes(_blank())
    with Gradebook(url(path)) as gb:
        gb.add_assignment(A, duedate=due)
        for notebook, cells in NOTEBOOKS.items():
            gb.add_notebook(notebook, A)
            for answer, test, points in cells:
                gb.add_grade_cell(test, notebook, A, max_score=points, cell_type="code")
                gb.add_solution_cell(answer, notebook, A)
        for student in students:
            gb.add_student(student)
    return path


def submit(path: Path, student: str, scores: dict[str, float], when: datetime.datetime, comments=None, late=None):
    """A graded submission: test cell -> automatic score, answer cell -> automatic comment,
    notebook -> late penalty."""
    with Gradebook(url(path)) as gb:
        gb.add_submission(A, student, timestamp=when)
        for notebook, cells in NOTEBOOKS.items():
            for answer, test, _points in cells:
                grade = gb.find_grade(test, notebook, A, student)
                grade.auto_score, grade.needs_manual_grade = scores.get(test, 0.0), False
                gb.find_comment(answer, notebook, A, student).auto_comment = (comments or {}).get(answer, "")
            gb.find_submission_notebook(notebook, A, student).late_submission_penalty = (late or {}).get(notebook)
        gb.db.commit()


def graded_class(root: Path, cy_submits: bool = False) -> Path:
    """A course folder (the course's nbgrader_config.py and course.toml) whose gradebook has three
    students: ada, late on 01 (0.5 off) with 1 of 4 on 02 that a teacher raised by hand to 3.5; bo,
    full marks on time; cy, in nbgrader and with nothing submitted (or, `cy_submits`, 0 on 01 and
    full marks on 02, on time)."""
    from conftest import REPO

    root.mkdir(parents=True, exist_ok=True)
    for name in ("nbgrader_config.py", "course.toml"):
        shutil.copy(REPO / name, root / name)
    db = gradebook(root / "gradebook.db", students=("ada", "bo", "cy"))
    submit(
        db,
        "ada",
        {"test_raw_scores": 2.0, "test_scaled_dot_product_attention": 1.0},
        DUE + datetime.timedelta(hours=3),
        comments={"scaled_dot_product_attention": "the softmax runs over the queries"},
        late={"01_scaling_problem": 0.5},
    )
    with Gradebook(url(db)) as gb:
        gb.find_grade(
            "test_scaled_dot_product_attention", "02_scaled_dot_product_attention", A, "ada"
        ).manual_score = 3.5
        gb.db.commit()
    submit(db, "bo", {"test_raw_scores": 2.0, "test_scaled_dot_product_attention": 4.0}, DUE)
    if cy_submits:
        submit(db, "cy", {"test_raw_scores": 0.0, "test_scaled_dot_product_attention": 4.0}, DUE)
    return root


class ExportApp(Configurable):
    """What `nbgrader export` hands its exporter: the course directory."""

    def __init__(self, root: Path):
        super().__init__()
        self.coursedir = CourseDirectory(root=str(root))
