"""Merging a group's grading into the course gradebook: nbgrader's record, teachers' edits kept."""

from __future__ import annotations

import datetime
import functools
import tempfile
from pathlib import Path

from nbgrader.api import Gradebook

from attention_course.grading.gradebook import grades, merge_rows, student_rows

A, NB = "attention", "02_sdpa"


def merge_student(source_db, course_db, assignment: str, student: str) -> None:
    """What `make grade`'s one writer does with one student of a slot's gradebook."""
    merge_rows(student_rows(source_db, assignment, student), course_db, assignment, student)


@functools.cache
def _blank() -> bytes:
    """An empty gradebook, made by nbgrader once (each new one asks the `alembic` command)."""
    with tempfile.TemporaryDirectory() as tmp:
        Gradebook(f"sqlite:///{tmp}/blank.db").close()
        return Path(tmp, "blank.db").read_bytes()


def _gradebook(path, students=("ada", "bo")):
    path.write_bytes(_blank())
    with Gradebook(f"sqlite:///{path}") as gb:
        gb.add_assignment(A, duedate=datetime.datetime(2026, 11, 1, 12, 0))
        gb.add_notebook(NB, A)
        gb.add_grade_cell("test_sdpa", NB, A, max_score=4, cell_type="code")
        gb.add_solution_cell("sdpa", NB, A)
        gb.add_grade_cell("test_quiz", NB, A, max_score=1, cell_type="code")
        gb.add_solution_cell("quiz", NB, A)
        for s in students:
            gb.add_student(s)
    return path


def _graded(path, student, scores, timestamp):
    with Gradebook(f"sqlite:///{path}") as gb:
        gb.add_submission(A, student, timestamp=timestamp)
        for name, score in scores.items():
            grade = gb.find_grade(name, NB, A, student)
            grade.auto_score, grade.needs_manual_grade = score, False
        gb.find_comment("sdpa", NB, A, student).auto_comment = "softmax over the wrong axis"
        gb.find_submission_notebook(NB, A, student).late_submission_penalty = 1.0
        gb.db.commit()


def test_a_merge_writes_the_scores_timestamp_comment_and_penalty(tmp_path):
    course, group = _gradebook(tmp_path / "course.db"), _gradebook(tmp_path / "group.db")
    when = datetime.datetime(2026, 11, 2, 9, 30)
    _graded(group, "ada", {"test_sdpa": 0.0, "test_quiz": 1.0}, when)
    merge_student(group, course, A, "ada")
    with Gradebook(f"sqlite:///{course}") as gb:
        sub = gb.find_submission(A, "ada")
        assert sub.timestamp == when and sub.total_seconds_late > 0
        assert gb.find_grade("test_quiz", NB, A, "ada").score == 1.0
        assert gb.find_comment("sdpa", NB, A, "ada").auto_comment == "softmax over the wrong axis"
        assert gb.find_submission_notebook(NB, A, "ada").late_submission_penalty == 1.0
        assert not sub.needs_manual_grade
    assert [(g.student, g.score, g.late_penalty) for g in grades(course, A)] == [("ada", 1.0, 1.0)]


def test_a_teachers_manual_score_and_extra_credit_survive_a_regrade(tmp_path):
    course, group = _gradebook(tmp_path / "course.db"), _gradebook(tmp_path / "group.db")
    _graded(course, "ada", {"test_sdpa": 0.0, "test_quiz": 0.0}, datetime.datetime(2026, 10, 30))
    with Gradebook(f"sqlite:///{course}") as gb:
        grade = gb.find_grade("test_sdpa", NB, A, "ada")
        grade.manual_score, grade.extra_credit = 3.0, 0.5
        gb.find_comment("sdpa", NB, A, "ada").manual_comment = "partly right, see me"
        gb.db.commit()
    _graded(group, "ada", {"test_sdpa": 0.0, "test_quiz": 1.0}, datetime.datetime(2026, 10, 30))
    merge_student(group, course, A, "ada")
    with Gradebook(f"sqlite:///{course}") as gb:
        grade = gb.find_grade("test_sdpa", NB, A, "ada")
        assert (grade.manual_score, grade.extra_credit, grade.score) == (3.0, 0.5, 3.5)
        assert gb.find_comment("sdpa", NB, A, "ada").manual_comment == "partly right, see me"
        assert gb.find_grade("test_quiz", NB, A, "ada").score == 1.0


def test_merging_one_student_leaves_the_others_rows_untouched(tmp_path):
    course, group = _gradebook(tmp_path / "course.db"), _gradebook(tmp_path / "group.db")
    _graded(course, "bo", {"test_sdpa": 4.0, "test_quiz": 1.0}, datetime.datetime(2026, 10, 30))
    before = [(g.student, g.score) for g in grades(course, A)]
    _graded(group, "ada", {"test_sdpa": 4.0, "test_quiz": 0.0}, datetime.datetime(2026, 10, 30))
    _graded(group, "bo", {"test_sdpa": 0.0, "test_quiz": 0.0}, datetime.datetime(2026, 10, 30))
    merge_student(group, course, A, "ada")
    after = {g.student: g.score for g in grades(course, A)}
    assert after["bo"] == dict(before)["bo"] == 5.0 and after["ada"] == 4.0


def test_a_new_student_is_created(tmp_path):
    course, group = _gradebook(tmp_path / "course.db", students=()), _gradebook(tmp_path / "group.db", ("cy",))
    _graded(group, "cy", {"test_sdpa": 4.0, "test_quiz": 1.0}, datetime.datetime(2026, 10, 30))
    merge_student(group, course, A, "cy")
    assert [g.student for g in grades(course, A)] == ["cy"]
