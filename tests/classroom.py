"""Build submissions from the release: right answers, known mistakes, or any answer text.

Used by the mutation and attack suites and by `make bench` to make a class of students:
`submission(course, {"raw_scores": "def raw_scores(q, k): ..."})` returns the release notebooks
with those answer cells filled in and every other answer cell filled with the reference answer.
An answer text may hold several cells, separated by `# %%` lines (as in Jupytext's percent
format): the cell that defines the item goes into the answer cell, the others into code cells
of the student's own just before and after it.
"""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

from attention_course.model.manifest import Course
from attention_course.model.reference import answer_source, mistake_source
from helpers.cells import find_cell, read_notebook


def right_answer(course: Course, name: str) -> str:
    """The reference answer cell of an item, without solution markers."""
    return answer_source(course, course.item(name))


def wrong_answer(course: Course, name: str, mistake: str) -> str:
    """An answer cell with a catalogued mistake (for a question: a wrong option)."""
    return mistake_source(course, course.item(name), mistake)


CELL_MARK = "# %%"


def answer_cells(text: str, variable: str) -> tuple[list[str], str, list[str]]:
    """(the cells before, the answer cell, the cells after) of an answer text: the answer cell is
    the one that defines `variable` (the first cell when none does)."""
    cells, lines = [], []
    for line in text.splitlines(keepends=True):
        if line.strip() == CELL_MARK:
            cells.append("".join(lines))
            lines = []
        else:
            lines.append(line)
    cells.append("".join(lines))
    if len(cells) == 1:
        return [], text, []

    def defines(cell: str) -> bool:
        try:
            tree = ast.parse(cell)
        except SyntaxError:
            return False
        return any(
            getattr(node, "name", None) == variable
            or any(isinstance(t, ast.Name) and t.id == variable for t in getattr(node, "targets", ()))
            for node in tree.body
        )

    at = next((n for n, cell in enumerate(cells) if defines(cell)), 0)
    return cells[:at], cells[at], cells[at + 1 :]


def _code_cell(source: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}


def submission(
    course: Course, answers: dict[str, str], notebooks: list[str] | None = None, edition: str = "en"
) -> dict[str, dict]:
    """Release notebooks (by name) with the given answers and the right answer everywhere else.
    By default only the notebooks that `answers` touch."""
    wanted = notebooks or sorted({course.item(name).notebook for name in answers})
    result = {}
    for name in wanted:
        notebook = copy.deepcopy(read_notebook(course.release_dir(edition) / f"{name}.ipynb"))
        for item in course.items_in(name):
            cell = find_cell(notebook, item.answer_cell)
            if cell is not None:
                before, answer, after = answer_cells(
                    answers.get(item.name, right_answer(course, item.name)), item.variable
                )
                cell["source"] = answer
                at = notebook["cells"].index(cell)
                notebook["cells"][at + 1 : at + 1] = [_code_cell(c) for c in after]
                notebook["cells"][at:at] = [_code_cell(c) for c in before]
        result[name] = notebook
    return result


def write_submission(root: Path, student: str, notebooks: dict[str, dict], assignment: str) -> Path:
    """Write notebooks into root/submitted/<student>/<assignment>/."""
    folder = Path(root) / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    for name, notebook in notebooks.items():
        (folder / f"{name}.ipynb").write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    return folder
