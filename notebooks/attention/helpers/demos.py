"""The numbers behind the lesson's demos, computed from seeded random data.

Each function returns plain rows (dicts) that a notebook prints or plots, so the same numbers
feed tables, figures and, later, the sliders.
"""
from __future__ import annotations

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
        scores = (q * k).sum(-1)            # one dot product per sample
        rows.append({"d_k": d_k, "var_raw": scores.var().item(),
                     "var_scaled": (scores / math.sqrt(d_k)).var().item()})
    return rows


def softmax_sharpness(d_k: int, scaled: bool, n_keys: int = 8, trials: int = 2000, seed: int = 0) -> dict:
    """How peaked softmax is, and how much gradient flows back through it, at one d_k.

    For `trials` queries against `n_keys` keys: the mean largest weight, the mean entropy in bits,
    and the mean norm of the gradient of a random linear read-out of the weights with respect
    to the scores (computed by autograd).
    """
    q = unit_normal(trials, 1, d_k, seed=seed + 1)
    k = unit_normal(trials, n_keys, d_k, seed=seed + 2)
    readout = unit_normal(trials, n_keys, seed=seed + 3)
    scores = (q @ k.transpose(-2, -1)).squeeze(1)
    if scaled:
        scores = scores / math.sqrt(d_k)
    scores = scores.detach().requires_grad_(True)
    weights = torch.softmax(scores, dim=-1)
    (weights * readout).sum().backward()
    entropy = -(weights * torch.log2(weights.clamp_min(1e-30))).sum(-1)
    return {"d_k": d_k, "scaled": scaled, "max_weight": weights.max(-1).values.mean().item(),
            "entropy_bits": entropy.mean().item(), "grad_norm": scores.grad.norm(dim=-1).mean().item(),
            "score_std": scores.detach().std().item()}


def sharpness_table(d_ks, **kwargs) -> list[dict]:
    """`softmax_sharpness` for each d_k, unscaled and scaled, as one row per d_k."""
    rows = []
    for d_k in d_ks:
        raw, scaled = softmax_sharpness(d_k, False, **kwargs), softmax_sharpness(d_k, True, **kwargs)
        rows.append({"d_k": d_k, **{f"{key}_raw": raw[key] for key in ("max_weight", "entropy_bits", "grad_norm")},
                     **{f"{key}_scaled": scaled[key] for key in ("max_weight", "entropy_bits", "grad_norm")}})
    return rows


def print_table(rows: list[dict], columns: dict[str, str], digits: int = 3) -> None:
    """Print rows as an aligned table; `columns` maps row keys to headings."""
    cells = [[h for h in columns.values()]]
    for row in rows:
        cells.append([f"{row[k]:.{digits}f}" if isinstance(row[k], float) else str(row[k]) for k in columns])
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    for j, r in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
        if j == 0:
            print("  ".join("-" * w for w in widths))


TOY_SENTENCE = ["the", "cat", "sat", "on", "the", "mat"]


def toy_sentence(d_model: int = 16, seed: int = 3) -> tuple[list[str], torch.Tensor]:
    """The tokens of a toy sentence and one embedding per token (equal words, equal vectors)."""
    vocab = sorted(set(TOY_SENTENCE))
    table = unit_normal(len(vocab), d_model, seed=seed)
    return TOY_SENTENCE, table[[vocab.index(w) for w in TOY_SENTENCE]]


def toy_projections(d_in: int, d_out: int, seed: int = 4) -> tuple[torch.Tensor, ...]:
    """Three seeded projection matrices (for queries, keys and values)."""
    return tuple(unit_normal(d_in, d_out, seed=seed + i) / math.sqrt(d_in) for i in range(3))


def attempt(name: str, fn, *args, **kwargs):
    """Call a student's function for a demo; on failure say so in one sentence and return None."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        print(f"This demo uses your `{name}`: implement it above first, then run this cell again.")
    except Exception as exc:  # a demo should point back to the exercise, not show a traceback
        print(f"This demo uses your `{name}`, which raised {type(exc).__name__}: {exc}. "
              f"Its check above says more.")
    return None
