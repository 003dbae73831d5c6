"""The d_k lab: a slider over d_k and a "scale by √d_k" toggle, drawn live.

`dk_numbers` computes what the lab shows for one setting (pure, unit-tested): the scores of
random unit-variance queries and keys, their measured spread next to √d_k, the softmax weights of
one query over a handful of keys, and the size of the gradient through the softmax. `DkLab` puts
a slider, a toggle, a one-line readout and a figure together; the figure is made once and its
artists are updated in place, then shown as a PNG image widget.

The scores come from the student's own functions when they are passed and implemented:
`raw_scores`/`scaled_scores` (notebook 01) or `scaled_dot_product_attention` (notebook 02).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure  # drawn off screen (no pyplot), shown as an image widget

from .feedback import MissingImplementation, call_student
from .fonts import in_language_fonts
from .i18n import _
from .plots import canvas_png

D_K_VALUES = [2**i for i in range(11)]  # 1 .. 1024
N_KEYS = 8
N_QUERIES = 256
SPAN, BINS = 100, 100  # histogram range (-SPAN, SPAN) and bin count


@dataclass
class DkNumbers:
    """What the lab shows for one d_k and one choice of scaling."""

    d_k: int
    scaled: bool
    scores: torch.Tensor  # (N_QUERIES, N_KEYS) scores, scaled or not
    score_std: float  # measured standard deviation of the scores
    weights: torch.Tensor  # (N_KEYS,) softmax weights of the first query
    max_weight: float  # mean over queries of the largest weight
    grad_norm: float  # mean norm of d(readout . weights)/d(scores)
    source: str  # which functions computed the scores


def _inputs(d_k: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(N_QUERIES, 1, d_k, generator=gen)
    k = torch.randn(N_QUERIES, N_KEYS, d_k, generator=gen)
    readout = torch.randn(N_QUERIES, N_KEYS, generator=gen)
    return q, k, readout


def _scores(q, k, scaled: bool, raw_scores=None, scaled_scores=None, attention=None) -> tuple[torch.Tensor, str]:
    """Scores of every query against its keys, from the student's functions when given."""
    if attention is not None:
        # Attention only returns weights; log(weights) equals the scores up to a constant per
        # row, which is all the softmax sees. Unscaled = scaled scores of q * sqrt(d_k).
        d_k = q.shape[-1]
        q, k = q.double(), k.double()  # float64: weights as small as exp(-700) stay above 0
        v = torch.zeros(k.shape[:-1] + (1,), dtype=torch.float64)
        q_in = q if scaled else q * math.sqrt(d_k)
        result = call_student("scaled_dot_product_attention", attention, q_in, k, v)
        weights = result[1].squeeze(1).double()
        logits = torch.log(weights.clamp_min(1e-300))
        return (logits - logits.mean(-1, keepdim=True)).float(), _("your scaled_dot_product_attention")
    if scaled and scaled_scores is not None:
        return call_student("scaled_scores", scaled_scores, q, k).squeeze(1), _("your scaled_scores")
    if raw_scores is not None:
        raw = call_student("raw_scores", raw_scores, q, k).squeeze(1)
        return (raw / math.sqrt(q.shape[-1]) if scaled else raw), _("your raw_scores")
    raw = (q @ k.transpose(-2, -1)).squeeze(1)
    return (raw / math.sqrt(q.shape[-1]) if scaled else raw), "torch"


def dk_numbers(d_k: int, scaled: bool, seed: int = 0, **functions) -> DkNumbers:
    """Everything the lab shows for one setting; `functions` are the student's (optional)."""
    if d_k < 1:
        raise ValueError(_("d_k must be a positive whole number; got {d_k}.").format(d_k=d_k))
    q, k, readout = _inputs(d_k, seed)
    with torch.no_grad():
        scores, source = _scores(q, k, scaled, **functions)
    if scores.shape != (N_QUERIES, N_KEYS):
        raise MissingImplementation(
            _("{source} returned shape {got} here instead of {want}; its check above says more.").format(
                source=source, got=tuple(scores.shape), want=(N_QUERIES, 1, N_KEYS)
            )
        )
    leaf = scores.detach().double().requires_grad_(True)
    weights = torch.softmax(leaf, dim=-1)
    (weights * readout.double()).sum().backward()
    return DkNumbers(
        d_k=d_k,
        scaled=scaled,
        scores=scores.detach(),
        score_std=scores.std().item(),
        weights=weights[0].detach().float(),
        max_weight=weights.max(-1).values.mean().item(),
        grad_norm=leaf.grad.norm(dim=-1).mean().item(),
        source=source,
    )


def readout_text(n: DkNumbers) -> str:
    """The one-line summary under the slider."""
    scale = _("scaled by 1/√d_k") if n.scaled else _("unscaled")
    return _(
        "d_k = {d_k}, {scale}: std of the scores = {std} (√d_k = {root}); largest weight = {largest}; "
        "|gradient| = {grad}  [scores from {source}]"
    ).format(
        d_k=n.d_k,
        scale=scale,
        std=f"{n.score_std:.2f}",
        root=f"{math.sqrt(n.d_k):.2f}",
        largest=f"{n.max_weight:.2f}",
        grad=f"{n.grad_norm:.3f}",
        source=n.source,
    )


class DkFigure:
    """Three panels made once: score histogram, one query's weights, gradient size against d_k.

    Axes, ticks and labels never change, so they are drawn once and cached; an update redraws
    only the moving artists on top of that background (blitting) and encodes a PNG.
    """

    @in_language_fonts
    def __init__(self):
        self.fig = Figure(figsize=(11, 3.0), dpi=80)
        self.canvas = FigureCanvasAgg(self.fig)
        self.ax_hist, self.ax_w, self.ax_g = self.fig.subplots(1, 3)
        self.hist = self.ax_hist.stairs(
            [0.0] * BINS, torch.linspace(-SPAN, SPAN, BINS + 1).tolist(), fill=True, color="#4c72b0", animated=True
        )
        self.ax_hist.set_xlim(-SPAN, SPAN)
        self.ax_hist.set_ylim(0, 0.6)
        self.ax_hist.set_xlabel(_("score"))
        self.ax_hist.set_title(_("distribution of the scores"))
        self.std_line = self.ax_hist.axvline(0, color="#c44e52", ls="--", animated=True)
        self.std_text = self.ax_hist.text(
            0.03, 0.95, "", transform=self.ax_hist.transAxes, va="top", fontsize=9, animated=True
        )
        self.bars = self.ax_w.bar(range(N_KEYS), [1 / N_KEYS] * N_KEYS, color="#55a868")
        for bar in self.bars:
            bar.set_animated(True)
        self.ax_w.set_ylim(0, 1)
        self.ax_w.set_xlabel(_("key"))
        self.ax_w.set_title(_("softmax weights of one query"))
        self.ax_g.set_xscale("log", base=2)
        self.ax_g.set_yscale("log")
        self.ax_g.set_xlim(0.7, 1500)
        self.ax_g.set_ylim(0.005, 1)
        self.ax_g.set_xlabel(_("d_k"))
        self.ax_g.set_title(_("gradient through softmax"))
        self.ax_g.grid(alpha=0.3)
        (self.trail,) = self.ax_g.plot([], [], "-", color="#c44e52", alpha=0.4, animated=True)
        (self.marker,) = self.ax_g.plot([1], [0.3], "o", color="#c44e52", ms=9, animated=True)
        self.fig.tight_layout()
        self.background = None

    def update(self, n: DkNumbers, curve: list[tuple[int, float]]) -> None:
        """Move every artist to the numbers of `n`; `curve` is the gradient at each d_k seen so far."""
        counts = torch.histc(n.scores.float().clamp(-SPAN, SPAN), bins=BINS, min=-SPAN, max=SPAN)
        self.hist.set_data((counts / counts.sum()).tolist())
        self.std_line.set_xdata([n.score_std, n.score_std])
        self.std_text.set_text(
            _("std = {std}\n√d_k = {root}").format(std=f"{n.score_std:.2f}", root=f"{math.sqrt(n.d_k):.2f}")
        )
        for bar, w in zip(self.bars, n.weights.tolist()):
            bar.set_height(w)
        self.marker.set_data([n.d_k], [max(n.grad_norm, 1e-6)])
        xs, ys = zip(*sorted(curve)) if curve else ([], [])
        self.trail.set_data(list(xs), list(ys))

    def png(self) -> bytes:
        """The figure as PNG bytes: the cached background plus the moving artists."""
        if self.background is None:
            self.canvas.draw()
            self.background = self.canvas.copy_from_bbox(self.fig.bbox)
        self.canvas.restore_region(self.background)
        for ax, artists in (
            (self.ax_hist, [self.hist, self.std_line, self.std_text]),
            (self.ax_w, self.bars),
            (self.ax_g, [self.trail, self.marker]),
        ):
            for artist in artists:
                ax.draw_artist(artist)
        return canvas_png(self.canvas)


class DkLab:
    """The widget: a d_k slider, a scaling toggle, a readout and the live figure."""

    def __init__(self, d_k: int = 64, scaled: bool = False, seed: int = 0, **functions):
        import ipywidgets as widgets

        self.functions, self.seed = functions, seed
        self.slider = widgets.SelectionSlider(
            options=D_K_VALUES,
            value=d_k,
            description=_("d_k"),
            continuous_update=False,
            layout=widgets.Layout(width="420px"),
        )
        self.toggle = widgets.Checkbox(value=scaled, description=_("scale by 1/√d_k"))
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.figure = DkFigure()
        self.curves: dict[bool, dict[int, float]] = {False: {}, True: {}}
        self.slider.observe(self._on_change, names="value")
        self.toggle.observe(self._on_change, names="value")
        self.widget = widgets.VBox([widgets.HBox([self.slider, self.toggle]), self.readout, self.image])
        self.update()

    def _on_change(self, _change=None) -> None:
        self.update()

    def update(self) -> None:
        """Recompute for the current slider and toggle, and redraw."""
        d_k, scaled = self.slider.value, self.toggle.value
        try:
            n = dk_numbers(d_k, scaled, self.seed, **self.functions)
        except MissingImplementation as missing:
            self.readout.value = f"<b>{missing}</b>"
            return
        self.curves[scaled][d_k] = n.grad_norm
        self.figure.update(n, list(self.curves[scaled].items()))
        self.readout.value = readout_text(n)
        self.image.value = self.figure.png()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def dk_lab(**functions) -> DkLab:
    """Show the d_k lab, using the student's functions that are passed in."""
    return DkLab(**functions)
