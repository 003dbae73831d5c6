"""`helpers.earlier`: a student's function or class taken from an earlier notebook's saved file (written into
tmp_path, the folder a later notebook's kernel runs in): the repository's source notebooks (the reference
solutions) give working pieces, the releases (stubs) and missing or failing definitions give None after one
sentence pointing back to the exercise; and `step`, one stage of a "try it" pipeline, which prints the shape
it got next to the one it should get.
"""

from __future__ import annotations

import shutil

import nbformat
import pytest
import torch

from conftest import REPO
from helpers import earlier
from helpers.i18n import using

PIECES = ("03_split_heads", "02_scaled_dot_product_attention", "04_concat_heads")


@pytest.fixture
def here(tmp_path, monkeypatch):
    """The folder the notebook's kernel runs in (the earlier notebooks are looked for there)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _copy(here, folder: str, *notebooks: str) -> None:
    for name in notebooks:
        shutil.copy(REPO / folder / "attention" / f"{name}.ipynb", here / f"{name}.ipynb")


def _write(here, name: str, *sources: str) -> str:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nbformat.write(nb, here / name)
    return name


def _printed(capsys) -> list[str]:
    return capsys.readouterr().out.strip().splitlines()


# ----------------------------------------------------------------------------------- the earlier pieces


def test_the_reference_solutions_give_pieces_that_fit_together(here, capsys):
    _copy(here, "source", *PIECES)
    split_heads, attention, concat_heads = earlier.pieces_from_earlier_notebooks()
    assert _printed(capsys) == []
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))
    heads = split_heads(x, 2)
    assert heads.shape == (2, 2, 5, 4) and torch.equal(concat_heads(heads), x)
    output, weights = attention(heads, heads, heads)
    assert output.shape == (2, 2, 5, 4) and torch.allclose(weights.sum(-1), torch.ones(2, 2, 5))


def test_the_released_stubs_are_none_each_with_one_sentence(here, capsys):
    _copy(here, "notebooks", *PIECES)
    assert earlier.pieces_from_earlier_notebooks() == (None, None, None)
    lines = _printed(capsys)
    assert len(lines) == 3 and all("is not implemented yet: finish it in" in line for line in lines)
    assert lines[0].startswith("This cell uses your `split_heads` from 03_split_heads.ipynb")
    assert "`concat_heads` from 04_concat_heads.ipynb" in lines[2]


def test_notebooks_that_are_not_there_are_each_said_once(here, capsys):
    assert earlier.pieces_from_earlier_notebooks() == (None, None, None)
    lines = _printed(capsys)
    assert lines == [
        f"This cell uses your `{name}` from {notebook}.ipynb, which was not found next to this notebook."
        for name, notebook in zip(("split_heads", "scaled_dot_product_attention", "concat_heads"), PIECES)
    ]


# ----------------------------------------------------------------------------------- load_function, load_class


def test_a_notebook_that_does_not_define_the_name_yet(here, capsys):
    _write(here, "02.ipynb", "def something_else():\n    return 1")
    assert earlier.load_function("02.ipynb", "scaled_dot_product_attention") is None
    assert _printed(capsys) == [
        "This cell uses your `scaled_dot_product_attention` from 02.ipynb, which does not define it yet: "
        "finish it in 02.ipynb (and save that notebook), then run this cell again."
    ]


def test_a_function_that_fails_on_its_probe_is_named_with_the_error(here, capsys):
    _write(here, "03.ipynb", "def split_heads(x, h):\n    raise ValueError('d_model 4 is not divisible by 3')")
    assert earlier.load_function("03.ipynb", "split_heads", probe=(torch.zeros(1, 2, 4), 3)) is None
    assert _printed(capsys) == [
        "This cell uses your `split_heads` from 03.ipynb, which raised ValueError: d_model 4 is not divisible "
        "by 3. Its check in 03.ipynb says more."
    ]


def test_without_a_probe_the_function_is_returned_uncalled(here, capsys):
    _write(here, "03.ipynb", "import math", "def f(x):\n    raise NotImplementedError()", "print('not run')")
    fn = earlier.load_function("03.ipynb", "f")
    assert callable(fn) and fn.__name__ == "f" and _printed(capsys) == []
    with pytest.raises(NotImplementedError):
        fn(1)


def test_a_working_function_passes_its_probe(here, capsys):
    _write(here, "02.ipynb", "import torch\nSCALE = 2.0", "def double(x):\n    return torch.as_tensor(x) * SCALE")
    fn = earlier.load_function("02.ipynb", "double", probe=(torch.ones(2),))
    assert torch.equal(fn(torch.ones(2)), torch.full((2,), 2.0)) and _printed(capsys) == []


def test_the_reference_class_is_built_and_probed(here, capsys):
    _copy(here, "source", "05_output_projection")
    x = torch.randn(1, 3, 16, generator=torch.Generator().manual_seed(1))
    module = earlier.load_class("05_output_projection.ipynb", "MultiHeadAttention", 16, 4, probe=(x, x, x))
    assert isinstance(module, torch.nn.Module) and _printed(capsys) == []
    output, weights = module(x, x, x)
    assert output.shape == (1, 3, 16) and weights.shape == (1, 4, 3, 3)


def test_the_released_class_is_not_ready(here, capsys):
    _copy(here, "notebooks", "05_output_projection")
    x = torch.zeros(1, 3, 16)
    assert earlier.load_class("05_output_projection.ipynb", "MultiHeadAttention", 16, 4, probe=(x, x, x)) is None
    assert "`MultiHeadAttention` from 05_output_projection.ipynb, which is not implemented yet" in _printed(capsys)[0]


def test_a_class_built_with_the_wrong_arguments_is_named_with_the_error(here, capsys):
    _write(here, "05.ipynb", "class Layer:\n    def __init__(self, d_model):\n        self.d_model = d_model")
    assert earlier.load_class("05.ipynb", "Layer", 16, 4) is None
    [line] = _printed(capsys)
    assert line.startswith("This cell uses your `Layer` from 05.ipynb, which raised TypeError: ")
    assert earlier.load_class("05.ipynb", "Layer", 16).d_model == 16


def test_the_sentences_are_in_the_notebooks_language(here, capsys):
    with using("zh-CN"):
        assert earlier.load_function("03_split_heads.ipynb", "split_heads") is None
    [line] = _printed(capsys)
    assert "split_heads" in line and "03_split_heads.ipynb" in line and "was not found" not in line


# ----------------------------------------------------------------------------------- step


def test_a_step_of_the_right_shape_is_ticked_and_returned(capsys):
    result = earlier.step(
        "1. split", "split_heads", lambda x: x.view(2, 3), torch.zeros(6), expect=(2, 3), meaning="ok"
    )
    assert result.shape == (2, 3) and _printed(capsys) == ["1. split: (2, 3) ✓ ok"]


def test_a_step_of_the_wrong_shape_says_what_was_expected_and_stops_the_pipeline(capsys):
    result = earlier.step(
        "2. attend", "attention", lambda x: (x, x), torch.zeros(4, 2), expect=(2, 4), meaning="(B, T)"
    )
    assert result is None and _printed(capsys) == ["2. attend: (4, 2) ✗ expected (2, 4) (B, T)"]
    assert earlier.step("3. merge", "concat_heads", lambda x: 0.5, torch.zeros(1), expect=(1,)) is None
    assert _printed(capsys) == ["3. merge: float ✗ expected (1,)"]  # not a tensor: its type


def test_a_step_with_a_tuple_result_is_judged_by_its_first_tensor(capsys):
    pair = (torch.zeros(2, 4), torch.ones(3))
    assert earlier.step("s", "attention", lambda: pair, expect=(2, 4)) is pair
    assert _printed(capsys) == ["s: (2, 4) ✓"]


def test_a_step_that_cannot_run_is_skipped_or_points_back_to_the_exercise(capsys):
    assert earlier.step("1. split", "split_heads", None, torch.zeros(1), expect=(1,)) is None
    assert earlier.step("2. attend", "attention", torch.relu, None, expect=(1,)) is None

    def stub(x):
        raise NotImplementedError()

    assert earlier.step("3. merge", "concat_heads", stub, torch.zeros(1), expect=(1,)) is None
    assert _printed(capsys) == [
        "1. split: skipped (split_heads or an earlier step is not ready, see above)",
        "2. attend: skipped (attention or an earlier step is not ready, see above)",
        "3. merge: Implement `concat_heads` above first, then run this cell again.",
    ]
