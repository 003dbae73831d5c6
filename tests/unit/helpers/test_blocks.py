"""The residual experiment of notebook 07: with residual connections a stack of four blocks learns
the two-back task, without them it does not in the same steps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from helpers import blocks
from helpers.demos import BuiltinAttention


class _Block(nn.Module):
    """A pre-LN block like notebook 06's, with the residual connections optional."""

    def __init__(self, d_model: int, residual: bool):
        super().__init__()
        self.residual = residual
        self.attention = BuiltinAttention(d_model, 2)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.feed_forward = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x, mask=None):
        h = self.norm1(x)
        attended, _ = self.attention(h, h, h, mask=mask)
        x = attended + (x if self.residual else 0)
        return self.feed_forward(self.norm2(x)) + (x if self.residual else 0)


def test_the_target_is_the_token_two_places_back():
    seq = torch.tensor([[4, 7, 1, 9, 3]])
    assert blocks.two_back(seq).tolist() == [[4, 7, 4, 7, 1]]


@pytest.mark.slow
def test_the_residual_connections_let_a_stack_of_four_blocks_learn():
    with_residual = blocks.train_stack(lambda: _Block(16, True), d_model=16)
    without = blocks.train_stack(lambda: _Block(16, False), d_model=16)
    assert with_residual.accuracy > 0.9 and without.accuracy < 0.3, (with_residual, without)
    assert with_residual.losses[-1] < without.losses[-1] / 3
    again = blocks.train_stack(lambda: _Block(16, True), d_model=16)
    assert again == with_residual  # seeded, float64, one thread: the same numbers every run


def test_training_a_stack_does_not_import_torch_dynamo():
    """torch.optim's optimisers import torch._dynamo on first use (about 1.5 s, most of notebook
    07's time); the stack trains with the written-out Adam instead."""
    code = (
        "import sys\n"
        "from torch import nn\n"
        "from helpers import blocks\n"
        "class Plain(nn.Linear):\n"
        "    def forward(self, x, mask=None):\n"
        "        return super().forward(x)\n"
        "blocks.train_stack(lambda: Plain(4, 4), d_model=4, layers=1, steps=1)\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    helpers = Path(blocks.__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=helpers, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out
