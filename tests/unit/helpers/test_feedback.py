"""`helpers.feedback.call_student`: how labs and demos talk about a student's unfinished code."""

from __future__ import annotations

import pytest

import attention_course.grading  # noqa: F401  (puts the helpers on sys.path)
from helpers.feedback import MissingImplementation, call_student


def stub(q, k):
    raise NotImplementedError()


def test_a_stub_asks_for_the_exercise_first():
    with pytest.raises(MissingImplementation) as missing:
        call_student("raw_scores", stub, 1, 2)
    assert str(missing.value) == "Implement `raw_scores` above first, then move the slider again."
    assert missing.value.__cause__ is None and missing.value.__suppress_context__  # no chained traceback


def test_another_error_is_named_with_its_message_and_points_to_the_check():
    def broken(x, num_heads):
        raise ValueError("d_model = 12 is not divisible by num_heads = 5")

    with pytest.raises(
        MissingImplementation,
        match=r"^Your `split_heads` raised ValueError: d_model = 12 is not "
        r"divisible by num_heads = 5\. Its check above says more\.$",
    ):
        call_student("split_heads", broken, None, num_heads=5, then="run this cell again")


def test_a_working_function_returns_its_result():
    assert call_student("raw_scores", lambda q, k: q * k, 3, k=4) == 12
