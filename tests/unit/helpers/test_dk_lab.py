"""The d_k lab computes what it claims for each slider value, from the student's functions."""

from __future__ import annotations

import math

import pytest
import torch

import attention_course.grading  # noqa: F401
from attention_course.model.manifest import load
from attention_course.model.reference import reference as solution_of
from helpers.dk_lab import D_K_VALUES, DkLab, MissingImplementation, dk_numbers, readout_text

COURSE = load()


def reference(name: str):
    """The instructor's solution of an exercise, from its source notebook."""
    return solution_of(COURSE, COURSE.item(name))


def test_unscaled_scores_spread_like_sqrt_d_k_and_the_softmax_collapses():
    small, large = dk_numbers(1, scaled=False), dk_numbers(1024, scaled=False)
    assert large.score_std == pytest.approx(32, rel=0.1)
    assert large.max_weight > 0.9 > small.max_weight
    assert large.grad_norm < small.grad_norm / 5
    assert float(large.weights.max()) > 0.9 and large.weights.sum().item() == pytest.approx(1, abs=1e-5)


def test_scaled_numbers_stay_steady_across_d_k():
    rows = [dk_numbers(d, scaled=True) for d in (1, 32, 1024)]
    assert all(r.score_std == pytest.approx(1, rel=0.15) for r in rows)
    grads = [r.grad_norm for r in rows]
    assert max(grads) < 1.2 * min(grads)


def test_the_student_functions_are_used_and_agree_with_torch():
    by_torch = dk_numbers(64, scaled=True)
    by_student = dk_numbers(
        64, scaled=True, raw_scores=reference("raw_scores"), scaled_scores=reference("scaled_scores")
    )
    by_attention = dk_numbers(64, scaled=True, attention=reference("scaled_dot_product_attention"))
    assert by_student.source == "your scaled_scores" and by_attention.source.startswith("your")
    assert torch.allclose(by_student.weights, by_torch.weights, atol=1e-6)
    assert torch.allclose(by_attention.weights, by_torch.weights, atol=1e-5)
    assert by_attention.grad_norm == pytest.approx(by_torch.grad_norm, rel=1e-4)
    unscaled = dk_numbers(256, scaled=False, attention=reference("scaled_dot_product_attention"))
    assert unscaled.max_weight == pytest.approx(dk_numbers(256, scaled=False).max_weight, rel=1e-4)


def test_a_missing_exercise_gives_one_sentence_not_a_traceback():
    def stub(q, k):
        raise NotImplementedError()

    with pytest.raises(MissingImplementation, match="Implement `raw_scores` above first"):
        dk_numbers(16, scaled=False, raw_scores=stub)
    lab = DkLab(raw_scores=stub)
    assert "Implement `raw_scores`" in lab.readout.value and lab.image.value == b""


def test_a_wrong_shape_is_reported():
    with pytest.raises(MissingImplementation, match="shape"):
        dk_numbers(16, scaled=False, raw_scores=lambda q, k: q.sum(-1))


def test_moving_the_slider_changes_the_readout_and_the_drawing():
    lab = DkLab(d_k=1)
    before = (lab.readout.value, lab.image.value)
    lab.slider.value = 1024
    assert lab.readout.value != before[0] and lab.image.value != before[1]
    assert lab.readout.value == readout_text(dk_numbers(1024, False))
    lab.toggle.value = True
    assert "scaled by 1/√d_k" in lab.readout.value
    assert lab.slider.options == tuple(D_K_VALUES) and D_K_VALUES[0] == 1 and D_K_VALUES[-1] == 1024
    assert lab.image.value[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_d_k_is_refused_with_a_message():
    with pytest.raises(ValueError, match="positive"):
        dk_numbers(0, scaled=False)
    assert math.isfinite(dk_numbers(2, scaled=False).grad_norm)
