"""Build submissions from the release: the right answers, known mistakes, or any answer text.

Used by the mutation and attack suites and by `make bench` to make a class of students:
`submission({"raw_scores": "def raw_scores(q, k): ..."})` returns the release notebooks with those
answer cells filled in and every other answer cell filled with the reference solution.
"""
from __future__ import annotations

import ast
import copy
import functools
import json
from pathlib import Path

from . import REPO, SOURCE
from .mistakes import mistake_source
from .reference import solution_source
from .trusted import QUICK_CHECK

from helpers.notebook_code import cell_source, read_notebook  # noqa: E402

RELEASE = REPO / "notebooks" / "attention"


def _defined_name(source: str) -> str | None:
    body = "\n".join(line for line in source.splitlines() if "###" not in line)
    for node in ast.parse(body).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            return node.name
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            return node.targets[0].id
    return None


@functools.lru_cache(maxsize=None)
def answer_cells() -> dict[str, tuple[str, str]]:
    """For every answer target (exercise or quick_check_answer): (notebook, grade_id)."""
    found = {}
    for path in sorted(SOURCE.glob("0*.ipynb")):
        for cell in read_notebook(path)["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("solution") and cell.get("cell_type") == "code":
                name = _defined_name(cell_source(cell))
                if name:
                    found[name] = (path.stem, meta["grade_id"])
    return found


def right_answer(target: str) -> str:
    """The reference answer cell of a target, without solution markers."""
    if target == QUICK_CHECK:
        notebook, grade_id = answer_cells()[target]
        for cell in read_notebook(SOURCE / f"{notebook}.ipynb")["cells"]:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
                return "\n".join(line for line in cell_source(cell).splitlines() if "###" not in line) + "\n"
    return solution_source(target)


def wrong_answer(target: str, mistake: str) -> str:
    """An answer cell with a catalogued mistake (for the quick check: a wrong option's letter)."""
    if target == QUICK_CHECK:
        return f'{QUICK_CHECK} = "{mistake}"\n'
    return mistake_source(target, mistake)


def submission(answers: dict[str, str], notebooks: list[str] | None = None) -> dict[str, dict]:
    """Release notebooks (by name) with the given answers and the right answer everywhere else."""
    cells = answer_cells()
    wanted = notebooks or sorted({cells[t][0] for t in answers}) or None
    result = {}
    for path in sorted(RELEASE.glob("0*.ipynb")):
        if wanted is not None and path.stem not in wanted:
            continue
        notebook = copy.deepcopy(read_notebook(path))
        for cell in notebook["cells"]:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            for target, (nb, gid) in cells.items():
                if nb == path.stem and gid == grade_id:
                    cell["source"] = answers.get(target, right_answer(target))
        result[path.stem] = notebook
    return result


def write_submission(course: Path, student: str, notebooks: dict[str, dict]) -> Path:
    """Write notebooks into course/submitted/<student>/attention/."""
    folder = course / "submitted" / student / "attention"
    folder.mkdir(parents=True, exist_ok=True)
    for name, notebook in notebooks.items():
        (folder / f"{name}.ipynb").write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    return folder
