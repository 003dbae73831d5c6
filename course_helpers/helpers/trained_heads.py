"""Heads that specialise for real: a tiny multi-head attention model trained in about a second.

The task. Sequences of `LENGTH` = 8 tokens in which 4 different tokens (of `VOCAB` = 10) appear
twice each, in random order. At every position the model must name two things:

1. the token just before it (relation "previous token"; position 0 has none), and
2. where the other copy of its own token is (relation "other copy").

No position may attend to itself (the mask is everything but the diagonal), so both answers have
to come through attention: the first relation is about positions, the second about content.

The model. Token embedding plus a learned position embedding, one multi-head attention layer (the
student's `MultiHeadAttention`, or PyTorch's `nn.MultiheadAttention` when that is not done yet),
and one linear read-out that answers both questions. Training is float64, seeded and
single-threaded, so the printed numbers are the same on every machine.

`train(...)` returns a `Training`: the maps of every head on one example sequence at a few steps,
the ideal map of each relation, how far each head is from each relation, and the accuracy of
both answers. Nothing here contains a solution of an exercise.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .demos import BuiltinAttention
from .exercises import PROJECTIONS, load_projections
from .feedback import MissingImplementation, call_student
from .i18n import _, ljust, rjust
from .i18n import width as text_width

VOCAB = 10
LENGTH = 8
D_MODEL = 16
STEPS = 300
BATCH = 64
LEARNING_RATE = 0.03
SEED = 2
SNAPSHOTS = (0, 25, 100, STEPS)
LETTERS = "ABCDEFGHIJ"
NO_SELF = ~torch.eye(LENGTH, dtype=torch.bool)  # True = may attend: every position but itself


def relation_names() -> tuple[str, str]:
    """The two relations of the task, in the language of the notebook."""
    return _("previous token"), _("other copy")


def make_batch(n: int, generator: torch.Generator) -> torch.Tensor:
    """(n, LENGTH) token ids: 4 different tokens, each twice, in random order."""
    tokens = torch.rand(n, VOCAB, generator=generator).argsort(-1)[:, : LENGTH // 2]
    order = torch.rand(n, LENGTH, generator=generator).argsort(-1)
    return torch.cat([tokens, tokens], 1).gather(1, order)


def ideal_maps(seq: torch.Tensor) -> torch.Tensor:
    """(n, 2, LENGTH, LENGTH): the attention map of each relation, one-hot rows.

    Relation 0 (previous token): row t is 1 at t - 1; row 0 is all zeros (no previous token).
    Relation 1 (other copy): row t is 1 where the other copy of token t sits.
    """
    n = seq.shape[0]
    previous = torch.zeros(n, LENGTH, LENGTH, dtype=torch.float64)
    previous[:, torch.arange(1, LENGTH), torch.arange(LENGTH - 1)] = 1.0
    other = ((seq[:, :, None] == seq[:, None, :]) & NO_SELF).double()
    return torch.stack([previous, other], 1)


def targets(seq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The two answers at every position: the previous token (-100 at position 0: no answer) and
    the position of the other copy."""
    previous = torch.full_like(seq, -100)
    previous[:, 1:] = seq[:, :-1]
    return previous, ideal_maps(seq)[:, 1].argmax(-1)


class TinyModel(nn.Module):
    """Embeddings of tokens and positions, one attention layer, one read-out for both answers."""

    def __init__(self, attention: nn.Module):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, D_MODEL)
        self.positions = nn.Parameter(torch.randn(LENGTH, D_MODEL))  # learned position embedding
        self.attention = attention
        self.readout = nn.Linear(D_MODEL, VOCAB + LENGTH)

    def forward(self, seq: torch.Tensor):
        x = self.tokens(seq) + self.positions
        out, weights = self.attention(x, x, x, mask=NO_SELF)
        logits = self.readout(out)
        return logits[..., :VOCAB], logits[..., VOCAB:], weights


def _loss(model: TinyModel, seq: torch.Tensor) -> torch.Tensor:
    previous, other = targets(seq)
    token_logits, position_logits, _weights = model(seq)
    return F.cross_entropy(token_logits.reshape(-1, VOCAB), previous.reshape(-1)) + F.cross_entropy(
        position_logits.reshape(-1, LENGTH), other.reshape(-1)
    )


def distances(weights: torch.Tensor, ideal: torch.Tensor) -> torch.Tensor:
    """(H, 2): how far each head's map is from each relation's, averaged over the rows where the
    relation is defined: half the L1 distance between the rows, 0 = the same map, 1 = no overlap
    (for a one-hot ideal row it is 1 minus the weight on the ideal key).

    weights: (n, H, T, T); ideal: (n, 2, T, T).
    """
    defined = ideal.sum(-1) > 0  # (n, 2, T)
    gap = 0.5 * (weights.double()[:, :, None] - ideal[:, None]).abs().sum(-1)  # (n, H, 2, T)
    mask = defined[:, None].expand_as(gap)
    return (gap * mask).sum((0, 3)) / mask.sum((0, 3))


class Adam:
    """Adam (Kingma and Ba), written out: the same update as torch.optim.Adam's defaults, without
    the one-second import that PyTorch's optimisers trigger on first use."""

    def __init__(self, parameters, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        self.parameters = [p for p in parameters if p.requires_grad]
        self.lr, self.betas, self.eps, self.steps = lr, betas, eps, 0
        self.moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in self.parameters]

    def zero_grad(self) -> None:
        for p in self.parameters:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.steps += 1
        b1, b2 = self.betas
        for p, (m, v) in zip(self.parameters, self.moments):
            if p.grad is None:
                continue
            m.mul_(b1).add_(p.grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            denominator = (v / (1 - b2**self.steps)).sqrt_().add_(self.eps)
            p.addcdiv_(m, denominator, value=-self.lr / (1 - b1**self.steps))


@contextlib.contextmanager
def one_thread():
    """Run on one CPU thread (the same order of additions, so the same numbers, everywhere)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _seeded_projections(seed: int) -> dict[str, torch.Tensor]:
    """Initial W_q..W_o (uniform like nn.Linear's default), the same whichever class holds them."""
    gen = torch.Generator().manual_seed(seed)
    bound = D_MODEL**-0.5
    tensors = {}
    for name in PROJECTIONS:
        tensors[f"{name}.weight"] = (torch.rand(D_MODEL, D_MODEL, generator=gen, dtype=torch.float64) * 2 - 1) * bound
        tensors[f"{name}.bias"] = torch.zeros(D_MODEL, dtype=torch.float64)
    return tensors


def build_attention(mha_class, num_heads: int, seed: int = SEED) -> tuple[nn.Module, str, str]:
    """(attention module in float64, which code it is, a sentence when it is the fallback).

    The student's class is used when it builds, takes float64 and returns (B, T, d_model) and
    (B, H, T, T) on a probe; its W_q..W_o are set to seeded values, so any right class trains to
    the same numbers. Otherwise PyTorch's nn.MultiheadAttention (through `BuiltinAttention`).
    """
    reason = ""
    if mha_class is not None:
        try:
            then = _("run this cell again")
            module = call_student("MultiHeadAttention", mha_class, D_MODEL, num_heads, then=then).double()
            load_projections(module, _seeded_projections(seed))
            probe = torch.zeros(2, LENGTH, D_MODEL, dtype=torch.float64)
            out, weights = call_student("MultiHeadAttention", module, probe, probe, probe, mask=NO_SELF, then=then)
            if tuple(out.shape) != (2, LENGTH, D_MODEL) or tuple(weights.shape) != (2, num_heads, LENGTH, LENGTH):
                raise MissingImplementation(
                    _(
                        "Your `MultiHeadAttention` returned shapes {out} and {weights}; its check above says more."
                    ).format(out=tuple(out.shape), weights=tuple(weights.shape))
                )
            return module, _("your MultiHeadAttention"), ""
        except MissingImplementation as missing:
            reason = str(missing)
        except Exception as exc:  # e.g. no W_q: the demo falls back, the check names the problem
            reason = _(
                "Your `MultiHeadAttention` cannot be trained here ({kind}: {text}); its check above says more."
            ).format(kind=type(exc).__name__, text=exc)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        module = BuiltinAttention(D_MODEL, num_heads).double()
    sentence = _("{reason} This demo trains PyTorch's nn.MultiheadAttention instead.").format(reason=reason).strip()
    return module, _("nn.MultiheadAttention"), sentence


@dataclass
class Training:
    """What one training run shows."""

    num_heads: int
    source: str  # which attention code was trained
    fallback: str  # one sentence when it is not the student's
    example: list[str]  # the example sequence, as letters
    snapshots: dict[int, torch.Tensor] = field(default_factory=dict)  # step -> (H, T, T) maps on the example
    ideal: torch.Tensor | None = None  # (2, T, T) ideal maps of the example
    distance: torch.Tensor | None = None  # (H, 2) on a fresh evaluation batch
    accuracy: tuple[float, float] = (0.0, 0.0)  # previous token, other copy
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def matched(self) -> list[int]:
        """For each head, the relation it is closest to."""
        return self.distance.argmin(-1).tolist()


def train(mha_class=None, num_heads: int = 2, steps: int = STEPS, seed: int = SEED, snapshots=SNAPSHOTS) -> Training:
    """Train the tiny model with `num_heads` heads; float64, seeded, on one thread."""
    attention, source, fallback = build_attention(mha_class, num_heads, seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = TinyModel(attention).double()
    data = torch.Generator().manual_seed(seed)
    example = make_batch(1, torch.Generator().manual_seed(seed + 1000))
    evaluation = make_batch(512, torch.Generator().manual_seed(seed + 2000))
    result = Training(
        num_heads, source, fallback, [LETTERS[i] for i in example[0].tolist()], ideal=ideal_maps(example)[0]
    )
    optimiser = Adam(model.parameters(), lr=LEARNING_RATE)
    start = time.perf_counter()
    with one_thread():
        for step in range(steps + 1):
            if step in snapshots:
                with torch.no_grad():
                    result.snapshots[step] = model(example)[2][0].detach().clone()
            if step == steps:
                break
            loss = _loss(model, make_batch(BATCH, data))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            result.losses.append(loss.item())
        with torch.no_grad():
            token_logits, position_logits, weights = model(evaluation)
    result.seconds = time.perf_counter() - start
    previous, other = targets(evaluation)
    result.accuracy = (
        (token_logits.argmax(-1) == previous)[:, 1:].double().mean().item(),
        (position_logits.argmax(-1) == other).double().mean().item(),
    )
    result.distance = distances(weights, ideal_maps(evaluation))
    return result


def report(result: Training) -> str:
    """The numbers of a run as a few aligned lines (2 decimals: stable from machine to machine)."""
    names = relation_names()
    heads = (_("{count} head") if result.num_heads == 1 else _("{count} heads")).format(count=result.num_heads)
    lines = [
        _("{heads} ({source}), {steps} training steps: accuracy {name0} {acc0:.2f}, {name1} {acc1:.2f}").format(
            heads=heads,
            source=result.source,
            steps=len(result.losses),
            name0=names[0],
            acc0=result.accuracy[0],
            name1=names[1],
            acc1=result.accuracy[1],
        )
    ]
    width = max(text_width(n) for n in names) + 2
    lines.append("  " + _("distance from each relation (0 = the same map, 1 = no overlap):"))
    lines.append("  " + " " * 8 + "".join(rjust(n, width) for n in names))
    for h in range(result.num_heads):
        label = ljust(_("head {h}").format(h=h), 8)
        lines.append("  " + label + "".join(f"{d:.2f}".rjust(width) for d in result.distance[h].tolist()))
    return "\n".join(lines)
