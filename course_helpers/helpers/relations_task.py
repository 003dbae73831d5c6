"""The num_heads lab's task: three relations at once.

Sequences of `LENGTH` = 8 tokens in which 4 different letters (of `VOCAB` = 10) appear twice each,
in random order. At every position the model names three things, and no position may attend to
itself, so each answer has to come through attention:

1. the letter just before it ("previous", about positions; position 0 has none),
2. the letter just after it ("next", about positions; the last position has none),
3. where the other copy of its own letter is ("other copy", about content).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .i18n import _

VOCAB = 10
LENGTH = 8
LETTERS = "ABCDEFGHIJ"
OUTPUTS = 2 * VOCAB + LENGTH  # logits: previous letter, next letter, position of the other copy
NO_SELF = ~torch.eye(LENGTH, dtype=torch.bool)  # True = may attend: every position but itself
IGNORED = -100


def relation_names() -> tuple[str, str, str]:
    """The three relations, in the language of the notebook."""
    return _("previous"), _("next"), _("other copy")


def make_batch(n: int, generator: torch.Generator) -> torch.Tensor:
    """(n, LENGTH) letter ids: 4 different letters, each twice, in random order."""
    letters = torch.rand(n, VOCAB, generator=generator).argsort(-1)[:, : LENGTH // 2]
    order = torch.rand(n, LENGTH, generator=generator).argsort(-1)
    return torch.cat([letters, letters], 1).gather(1, order)


def targets(seq: torch.Tensor) -> torch.Tensor:
    """(n, 3, LENGTH): previous letter, next letter, position of the other copy (IGNORED: no answer)."""
    previous, following = torch.full_like(seq, IGNORED), torch.full_like(seq, IGNORED)
    previous[:, 1:], following[:, :-1] = seq[:, :-1], seq[:, 1:]
    other = ((seq[:, :, None] == seq[:, None, :]) & NO_SELF).long().argmax(-1)
    return torch.stack([previous, following, other], 1)


def split_logits(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The read-out's (n, T, OUTPUTS) logits as the three answers' logits."""
    return logits[..., :VOCAB], logits[..., VOCAB : 2 * VOCAB], logits[..., 2 * VOCAB :]


def loss(logits: torch.Tensor, seq: torch.Tensor) -> torch.Tensor:
    """The sum of the three answers' cross-entropies."""
    want = targets(seq)
    return sum(
        F.cross_entropy(part.reshape(-1, part.shape[-1]), want[:, r].reshape(-1), ignore_index=IGNORED)
        for r, part in enumerate(split_logits(logits))
    )


def accuracy(logits: torch.Tensor, seq: torch.Tensor) -> list[float]:
    """The share of right answers for each relation, over the positions that have one."""
    want = targets(seq)
    shares = []
    for r, part in enumerate(split_logits(logits)):
        defined = want[:, r] != IGNORED
        shares.append((part.argmax(-1) == want[:, r])[defined].float().mean().item())
    return shares
