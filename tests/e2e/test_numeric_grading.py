"""Numeric questions through the real grading run (`make grade`: nbgrader autograde with the course's
plugins), in a throw-away copy of the course.

Two students hand in only the notebooks that hold numeric questions: `numeric_wrong` (the Chinese
edition) answers each with its known wrong answer nearest the right value but outside the
tolerance, and must lose that cell's points with the reasoning in Chinese; `numeric_right` (the
English edition) answers each with a right value written in another form (a string, a fraction,
arithmetic), and must keep them. Every other cell of those notebooks holds the reference answer
and keeps its points. (The full mutation suite, tests/e2e/test_grader.py, grades every known wrong
answer and every alternative of the manifest.)
"""

from __future__ import annotations

import ast
import math
import re

import pytest

from attention_course.model.manifest import load
from classroom import submission, write_submission, wrong_answer
from conftest import grade_class
from helpers.numbers import NotANumber, arithmetic

pytestmark = pytest.mark.slow
COURSE = load()
NUMERIC = COURSE.numeric_questions()
NOTEBOOKS = sorted({i.notebook for i in NUMERIC})


def nearest_wrong(item) -> str:
    """The item's known wrong answer closest to the right value (a finite one)."""

    def distance(source: str) -> float:
        try:
            return abs(arithmetic(item.variable, ast.parse(source, mode="eval").body) - item.value)
        except NotANumber:
            return math.inf

    return min(item.wrong_options, key=distance)


def _students(course_root) -> None:
    course = load(course_root)
    wrong = {i.name: wrong_answer(course, i.name, nearest_wrong(i)) for i in NUMERIC}
    right = {i.name: i.alternatives[-1] for i in NUMERIC}
    write_submission(course_root, "numeric_wrong", submission(course, wrong, NOTEBOOKS, "zh-CN"), "attention_zh")
    write_submission(course_root, "numeric_right", submission(course, right, NOTEBOOKS), "attention")


@pytest.fixture(scope="module")
def cells(tmp_path_factory):
    _, cells, _ = grade_class(tmp_path_factory.mktemp("numeric"), _students)
    return cells


def test_the_numeric_questions_are_graded_here():
    assert NUMERIC and all(i.alternatives and i.wrong_options for i in NUMERIC)


def test_a_wrong_number_just_outside_the_tolerance_loses_the_point_with_the_reasoning(cells):
    for item in NUMERIC:
        row = cells[("numeric_wrong", item.test_cell)]
        assert float(row["score"]) == 0.0, row
        assert re.search(r"[\u4e00-\u9fff]", row["reason"]) and "不对" in row["reason"], row["reason"]
        assert item.spec["reasoning"] not in row["reason"], "the reasoning should be the Chinese one"


def test_a_right_number_written_otherwise_keeps_the_point(cells):
    for item in NUMERIC:
        row = cells[("numeric_right", item.test_cell)]
        assert float(row["score"]) == float(row["max_score"]) == item.points, row


def test_nothing_else_in_those_notebooks_loses_points(cells):
    numeric_cells = {i.test_cell for i in NUMERIC}
    for item in COURSE.items:
        if item.notebook in NOTEBOOKS and item.test_cell not in numeric_cells:
            for student in ("numeric_wrong", "numeric_right"):
                row = cells[(student, item.test_cell)]
                assert row["score"] == row["max_score"], f"{student}: {item.test_cell}: {row['reason']}"
