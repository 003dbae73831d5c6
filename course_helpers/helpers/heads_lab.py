"""The num_heads lab: a slider over the divisors of a fixed d_model, drawn live.

`heads_numbers` computes what the lab shows for one head count (pure, unit-tested): which head
owns each feature of d_model, d_head, the per-head attention maps of a fixed, seeded module on a
toy sentence, and the parameter count, which does not depend on the number of heads. The maps
come from the student's `split_heads` (notebook 03) or `MultiHeadAttention` (notebook 05); the
lab says what to implement first when neither works yet. `HeadsLab` is the widget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .demos import toy_sentence
from .exercises import PROJECTIONS, Projections, load_projections
from .feedback import MissingImplementation, call_student
from .fonts import in_language_fonts
from .i18n import _
from .plots import canvas_png

D_MODEL = 12
SEED = 7


def divisors(n: int) -> list[int]:
    """The head counts that split n features evenly."""
    return [h for h in range(1, n + 1) if n % h == 0]


@dataclass
class HeadsNumbers:
    """What the lab shows for one number of heads."""

    num_heads: int
    d_model: int
    d_head: int
    owner: list[int]  # owner[f] = the head that feature f goes to
    weights: torch.Tensor  # (num_heads, T, T) attention weights of each head
    tokens: list[str]
    parameters: int  # parameters of the four projections
    source: str


def fixed_weights(d_model: int, seed: int = SEED) -> dict[str, torch.Tensor]:
    """The same W_q, W_k, W_v, W_o (with biases) for every head count: only the split changes."""
    gen = torch.Generator().manual_seed(seed)
    tensors = {}
    for name in PROJECTIONS:
        tensors[f"{name}.weight"] = torch.randn(d_model, d_model, generator=gen) * (2.0 / math.sqrt(d_model))
        tensors[f"{name}.bias"] = torch.zeros(d_model)
    return tensors


def _owner_from_split(split_heads, d_model: int, num_heads: int) -> list[int]:
    """Feed feature numbers 0..d_model-1 through split_heads and see where each one lands."""
    ids = torch.arange(d_model, dtype=torch.float32).view(1, 1, d_model)
    heads = call_student("split_heads", split_heads, ids, num_heads)
    if not isinstance(heads, torch.Tensor) or heads.shape != (1, num_heads, 1, d_model // num_heads):
        raise MissingImplementation(
            _(
                "Your `split_heads` returned {got} for (1, 1, {d_model}) and {num_heads} heads; "
                "its check above says more."
            ).format(got=getattr(heads, "shape", type(heads)), d_model=d_model, num_heads=num_heads)
        )
    owner = [0] * d_model
    for h in range(num_heads):
        for f in heads[0, h, 0].round().long().tolist():
            owner[f] = h
    return owner


def heads_numbers(num_heads: int, d_model: int = D_MODEL, split_heads=None, mha_class=None) -> HeadsNumbers:
    """Everything the lab shows for one head count, from the student's code."""
    if num_heads not in divisors(d_model):
        raise ValueError(
            _("num_heads must divide d_model = {d_model}: choose one of {choices}; got {num_heads}.").format(
                d_model=d_model, choices=divisors(d_model), num_heads=num_heads
            )
        )
    tokens, x = toy_sentence(d_model=d_model)
    x = x.unsqueeze(0)  # (1, T, d_model)
    tensors = fixed_weights(d_model)
    d_head = d_model // num_heads
    with torch.no_grad():
        if mha_class is not None:
            module = call_student("MultiHeadAttention", mha_class, d_model, num_heads)
            try:
                load_projections(module, tensors)
            except AttributeError as exc:
                raise MissingImplementation(
                    _("Your `MultiHeadAttention` has no {name}: its check above says more.").format(
                        name=exc.name or "W_q"
                    )
                ) from None
            result = call_student("MultiHeadAttention", module, x, x, x)
            weights = result[1][0]
            parameters = sum(p.numel() for p in module.parameters())
            owner = [f // d_head for f in range(d_model)]
            source = _("your MultiHeadAttention")
        elif split_heads is not None:
            owner = _owner_from_split(split_heads, d_model, num_heads)
            q = call_student("split_heads", split_heads, x @ tensors["W_q.weight"].T, num_heads)
            k = call_student("split_heads", split_heads, x @ tensors["W_k.weight"].T, num_heads)
            weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head), dim=-1)[0]
            parameters = sum(p.numel() for p in Projections(d_model, num_heads).parameters())
            source = _("your split_heads")
        else:
            raise MissingImplementation(_("This lab needs your `split_heads` or `MultiHeadAttention`."))
    if weights.shape != (num_heads, len(tokens), len(tokens)):
        raise MissingImplementation(
            _("The attention weights came out as {got}, not {want}; the check above says more.").format(
                got=tuple(weights.shape), want=(num_heads, len(tokens), len(tokens))
            )
        )
    return HeadsNumbers(num_heads, d_model, d_head, owner, weights.detach().float(), tokens, parameters, source)


def readout_text(n: HeadsNumbers) -> str:
    """The one-line summary under the slider."""
    heads = (_("{count} head") if n.num_heads == 1 else _("{count} heads")).format(count=n.num_heads)
    return _(
        "{heads} × d_head = {d_head} features = d_model {d_model}; parameters of W_q, W_k, W_v, W_o: "
        "{parameters}  [maps from {source}]"
    ).format(heads=heads, d_head=n.d_head, d_model=n.d_model, parameters=f"{n.parameters:,}", source=n.source)


def mosaic(weights: torch.Tensor, gap: int = 1) -> torch.Tensor:
    """The heads' (T, T) maps side by side, separated by `gap` blank (NaN) columns."""
    h, t, _width = weights.shape
    out = torch.full((t, h * (t + gap) - gap), float("nan"))
    for i in range(h):
        out[:, i * (t + gap) : i * (t + gap) + t] = weights[i]
    return out


class HeadsFigure:
    """A strip of d_model features coloured by head, and the heads' attention maps side by side."""

    @in_language_fonts
    def __init__(self, d_model: int = D_MODEL):
        self.fig = Figure(figsize=(11, 3.6), dpi=80)
        self.canvas = FigureCanvasAgg(self.fig)
        grid = self.fig.add_gridspec(2, 1, height_ratios=[1, 4.5])
        self.ax_strip = self.fig.add_subplot(grid[0])
        self.ax_maps = self.fig.add_subplot(grid[1])
        self.strip = self.ax_strip.imshow(torch.zeros(1, d_model).numpy(), cmap="tab20", vmin=0, vmax=19, aspect="auto")
        self.ax_strip.set_yticks([])
        self.ax_strip.set_xticks(range(d_model))
        self.ax_strip.set_title(_("the d_model features, coloured by the head they go to"), fontsize=10)
        self.maps = self.ax_maps.imshow(
            torch.zeros(6, 6).numpy(), cmap="Blues", vmin=0, vmax=1, aspect="equal", interpolation="nearest"
        )
        self.fig.subplots_adjust(left=0.06, right=0.99, top=0.9, bottom=0.12, hspace=0.6)

    def update(self, n: HeadsNumbers) -> None:
        """Show the numbers of `n`."""
        self.strip.set_data(torch.tensor([n.owner], dtype=torch.float32).numpy())
        picture = mosaic(n.weights)
        self.maps.set_data(picture.numpy())
        self.maps.set_extent((-0.5, picture.shape[1] - 0.5, picture.shape[0] - 0.5, -0.5))
        t = len(n.tokens)
        self.ax_maps.set_xticks(
            [i * (t + 1) + (t - 1) / 2 for i in range(n.num_heads)],
            [_("head {h}").format(h=i) for i in range(n.num_heads)],
            fontsize=8,
        )
        self.ax_maps.set_yticks(range(t), n.tokens, fontsize=8)
        heads = (_("{count} head") if n.num_heads == 1 else _("{count} heads")).format(count=n.num_heads)
        self.ax_maps.set_title(
            _("attention weights of each head (rows: queries, columns: keys), {heads}").format(heads=heads), fontsize=10
        )

    def png(self) -> bytes:
        """The figure as PNG bytes."""
        self.canvas.draw()
        return canvas_png(self.canvas)


class HeadsLab:
    """The widget: a num_heads slider over the divisors of d_model, a readout and the live figure."""

    def __init__(self, d_model: int = D_MODEL, num_heads: int = 3, split_heads=None, mha_class=None):
        import ipywidgets as widgets

        self.d_model, self.split_heads, self.mha_class = d_model, split_heads, mha_class
        self.slider = widgets.SelectionSlider(
            options=divisors(d_model),
            value=num_heads,
            description=_("num_heads"),
            continuous_update=False,
            layout=widgets.Layout(width="420px"),
        )
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.figure = HeadsFigure(d_model)
        self.slider.observe(lambda _change: self.update(), names="value")
        self.widget = widgets.VBox([self.slider, self.readout, self.image])
        self.update()

    def update(self) -> None:
        """Recompute for the current head count and redraw."""
        try:
            n = heads_numbers(self.slider.value, self.d_model, self.split_heads, self.mha_class)
        except MissingImplementation as missing:
            self.readout.value = f"<b>{missing}</b>"
            return
        self.figure.update(n)
        self.readout.value = readout_text(n)
        self.image.value = self.figure.png()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
