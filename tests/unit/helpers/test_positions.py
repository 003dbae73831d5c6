"""Notebook 02's section on positions: attention is permutation-equivariant, so word order is
invisible without position information, and a sinusoidal encoding makes it visible."""

from __future__ import annotations

import math

import pytest
import torch

import attention_course.grading  # noqa: F401
from attention_course.model.manifest import load
from attention_course.model.reference import reference
from helpers import positions

COURSE = load()
ATTENTION = reference(COURSE, COURSE.item("scaled_dot_product_attention"))


def test_sinusoidal_encoding_follows_the_paper():
    pe = positions.sinusoidal(10, 8)
    assert pe.shape == (10, 8) and pe.abs().max() <= 1
    assert torch.equal(pe[0], torch.tensor([0.0, 1.0] * 4, dtype=torch.float64))
    assert pe[3, 2] == pytest.approx(math.sin(3 / 10000 ** (2 / 8)))
    assert pe[3, 3] == pytest.approx(math.cos(3 / 10000 ** (2 / 8)))
    assert len({tuple(row.tolist()) for row in pe}) == 10, "every position has its own pattern"


def test_shuffling_the_input_shuffles_the_output(capsys):
    assert positions.permutation_demo(ATTENTION) < 1e-12
    assert "below 1e-12" in capsys.readouterr().out


def test_the_demo_notices_an_attention_that_sees_positions():
    def position_aware(q, k, v, mask=None):
        out, weights = ATTENTION(q, k, v, mask)
        return out + torch.arange(out.shape[-2], dtype=out.dtype).unsqueeze(-1), weights

    assert positions.permutation_demo(position_aware) > 0.5


def test_word_order_is_invisible_without_positions_and_visible_with_them(capsys):
    without, with_positions = positions.word_order_demo(ATTENTION)
    assert without < 1e-12 < 0.1 < with_positions
    out = capsys.readouterr().out
    assert "without positions" in out and "with sinusoidal positions" in out


def test_a_missing_function_gives_one_sentence(capsys):
    def stub(*args, **kwargs):
        raise NotImplementedError()

    assert positions.permutation_demo(stub) is None and positions.word_order_demo(stub) is None
    assert "Implement `scaled_dot_product_attention`" in capsys.readouterr().out
