"""The num_heads lab: a slider over the divisors of d_model = 12, each value a model trained for it.

For every head count the course's build (`make weights`) trained a `TaskModel` on the
three-relation task of `relations_task` and stored its weights. `heads_numbers` computes what the
lab shows for one count (pure, unit-tested): which head owns each feature, d_head, each head's
map on a probe sequence (from the student's `split_heads`, notebook 03, or `MultiHeadAttention`,
notebook 05, with the trained W_q, W_k loaded), how much of each head's weight lands on each
relation's key, the task accuracy of every count, and the attention layer's parameter count, which
does not depend on the number of heads. The lab says what to implement first when neither works
yet. `HeadsLab` is the widget.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from . import relations_task as task
from .exercises import load_projections
from .feedback import MissingImplementation, call_student
from .fonts import in_language_fonts
from .i18n import _
from .plots import canvas_png

D_MODEL = 12
PROBE = [2, 0, 4, 2, 7, 0, 4, 7]  # C A E C H A E H: the letters of the probe sequence
EVALUATION = 2000  # fresh sequences the accuracy is measured on


def divisors(n: int) -> list[int]:
    """The head counts that split n features evenly."""
    return [h for h in range(1, n + 1) if n % h == 0]


@functools.cache
def trained(num_heads: int):
    """The stored model trained with `num_heads` heads (float32, eval mode)."""
    from . import tiny_models, training

    arrays = stored_arrays()
    if f"h{num_heads}/readout.weight" not in arrays:
        raise ValueError(_("No model with {num_heads} heads is stored.").format(num_heads=num_heads))
    model = tiny_models.TaskModel(task.VOCAB, task.LENGTH, D_MODEL, num_heads, task.OUTPUTS)
    return training.load_into(model, arrays, f"h{num_heads}")


@functools.lru_cache(maxsize=1)
def stored_arrays() -> dict:
    from . import training

    return training.load(training.DATA / "heads_lab.npz")


@functools.lru_cache(maxsize=1)
def accuracies() -> dict[int, list[float]]:
    """Head count -> accuracy of each relation on the same fresh sequences (the helpers' forward)."""
    seq = task.make_batch(EVALUATION, torch.Generator().manual_seed(12345))
    with torch.no_grad():
        return {h: task.accuracy(trained(h)(seq, task.NO_SELF), seq) for h in divisors(D_MODEL)}


def relation_shares(weights: torch.Tensor, seq: torch.Tensor) -> torch.Tensor:
    """(H, 3): the mean weight each head puts on each relation's key, over the probe's queries
    that have one. weights: (H, T, T); seq: (T,)."""
    want = task.targets(seq[None])[0]  # (3, T)
    keys = want.clone()
    keys[:2] = torch.arange(len(seq)) + torch.tensor([[-1], [1]])  # previous and next are positions
    out = torch.zeros(weights.shape[0], 3)
    for r in range(3):
        rows = (want[r] != task.IGNORED).nonzero().flatten()
        out[:, r] = weights[:, rows, keys[r, rows]].mean(-1)
    return out


@dataclass
class HeadsNumbers:
    """What the lab shows for one number of heads."""

    num_heads: int
    d_model: int
    d_head: int
    owner: list[int]  # owner[f] = the head that feature f goes to
    weights: torch.Tensor  # (num_heads, T, T) attention weights of each head on the probe
    tokens: list[str]
    parameters: int  # parameters of the four projections
    source: str
    shares: torch.Tensor  # (num_heads, 3) weight on each relation's key
    accuracy: dict[int, list[float]]  # every head count -> accuracy of each relation


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


def _maps_by_module(mha_class, model, x, num_heads):
    module = call_student("MultiHeadAttention", mha_class, D_MODEL, num_heads)
    try:
        load_projections(module, model.attention.projections())
    except AttributeError as exc:
        raise MissingImplementation(
            _("Your `MultiHeadAttention` has no {name}: its check above says more.").format(name=exc.name or "W_q")
        ) from None
    result = call_student("MultiHeadAttention", module, x, x, x, mask=task.NO_SELF)
    return result[1][0], sum(p.numel() for p in module.parameters())


def _maps_by_split(split_heads, model, x, num_heads):
    layers = model.attention
    q = call_student("split_heads", split_heads, layers.W_q(x), num_heads)
    k = call_student("split_heads", split_heads, layers.W_k(x), num_heads)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(D_MODEL // num_heads)).masked_fill(~task.NO_SELF, float("-inf"))
    parameters = sum(p.numel() for name in ("W_q", "W_k", "W_v", "W_o") for p in getattr(layers, name).parameters())
    return torch.softmax(scores, dim=-1)[0], parameters


def heads_numbers(num_heads: int, d_model: int = D_MODEL, split_heads=None, mha_class=None) -> HeadsNumbers:
    """Everything the lab shows for one head count, from the student's code and the trained weights."""
    if d_model != D_MODEL or num_heads not in divisors(d_model):
        raise ValueError(
            _("num_heads must divide d_model = {d_model}: choose one of {choices}; got {num_heads}.").format(
                d_model=D_MODEL, choices=divisors(D_MODEL), num_heads=num_heads
            )
        )
    model = trained(num_heads)
    seq = torch.tensor(PROBE)
    tokens = [task.LETTERS[i] for i in PROBE]
    with torch.no_grad():
        x = model.embed(seq[None])  # (1, T, d_model)
        if mha_class is not None:
            weights, parameters = _maps_by_module(mha_class, model, x, num_heads)
            owner = [f // (d_model // num_heads) for f in range(d_model)]
            source = _("your MultiHeadAttention")
        elif split_heads is not None:
            owner = _owner_from_split(split_heads, d_model, num_heads)
            weights, parameters = _maps_by_split(split_heads, model, x, num_heads)
            source = _("your split_heads")
        else:
            raise MissingImplementation(_("This lab needs your `split_heads` or `MultiHeadAttention`."))
    if not isinstance(weights, torch.Tensor) or weights.shape != (num_heads, len(tokens), len(tokens)):
        raise MissingImplementation(
            _("The attention weights came out as {got}, not {want}; the check above says more.").format(
                got=tuple(getattr(weights, "shape", ())), want=(num_heads, len(tokens), len(tokens))
            )
        )
    weights = weights.detach().float()
    return HeadsNumbers(
        num_heads,
        d_model,
        d_model // num_heads,
        owner,
        weights,
        tokens,
        parameters,
        source,
        relation_shares(weights, seq),
        accuracies(),
    )


def readout_text(n: HeadsNumbers) -> str:
    """The summary under the slider."""
    heads = (_("{count} head") if n.num_heads == 1 else _("{count} heads")).format(count=n.num_heads)
    names = task.relation_names()
    scores = ", ".join(f"{name} {a:.2f}" for name, a in zip(names, n.accuracy[n.num_heads]))
    return _(
        "{heads} × d_head = {d_head} features = d_model {d_model}; parameters of W_q, W_k, W_v, W_o: "
        "{parameters}; accuracy: {scores}  [maps from {source}]"
    ).format(
        heads=heads,
        d_head=n.d_head,
        d_model=n.d_model,
        parameters=f"{n.parameters:,}",
        scores=scores,
        source=n.source,
    )


def head_label(n: HeadsNumbers, h: int) -> str:
    """A head's label: its number and the relation it puts the most weight on, with that weight."""
    r = int(n.shares[h].argmax())
    return _("head {h}").format(h=h) + f"\n{task.relation_names()[r]}\n{n.shares[h, r]:.2f}"


def mosaic(weights: torch.Tensor, gap: int = 1) -> torch.Tensor:
    """The heads' (T, T) maps side by side, separated by `gap` blank (NaN) columns."""
    h, t, _width = weights.shape
    out = torch.full((t, h * (t + gap) - gap), float("nan"))
    for i in range(h):
        out[:, i * (t + gap) : i * (t + gap) + t] = weights[i]
    return out


class HeadsFigure:
    """A strip of d_model features coloured by head, and the heads' maps side by side."""

    @in_language_fonts
    def __init__(self, d_model: int = D_MODEL):
        self.fig = Figure(figsize=(8.6, 4.2), dpi=80)
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
        self.fig.subplots_adjust(left=0.04, right=0.99, top=0.93, bottom=0.16, hspace=0.5)

    def update(self, n: HeadsNumbers) -> None:
        """Show the numbers of `n`."""
        self.strip.set_data(torch.tensor([n.owner], dtype=torch.float32).numpy())
        picture = mosaic(n.weights)
        self.maps.set_data(picture.numpy())
        self.maps.set_extent((-0.5, picture.shape[1] - 0.5, picture.shape[0] - 0.5, -0.5))
        t = len(n.tokens)
        self.ax_maps.set_xticks(
            [i * (t + 1) + (t - 1) / 2 for i in range(n.num_heads)],
            [head_label(n, i) for i in range(n.num_heads)],
            fontsize=8 if n.num_heads <= 6 else 6,
        )
        self.ax_maps.set_yticks(range(t), n.tokens, fontsize=8)
        heads = (_("{count} head") if n.num_heads == 1 else _("{count} heads")).format(count=n.num_heads)
        self.ax_maps.set_title(
            _("attention weights of each head on the probe (rows: queries, columns: keys), {heads}").format(
                heads=heads
            ),
            fontsize=10,
        )

    def png(self) -> bytes:
        """The figure as PNG bytes."""
        self.canvas.draw()
        return canvas_png(self.canvas)


@in_language_fonts
def accuracy_png(accuracy: dict[int, list[float]]) -> bytes:
    """The accuracy of each relation against the number of heads (drawn once: it does not move)."""
    fig = Figure(figsize=(2.6, 4.2), dpi=80)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    counts = sorted(accuracy)
    for r, name in enumerate(task.relation_names()):
        ax.plot(range(len(counts)), [accuracy[h][r] for h in counts], marker="o", label=name)
    ax.set_xticks(range(len(counts)), [str(h) for h in counts])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(_("num_heads"))
    ax.set_title(_("task accuracy"), fontsize=10)
    ax.legend(fontsize=8, loc="lower center")
    fig.subplots_adjust(left=0.18, right=0.97, top=0.93, bottom=0.13)
    canvas.draw()
    return canvas_png(canvas)


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
        self.chart = widgets.Image(format="png", value=accuracy_png(accuracies()))
        self.figure = HeadsFigure(d_model)
        self.slider.observe(lambda _change: self.update(), names="value")
        self.widget = widgets.VBox([self.slider, self.readout, widgets.HBox([self.image, self.chart])])
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
