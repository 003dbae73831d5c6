"""Build submissions from the release: right answers, known mistakes, or any answer text.

Used by the mutation and attack suites and by `make bench` to make a class of students:
`submission(course, {"raw_scores": "def raw_scores(q, k): ..."})` returns the release notebooks
with those answer cells filled in and every other answer cell filled with the reference answer.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from helpers.cells import find_cell, read_notebook

from .manifest import Course
from .reference import answer_source, mistake_source


def right_answer(course: Course, name: str) -> str:
    """The reference answer cell of an item, without solution markers."""
    return answer_source(course, course.item(name))


def wrong_answer(course: Course, name: str, mistake: str) -> str:
    """An answer cell with a catalogued mistake (for a question: a wrong option)."""
    return mistake_source(course, course.item(name), mistake)


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
                cell["source"] = answers.get(item.name, right_answer(course, item.name))
        result[name] = notebook
    return result


def write_submission(root: Path, student: str, notebooks: dict[str, dict], assignment: str) -> Path:
    """Write notebooks into root/submitted/<student>/<assignment>/."""
    folder = Path(root) / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    for name, notebook in notebooks.items():
        (folder / f"{name}.ipynb").write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    return folder
