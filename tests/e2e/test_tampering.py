"""Tampering with grading marks costs only the tampered notebook; a near-named notebook is reported.

Through the real `make grade` (nbgrader autograde, the trusted grader), one class:
- "inflated": in 02 the test cell is worth 100 points and a grade cell "bonus_points" (100
  points) is added; 01 is untouched;
- "flipped": in 03 the test cell is no longer a grade cell, in 04 the test cell is markdown and
  the answer cell claims to be a grade cell worth 50;
- "copied": 02 is saved as JupyterLab's copy `02_…-Copy1.ipynb`; graded again with
  `--take-renamed`, it is graded under its release name.
Every answer is right: every notebook keeps the release's points and full marks, what was put
right is in the problems column and the notebook's feedback, and nobody's other notebooks change.
"""

from __future__ import annotations

import csv
import json

import pytest

from attention_course.model.manifest import load
from classroom import submission, write_submission
from conftest import GRADING_SEED, REPO, copy_course, describe, run

pytestmark = pytest.mark.slow
NOTEBOOKS = ["01_scaling_problem", "02_scaled_dot_product_attention", "03_split_heads", "04_concat_heads"]
COPY = "02_scaled_dot_product_attention-Copy1.ipynb"


def _test_cell(notebook: dict) -> dict:
    return next(
        c for c in notebook["cells"] if c["metadata"].get("nbgrader", {}).get("grade") and c["cell_type"] == "code"
    )


def _answer_cell(notebook: dict) -> dict:
    return next(c for c in notebook["cells"] if c["metadata"].get("nbgrader", {}).get("solution"))


def _class(course) -> None:
    right = submission(load(course), {}, NOTEBOOKS)
    inflated = json.loads(json.dumps(right))
    nb = inflated["02_scaled_dot_product_attention"]
    _test_cell(nb)["metadata"]["nbgrader"]["points"] = 100
    bonus = json.loads(json.dumps(_test_cell(nb)))
    bonus.update(id="bonus", source="print('bonus')")
    bonus["metadata"]["nbgrader"].update(grade_id="bonus_points", points=100)
    nb["cells"].append(bonus)
    write_submission(course, "inflated", inflated, "attention")
    flipped = json.loads(json.dumps(right))
    _test_cell(flipped["03_split_heads"])["metadata"]["nbgrader"]["grade"] = False
    cell = _test_cell(flipped["04_concat_heads"])
    cell["cell_type"] = "markdown"
    del cell["outputs"], cell["execution_count"]
    _answer_cell(flipped["04_concat_heads"])["metadata"]["nbgrader"].update(grade=True, points=50)
    write_submission(course, "flipped", flipped, "attention")
    folder = write_submission(course, "copied", right, "attention")
    (folder / "02_scaled_dot_product_attention.ipynb").rename(folder / COPY)


def _grade(course, *args: str):
    extra = " ".join(args)
    proc = run(
        ["make", "grade", f"VENV={REPO / '.venv'}", "JOBS=2", f"GRADE_ARGS=--seed {GRADING_SEED} {extra}".strip()],
        cwd=course,
        timeout=1800,
    )
    with open(course / "grades.csv") as handle:
        notebooks = {(r["student"], r["notebook"]): r for r in csv.DictReader(handle)}
    return proc, notebooks


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("tampering") / "course")
    _class(course)
    first = _grade(course)
    told = (course / "feedback" / "copied" / "attention" / "01_scaling_problem.html").read_text()
    again = _grade(course, "--student copied --take-renamed")
    return course, (*first, told), again


def _released_points(course) -> dict[str, float]:
    points = {}
    for notebook in NOTEBOOKS:
        release = json.loads((course / "notebooks" / "attention" / f"{notebook}.ipynb").read_text())
        marks = [c["metadata"].get("nbgrader", {}) for c in release["cells"]]
        points[notebook] = sum(float(m.get("points", 0)) for m in marks if m.get("grade"))
    return points


@pytest.mark.parametrize("student", ["inflated", "flipped"])
def test_a_tampered_notebook_is_graded_as_released_and_the_others_untouched(graded, student):
    course, (proc, notebooks, _told), _ = graded
    points = _released_points(course)
    for notebook in NOTEBOOKS:
        row = notebooks[(student, notebook)]
        assert float(row["max_score"]) == points[notebook], (row, describe(proc))
        assert float(row["score"]) == points[notebook], (row, describe(proc))


def test_what_was_put_right_is_named_for_the_teacher_and_in_the_feedback(graded):
    course, (proc, notebooks, _told), _ = graded
    problems = notebooks[("inflated", "TOTAL")]["problems"]  # the problems column is the student's
    assert "('bonus_points') is not in the release" in problems and "were changed (points)" in problems, problems
    assert "01_scaling_problem" not in problems, problems
    flipped = notebooks[("flipped", "TOTAL")]["problems"]
    assert "04_concat_heads.ipynb: the grading settings" in flipped and "cell type" in flipped, flipped
    assert "03_split_heads.ipynb: the grading settings of cell" in flipped, flipped
    feedback = (course / "feedback" / "inflated" / "attention" / "02_scaled_dot_product_attention.html").read_text()
    assert "Put right before grading" in feedback and "bonus_points" in feedback


def test_a_near_named_notebook_is_reported_then_graded_under_its_name_when_asked(graded):
    course, (proc, notebooks, told), (again, regraded) = graded
    row = notebooks[("copied", "02_scaled_dot_product_attention")]
    assert float(row["score"]) == 0, row
    assert f"found {COPY}: rename it" in notebooks[("copied", "TOTAL")]["problems"]
    assert f"found {COPY}" in proc.stdout, proc.stdout
    assert f"found {COPY}: rename it" in told  # in the feedback of the notebooks handed in
    assert again.returncode == 0, describe(again)
    row = regraded[("copied", "02_scaled_dot_product_attention")]
    assert row["score"] == row["max_score"], row
    assert "graded under its release name" in regraded[("copied", "TOTAL")]["problems"]
