"""The numbers behind the lesson's demos, computed from seeded random data, and the small tools
the notebooks' demo cells call (tables, matrices, differences, toy sentences and heads).

Each function returns plain rows (dicts) or tensors that a notebook prints or plots. The
notebooks reach everything through this module: the experiments of the scaling argument live in
`scaling`, the use of a student's code from an earlier notebook in `earlier`.
"""

from __future__ import annotations

import math
import os

import torch

from .earlier import load_class, load_function, pieces_from_earlier_notebooks, step  # noqa: F401 (the notebooks' names)
from .feedback import MissingImplementation, call_student
from .i18n import _, ljust, rjust
from .i18n import width as text_width
from .i18n import word as in_language
from .scaling import (  # noqa: F401 (the notebooks' names)
    linear_output_variance,
    score_variance,
    sharpness_table,
    softmax_gradients,
    softmax_sharpness,
    unit_normal,
)


def causal(T: int) -> torch.Tensor:
    """The causal mask of T positions (True = may attend: each position sees itself and the past),
    for the demos of 05 and 06; notebook 07 asks you to build it yourself."""
    position = torch.arange(T)
    return position.view(T, 1) >= position.view(1, T)


def print_table(rows: list[dict], columns: dict[str, str], digits: int = 3) -> None:
    """Print rows as an aligned table; `columns` maps row keys to headings."""
    cells = [[h for h in columns.values()]]
    for row in rows:
        cells.append([f"{row[k]:.{digits}f}" if isinstance(row[k], float) else str(row[k]) for k in columns])
    widths = [max(text_width(r[i]) for r in cells) for i in range(len(columns))]
    for j, r in enumerate(cells):
        print("  ".join(rjust(c, w) for c, w in zip(r, widths)))
        if j == 0:
            print("  ".join("-" * w for w in widths))


TOY_SENTENCE = ["the", "cat", "sat", "on", "the", "mat"]


def toy_sentence(d_model: int = 16, seed: int = 3) -> tuple[list[str], torch.Tensor]:
    """The tokens of a toy sentence and one embedding per token (equal words, equal vectors)."""
    vocab = sorted(set(TOY_SENTENCE))
    table = unit_normal(len(vocab), d_model, seed=seed)
    return [in_language(w) for w in TOY_SENTENCE], table[[vocab.index(w) for w in TOY_SENTENCE]]


def toy_projections(d_in: int, d_out: int, seed: int = 4) -> tuple[torch.Tensor, ...]:
    """Three seeded projection matrices (for queries, keys and values)."""
    return tuple(unit_normal(d_in, d_out, seed=seed + i) / math.sqrt(d_in) for i in range(3))


def attempt(name: str, fn, *args, **kwargs):
    """Call a student's function for a demo; on failure say so in one sentence and return None."""
    try:
        return call_student(name, fn, *args, then=_("run this cell again"), **kwargs)
    except MissingImplementation as missing:
        print(_("This demo uses your `{name}`. {missing}").format(name=name, missing=missing))
        return None


# ----------------------------------------------------------------------------- notebooks 03-06


def raises(fn, *args, **kwargs):
    """Call `fn` and print the exception it raises under a line that says so (or that it raised none)."""
    try:
        result = fn(*args, **kwargs)
    except NotImplementedError:
        print(_("Not implemented yet: write the exercise above first, then run this cell again."))
        return None
    except Exception as exc:  # the point of the demo is the exception itself
        print(_("The call raises an exception (its message as it is):"))
        print(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
        return None
    print(_("No exception was raised."))
    return result


def position_codes(seq_len: int, d_model: int, batch: int = 1) -> torch.Tensor:
    """A (batch, seq_len, d_model) tensor whose entry [b, t, f] is 10 * t + f: its tens digit
    says which position a number came from, its last digit which feature."""
    t = torch.arange(seq_len, dtype=torch.float32).view(seq_len, 1)
    f = torch.arange(d_model, dtype=torch.float32).view(1, d_model)
    return (10 * t + f).expand(batch, seq_len, d_model).clone()


def count_parameters(module: torch.nn.Module) -> int:
    """The number of trainable numbers in a module."""
    return sum(p.numel() for p in module.parameters())


def head_split_rows(d_model: int, heads, seq_len: int) -> list[dict]:
    """For each head count: d_head, the parameters of the q, k, v projections of one head and of
    all heads (counted from real nn.Linear layers), the multiply-adds of all scores of one sequence
    (H * T * T * d_head) and the number of attention weights it stores and softmaxes (H * T * T)."""
    rows = []
    for num_heads in heads:
        d_head = d_model // num_heads
        per_head = 3 * count_parameters(torch.nn.Linear(d_model, d_head))
        rows.append(
            {
                "num_heads": num_heads,
                "d_head": d_head,
                "params_per_head": per_head,
                "params_total": num_heads * per_head,
                "score_mult_adds": num_heads * seq_len * seq_len * d_head,
                "weights": num_heads * seq_len * seq_len,
            }
        )
    return rows


TOY_HEAD_NAMES = ("previous word", "next word", "same word", "the nouns")


def toy_head_names() -> tuple[str, ...]:
    """What each toy head was built to look for, in the language of the notebook."""
    return (_("previous word"), _("next word"), _("same word"), _("the nouns"))


def _toy_embeddings(tokens: list[str], vocab: list[str], d_model: int) -> torch.Tensor:
    """(1, T, d_model) embeddings: [one-hot position | one-hot word | 1 | zeros]."""
    T, V = len(tokens), len(vocab)
    x = torch.zeros(1, T, d_model)
    for t, word in enumerate(tokens):
        x[0, t, [t, T + vocab.index(word), T + V]] = 1.0
    return x


def toy_heads(strength: float = 12.0) -> tuple[list[str], torch.Tensor, dict[str, torch.Tensor]]:
    """A toy input whose four heads (d_model=24, d_head=6) attend in visibly different ways.

    Each token's embedding is [one-hot position (6) | one-hot word (5) | 1 | zeros]. The rows of
    W_q and W_k for head h make it look at: the previous word, the next word, the same word, the
    nouns (`TOY_HEAD_NAMES`). Returns tokens, x of shape (1, 6, 24) and the weights of
    W_q, W_k, W_v, W_o (named like a state dict, all biases zero).
    """
    tokens, d_model = TOY_SENTENCE, 24
    vocab = sorted(set(tokens))  # cat, mat, on, sat, the
    T, V = len(tokens), len(vocab)
    x = _toy_embeddings(tokens, vocab, d_model)
    W_q, W_k = torch.zeros(d_model, d_model), torch.zeros(d_model, d_model)
    pos, word, one = slice(0, T), slice(T, T + V), T + V
    previous, following = torch.zeros(T, T), torch.zeros(T, T)
    for t in range(T):  # column t: where query t looks (the ends: itself)
        previous[max(t - 1, 0), t] = following[min(t + 1, T - 1), t] = 1.0
    W_q[0:6, pos], W_k[0:6, pos] = strength * previous, torch.eye(T)  # head 0: previous word
    W_q[6:12, pos], W_k[6:12, pos] = strength * following, torch.eye(T)  # head 1: next word
    W_q[12:17, word], W_k[12:17, word] = strength * torch.eye(V), torch.eye(V)  # head 2: same word
    nouns = torch.tensor([float(w in ("cat", "mat")) for w in vocab])
    W_q[18, one], W_k[18, word] = strength, nouns  # head 3: the nouns
    W_v = unit_normal(d_model, d_model, seed=7) / math.sqrt(d_model)
    W_o = unit_normal(d_model, d_model, seed=8) / math.sqrt(d_model)
    weights = {"W_q.weight": W_q, "W_k.weight": W_k, "W_v.weight": W_v, "W_o.weight": W_o}
    weights.update({f"{name}.bias": torch.zeros(d_model) for name in ("W_q", "W_k", "W_v", "W_o")})
    return [in_language(w) for w in tokens], x, weights


def _head_rows(layer: torch.nn.Linear, h: int, d_head: int):
    """The weight rows (and bias entries) of a projection that belong to head h."""
    rows = slice(h * d_head, (h + 1) * d_head)
    return layer.weight[rows], None if layer.bias is None else layer.bias[rows]


def one_head(module: torch.nn.Module, x: torch.Tensor, h: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-attention of head h alone, from rows [h*d_head, (h+1)*d_head) of W_q, W_k, W_v.

    x: (B, T, d_model). Returns (output (B, T, d_head), weights (B, T, T)). No mask.
    """
    d_head = module.W_q.out_features // module.num_heads
    q, k, v = (
        torch.nn.functional.linear(x, *_head_rows(getattr(module, name), h, d_head)) for name in ("W_q", "W_k", "W_v")
    )
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head), dim=-1)
    return weights @ v, weights


def head_patterns(module: torch.nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every head's self-attention, one head at a time, stacked: (heads (B, H, T, d_head),
    weights (B, H, T, T)). Before W_o."""
    results = [one_head(module, x, h) for h in range(module.num_heads)]
    return torch.stack([r[0] for r in results], 1), torch.stack([r[1] for r in results], 1)


def per_head_loop(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Multi-head self-attention with a Python loop over the heads (for timing): the output of
    W_o applied to the heads' outputs laid side by side."""
    outputs = [one_head(module, x, h)[0] for h in range(module.num_heads)]
    return module.W_o(torch.cat(outputs, dim=-1))


def fused_attention(
    module: torch.nn.Module, x: torch.Tensor, is_causal: bool = False, dropout_p: float = 0.0
) -> torch.Tensor:
    """Multi-head self-attention whose core is F.scaled_dot_product_attention (for timing and for
    the transformer block of notebook 06).

    Each projection's weight is viewed as (H, d_head, d_model), so x goes straight into heads.
    `is_causal=True` lets every position attend to itself and the positions before it only;
    `dropout_p` drops attention weights at random (training only).
    """
    H = module.num_heads

    def project(layer):
        out = torch.einsum("btd,hed->bhte", x, layer.weight.view(H, -1, layer.in_features))
        return out if layer.bias is None else out + layer.bias.view(H, 1, -1)

    heads = torch.nn.functional.scaled_dot_product_attention(
        project(module.W_q), project(module.W_k), project(module.W_v), dropout_p=dropout_p, is_causal=is_causal
    )
    W_o = module.W_o
    out = torch.einsum("bhte,ohe->bto", heads, W_o.weight.view(W_o.out_features, H, -1))
    return out if W_o.bias is None else out + W_o.bias


class CausalSelfAttention(torch.nn.Module):
    """The heads of `source` (a module with W_q, W_k, W_v, W_o and num_heads, such as your
    MultiHeadAttention; its weights are shared, not copied) computed by
    F.scaled_dot_product_attention with is_causal=True, and dropout on the attention weights
    while training. Self-attention only: forward(x, x, x) -> (output, None)."""

    def __init__(self, source: torch.nn.Module, p_drop: float = 0.1):
        super().__init__()
        self.source, self.p_drop = source, p_drop

    def forward(self, query, key=None, value=None, mask=None):
        if mask is not None:
            raise ValueError(_("CausalSelfAttention builds its causal mask itself (is_causal=True); pass no mask."))
        dropout_p = self.p_drop if self.training else 0.0
        return fused_attention(self.source, query, is_causal=True, dropout_p=dropout_p), None


class BuiltinAttention(torch.nn.Module):
    """PyTorch's nn.MultiheadAttention behind the course's interface, for demos whose exercise is
    not done yet: forward(query, key, value, mask=None) with True = may attend, returning
    (output, the weights of every head)."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.inner = torch.nn.MultiheadAttention(d_model, num_heads, batch_first=True)

    def forward(self, query, key, value, mask=None):
        blocked = None if mask is None else ~mask  # nn.MultiheadAttention: True = blocked
        return self.inner(query, key, value, attn_mask=blocked, need_weights=True, average_attn_weights=False)


def max_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest absolute difference between two tensors of the same shape."""
    return (a.detach().double() - b.detach().double()).abs().max().item()


def describe_difference(diff: float, tolerance: float = 1e-5) -> str:
    """A difference as a bound that does not change from machine to machine (1e-6 or the tolerance)."""
    for bound in (1e-6, tolerance):
        if diff < bound:
            return _("below {bound}").format(bound=f"{bound:.0e}")
    return _("{diff}, above the tolerance {tolerance}").format(diff=f"{diff:.1e}", tolerance=f"{tolerance:.0e}")


def being_graded() -> bool:
    """True while nbgrader runs the notebook to grade it (nbgrader sets NBGRADER_EXECUTION)."""
    return os.environ.get("NBGRADER_EXECUTION") == "autograde"


def median_ms(fn, min_run_time: float = 0.2) -> float:
    """The median time of one call of `fn()` in milliseconds, measured by torch.utils.benchmark."""
    from torch.utils import benchmark

    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn})
    return timer.blocked_autorange(min_run_time=min_run_time).median * 1e3


def attention_memory_rows(batch: int, num_heads: int, d_model: int, lengths) -> list[dict]:
    """Bytes of the float32 attention matrix (B, H, T, T) and of q, k, v (3 x (B, T, d_model))."""
    return [
        {"T": T, "weights_bytes": batch * num_heads * T * T * 4, "qkv_bytes": 3 * batch * T * d_model * 4}
        for T in lengths
    ]


def format_bytes(n: float) -> str:
    """Bytes in KiB, MiB or GiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def head_codes(seq_len: int, num_heads: int, d_head: int, batch: int = 1) -> torch.Tensor:
    """A (batch, num_heads, seq_len, d_head) tensor of the codes of `position_codes`, laid out as
    heads: entry [b, h, t, f] is 10 * t + h * d_head + f (position t, feature h * d_head + f)."""
    t = torch.arange(seq_len, dtype=torch.float32).view(1, seq_len, 1)
    h = torch.arange(num_heads, dtype=torch.float32).view(num_heads, 1, 1)
    f = torch.arange(d_head, dtype=torch.float32).view(1, 1, d_head)
    return (10 * t + d_head * h + f).expand(batch, num_heads, seq_len, d_head).clone()


def same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors are views of the same block of memory."""
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def print_matrix(m: torch.Tensor, digits: int = 2, rows=None, columns=None) -> None:
    """Print a 2-D tensor as an aligned grid of numbers, with optional row and column labels."""
    values = [[f"{v:.{digits}f}" for v in row] for row in m.detach().double().tolist()]
    width = max(len(v) for row in values for v in row)
    if columns is not None:
        width = max(width, *(text_width(c) for c in columns))
    label_width = max((text_width(r) for r in rows), default=0) if rows is not None else 0
    if columns is not None:
        print(" " * (label_width + 1 if rows is not None else 0) + " ".join(rjust(c, width) for c in columns))
    for i, row in enumerate(values):
        label = (ljust(rows[i], label_width) + " ") if rows is not None else ""
        print(label + " ".join(v.rjust(width) for v in row))


def projections_from(weights: dict[str, torch.Tensor], num_heads: int) -> torch.nn.Module:
    """A module holding W_q, W_k, W_v, W_o (nn.Linear) and num_heads, loaded with `weights`."""
    from .exercises import Projections

    module = Projections(weights["W_q.weight"].shape[0], num_heads, bias="W_q.bias" in weights)
    return load_weights(module, weights)


def load_weights(module: torch.nn.Module, weights: dict[str, torch.Tensor]) -> torch.nn.Module:
    """Copy weights named like `W_q.weight` into a module's W_q, W_k, W_v, W_o; return the module."""
    from .exercises import load_projections

    load_projections(module, weights)
    return module


def random_projections(d_model: int, num_heads: int, seed: int = 0) -> torch.nn.Module:
    """A module holding freshly initialised W_q, W_k, W_v, W_o and num_heads, reproducible from `seed`."""
    from .exercises import Projections

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return Projections(d_model, num_heads)


def compare_results(a, b, tolerance: float = 1e-5) -> str:
    """The largest difference between two (output, weights) results in words (see
    `describe_difference`), or why they cannot be compared."""
    if a is None or b is None:
        return _("not compared (see the message above)")
    pairs = isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b) == 2
    if not pairs or not all(isinstance(t, torch.Tensor) for t in (*a, *b)):
        return _("not compared: both should return (output, weights) tensors")
    if any(x.shape != y.shape for x, y in zip(a, b)):
        shapes = _(" and ").join(f"{tuple(x.shape)} vs {tuple(y.shape)}" for x, y in zip(a, b))
        return _("not compared: the shapes differ, {shapes}").format(shapes=shapes)
    return describe_difference(max(max_difference(x, y) for x, y in zip(a, b)), tolerance)
