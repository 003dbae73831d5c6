"""The numbers behind the demos say what the notebooks claim."""
from __future__ import annotations

import math

import pytest
import torch

import grading  # noqa: F401
from helpers import demos
from helpers.casefile import load_cases, save_cases
from helpers.exercises import Case


def test_score_variance_grows_like_d_k_and_scaling_brings_it_back_to_one():
    for row in demos.score_variance([1, 16, 256]):
        assert row["var_raw"] == pytest.approx(row["d_k"], rel=0.1)
        assert row["var_scaled"] == pytest.approx(1.0, rel=0.1)


def test_unscaled_softmax_saturates_and_its_gradient_vanishes_while_scaled_stays_steady():
    rows = demos.sharpness_table([1, 64, 1024], trials=500)
    raw_max = [r["max_weight_raw"] for r in rows]
    raw_grad = [r["grad_norm_raw"] for r in rows]
    assert raw_max == sorted(raw_max) and raw_max[-1] > 0.9
    assert raw_grad == sorted(raw_grad, reverse=True) and raw_grad[-1] < raw_grad[0] / 5
    scaled_grad = [r["grad_norm_scaled"] for r in rows]
    assert max(scaled_grad) < 1.2 * min(scaled_grad)


def test_softmax_sharpness_reports_the_score_spread():
    row = demos.softmax_sharpness(256, scaled=False, trials=500)
    assert row["score_std"] == pytest.approx(math.sqrt(256), rel=0.1)


def test_toy_sentence_gives_equal_words_equal_embeddings():
    tokens, x = demos.toy_sentence()
    assert tokens.count("the") == 2 and torch.equal(x[0], x[4])


def test_attempt_turns_a_missing_implementation_into_one_sentence(capsys):
    def stub(*args):
        raise NotImplementedError()
    assert demos.attempt("raw_scores", stub, 1) is None
    assert capsys.readouterr().out.strip() == ("This demo uses your `raw_scores`. "
                                               "Implement `raw_scores` above first, then run this cell again.")
    assert demos.attempt("raw_scores", lambda a: a + 1, 1) == 2


def test_case_file_round_trip_is_exact_and_deterministic(tmp_path):
    case = Case("raw_scores", "demo", {"q": torch.randn(2, 3), "k": torch.randn(4, 3)}, params={"n": 1},
                expected=(torch.randn(2, 4, dtype=torch.float64),), mistakes={"m": (torch.zeros(2, 4),)})
    save_cases([case], tmp_path / "a.npz")
    save_cases([case], tmp_path / "b.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    [back] = load_cases(tmp_path / "a.npz")
    assert list(back.tensors) == ["q", "k"] and torch.equal(back.tensors["q"], case.tensors["q"])
    assert torch.equal(back.expected[0], case.expected[0]) and back.mistakes["m"][0].shape == (2, 4)


def test_being_graded_follows_nbgrader_execution(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert not demos.being_graded()
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    assert not demos.being_graded()
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert demos.being_graded()
