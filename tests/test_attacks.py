"""The grader under attack: hostile, broken and messy submissions through `make grade`.

In a throw-away copy of the course, one `make grade` run grades the students of
`tests/attacks.py` and an honest control student: every trick loses, every fault is graded 0
with its reason, every messy right answer keeps full marks, the control student is untouched.
"""
from __future__ import annotations

import pytest

import attacks
from conftest import grade_class
from grading.classroom import submission, write_submission
from grading.trusted import graded_notebooks
from grading.trusted import target_cell


def cell_of(target: str) -> tuple[str, str]:
    return target_cell(target)


def build_class(course) -> None:
    write_submission(course, "control", submission({}, notebooks=graded_notebooks()))
    for student in attacks.STUDENTS:
        write_submission(course, student.name, student.build())
    # A notebook that is not JSON at all, next to a good one.
    folder = write_submission(course, "broken_json", submission({}, notebooks=["01_scaling_problem"]))
    (folder / "02_scaled_dot_product_attention.ipynb").write_text('{"cells": [ this is not json')


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course, cells, output = grade_class(tmp_path_factory.mktemp("attacks"), build_class)
    return course, None, cells, output


def _cells_of(cells, student):
    return {grade_id: row for (s, grade_id), row in cells.items() if s == student}


TRICKS = [(st.name, target, kind, trick) for st in attacks.STUDENTS for target, (kind, trick) in st.expected.items()]


def _ids(kind):
    return [f"{trick}-{target}" for _, target, k, trick in TRICKS if k == kind]


@pytest.mark.parametrize("student,target,trick", [(s, t, n) for s, t, k, n in TRICKS if k == "attack"],
                         ids=_ids("attack"))
def test_no_trick_inside_the_kernel_earns_marks(graded, student, target, trick):
    _, _, cells, _ = graded
    row = _cells_of(cells, student)[cell_of(target)[1]]
    assert float(row["score"]) == 0, f"{trick} earned {row['score']}"


@pytest.mark.parametrize("student,target,trick", [(s, t, n) for s, t, k, n in TRICKS if k == "fault"],
                         ids=_ids("fault"))
def test_a_broken_exercise_scores_zero_with_its_reason(graded, student, target, trick):
    course, _, cells, _ = graded
    notebook, grade_id = cell_of(target)
    row = _cells_of(cells, student)[grade_id]
    word = next(st for st in attacks.STUDENTS if st.name == student).reasons[target]
    assert float(row["score"]) == 0 and word in row["reason"], row
    feedback = (course / "feedback" / student / "attention" / f"{notebook}.html").read_text()
    assert word in feedback


def test_what_a_fault_did_not_break_keeps_its_marks(graded):
    _, _, cells, _ = graded
    student = next(st for st in attacks.STUDENTS if st.name == "faulty")
    broken = {cell_of(t)[1] for t in student.expected}
    kept = {g: r for g, r in _cells_of(cells, "faulty").items() if g not in broken}
    assert {"test_raw_scores", "test_quick_check", "test_multi_head_attention"} <= set(kept)
    assert all(r["score"] == r["max_score"] for r in kept.values()), kept


def test_right_answers_in_messy_notebooks_keep_full_marks(graded):
    _, _, cells, _ = graded
    own = _cells_of(cells, "messy")
    assert len(own) == 8 and all(r["score"] == r["max_score"] for r in own.values()), \
        {g: r["reason"] for g, r in own.items() if r["score"] != r["max_score"]}


def test_the_control_student_is_untouched(graded):
    _, _, cells, _ = graded
    own = _cells_of(cells, "control")
    assert len(own) == 8 and all(r["score"] == r["max_score"] for r in own.values())


def test_attack_suite_is_large_enough():
    assert len([t for t in TRICKS if t[2] in ("attack", "fault")]) >= 15


def test_an_invalid_notebook_is_reported_by_name_and_costs_only_itself(graded):
    course, _, cells, output = graded
    own = _cells_of(cells, "broken_json")
    assert own["test_scaled_dot_product_attention"]["score"] == "0"
    assert all(own[g]["score"] == own[g]["max_score"] for g in ("test_raw_scores", "test_scaled_scores", "test_quick_check"))
    assert "02_scaled_dot_product_attention.ipynb is not a valid notebook" in output


def test_nothing_is_left_for_manual_grading(graded):
    from nbgrader.api import Gradebook

    course = graded[0]
    for db in (course / "build" / "grading" / "groups").glob("*/gradebook.db"):
        with Gradebook(f"sqlite:///{db}") as gradebook:
            for submission_ in gradebook.assignment_submissions("attention"):
                assert not submission_.needs_manual_grade, submission_.student.id
