"""Stored outputs that hold on every machine: no printed float32 comparison without a tolerance
that suits float32 (`allclose` and `isclose` default to atol=1e-8, which float32 sums made in
another order miss), and no rounding gap printed in scientific notation (`:.1e` of a largest
difference printed 0.0e+00 on one run and 6.0e-08 on another: `demos.describe_difference` gives a
bound instead), in any code cell of any source notebook."""

from __future__ import annotations

import ast

import nbformat
import pytest

from attention_course.model.manifest import load

COURSE = load()
COMPARISONS = ("allclose", "isclose")


def _tree(source: str) -> ast.AST | None:
    try:
        return ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
    except SyntaxError:
        return None


def printed_gaps(source: str) -> list[str]:
    """Differences (an expression with `.max()` or `.abs()`) formatted in scientific notation."""
    tree = _tree(source)
    found = []
    for node in ast.walk(tree) if tree else []:
        if isinstance(node, ast.FormattedValue) and isinstance(node.format_spec, ast.JoinedStr):
            spec = "".join(v.value for v in node.format_spec.values if isinstance(v, ast.Constant))
            text = ast.unparse(node.value)
            if spec[-1:] in ("e", "E") and (".max()" in text or ".abs()" in text):
                found.append(f"{text}:{spec}")
    return found


def fragile_comparisons(source: str) -> list[str]:
    """Comparisons with allclose/isclose that give no atol, unless made in float64."""
    tree = _tree(source)
    if tree is None:
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
    gaps = [(cell.id, g) for cell in nb.cells if cell.cell_type == "code" for g in printed_gaps(cell.source)]
    assert not gaps, f"{notebook}: rounding gaps printed digit by digit (print a bound instead): {gaps}"


def test_the_scan_catches_the_comparison_that_failed_on_another_machine():
    assert fragile_comparisons("print(torch.allclose(q_h, q[..., rows]))")
    assert not fragile_comparisons("print(torch.allclose(q_h, q[..., rows], atol=1e-6))")
    assert not fragile_comparisons("print(torch.allclose(q_h.double(), q[..., rows].double()))")


def test_the_scan_catches_the_gap_that_differed_between_two_runs():
    line = 'print(f"largest difference from the lines above: {(built_in.transpose(0, 1) - out).abs().max():.1e}")'
    assert printed_gaps(line) == ["(built_in.transpose(0, 1) - out).abs().max():.1e"]
    assert not printed_gaps('print(f"gap: {demos.describe_difference(demos.max_difference(a, b))}")')
    assert not printed_gaps('print(f"batch first by mistake: {(attn(x, x, x)[0] - out).abs().max():.2f}")')
