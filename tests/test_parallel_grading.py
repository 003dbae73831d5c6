"""`make grade JOBS=2` gives exactly the grades of `make grade JOBS=1`.

A small class (right and wrong answers, one missing notebook) is graded twice with the same
seed, one student at a time and two at a time; grades.csv and grades_by_cell.csv must be equal
to the byte, and the parallel run must really have used two nbgrader course folders.
"""
from __future__ import annotations

import csv

import pytest

from conftest import grade_class
from grading.classroom import submission, wrong_answer, write_submission
from grading.manifest import load

pytestmark = pytest.mark.slow
NOTEBOOKS = ["02_scaled_dot_product_attention", "03_split_heads"]


def points(course, notebooks) -> float:
    return sum(i.points for nb in notebooks for i in course.items_in(nb))


def write_class(root) -> None:
    course = load(root)
    write_submission(root, "right", submission(course, {}, NOTEBOOKS), "attention")
    write_submission(root, "wrong_a", submission(course, {
        "scaled_dot_product_attention": wrong_answer(course, "scaled_dot_product_attention", "softmax_wrong_axis")},
        NOTEBOOKS), "attention")
    write_submission(root, "wrong_b", submission(course, {}, NOTEBOOKS[:1]), "attention")


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
    course = load(both[1])
    with open(both[1] / "grades.csv") as handle:
        totals = {r["student"]: float(r["score"]) for r in csv.DictReader(handle) if r["notebook"] == "TOTAL"}
    full, sdpa = points(course, NOTEBOOKS), course.item("scaled_dot_product_attention").points
    assert (totals["right"], totals["wrong_a"], totals["wrong_b"]) == (full, full - sdpa, points(course, NOTEBOOKS[:1]))
