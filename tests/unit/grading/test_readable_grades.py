"""`ReadableGrades`: a test cell whose result nbgrader cannot read as a grade is saved as 0 by
nbgrader's own SaveAutoGrades (it used to stop the notebook), and a readable one is left alone."""

from __future__ import annotations

import nbformat
from nbgrader import utils

from attention_course.grading.plugins.readable import UNREADABLE, ReadableGrades


def _test_cell(result: dict | None) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("check('x', x)")
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "test_x", "points": 1}
    if result is not None:
        cell.outputs = [nbformat.v4.new_output("execute_result", data=result, execution_count=1)]
    return cell


def test_an_unreadable_result_becomes_a_zero_and_a_readable_one_stays():
    for result in ({"text/plain": "5"}, {"text/plain": "1e9"}, {"text/html": "<b>1</b>"}):
        cell = _test_cell(result)
        try:
            utils.determine_grade(cell)
            raise AssertionError(f"nbgrader reads {result} after all")
        except (ValueError, KeyError):
            pass
        cell, _ = ReadableGrades().preprocess_cell(cell, {}, 0)
        assert utils.determine_grade(cell) == (0, 1.0), result
        assert cell.outputs[-1]["text"] == UNREADABLE
    for result in ({"text/plain": "0.5"}, {"text/plain": "'words'"}, None):
        cell = _test_cell(result)
        before = utils.determine_grade(cell)
        cell, _ = ReadableGrades().preprocess_cell(cell, {}, 0)
        assert utils.determine_grade(cell) == before and all(o.get("text") != UNREADABLE for o in cell.outputs)
