"""The heads of the small transformer trained on Python's documentation (notebook 04).

`maps(sentence)` runs the stored model on a sentence and returns every layer's per-head attention
maps; `measured()` pools the measures of `head_measures` over windows of the held-out topics, so
each head is named by a number; `chance` is what a head that spreads its weight evenly scores; `report` prints the table
and `figure` draws the heads on one sentence, each map titled with the measure its head beats an
even spread on by the largest factor.
"""

from __future__ import annotations

import functools

import matplotlib.pyplot as plt
import torch

from . import head_measures, text_corpus, tiny_models, training
from .fonts import in_language_fonts
from .i18n import _, ljust, rjust
from .i18n import width as text_width

WINDOWS = 48  # held-out windows the measures are pooled over


@functools.lru_cache(maxsize=1)
def model() -> tiny_models.TextModel:
    """The stored text model (float32, eval mode)."""
    return training.load_into(tiny_models.TextModel(), training.load(training.DATA / "text_model.npz"), "text")


def maps(text: str) -> torch.Tensor:
    """(layers, heads, T, T): each head's causal attention on `text` (at most the model's context)."""
    if not 1 <= len(text) <= model().context:
        raise ValueError(
            _("The text model reads 1 to {n} characters at a time; got {got}.").format(n=model().context, got=len(text))
        )
    with torch.no_grad():
        _logits, per_layer = model()(tiny_models.encode(text)[None], keep_maps=True)
    return torch.stack([m[0] for m in per_layer])


def windows(count: int = WINDOWS) -> list[str]:
    """`count` evenly spaced windows of held-out text, each as long as the model's context."""
    text, T = text_corpus.held_out_text(), model().context
    step = (len(text) - T) // count
    return [text[i * step : i * step + T] for i in range(count)]


@functools.lru_cache(maxsize=1)
def measured() -> torch.Tensor:
    """(layers, heads, measures): each head's pooled share on each measure's key, on held-out text."""
    texts = windows()
    with torch.no_grad():
        _logits, per_layer = model()(torch.stack([tiny_models.encode(t) for t in texts]), keep_maps=True)
    return torch.stack([head_measures.pooled(zip(layer, texts)) for layer in per_layer])


@functools.lru_cache(maxsize=1)
def chance() -> torch.Tensor:
    """(measures,): the pooled shares of a head that spreads its weight evenly, on the same windows."""
    T = model().context
    even = torch.ones(T, T).tril() / torch.arange(1, T + 1).view(T, 1)
    return head_measures.pooled((even[None], t) for t in windows())[0]


def names() -> list[list[str]]:
    """Each head's name: the measure it beats an even spread on by the largest factor."""
    labels = head_measures.measure_names()
    return [[labels[m] for m in head_measures.strongest(layer, chance())] for layer in measured()]


def report() -> str:
    """The measures as an aligned table (2 decimals): a row per measure, a column per head
    (L1 H0: layer 1, head 0), and the even spread last."""
    labels, table = head_measures.measure_names(), measured()
    layers, heads, _m = table.shape
    first = max(text_width(n) for n in labels) + 2
    columns = [f"L{layer} H{h}" for layer in range(layers) for h in range(heads)] + [_("even")]
    lines = [ljust("", first) + "".join(rjust(c, 7) for c in columns)]
    rows = torch.cat([table.reshape(layers * heads, -1), chance()[None]]).T
    for label, row in zip(labels, rows.tolist()):
        lines.append(ljust(label, first) + "".join(f"{v:.2f}".rjust(7) for v in row))
    return "\n".join(lines)


@in_language_fonts
def figure(text: str):
    """Every head's map on `text`, titled with its strongest measure on held-out text."""
    weights, table = maps(text), measured()
    layers, heads, T, _t = weights.shape
    labels = head_measures.measure_names()
    chars = [c if c != " " else "␣" for c in text]
    fig, axes = plt.subplots(
        layers, heads, squeeze=False, figsize=(2.9 * heads, 3.1 * layers), sharex=True, sharey=True
    )
    for layer in range(layers):
        for h in range(heads):
            ax, m = axes[layer, h], head_measures.strongest(table[layer], chance())[h]
            ax.imshow(weights[layer, h].numpy(), cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
            title = _("layer {l}, head {h}").format(l=layer, h=h)
            share = _("{name} {share:.2f} (even {even:.2f})").format(
                name=labels[m], share=table[layer, h, m], even=chance()[m]
            )
            ax.set_title(f"{title}\n{share}", fontsize=9)
    # the characters label the outer axes only (drawing text is most of a figure's time)
    axes[0, 0].set_xticks(range(T), chars, fontsize=5)
    axes[0, 0].set_yticks(range(T), chars, fontsize=5)
    for ax in axes.flat:
        ax.tick_params(labelbottom=ax in axes[-1], labelleft=ax in axes[:, 0], length=0, labelsize=5)
    fig.subplots_adjust(left=0.03, right=0.99, bottom=0.06, top=0.9, wspace=0.08, hspace=0.3)
    return fig
