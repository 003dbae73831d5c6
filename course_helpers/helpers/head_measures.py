"""Measurements that name what a head of the text model attends to.

For attention maps `(H, T, T)` of a causal model on one window of text, each measure is the mean
weight a head puts, over the queries where the measure is defined, on one key:

- "previous": the character just before the query (queries 1..T-1);
- "itself": the query's own position;
- "word start": the first character of the word the query is in (a word is a run of letters,
  digits and "_");
- "last space": the last space before the query;
- "open quote or bracket": the innermost quote or bracket opened before the query and still open.

The last three count only queries at least two characters past their key, so no measure counts
the key of "previous" or "itself" again. `chance` gives what a head that spreads its weight
evenly over the keys it may see would score.
"""

from __future__ import annotations

import torch

from .i18n import _

MEASURES = ("previous", "itself", "word start", "last space", "open quote or bracket")
PAIRS = {"(": ")", "[": "]", "{": "}"}


def measure_names() -> list[str]:
    """The measures, in the language of the notebook."""
    return [_("previous"), _("itself"), _("word start"), _("last space"), _("open quote or bracket")]


def targets(text: str) -> list[list[int | None]]:
    """For each measure, the key each query should look at (None where the measure is undefined)."""
    T = len(text)
    previous = [None] + list(range(T - 1))
    itself = list(range(T))
    word_start, start = [], None
    for t, c in enumerate(text):
        inside = c.isalnum() or c == "_"
        start = (start if start is not None else t) if inside else None
        word_start.append(start if inside else None)
    space, last = [], None
    for t, c in enumerate(text):
        space.append(last)
        last = t if c == " " else last
    opener, stack = [], []
    for t, c in enumerate(text):
        opener.append(stack[-1][1] if stack else None)
        if stack and (c == PAIRS.get(stack[-1][0]) or (c == '"' and stack[-1][0] == '"')):
            stack.pop()
        elif c in PAIRS or c == '"':
            stack.append((c, t))
    far = [
        [k if k is not None and t - k >= 2 else None for t, k in enumerate(keys)]
        for keys in (word_start, space, opener)
    ]
    return [previous, itself, *far]


def shares(maps: torch.Tensor, text: str) -> torch.Tensor:
    """(H, len(MEASURES)): each head's mean weight on each measure's key (NaN if never defined)."""
    out = torch.full((maps.shape[0], len(MEASURES)), float("nan"))
    for m, keys in enumerate(targets(text)):
        rows = [(t, k) for t, k in enumerate(keys) if k is not None]
        if rows:
            q, k = torch.tensor(rows).T
            out[:, m] = maps[:, q, k].float().mean(-1)
    return out


def pooled(pairs) -> torch.Tensor:
    """Shares pooled over several (maps, text) windows, weighted by the queries each measure has."""
    total, count = None, None
    for maps, text in pairs:
        n = torch.tensor([sum(k is not None for k in keys) for keys in targets(text)], dtype=torch.float)
        s = torch.nan_to_num(shares(maps, text)) * n
        total, count = (s, n) if total is None else (total + s, count + n)
    return total / count.clamp(min=1)


def chance(text: str) -> torch.Tensor:
    """(1, len(MEASURES)): the shares of a head that weighs every key it may see (causal) the same."""
    T = len(text)
    return shares((torch.ones(T, T).tril() / torch.arange(1, T + 1).view(T, 1))[None], text)


def strongest(table: torch.Tensor, even: torch.Tensor) -> list[int]:
    """For each head, the measure it beats an even spread on by the largest factor."""
    return (table / even.clamp(min=1e-6)).nan_to_num(-1).argmax(-1).tolist()
