"""Attention does not see word order: the numbers behind notebook 02's section on positions.

`permutation_demo` runs the student's attention on a sentence and on the same sentence shuffled,
and shows that the output is the same rows, shuffled the same way (attention is permutation
equivariant). `word_order_demo` compares "dog bites man" with "man bites dog": without position
information the output at "dog" is the same in both; adding a sinusoidal position encoding
(`sinusoidal`, as in "Attention Is All You Need") makes it differ. Inputs are float64, so a
difference is either below 1e-12 (rounding) or far above it, on every machine.
"""

from __future__ import annotations

import math

import torch

from .feedback import MissingImplementation, call_student
from .i18n import _
from .i18n import word as in_language

D_MODEL = 8
VOCAB_SEED = 11


def sinusoidal(length: int, d_model: int) -> torch.Tensor:
    """(length, d_model): PE[t, 2i] = sin(t / 10000^(2i/d_model)), PE[t, 2i+1] = cos(same)."""
    t = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    frequencies = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    encoding = torch.zeros(length, d_model, dtype=torch.float64)
    encoding[:, 0::2] = torch.sin(t * frequencies)
    encoding[:, 1::2] = torch.cos(t * frequencies)
    return encoding


def _embed(words: list[str]) -> torch.Tensor:
    """(T, D_MODEL) float64 embeddings; equal words get equal vectors (no position in them)."""
    vocab = sorted({"the", "cat", "sat", "on", "mat", "dog", "bites", "man"})
    table = torch.randn(len(vocab), D_MODEL, generator=torch.Generator().manual_seed(VOCAB_SEED), dtype=torch.float64)
    return table[[vocab.index(w) for w in words]]


def _projections() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(VOCAB_SEED + 1)
    return tuple(
        torch.randn(D_MODEL, D_MODEL, generator=gen, dtype=torch.float64) / math.sqrt(D_MODEL) for _index in range(3)
    )


def _self_attention(attention, x: torch.Tensor) -> torch.Tensor:
    W_q, W_k, W_v = _projections()
    return call_student(
        "scaled_dot_product_attention", attention, x @ W_q, x @ W_k, x @ W_v, then=_("run this cell again")
    )[0]


def _bound(diff: float) -> str:
    """A difference in words that does not change from machine to machine."""
    if diff < 1e-12:
        return _("below 1e-12 (equal up to rounding)")
    return f"{diff:.2f}"


def permutation_demo(
    attention, words=("the", "cat", "sat", "on", "the", "mat"), order=(5, 2, 0, 4, 1, 3)
) -> float | None:
    """Print that attention of a shuffled sentence is the shuffled attention of the sentence;
    return the largest difference (None, after one sentence, when the function is missing)."""
    x = _embed(list(words))
    order_t = torch.tensor(order)
    try:
        out = _self_attention(attention, x)
        out_shuffled = _self_attention(attention, x[order_t])
    except MissingImplementation as missing:
        print(_("This demo uses your `scaled_dot_product_attention`. {missing}").format(missing=missing))
        return None
    diff = (out_shuffled - out[order_t]).abs().max().item()
    print(_("sentence:          {words}").format(words=" ".join(in_language(w) for w in words)))
    print(_("shuffled sentence: {words}").format(words=" ".join(in_language(words[i]) for i in order)))
    print(
        _("output of the shuffled sentence vs the output rows shuffled the same way: largest difference {diff}").format(
            diff=_bound(diff)
        )
    )
    return diff


def word_order_demo(attention) -> tuple[float, float] | None:
    """Print the output at "dog" in "dog bites man" and "man bites dog", without and with a
    sinusoidal position encoding; return the two largest differences."""
    first, second = ["dog", "bites", "man"], ["man", "bites", "dog"]
    encoding = sinusoidal(3, D_MODEL)
    try:
        plain = [_self_attention(attention, _embed(s))[s.index("dog")] for s in (first, second)]
        placed = [_self_attention(attention, _embed(s) + encoding)[s.index("dog")] for s in (first, second)]
    except MissingImplementation as missing:
        print(_("This demo uses your `scaled_dot_product_attention`. {missing}").format(missing=missing))
        return None
    without = (plain[0] - plain[1]).abs().max().item()
    with_positions = (placed[0] - placed[1]).abs().max().item()
    print(_('output at "dog", "dog bites man" vs "man bites dog":'))
    print("  " + _("without positions:           largest difference {diff}").format(diff=_bound(without)))
    print("  " + _("with sinusoidal positions:   largest difference {diff}").format(diff=_bound(with_positions)))
    return without, with_positions
