"""The experiments behind 01's argument, computed from seeded random data: how the spread of
q.k grows with d_k, how sharp the softmax gets, and how much gradient flows back to each query.
Each returns plain rows (dicts) that a notebook prints or plots.
"""

from __future__ import annotations

import functools
import math

import torch


def unit_normal(*shape: int, seed: int) -> torch.Tensor:
    """Entries with mean 0 and variance 1, reproducible from `seed`."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def score_variance(d_ks, samples: int = 20000, seed: int = 0) -> list[dict]:
    """Measured variance of q.k for unit-variance q and k, raw and divided by sqrt(d_k)."""
    rows = []
    for d_k in d_ks:
        q, k = unit_normal(2, samples, d_k, seed=seed + d_k)
        scores = (q * k).sum(-1)  # one dot product per sample
        rows.append({"d_k": d_k, "var_raw": scores.var().item(), "var_scaled": (scores / math.sqrt(d_k)).var().item()})
    return rows


def linear_output_variance(d: int = 512, samples: int = 4096, seed: int = 0) -> float:
    """The variance of nn.Linear(d, d)'s output, default initialisation, for unit-variance input."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        layer = torch.nn.Linear(d, d)
    with torch.no_grad():
        return layer(unit_normal(samples, d, seed=seed + 1)).var().item()


SMALL_GRADIENT = 1e-3  # below this a query's gradient counts as "almost none"


@functools.lru_cache(maxsize=1)
def _gradient_draw(d_k: int, n_keys: int, trials: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The queries, keys and read-out of `softmax_gradients`: drawn once for its unscaled and its
    scaled call (at d_k = 1024 the draw is most of the time)."""
    return (
        unit_normal(trials, 1, d_k, seed=seed + 1),
        unit_normal(trials, n_keys, d_k, seed=seed + 2),
        unit_normal(trials, n_keys, seed=seed + 3),
    )


def softmax_gradients(d_k: int, scaled: bool, n_keys: int = 8, trials: int = 2000, seed: int = 0) -> dict:
    """What the softmax lets flow back, query by query, at one d_k (computed by autograd).

    `trials` queries, each against `n_keys` keys; q and k have independent unit-normal entries. The
    loss is a random linear read-out of the weights. Returns the weights `(trials, n_keys)`, and per
    query the norm of the gradient with respect to its scores (`score_grad`) and with respect to
    the query vector itself (`query_grad`, over its d_k coordinates)."""
    q, k, readout = _gradient_draw(d_k, n_keys, trials, seed)
    q = q.clone().requires_grad_(True)
    scores = (q @ k.transpose(-2, -1)).squeeze(1)
    if scaled:
        scores = scores / math.sqrt(d_k)
    scores.retain_grad()
    weights = torch.softmax(scores, dim=-1)
    (weights * readout).sum().backward()
    return {
        "weights": weights.detach(),
        "scores": scores.detach(),
        "score_grad": scores.grad.norm(dim=-1),
        "query_grad": q.grad.squeeze(1).norm(dim=-1),
    }


def softmax_sharpness(d_k: int, scaled: bool, n_keys: int = 8, trials: int = 2000, seed: int = 0) -> dict:
    """How peaked the softmax is at one d_k, and how its gradient is spread over the queries.

    The mean largest weight and entropy (bits); the gradient with respect to the scores as a mean,
    a median and the share of queries that get less than SMALL_GRADIENT; and the same for the
    gradient with respect to the queries (see `softmax_gradients`)."""
    g = softmax_gradients(d_k, scaled, n_keys, trials, seed)
    weights, score_grad, query_grad = g["weights"], g["score_grad"], g["query_grad"]
    entropy = -(weights * torch.log2(weights.clamp_min(1e-30))).sum(-1)
    return {
        "d_k": d_k,
        "scaled": scaled,
        "max_weight": weights.max(-1).values.mean().item(),
        "entropy_bits": entropy.mean().item(),
        "grad_norm": score_grad.mean().item(),
        "grad_median": score_grad.median().item(),
        "grad_small": (score_grad < SMALL_GRADIENT).float().mean().item(),
        "q_grad_mean": query_grad.mean().item(),
        "q_grad_median": query_grad.median().item(),
        "q_grad_small": (query_grad < SMALL_GRADIENT).float().mean().item(),
        "score_std": g["scores"].std().item(),
    }


SHARPNESS_KEYS = (
    "max_weight",
    "entropy_bits",
    "grad_norm",
    "grad_median",
    "grad_small",
    "q_grad_mean",
    "q_grad_median",
)


def sharpness_table(d_ks, **kwargs) -> list[dict]:
    """`softmax_sharpness` for each d_k, unscaled and scaled, as one row per d_k."""
    rows = []
    for d_k in d_ks:
        raw, scaled = softmax_sharpness(d_k, False, **kwargs), softmax_sharpness(d_k, True, **kwargs)
        rows.append(
            {
                "d_k": d_k,
                **{f"{key}_raw": raw[key] for key in SHARPNESS_KEYS},
                **{f"{key}_scaled": scaled[key] for key in SHARPNESS_KEYS},
            }
        )
    _gradient_draw.cache_clear()  # the largest draw is 64 MB: not kept once the table is made
    return rows
