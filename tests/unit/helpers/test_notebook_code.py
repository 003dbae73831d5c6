"""Reading definitions out of notebooks (the policy on forbidden built-ins: tests/unit/helpers/test_policy.py)."""

from __future__ import annotations

import nbformat

import attention_course.grading  # noqa: F401
from helpers.notebook_code import definition_statements, load_definitions

CELL = '''
%matplotlib inline
import math
x = 3
answer = "B"
def f(a):
    """Uses scaled_dot_product_attention in a docstring only."""
    return a + 1
print("hello")
sys.exit()
class C:
    pass
'''


def test_definitions_keep_defs_imports_and_constants_only():
    kept = definition_statements(CELL)
    assert [s.split()[0] for s in kept] == ["import", "x", "answer", "def", "class"]


def test_load_definitions_skips_test_cells_broken_cells_and_reports_errors(tmp_path):
    nb = nbformat.v4.new_notebook()
    test_cell = nbformat.v4.new_code_cell("def f():\n    return 'from the test cell'")
    test_cell.metadata["nbgrader"] = {"grade": True, "solution": False}
    nb.cells = [
        nbformat.v4.new_code_cell("def f():\n    return 'answer'"),
        nbformat.v4.new_code_cell("def broken(:"),
        nbformat.v4.new_code_cell("import not_a_module_anywhere"),
        test_cell,
    ]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    namespace, errors = load_definitions(path)
    assert namespace["f"]() == "answer"
    assert len(errors) == 1 and "ModuleNotFoundError" in errors[0]
