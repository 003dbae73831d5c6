"""`grading/result.py`: the one record an nbgrader process leaves about a student, and how the
slot reads it (`slot.unfinished`). No kernel, no nbgrader run."""

from __future__ import annotations

import json

from attention_course.grading.coursedir import paths
from attention_course.grading.result import RESULTS, StudentResult
from attention_course.grading.slot import unfinished, without_feedback
from attention_course.grading.submission import Submission
from attention_course.model.manifest import load


def test_a_record_is_written_whole_and_read_back(tmp_path):
    record = StudentResult("ada", "attention")
    record.faults.append({"kind": "grader", "notebook": "01_scaling_problem", "text": "raw_scores: sandbox stopped"})
    record.problems.append({"notebook": "02_x", "text": "02_x.ipynb was not submitted"})
    record.finished.append("01_scaling_problem")
    record.save(tmp_path)
    assert [p.name for p in (tmp_path / RESULTS).iterdir()] == ["ada--attention.json"]  # no half-written file left
    again = StudentResult.load(tmp_path, "ada", "attention")
    assert again == record
    assert again.fault_lines() == ["grader fault in 01_scaling_problem: raw_scores: sandbox stopped"]
    assert again.problem_lines() == ["02_x.ipynb was not submitted"]


def test_no_record_or_a_broken_one_reads_as_nothing_found(tmp_path):
    assert StudentResult.load(tmp_path, "ada", "attention") == StudentResult("ada", "attention")
    path = StudentResult.path(tmp_path, "ada", "attention")
    path.parent.mkdir(parents=True)
    path.write_text("{half")
    assert StudentResult.load(tmp_path, "ada", "attention").finished == []
    StudentResult.forget(tmp_path, "ada", "attention")
    assert not path.exists()


def test_a_notebook_is_unfinished_without_its_verdict_or_without_its_autograded_copy(tmp_path):
    course = load()
    first, second, *rest = course.graded_notebooks()
    where = paths(tmp_path)
    submitted = where.of("submitted", "ada", "attention")
    autograded = where.of("autograded", "ada", "attention")
    submitted.mkdir(parents=True)
    autograded.mkdir(parents=True)
    for name in (first, second):
        (submitted / f"{name}.ipynb").write_text(json.dumps({"cells": []}))
    (autograded / f"{first}.ipynb").write_text("{}")  # written by nbgrader, but no verdict recorded
    (autograded / f"{second}.ipynb").write_text("{}")
    sub = Submission("ada", "attention")
    result = StudentResult("ada", "attention", finished=[second])
    assert unfinished(course, where, sub, result) == [first]  # the rest were not submitted at all
    (autograded / f"{second}.ipynb").unlink()  # a verdict, but nbgrader never wrote the notebook
    assert unfinished(course, where, sub, result) == [first, second]


def test_a_notebook_with_its_verdict_but_no_feedback_page_is_reported(tmp_path):
    """A process stopped after the verdicts but before it wrote the pages: the grade stands, and
    the missing page is a fault (so the journal does not keep the student)."""
    course = load()
    first, second, *rest = course.graded_notebooks()
    where = paths(tmp_path)
    submitted, feedback = where.of("submitted", "ada", "attention"), where.of("feedback", "ada", "attention")
    submitted.mkdir(parents=True)
    feedback.mkdir(parents=True)
    for name in (first, second):
        (submitted / f"{name}.ipynb").write_text("{}")
    (feedback / f"{first}.html").write_text("<html></html>")
    sub = Submission("ada", "attention")
    assert without_feedback(course, where, sub, left=[]) == [second]
    assert without_feedback(course, where, sub, left=[second]) == []  # graded 0 already, with its reason
