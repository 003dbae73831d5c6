"""An exercise's prompt states the goal, the shapes and an example, never the calls of its solution;
hints (the <details> blocks) may name them, last. And the causal mask that 07 asks for is not built
in front of the student before 07 (the demos of 05 and 06 take it from the helpers)."""

from __future__ import annotations

import re

import nbformat
import pytest

from conftest import REPO

SOURCE = REPO / "source" / "attention"
HINTS = re.compile(r"<details>.*?</details>", re.S)
SOLUTION = re.compile(r"### BEGIN SOLUTION.*?### END SOLUTION", re.S)

# The calls that make up each exercise's solution: its prompt names none of them.
SOLUTION_CALLS = {
    "raw_scores": ["transpose(", "matmul(", ".mT", "@"],
    "scaled_scores": ["transpose(", "matmul(", "math.sqrt(", "** 0.5"],
    "scaled_dot_product_attention": ["masked_fill(", "torch.where(", ".softmax(", "softmax(dim"],
    "split_heads": ["view(", "transpose(", "reshape(", "permute(", "unflatten("],
    "concat_heads": ["view(", "transpose(", "reshape(", "permute(", "flatten("],
    "causal_mask": ["tril(", "triu("],
}
CAUSAL_RECIPE = ["tril(", "triu("]


def _prompt(name: str) -> tuple[str, str]:
    """The notebook and the text a student reads for the exercise `name`: the markdown cells just
    above its answer cell, and the answer cell as released (solution and hints left out)."""
    for path in sorted(SOURCE.glob("0*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        for index, cell in enumerate(cells):
            if cell.metadata.get("nbgrader", {}).get("grade_id") == name and cell.cell_type == "code":
                text = [SOLUTION.sub("", cell.source)]
                before = index - 1
                while before >= 0 and cells[before].cell_type == "markdown":
                    text.insert(0, HINTS.sub("", cells[before].source))
                    before -= 1
                return path.stem, "\n".join(text)
    raise AssertionError(f"no answer cell {name!r} in {SOURCE}")


@pytest.mark.parametrize("name", sorted(SOLUTION_CALLS))
def test_the_prompt_names_no_call_of_the_solution(name):
    notebook, prompt = _prompt(name)
    named = [call for call in SOLUTION_CALLS[name] if call in prompt]
    assert not named, f"{notebook}: the prompt of {name} dictates {named}"


def test_a_dictating_prompt_is_caught(monkeypatch):
    """The check above fails on a prompt that gives the recipe (03's old wording)."""
    monkeypatch.setitem(SOLUTION_CALLS, "split_heads", ["view(", "transpose("])
    _, prompt = _prompt("split_heads")
    planted = prompt + "\nUse `x.view(B, T, H, d_head)`, then `transpose(1, 2)`."
    assert [call for call in SOLUTION_CALLS["split_heads"] if call in planted] == ["view(", "transpose("]


def test_no_notebook_before_07_builds_the_causal_mask():
    for path in sorted(SOURCE.glob("0*.ipynb")):
        if path.stem >= "07":
            continue
        for number, cell in enumerate(nbformat.read(path, as_version=4).cells):
            text = HINTS.sub("", cell.source)
            found = [call for call in CAUSAL_RECIPE if call in text]
            assert not found, f"{path.stem} cell {number} builds the causal mask with {found}: 07 asks for it"
