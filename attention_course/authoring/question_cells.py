"""A question's notebook cell is written from the manifest, in every edition.

A markdown cell whose metadata names a question (`"question": "<name>"`, graded or practice) gets
its text from `course.toml` through `helpers.questions.render`: the question and options a student
reads are the ones the check echoes and the grader explains, in English and in every translation
(whose catalogue translates the question and its options, never the cell as a whole).
"""

from __future__ import annotations

from collections.abc import Callable

import nbformat

from attention_course.model.manifest import Course
from helpers.questions import render


def question_of(cell) -> str | None:
    """The question a cell shows, or None."""
    return cell.get("metadata", {}).get("question") if cell.get("cell_type") == "markdown" else None


def render_cells(course: Course, nb: nbformat.NotebookNode, translate: Callable[[str], str] = str) -> bool:
    """Rewrite every question cell of `nb` from the manifest; whether anything changed."""
    view = course.student_view()
    specs = {**{i["name"]: i for i in view["items"]}, **{p["name"]: p for p in view["practice"]}}
    changed = False
    for cell in nb.cells:
        name = question_of(cell)
        if name is None:
            continue
        if name not in specs or specs[name]["kind"] not in ("choice", "numeric", "practice"):
            raise ValueError(f"A cell shows question {name!r}, which course.toml does not list.")
        points = course.item(name).points if specs[name]["kind"] != "practice" else None
        text = render(specs[name], points, translate)
        changed |= cell.source != text
        cell.source = text
    return changed


def render_source_notebooks(course: Course) -> None:
    """Rewrite the question cells of the English source notebooks (part of `make outputs`)."""
    for notebook in course.notebooks:
        path = course.source_notebook(notebook)
        nb = nbformat.read(path, as_version=4)
        if render_cells(course, nb):
            nbformat.write(nb, path)
