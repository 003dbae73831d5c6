"""Read the definitions a notebook makes, without running the notebook.

Used by notebook 06 to load your `MultiHeadAttention` from notebook 05, and by the course's
grader to take a submission's definitions (functions, classes, imports and constant
assignments to names) and nothing else: a stray `sys.exit()`, a plot or a cell that raises is
left behind. Test cells are never read.
"""

from __future__ import annotations

import ast
import itertools
import linecache
from pathlib import Path

from .cells import cell_source, is_answer_cell, is_test_cell, read_notebook

_counter = itertools.count()

# Statements kept from a code cell: what defines names, not what acts.
_KEPT = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


def _strip_magics(source: str) -> str:
    """Comment out IPython magics and shell escapes, which are not Python syntax."""
    lines = []
    for line in source.splitlines():
        stripped = line.lstrip()
        lines.append("# " + line if stripped.startswith(("%", "!")) else line)
    return "\n".join(lines)


def _is_assignment(node: ast.stmt) -> bool:
    """`name = ...` at top level: an alias or constant that a definition may rely on."""
    if isinstance(node, ast.Assign):
        return all(isinstance(t, (ast.Name, ast.Tuple)) for t in node.targets)
    return isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None


def _is_constant_assignment(node: ast.stmt) -> bool:
    """`NAME = <literal>` at top level, such as a multiple-choice answer."""
    if not _is_assignment(node):
        return False
    try:
        ast.literal_eval(node.value)
    except ValueError:
        return False
    return True


def definition_statements(source: str, assignments: bool = False) -> list[str]:
    """The top-level definition statements of one cell, each as source text.

    Functions, classes, imports and literal constants are kept; with `assignments`, every
    assignment to a name too. Comments are dropped. A cell that does not parse raises `SyntaxError`.
    """
    tree = ast.parse(_strip_magics(source))
    keep = _is_assignment if assignments else _is_constant_assignment
    return [ast.unparse(node) for node in tree.body if isinstance(node, _KEPT) or keep(node)]


def notebook_statements(notebook: dict, course_cells: set[str] | None = None, which: str = "all") -> list[str]:
    """The definition statements of every code cell but the test cells, in notebook order.

    In answer cells, and in the student's own cells (those whose source is not one of
    `course_cells`, when given), assignments to names are kept as well; in the course's demo
    cells only definitions are. `which="student"` keeps the student's cells only, `"course"`
    the course's only. A cell that does not parse is skipped.
    """
    statements = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code" or is_test_cell(cell):
            continue
        source = cell_source(cell)
        own = is_answer_cell(cell) or (course_cells is not None and source.strip() not in course_cells)
        if (which == "student" and not own) or (which == "course" and own):
            continue
        try:
            statements.extend(definition_statements(source, assignments=own))
        except SyntaxError:
            continue
    return statements


def import_statements(notebook: dict) -> list[str]:
    """The top-level import statements of a notebook's code cells, in order."""
    found = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        try:
            tree = ast.parse(_strip_magics(cell_source(cell)))
        except SyntaxError:
            continue
        found += [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    return found


def course_cell_sources(notebook: dict) -> set[str]:
    """The sources of a notebook's code cells that are neither answers nor tests: the course's own."""
    return {
        cell_source(c).strip()
        for c in notebook.get("cells", [])
        if c.get("cell_type") == "code" and not is_answer_cell(c) and not is_test_cell(c)
    }


def run_statements(statements: list[str], namespace: dict | None = None) -> tuple[dict, list[str]]:
    """Run statements one by one in `namespace`; one that raises is reported, not fatal.

    Returns the namespace and a list of one-line error descriptions.
    """
    namespace = {"__name__": "notebook_definitions"} if namespace is None else namespace
    errors = []
    for statement in statements:
        filename = f"<definition {next(_counter)}>"
        # Registered like IPython registers cells, so that inspect.getsource finds the code.
        linecache.cache[filename] = (len(statement), None, statement.splitlines(True), filename)
        try:
            exec(compile(statement, filename, "exec"), namespace)
        except Exception as exc:  # a broken definition must not hide the others
            first_line = statement.splitlines()[0] if statement else ""
            errors.append(f"{first_line!r} raised {type(exc).__name__}: {exc}")
    return namespace, errors


def load_definitions(
    path: str | Path, namespace: dict | None = None, names: tuple[str, ...] = ()
) -> tuple[dict, list[str]]:
    """Run the definitions of a saved notebook in a fresh namespace: (namespace, errors).

    With `names`, only the statements those names need (`statements.needed_statements`, as the grader
    takes them): another notebook's `import matplotlib.pyplot` is not run for its class."""
    statements = notebook_statements(read_notebook(path))
    if names:
        from .statements import needed_statements

        statements = needed_statements(statements, names)
    return run_statements(statements, namespace)
