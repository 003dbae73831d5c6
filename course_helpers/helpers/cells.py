"""Notebook cells and their nbgrader metadata, read the way nbgrader reads them.

The one place that knows how a cell says what it is: an answer cell (`solution`), a test cell
(`grade` without `solution`), its grade id and points. The grader, the checks and the tests
read cells through these functions, never by searching the text of a notebook.
"""

from __future__ import annotations

import json
from pathlib import Path


def nbgrader(cell: dict) -> dict:
    """A cell's nbgrader metadata (empty when it has none)."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def is_answer_cell(cell: dict) -> bool:
    """An nbgrader answer cell (`solution`)."""
    return bool(nbgrader(cell).get("solution"))


def is_test_cell(cell: dict) -> bool:
    """An nbgrader test cell: graded, and not an answer."""
    meta = nbgrader(cell)
    return bool(meta.get("grade")) and not meta.get("solution")


def grade_id(cell: dict) -> str | None:
    return nbgrader(cell).get("grade_id")


def points(cell: dict) -> float:
    return float(nbgrader(cell).get("points", 0) or 0)


def cell_source(cell: dict) -> str:
    """A cell's source as one string (notebook JSON may store it as a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def read_notebook(path: str | Path) -> dict:
    """A notebook file as plain JSON data."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def find_cell(notebook: dict, grade: str) -> dict | None:
    """The cell with nbgrader grade id `grade`, or None."""
    return next((c for c in notebook.get("cells", []) if grade_id(c) == grade), None)


def without_solution_markers(source: str) -> str:
    """An answer cell's source without nbgrader's `### BEGIN/END SOLUTION` lines."""
    return (
        "\n".join(
            line for line in source.splitlines() if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")
        )
        + "\n"
    )
