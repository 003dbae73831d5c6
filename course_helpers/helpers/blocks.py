"""Why a transformer block has its residual connections: train a stack with and without them.

The task: sequences of `LENGTH` random tokens (of `VOCAB`); at every position from the third on,
name the token two places back. Under a causal mask that takes attention in at least one block
and the position of each token, so a stack of blocks has to carry what it found from one block to
the next. The model: token embedding plus a learned position embedding, `layers` blocks made by
the notebook's own `make_block()`, a LayerNorm and a linear read-out. Training is float64, seeded
and single-threaded, so the printed numbers are the same on every run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .demos import attempt, causal
from .i18n import _
from .trained_heads import Adam, one_thread

VOCAB = 10
LENGTH = 8
BATCH = 32
STEPS = 60
LEARNING_RATE = 2e-2
CAUSAL = causal(LENGTH)  # True = may attend


def your_causal_mask(causal_mask: Callable[[int], torch.Tensor], T: int) -> torch.Tensor:
    """Your `causal_mask(T)` when it returns the causal mask; otherwise, after one sentence saying
    why, the course's own, so that the cells below run either way."""
    right = causal(T)
    mask = attempt("causal_mask", causal_mask, T)
    if mask is not None and not (
        isinstance(mask, torch.Tensor)
        and mask.dtype == torch.bool
        and mask.shape == right.shape
        and torch.equal(mask, right)
    ):
        print(_("Your `causal_mask({T})` is not the causal mask yet; its check above says why.").format(T=T))
        mask = None
    if mask is None:
        print(_("Until then, the block uses the course's causal mask."))
        return right
    return mask


def two_back(seq: torch.Tensor) -> torch.Tensor:
    """The target of every position: the token two places back (the first two: themselves)."""
    return torch.cat([seq[:, :2], seq[:, :-2]], 1)


class Stack(nn.Module):
    """Embeddings, `layers` blocks from `make_block()`, a LayerNorm and a read-out."""

    def __init__(self, make_block: Callable[[], nn.Module], d_model: int, layers: int):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, d_model)
        self.positions = nn.Parameter(0.1 * torch.randn(LENGTH, d_model))
        self.blocks = nn.ModuleList(make_block() for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.read_out = nn.Linear(d_model, VOCAB)

    def forward(self, seq: torch.Tensor) -> torch.Tensor:
        x = self.tokens(seq) + self.positions
        for block in self.blocks:
            x = block(x, mask=CAUSAL)
        return self.read_out(self.norm(x))


@dataclass
class Result:
    """One training run: the loss every 20 steps and the accuracy on fresh sequences."""

    losses: list[float]
    accuracy: float


def train_stack(
    make_block: Callable[[], nn.Module], d_model: int, layers: int = 4, steps: int = STEPS, seed: int = 2
) -> Result:
    """Train a `Stack` on the two-back task with Adam (written out, `trained_heads.Adam`); float64,
    seeded, one thread."""
    with one_thread():
        torch.manual_seed(seed)
        generator = torch.Generator().manual_seed(seed)
        model = Stack(make_block, d_model, layers).double()
        optimiser = Adam(model.parameters(), lr=LEARNING_RATE)  # torch.optim would import torch._dynamo (1.5 s)
        losses = []
        for step in range(steps):
            seq = torch.randint(0, VOCAB, (BATCH, LENGTH), generator=generator)
            loss = F.cross_entropy(model(seq).reshape(-1, VOCAB), two_back(seq).reshape(-1))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            if step % 20 == 0 or step == steps - 1:
                losses.append(loss.item())
        with torch.no_grad():
            seq = torch.randint(0, VOCAB, (512, LENGTH), generator=generator)
            right = model.eval()(seq).argmax(-1) == two_back(seq)
    return Result(losses, right[:, 2:].double().mean().item())
