"""The picture of multi-head attention, step by step: split, attend, concatenate, mix with W_o.

`pipeline_figure(step)` draws the tensors of one sequence (the batch axis B is left out of the
picture but named in every shape) as grids of cells, a head's features in its own colour, and the
four steps between them; the step a notebook is about is drawn in full, the others faded.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.collections import PatchCollection
from matplotlib.patches import FancyArrowPatch, Rectangle

from .fonts import in_language_fonts
from .i18n import _

STEPS = ("split", "attend", "concat", "mix")
HEAD_COLOURS = ("#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc")
MIXED = "#c9a0dc"
CELL = 0.32


def _grid(ax, x0, y0, rows, columns, colours, alpha):
    """A rows x columns grid of cells whose lower left corner is (x0, y0); column c in colours[c]."""
    cells = [
        Rectangle((x0 + c * CELL, y0 + (rows - 1 - r) * CELL), CELL, CELL) for r in range(rows) for c in range(columns)
    ]
    faces = [colours[c] for _r in range(rows) for c in range(columns)]
    ax.add_collection(PatchCollection(cells, facecolors=faces, edgecolors="white", linewidths=1, alpha=alpha))
    return x0 + columns * CELL


def _label(ax, x, y, text, alpha, **kw):
    ax.text(x, y, text, ha="center", va="top", fontsize=9, alpha=max(alpha, 0.55), **kw)


@in_language_fonts
def pipeline_figure(step: str | None = None, seq_len: int = 4, d_model: int = 8, num_heads: int = 2):
    """The four steps of multi-head attention on one sequence; `step` (one of STEPS) is drawn in full."""
    if step is not None and step not in STEPS:
        raise ValueError(f"step must be one of {STEPS} or None, not {step!r}")
    T, H = seq_len, num_heads
    d_head = d_model // H
    by_head = [HEAD_COLOURS[c // d_head % len(HEAD_COLOURS)] for c in range(d_model)]
    fig, ax = plt.subplots(figsize=(14, 3.2))
    ax.set_axis_off()

    def alpha(name):
        return 1.0 if step in (None, name) else 0.3

    height = T * CELL
    gap = 0.25
    x = 0.0
    # x: (B, T, d_model)
    end = _grid(ax, x, 0, T, d_model, by_head, 1.0 if step in (None, "split") else 0.5)
    _label(ax, (x + end) / 2, -0.15, "x\n(B, T, d_model)", 1.0)
    blocks = [(x, end)]
    x = end + 2.7
    # split: (B, H, T, d_head), heads stacked
    a = alpha("split")
    tops = []
    for h in range(H):
        y = (H - 1 - h) * (height + gap) - (H - 1) * (height + gap) / 2
        end = _grid(ax, x, y, T, d_head, [HEAD_COLOURS[h % len(HEAD_COLOURS)]] * d_head, max(a, alpha("attend")))
        tops.append(y)
    _label(ax, (x + end) / 2, min(tops) - 0.15, _("heads") + "\n(B, H, T, d_head)", max(a, alpha("attend")))
    blocks.append((x, end))
    x = end + 2.7
    # attend: per head, weights (T, T) then the head's output (T, d_head)
    a = alpha("attend")
    for h, y in enumerate(tops):
        mid = _grid(ax, x, y, T, T, ["#d9d9d9"] * T, a)
        _grid(ax, mid + 0.25, y, T, d_head, [HEAD_COLOURS[h % len(HEAD_COLOURS)]] * d_head, a)
    end = mid + 0.25 + d_head * CELL
    _label(
        ax,
        (x + end) / 2,
        min(tops) - 0.15,
        _("attention weights {weights},\noutputs {outputs}").format(
            weights="(B, H, T, T)", outputs="(B, H, T, d_head)"
        ),
        a,
    )
    blocks.append((x, end))
    x = end + 2.7
    # concat: (B, T, d_model), heads side by side again
    a = alpha("concat")
    end = _grid(ax, x, 0, T, d_model, by_head, max(a, alpha("mix")))
    _label(ax, (x + end) / 2, -0.15, _("concatenated") + "\n(B, T, d_model)", max(a, alpha("mix")))
    blocks.append((x, end))
    x = end + 2.7
    # W_o: (B, T, d_model), every feature mixes all heads
    a = alpha("mix")
    end = _grid(ax, x, 0, T, d_model, [MIXED] * d_model, a)
    _label(ax, (x + end) / 2, -0.15, _("output") + "\n(B, T, d_model)", a)
    blocks.append((x, end))

    names = {
        "split": "split_heads",
        "attend": _("attention in each head"),
        "concat": "concat_heads",
        "mix": _("W_o mixes the heads"),
    }
    for (left, right), name in zip(zip(blocks, blocks[1:]), STEPS):
        a = alpha(name)
        start, stop = left[1] + 0.1, right[0] - 0.1
        ax.add_patch(
            FancyArrowPatch(
                (start, height / 2),
                (stop, height / 2),
                arrowstyle="-|>",
                mutation_scale=14,
                lw=2.2 if step == name else 1.2,
                color="black",
                alpha=a,
            )
        )
        ax.text(
            (start + stop) / 2,
            height / 2 + 0.15,
            names[name],
            ha="center",
            va="bottom",
            fontsize=9,
            fontweight="bold" if step == name else "normal",
            alpha=max(a, 0.55),
        )
    ax.set_xlim(-0.3, blocks[-1][1] + 0.3)
    lowest = min(tops) if tops else 0
    ax.set_ylim(lowest - 1.0, max(tops) + height + 0.4)
    ax.set_aspect("equal")
    fig.tight_layout()
    return fig
