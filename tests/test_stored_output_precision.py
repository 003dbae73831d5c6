"""Stored outputs that hold on every machine: no printed float32 comparison without a tolerance
that suits float32 (`allclose` and `isclose` default to atol=1e-8, which float32 sums made in
another order miss), in any code cell of any source notebook."""

from __future__ import annotations

import ast

import nbformat
import pytest

from attention_course.model.manifest import load

COURSE = load()
COMPARISONS = ("allclose", "isclose")


def fragile_comparisons(source: str) -> list[str]:
    """Comparisons with allclose/isclose that give no atol, unless made in float64."""
    try:
        tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in COMPARISONS:
            text = ast.unparse(node)
            if not any(k.arg == "atol" for k in node.keywords) and "double()" not in text and "float64" not in text:
                found.append(text)
    return found


@pytest.mark.parametrize("edition,notebook", [(e.name, nb) for e in COURSE.editions for nb in COURSE.notebooks])
def test_no_printed_float32_comparison_without_a_tolerance(edition, notebook):
    nb = nbformat.read(COURSE.source_notebook(notebook, edition), as_version=4)
    bad = [(cell.id, c) for cell in nb.cells if cell.cell_type == "code" for c in fragile_comparisons(cell.source)]
    assert not bad, f"{notebook}: float32 comparisons whose result depends on the CPU's summation order: {bad}"


def test_the_scan_catches_the_comparison_that_failed_on_another_machine():
    assert fragile_comparisons("print(torch.allclose(q_h, q[..., rows]))")
    assert not fragile_comparisons("print(torch.allclose(q_h, q[..., rows], atol=1e-6))")
    assert not fragile_comparisons("print(torch.allclose(q_h.double(), q[..., rows].double()))")
