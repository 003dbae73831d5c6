"""The files behind the released checks are what the manifest and the source solutions make."""

from __future__ import annotations

import json

import numpy as np

from attention_course.authoring.build import check_cases
from attention_course.model.manifest import load, write_student_view
from helpers import course as student_course
from helpers.casefile import CASES_FILE, load_cases, save_cases
from helpers.course import COURSE_FILE

COURSE = load()


def test_course_json_is_the_student_view_of_the_manifest(tmp_path):
    write_student_view(COURSE, tmp_path / "course.json")
    assert (tmp_path / "course.json").read_bytes() == COURSE_FILE.read_bytes(), "run make outputs"


def test_the_case_file_is_in_sync_with_the_source_solutions(tmp_path):
    with student_course.viewing(COURSE.student_view()):
        save_cases(check_cases(COURSE), tmp_path / "cases.npz")
    # The same cases, inputs and expected values; the values to float32 rounding, because BLAS on
    # another processor rounds the last bits of the same sums differently.
    made, stored = np.load(tmp_path / "cases.npz"), np.load(CASES_FILE)
    assert sorted(made.files) == sorted(stored.files), "run make outputs"
    for key in made.files:
        a, b = made[key], stored[key]
        assert a.dtype == b.dtype and a.shape == b.shape, f"{key}: run make outputs"
        if a.dtype.kind in "fc":
            assert np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True), f"{key}: run make outputs"
        else:
            assert np.array_equal(a, b), f"{key}: run make outputs"


def test_the_case_file_holds_visible_cases_with_results_and_nothing_hidden():
    cases = load_cases()
    assert cases and not any(c.hidden for c in cases)
    for case in cases:
        assert case.raises or case.expected, f"{case.exercise} / {case.name} has no expected result"


def test_the_student_view_holds_no_solution_answer_or_alternative():
    from attention_course.model.reference import solution_lines

    text = COURSE_FILE.read_text()
    graded = json.dumps(json.loads(text)["items"])  # practice questions, ungraded, carry their answers
    assert '"answer"' not in graded and "alternatives" not in text and "edits" not in text
    for item in COURSE.exercises():
        lines = [line for line in solution_lines(COURSE, item) if len(line) > 12]
        assert lines and sum(line in text for line in lines) * 2 < len(lines), f"{item.name}: solution in course.json"
