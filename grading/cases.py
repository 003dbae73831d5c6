"""Seeded test cases of every exercise: the visible ones the release checks show, and hidden ones.

Visible cases are small and chosen so that each common mistake gives a result of its own (for
instance `T_k == d_k` once, so that forgetting the transpose gives a wrong value, not a crash).
Hidden cases add what COURSE.md lists: random shapes, several batch axes, `T_q != T_k`,
`d_v != d_k`, float64, large scores, masks of every broadcast form. Every mask row lets each
query attend to at least one key.
"""
from __future__ import annotations

import torch

from helpers.exercises import PROJECTIONS, Case

SEED = 20261129


def _rand(gen: torch.Generator, *shape: int, dtype=torch.float32, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(dtype)


def random_mask(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    """A boolean mask with at least one True in every row (along the last axis)."""
    mask = torch.rand(*shape, generator=gen) > 0.5
    keep = torch.randint(shape[-1], shape[:-1] + (1,), generator=gen)
    return mask.scatter(-1, keep, True)


def causal_mask(t: int) -> torch.Tensor:
    """True on and below the diagonal: position i may attend to positions 0..i."""
    return torch.ones(t, t, dtype=torch.bool).tril()


def _scores_cases(exercise: str, gen: torch.Generator) -> list[Case]:
    def case(name, q_shape, k_shape, hidden=False, dtype=torch.float32, scale=1.0):
        return Case(exercise, name, {"q": _rand(gen, *q_shape, dtype=dtype, scale=scale),
                                     "k": _rand(gen, *k_shape, dtype=dtype, scale=scale)}, hidden=hidden)
    return [
        case("one sequence", (4, 8), (6, 8)),
        case("a batch", (3, 5, 16), (3, 7, 16)),
        case("T_k equal to d_k", (2, 3, 4), (2, 4, 4)),
        case("two batch axes", (2, 3, 5, 6), (2, 3, 4, 6), hidden=True),
        case("float64", (3, 7, 32), (3, 2, 32), hidden=True, dtype=torch.float64),
        case("large values", (2, 6, 64), (2, 5, 64), hidden=True, scale=10.0),
        case("one query", (4, 1, 9), (4, 11, 9), hidden=True),
        case("three batch axes", (2, 1, 2, 3, 5), (2, 1, 2, 4, 5), hidden=True),
    ]


def _sdpa_cases(gen: torch.Generator) -> list[Case]:
    ex = "scaled_dot_product_attention"

    def case(name, b, t_q, t_k, d_k, d_v, mask=None, hidden=False, dtype=torch.float32, scale=1.0):
        tensors = {"q": _rand(gen, *b, t_q, d_k, dtype=dtype, scale=scale),
                   "k": _rand(gen, *b, t_k, d_k, dtype=dtype, scale=scale),
                   "v": _rand(gen, *b, t_k, d_v, dtype=dtype)}
        if mask is not None:
            tensors["mask"] = mask
        return Case(ex, name, tensors, hidden=hidden)
    return [
        case("no mask", (2,), 3, 4, 8, 8),
        case("T_q != T_k and d_v != d_k", (2,), 5, 6, 8, 3),
        case("a causal mask", (1,), 5, 5, 8, 8, mask=causal_mask(5)),
        case("a padding mask per sequence", (2,), 3, 4, 8, 8, mask=random_mask(gen, (2, 1, 4))),
        case("large scores", (2,), 4, 4, 16, 8, scale=8.0),
        case("two batch axes", (2, 3), 4, 5, 6, 7, hidden=True),
        case("float64", (3,), 6, 2, 12, 5, hidden=True, dtype=torch.float64),
        case("no batch axis", (), 3, 7, 4, 2, hidden=True),
        case("mask over keys only", (2,), 4, 6, 8, 8, mask=random_mask(gen, (6,)), hidden=True),
        case("mask (T_q, T_k)", (3,), 4, 6, 8, 4, mask=random_mask(gen, (4, 6)), hidden=True),
        case("mask (B, T_q, T_k)", (3,), 4, 6, 8, 4, mask=random_mask(gen, (3, 4, 6)), hidden=True),
        case("mask (B, 1, 1, T_k) on two batch axes", (2, 3), 5, 4, 8, 8,
             mask=random_mask(gen, (2, 1, 1, 4)), hidden=True),
        case("large scores with a causal mask, float64", (2,), 6, 6, 32, 8, mask=causal_mask(6),
             hidden=True, dtype=torch.float64, scale=20.0),
        case("large scores with a mask", (2,), 5, 7, 32, 8, mask=random_mask(gen, (2, 5, 7)),
             hidden=True, scale=10.0),
    ]


def _split_cases(gen: torch.Generator) -> list[Case]:
    def case(name, b, t, d_model, heads, hidden=False, dtype=torch.float32, raises=None):
        return Case("split_heads", name, {"x": _rand(gen, b, t, d_model, dtype=dtype)},
                    params={"num_heads": heads}, hidden=hidden, raises=raises)
    return [
        case("12 features in 3 heads", 2, 5, 12, 3),
        case("8 features in 2 heads", 1, 4, 8, 2),
        case("10 features in 3 heads", 2, 3, 10, 3, raises="ValueError"),
        case("one head", 2, 3, 6, 1, hidden=True),
        case("one feature per head", 2, 3, 6, 6, hidden=True),
        case("float64", 3, 7, 24, 4, hidden=True, dtype=torch.float64),
        case("a longer sequence", 2, 17, 32, 8, hidden=True),
        case("12 features in 5 heads", 2, 2, 12, 5, hidden=True, raises="ValueError"),
    ]


def _concat_cases(gen: torch.Generator) -> list[Case]:
    def case(name, shape, hidden=False, dtype=torch.float32):
        return Case("concat_heads", name, {"x": _rand(gen, *shape, dtype=dtype)}, hidden=hidden)
    return [
        case("3 heads of 4 features", (2, 3, 5, 4)),
        case("2 heads of 6 features", (1, 2, 3, 6)),
        case("one head", (2, 1, 4, 5), hidden=True),
        case("float64", (3, 4, 6, 2), hidden=True, dtype=torch.float64),
        case("8 heads", (2, 8, 7, 3), hidden=True),
    ]


def projection_weights(gen: torch.Generator, d_model: int, bias: bool, dtype=torch.float32) -> dict:
    """Random weights (and biases) for W_q, W_k, W_v, W_o, named like a state dict."""
    tensors = {}
    for name in PROJECTIONS:
        tensors[f"{name}.weight"] = _rand(gen, d_model, d_model, dtype=dtype, scale=d_model ** -0.5)
        if bias:
            tensors[f"{name}.bias"] = _rand(gen, d_model, dtype=dtype, scale=0.5)
    return tensors


def _module_cases(exercise: str, gen: torch.Generator) -> list[Case]:
    def case(name, b, t_q, t_k, d_model, heads, bias=True, mask=None, hidden=False,
             dtype=torch.float32, cross=True):
        query = _rand(gen, b, t_q, d_model, dtype=dtype)
        key = _rand(gen, b, t_k, d_model, dtype=dtype) if cross else query.clone()
        value = _rand(gen, b, t_k, d_model, dtype=dtype) if cross else query.clone()
        tensors = {"query": query, "key": key, "value": value}
        if mask is not None:
            tensors["mask"] = mask
        tensors.update(projection_weights(gen, d_model, bias, dtype))
        return Case(exercise, name, tensors, params={"d_model": d_model, "num_heads": heads, "bias": bias},
                    hidden=hidden)
    cases = [
        case("self-attention", 2, 5, 5, 16, 4, cross=False),
        case("cross-attention, T_q != T_k", 2, 3, 6, 16, 4),
        case("cross-attention, same lengths", 1, 4, 4, 8, 2),
        case("no bias", 2, 4, 4, 12, 3, bias=False, cross=False),
        case("float64", 2, 5, 3, 16, 8, dtype=torch.float64, hidden=True),
        case("one head", 2, 4, 4, 8, 1, hidden=True),
        case("a head per feature", 1, 3, 5, 6, 6, hidden=True),
        case("a longer input", 3, 9, 11, 32, 4, hidden=True),
    ]
    if exercise == "MultiHeadAttention":
        cases += [
            case("a causal mask", 2, 5, 5, 16, 4, mask=causal_mask(5), cross=False),
            case("mask (B, 1, 1, T_k)", 3, 4, 6, 16, 4, mask=random_mask(gen, (3, 1, 1, 6)), hidden=True),
            case("mask (T_k,)", 2, 4, 6, 16, 2, mask=random_mask(gen, (6,)), hidden=True),
            case("mask (B, H, T_q, T_k)", 2, 4, 5, 12, 3, mask=random_mask(gen, (2, 3, 4, 5)), hidden=True),
            Case(exercise, "d_model=10 with 4 heads", {}, params={"d_model": 10, "num_heads": 4, "bias": True},
                 raises="ValueError"),
            Case(exercise, "d_model=12 with 5 heads", {}, params={"d_model": 12, "num_heads": 5, "bias": True},
                 raises="ValueError", hidden=True),
        ]
    return cases


def all_cases(seed: int = SEED) -> list[Case]:
    """Every case of every exercise, in a fixed order, from a fixed seed."""
    gen = torch.Generator().manual_seed(seed)
    return (_scores_cases("raw_scores", gen) + _scores_cases("scaled_scores", gen) + _sdpa_cases(gen)
            + _split_cases(gen) + _concat_cases(gen) + _module_cases("MultiHeadAttention", gen)
            + _module_cases("to_torch_mha", gen))
