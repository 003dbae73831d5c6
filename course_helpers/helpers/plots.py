"""The course's figures: attention heatmaps and the scaling story, in a consistent style."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from .fonts import in_language_fonts
from .i18n import _


@in_language_fonts
def attention_heatmap(
    weights: torch.Tensor, queries: list[str], keys: list[str], title: str = "", ax=None, numbers: bool = True
):
    """Draw one matrix of attention weights, queries down the side and keys along the top (with
    each weight written in its cell unless `numbers=False`)."""
    if ax is None:
        _fig, ax = plt.subplots(figsize=(0.55 * len(keys) + 2, 0.5 * len(queries) + 1.2))
    w = weights.detach().double().cpu()
    ax.imshow(w, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(keys)), keys, rotation=45, ha="right")
    ax.set_yticks(range(len(queries)), queries)
    ax.set_xlabel(_("key (attended to)"))
    ax.set_ylabel(_("query"))
    for i in range(w.shape[0] if numbers else 0):
        for j in range(w.shape[1]):
            ax.text(
                j,
                i,
                f"{w[i, j]:.2f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if w[i, j] > 0.6 else "black",
            )
    if title:
        ax.set_title(title)
    return ax


@in_language_fonts
def scaling_figure(variance_rows: list[dict], sharpness_rows: list[dict]):
    """Three panels against d_k: score variance, largest softmax weight, and the share of queries
    whose gradient is almost none."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    d_v = [r["d_k"] for r in variance_rows]
    axes[0].plot(d_v, [r["var_raw"] for r in variance_rows], "o-", label=_("q·k"))
    axes[0].plot(d_v, [r["var_scaled"] for r in variance_rows], "s-", label=_("q·k / √d_k"))
    axes[0].set_yscale("log")
    axes[0].set_title(_("variance of the scores"))
    d_s = [r["d_k"] for r in sharpness_rows]
    for key, title, ax in (
        ("max_weight", _("largest softmax weight"), axes[1]),
        ("grad_small", _("share of queries with gradient < 1e-3"), axes[2]),
    ):
        ax.plot(d_s, [r[f"{key}_raw"] for r in sharpness_rows], "o-", label=_("unscaled"))
        ax.plot(d_s, [r[f"{key}_scaled"] for r in sharpness_rows], "s-", label=_("scaled by 1/√d_k"))
        ax.set_title(title)
    axes[2].set_ylim(-0.03, 1.03)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel(_("d_k"))
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    return fig


@in_language_fonts
def gradient_ranks_figure(raw: dict, scaled: dict, d_k: int, floor: float = 1e-12):
    """Every query's gradient, largest first, unscaled against scaled (`demos.softmax_gradients`):
    with respect to its scores, and with respect to the query vector."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    for key, title, ax in (
        ("score_grad", _("gradient w.r.t. the scores, per query"), axes[0]),
        ("query_grad", _("gradient w.r.t. the query q, per query"), axes[1]),
    ):
        ylabel = _("|∂L/∂s| of one query (norm over its keys)") if key == "score_grad" else _("|∂L/∂q| of one query")
        for g, label, style in ((raw, _("unscaled"), "-"), (scaled, _("scaled by 1/√d_k"), "--")):
            values = g[key].detach().sort(descending=True).values.clamp_min(floor)
            share = torch.arange(1, len(values) + 1) / len(values)
            ax.plot(share, values, style, label=label)
        ax.axhline(1e-3, color="grey", lw=0.8, ls=":", label=_("$10^{-3}$ (the table's threshold)"))
        ax.set_yscale("log")
        ax.set_ylim(floor / 2, None)
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.set_xlabel(_("share of queries, largest gradient first (d_k = {d_k})").format(d_k=d_k))
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    return fig


@in_language_fonts
def head_heatmaps(
    weights: torch.Tensor,
    queries: list[str],
    keys: list[str],
    titles=None,
    suptitle: str = "",
    ncols: int = 2,
    numbers: bool = True,
):
    """One attention heatmap per head, in a grid; `weights` has shape (H, T_q, T_k). Without
    `numbers` the cells show colour only (drawing the numbers is most of the figure's time)."""
    H = weights.shape[0]
    ncols = min(ncols, H)
    nrows = (H + ncols - 1) // ncols
    fig, axes = plt.subplots(
        nrows, ncols, squeeze=False, figsize=(ncols * (0.55 * len(keys) + 1.6), nrows * (0.5 * len(queries) + 1.4))
    )
    for h, ax in enumerate(axes.flat):
        if h >= H:
            ax.axis("off")
            continue
        title = _("head {h}: {name}").format(h=h, name=titles[h]) if titles else _("head {h}").format(h=h)
        attention_heatmap(weights[h], queries, keys, title=title, ax=ax, numbers=numbers)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


@in_language_fonts
def head_layout(heads: torch.Tensor, title: str = "", panel: str | None = None):
    """Where the numbers of a (H, T, d) tensor came from, one panel per head.

    The numbers are made as 10 * position + feature (see `demos.position_codes`): each cell is
    coloured by its tens digit, the position it came from, so a head whose row mixes colours
    has mixed positions.
    """
    H, T, d = heads.shape
    panel = _("head") if panel is None else panel
    fig, axes = plt.subplots(1, H, squeeze=False, figsize=(H * (0.62 * d + 0.9) + 0.4, 0.42 * T + 1.3))
    cmap = plt.get_cmap("Pastel1")
    for h, ax in enumerate(axes[0]):
        codes = heads[h].detach().round().long()
        ax.imshow(codes // 10, cmap=cmap, vmin=0, vmax=8)
        for i in range(T):
            for j in range(d):
                ax.text(j, i, str(codes[i, j].item()), ha="center", va="center", fontsize=9)
        ax.set_xticks(range(d))
        ax.set_yticks(range(T), [_("row {i}").format(i=i) for i in range(T)] if h == 0 else [])
        ax.set_xlabel(_("feature in head") if H > 1 else _("feature"))
        ax.set_title(f"{panel} {h}" if H > 1 else panel)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


@in_language_fonts
def memory_figure(rows: list[dict], limit_bytes: float = 2**30, limit_label: str | None = None):
    """Memory of the attention matrix and of q, k, v against the sequence length (log-log)."""
    limit_label = _("1 GiB") if limit_label is None else limit_label
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    lengths = [r["T"] for r in rows]
    ax.plot(lengths, [r["weights_bytes"] / 2**20 for r in rows], "o-", label=_("attention weights (B, H, T, T)"))
    ax.plot(lengths, [r["qkv_bytes"] / 2**20 for r in rows], "s-", label=_("q, k, v (3 × (B, T, d_model))"))
    ax.axhline(limit_bytes / 2**20, color="crimson", linestyle="--", label=limit_label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(lengths, [str(t) for t in lengths])
    ticks = [2**k for k in range(0, 21, 2)]  # 1 MiB, 4 MiB, ... in MiB
    low, high = ax.get_ylim()
    ticks = [t for t in ticks if low <= t <= high]
    ax.set_yticks(ticks, [f"{t} MiB" if t < 1024 else f"{t // 1024} GiB" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel(_("sequence length T"))
    ax.set_ylabel(_("memory (float32)"))
    ax.set_title(_("memory grows like T² for the weights, like T for q, k, v"))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


@in_language_fonts
def trained_heads_figure(result):
    """How each head's map changed during training, next to the ideal map of the relation it is
    closest to: one row per head, one column per snapshot, the ideal map last."""
    from .trained_heads import relation_names

    steps = sorted(result.snapshots)
    H, tokens = result.num_heads, result.example
    names, matched = relation_names(), result.matched()
    columns = len(steps) + 1
    fig, axes = plt.subplots(H, columns, squeeze=False, figsize=(2.1 * columns + 0.6, 2.2 * H + 0.6))
    for h in range(H):
        panels = [(result.snapshots[s][h], _("head {h}, step {step}").format(h=h, step=s)) for s in steps]
        panels.append((result.ideal[matched[h]], _("ideal: {relation}").format(relation=names[matched[h]])))
        for c, (ax, (w, title)) in enumerate(zip(axes[h], panels)):
            ax.imshow(w.detach().double(), cmap="Blues", vmin=0, vmax=1)
            # The tokens on the outer edges only: every panel shows the same sentence (and ticks
            # without labels on the inner panels would cost a fifth of the figure's drawing time).
            if h == H - 1:
                ax.set_xticks(range(len(tokens)), tokens, fontsize=7)
            else:
                ax.set_xticks([])
            if c == 0:
                ax.set_yticks(range(len(tokens)), tokens, fontsize=7)
            else:
                ax.set_yticks([])
            ax.set_title(title, fontsize=9)
        axes[h][-1].set_facecolor("#f4f4f4")
    fig.supxlabel(_("key (attended to)"), fontsize=9)
    fig.supylabel(_("query"), fontsize=9)
    # Fixed margins rather than tight_layout, which measures every label of the ten panels.
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.13, top=0.9, wspace=0.15, hspace=0.35)
    return fig


@in_language_fonts
def positions_figure(encoding: torch.Tensor):
    """A (T, d_model) table of position encodings as a picture: one row per position."""
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    image = ax.imshow(encoding.detach().double().T, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    ax.set_xlabel(_("position t"))
    ax.set_ylabel(_("feature"))
    ax.set_title(_("sinusoidal position encoding: each position gets its own pattern"))
    fig.colorbar(image, ax=ax, fraction=0.03)
    fig.tight_layout()
    return fig


def canvas_png(canvas) -> bytes:
    """What an Agg canvas currently shows, as PNG bytes (fast compression, for live widgets)."""
    import io

    import PIL.Image

    width, height = canvas.get_width_height()
    image = PIL.Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    buffer = io.BytesIO()
    image.save(buffer, format="png", compress_level=1)
    return buffer.getvalue()
