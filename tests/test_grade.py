"""Unit tests of `grading.grade`'s bookkeeping, without running nbgrader or any kernel.

The end-to-end behaviour (`make grade` on real classes) is tested in test_grader.py and
test_attacks.py; these tests pin down the small pieces that decide what a teacher reads.
"""
from __future__ import annotations

import csv
import json

from grading.grade import NotebookResult, _write_gradebook, tidy_notebook, write_grades
from grading import trusted

NOTEBOOK = "02_scaled_dot_product_attention"
CELL = trusted.TestCell(NOTEBOOK, "test_sdpa", "scaled_dot_product_attention", 3.0)


def _gradebook_with_a_fresh_submission(db):
    """A gradebook as nbgrader leaves it for a notebook it could not execute: grades unset."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}") as gradebook:
        gradebook.add_assignment("attention")
        gradebook.add_notebook(NOTEBOOK, "attention")
        gradebook.add_grade_cell(CELL.grade_id, NOTEBOOK, "attention", max_score=CELL.points, cell_type="code")
        gradebook.add_student("ada")
        gradebook.add_submission("attention", "ada")


def test_the_trusted_verdict_leaves_nothing_for_manual_grading(tmp_path):
    from nbgrader.api import Gradebook

    db = tmp_path / "gradebook.db"
    _gradebook_with_a_fresh_submission(db)
    with Gradebook(f"sqlite:///{db}") as gradebook:
        assert gradebook.find_submission("attention", "ada").needs_manual_grade  # nbgrader's default
    result = NotebookResult("ada", NOTEBOOK, 0.0, CELL.points, verdicts=[trusted.Verdict(CELL, 0.0, "the kernel died")])
    _write_gradebook(db, "ada", [result])
    with Gradebook(f"sqlite:///{db}") as gradebook:
        assert not gradebook.find_submission("attention", "ada").needs_manual_grade
        grade = gradebook.find_grade(CELL.grade_id, NOTEBOOK, "attention", "ada")
        assert (grade.auto_score, grade.manual_score, grade.score) == (0.0, None, 0.0)


def test_the_trusted_score_is_what_the_gradebook_holds(tmp_path):
    from nbgrader.api import Gradebook

    db = tmp_path / "gradebook.db"
    _gradebook_with_a_fresh_submission(db)
    _write_gradebook(db, "ada", [NotebookResult("ada", NOTEBOOK, 3.0, 3.0, verdicts=[trusted.Verdict(CELL, 3.0, "")])])
    with Gradebook(f"sqlite:///{db}") as gradebook:
        assert gradebook.find_submission("attention", "ada").score == 3.0


def _cell(grade_id: str) -> dict:
    return {"cell_type": "code", "metadata": {"nbgrader": {"grade_id": grade_id, "grade": True}},
            "source": "", "outputs": [], "execution_count": None}


def test_tidy_reports_invalid_json_and_leaves_no_copy(tmp_path):
    broken = tmp_path / "02.ipynb"
    broken.write_text("{ not json")
    problems = tidy_notebook(broken, tmp_path / "copy.ipynb")
    assert len(problems) == 1 and "is not a valid notebook" in problems[0]
    assert not (tmp_path / "copy.ipynb").exists()


def test_tidy_drops_the_metadata_of_a_duplicated_grade_cell_and_names_the_kernel(tmp_path):
    notebook = {"cells": [_cell("test_a"), _cell("test_a"), _cell("test_b")],
                "metadata": {"kernelspec": {"name": "my-own-env"}}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "03.ipynb"
    path.write_text(json.dumps(notebook))
    problems = tidy_notebook(path, tmp_path / "copy.ipynb")
    assert problems == ["03.ipynb: a copy of cell 'test_a' was ignored"]
    tidied = json.loads((tmp_path / "copy.ipynb").read_text())
    ids = [c["metadata"].get("nbgrader", {}).get("grade_id") for c in tidied["cells"]]
    assert ids == ["test_a", None, "test_b"]
    assert tidied["metadata"]["kernelspec"]["name"] == "python3"
    assert json.loads(path.read_text()) == notebook  # the submission itself is never touched


def test_grades_csv_has_a_row_per_notebook_and_a_total_per_student(tmp_path):
    rows = [NotebookResult("bo", "01", 2, 3), NotebookResult("bo", "02", 1, 3, ["02 was late"]),
            NotebookResult("al", "01", 3, 3)]
    write_grades(rows, tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv") as handle:
        table = [(r["student"], r["notebook"], r["score"], r["max_score"], r["problems"]) for r in csv.DictReader(handle)]
    assert table == [("al", "01", "3", "3", ""), ("al", "TOTAL", "3", "3", ""),
                     ("bo", "01", "2", "3", ""), ("bo", "02", "1", "3", "02 was late"), ("bo", "TOTAL", "3", "6", "")]
