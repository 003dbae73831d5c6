"""The picture of the four steps of multi-head attention."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from helpers import schematic


@pytest.mark.parametrize("step", [None, *schematic.STEPS])
def test_every_step_draws_its_shapes(step):
    fig = schematic.pipeline_figure(step)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    for shape in ["(B, T, d_model)", "(B, H, T, d_head)", "(B, H, T, T)"]:
        assert shape in texts
    bold = [t.get_text() for t in fig.axes[0].texts if t.get_fontweight() == "bold"]
    assert len(bold) == (0 if step is None else 1)
    plt.close(fig)


def test_an_unknown_step_is_named():
    with pytest.raises(ValueError, match="split"):
        schematic.pipeline_figure("merge")
