"""Unit tests of `grading.grade`'s bookkeeping, without running nbgrader or any kernel.

The end-to-end behaviour (`make grade` on real classes) is tested in test_grader.py,
test_attacks.py and test_exchange.py; these tests pin down the small pieces."""

from __future__ import annotations

import json

from grading.grade import tidy_notebook


def _cell(grade_id: str) -> dict:
    return {
        "cell_type": "code",
        "metadata": {"nbgrader": {"grade_id": grade_id, "grade": True}},
        "source": ["a = 1\n", "b = 2"],
        "outputs": [],
        "execution_count": None,
    }


def test_tidy_reports_invalid_json_and_leaves_no_copy(tmp_path):
    broken = tmp_path / "02.ipynb"
    broken.write_text("{ not json")
    problems = tidy_notebook(broken, tmp_path / "copy.ipynb")
    assert len(problems) == 1 and "is not a valid notebook" in problems[0]
    assert not (tmp_path / "copy.ipynb").exists()


def test_tidy_drops_the_metadata_of_a_duplicated_grade_cell_and_names_the_kernel(tmp_path):
    notebook = {
        "cells": [_cell("test_a"), _cell("test_a"), _cell("test_b")],
        "metadata": {"kernelspec": {"name": "my-own-env"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "03.ipynb"
    path.write_text(json.dumps(notebook))
    problems = tidy_notebook(path, tmp_path / "copy.ipynb")
    assert problems == ["03.ipynb: a copy of cell 'test_a' was ignored"]
    tidied = json.loads((tmp_path / "copy.ipynb").read_text())
    ids = [c["metadata"].get("nbgrader", {}).get("grade_id") for c in tidied["cells"]]
    assert ids == ["test_a", None, "test_b"]
    assert tidied["metadata"]["kernelspec"]["name"] == "python3"
    assert json.loads(path.read_text()) == notebook  # the submission itself is never touched
