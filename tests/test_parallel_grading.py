"""`make grade JOBS=2` gives exactly the grades of `make grade JOBS=1`, and a fault of the grader
on one student's answer costs only that cell.

A small class (right and wrong answers, one missing notebook, and "unlucky", whose right
`split_heads` meets a fault injected into the grader) is graded twice with the same seed, one
student at a time and two at a time. grades.csv and grades_by_cell.csv must be equal to the byte,
the parallel run must really have used two nbgrader course folders, the fault costs unlucky that
one cell with the reason and nobody else anything, and `make grade` exits non-zero naming unlucky.
"""

from __future__ import annotations

import csv

import pytest
from conftest import grade_class

from grading.classroom import submission, write_submission, wrong_answer
from grading.manifest import load

pytestmark = pytest.mark.slow
NOTEBOOKS = ["02_scaled_dot_product_attention", "03_split_heads"]


def points(course, notebooks) -> float:
    return sum(i.points for nb in notebooks for i in course.items_in(nb))


FAULT = """
# Injected by tests/test_parallel_grading.py: the grader fails on unlucky's split_heads.
import threading
import grading.trusted as _trusted
_grade, _judge, _who = _trusted._grade_student, _trusted.judge_exercise, threading.local()
def _remember(course, paths, *args):
    _who.name = next(iter(paths.values())).parent.parent.name
    return _grade(course, paths, *args)
def _faulty(item, cases, report, arrays):
    if getattr(_who, "name", "") == "unlucky" and item.name == "split_heads":
        raise KeyError(("split_heads", "a sentence the grader does not have"))
    return _judge(item, cases, report, arrays)
_trusted._grade_student, _trusted.judge_exercise = _remember, _faulty
"""


def write_class(root) -> None:
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(FAULT)
    course = load(root)
    write_submission(root, "unlucky", submission(course, {}, NOTEBOOKS), "attention")
    write_submission(root, "right", submission(course, {}, NOTEBOOKS), "attention")
    write_submission(
        root,
        "wrong_a",
        submission(
            course,
            {
                "scaled_dot_product_attention": wrong_answer(
                    course, "scaled_dot_product_attention", "softmax_wrong_axis"
                )
            },
            NOTEBOOKS,
        ),
        "attention",
    )
    write_submission(root, "wrong_b", submission(course, {}, NOTEBOOKS[:1]), "attention")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return {
        jobs: grade_class(tmp_path_factory.mktemp(f"jobs{jobs}"), write_class, jobs=jobs, expect_ok=False)
        for jobs in (1, 2)
    }


@pytest.fixture(scope="module")
def both(runs):
    return {jobs: run[0] for jobs, run in runs.items()}


def test_two_jobs_really_grade_in_two_course_folders(both):
    groups = sorted(p.name for p in (both[2] / "build" / "grading" / "groups").iterdir())
    assert groups == ["group0", "group1"]
    assert sorted(p.name for p in (both[1] / "build" / "grading" / "groups").iterdir()) == ["group0"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_grader_fault_costs_one_cell_and_is_reported_by_name(runs, jobs):
    course, cells, output = runs[jobs]
    assert "Could not grade fully: unlucky (attention)" in output, output
    row = cells[("unlucky", "test_split_heads")]
    assert row["score"] == "0" and "could not judge" in row["reason"], row
    others = {
        k: r
        for k, r in cells.items()
        if k[0] == "unlucky" and k[1] != "test_split_heads" and r["notebook"] in NOTEBOOKS
    }
    assert others and all(r["score"] == r["max_score"] for r in others.values()), others
    assert all(r["score"] == r["max_score"] for k, r in cells.items() if k[0] == "right" and r["notebook"] in NOTEBOOKS)


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
    assert totals["unlucky"] == full - course.item("split_heads").points
