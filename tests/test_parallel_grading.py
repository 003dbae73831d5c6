"""`make grade JOBS=2` gives exactly the grades of `make grade JOBS=1`.

A small class (right and wrong answers, one missing notebook) is graded twice with the same
seed, one student at a time and two at a time; grades.csv and grades_by_cell.csv must be equal
to the byte, and the parallel run must really have used two nbgrader course folders.
"""
from __future__ import annotations

import pytest

from conftest import grade_class

from grading.classroom import submission, wrong_answer, write_submission

NOTEBOOKS = ["02_scaled_dot_product_attention", "03_split_heads"]


def write_class(course) -> None:
    """right: 6 / 6; wrong_a: a named mistake in 02 (2 / 6); wrong_b: 03 not submitted (4 / 6)."""
    write_submission(course, "right", submission({}, notebooks=NOTEBOOKS))
    write_submission(course, "wrong_a", submission({
        "scaled_dot_product_attention": wrong_answer("scaled_dot_product_attention", "softmax_wrong_axis")},
        notebooks=NOTEBOOKS))
    write_submission(course, "wrong_b", submission({}, notebooks=NOTEBOOKS[:1]))


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return {jobs: grade_class(tmp_path_factory.mktemp(f"jobs{jobs}"), write_class, jobs=jobs)[0] for jobs in (1, 2)}


def test_two_jobs_really_grade_in_two_course_folders(both):
    groups = sorted(p.name for p in (both[2] / "build" / "grading" / "groups").iterdir())
    assert groups == ["group0", "group1"]
    assert sorted(p.name for p in (both[1] / "build" / "grading" / "groups").iterdir()) == ["group0"]


@pytest.mark.parametrize("table", ["grades.csv", "grades_by_cell.csv"])
def test_two_jobs_give_exactly_the_grades_of_one(both, table):
    serial, parallel = ((both[jobs] / table).read_text() for jobs in (1, 2))
    assert parallel == serial
    assert "wrong_a" in serial and "wrong_b" in serial


def test_the_class_is_not_trivially_equal(both):
    """Different students get different scores: the equality above compares real grades."""
    import csv
    with open(both[1] / "grades.csv") as handle:
        totals = {r["student"]: float(r["score"]) for r in csv.DictReader(handle) if r["notebook"] == "TOTAL"}
    assert (totals["right"], totals["wrong_a"], totals["wrong_b"]) == (6, 2, 4)
