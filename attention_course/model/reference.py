"""The instructor's solutions, read from the source notebooks (the one place they live), and the
known wrong answers of the manifest, written into them.

An answer cell is found by its grade id (cell metadata); its source runs with the imports of its
own notebook, as it would in the student's kernel.
"""

from __future__ import annotations

import functools

from helpers.cells import cell_source, find_cell, read_notebook, without_solution_markers
from helpers.notebook_code import import_statements, run_statements

from .manifest import Course, Item


@functools.cache
def _notebook(path) -> dict:
    return read_notebook(path)


def answer_source(course: Course, item: Item) -> str:
    """The answer cell of an item as written in the source notebook, without solution markers."""
    path = course.source_notebook(item.notebook)
    cell = find_cell(_notebook(path), item.answer_cell)
    if cell is None:
        raise LookupError(
            f"{path.name} has no answer cell with grade id {item.answer_cell!r} (course.toml, item {item.name!r})."
        )
    return without_solution_markers(cell_source(cell))


def solution_lines(course: Course, item: Item) -> list[str]:
    """The lines of an answer cell between `### BEGIN SOLUTION` and `### END SOLUTION`, stripped."""
    path = course.source_notebook(item.notebook)
    lines, inside = [], False
    for line in cell_source(find_cell(_notebook(path), item.answer_cell)).splitlines():
        if line.strip() == "### BEGIN SOLUTION":
            inside = True
        elif line.strip() == "### END SOLUTION":
            inside = False
        elif inside and line.strip():
            lines.append(line.strip())
    return lines


def notebook_imports(course: Course, notebook: str) -> list[str]:
    """The import statements of a source notebook's code cells."""
    return import_statements(_notebook(course.source_notebook(notebook)))


def define(course: Course, item: Item, source: str):
    """Run one answer cell's source with its notebook's imports; return what it defines."""
    namespace, errors = run_statements([*notebook_imports(course, item.notebook), source])
    if errors:
        raise RuntimeError(f"Defining {item.variable} failed: {errors}")
    return namespace[item.variable]


def reference(course: Course, item: Item):
    """The reference solution of an exercise (a function or a class), or a question's answer."""
    return _reference(course, item.name)


@functools.cache
def _reference(course: Course, name: str):
    item = course.item(name)
    return define(course, item, answer_source(course, item))


def mistake_source(course: Course, item: Item, mistake: str) -> str:
    """The answer cell of an item with one catalogued mistake written into it (for a question: the
    wrong option as the answer)."""
    if item.is_choice:
        return f"{item.variable} = {mistake!r}\n"
    if item.is_numeric:
        return f"{item.variable} = {mistake}\n"  # a wrong number, written as source
    source = answer_source(course, item)
    for old, new in item.mistakes[mistake].edits:
        if old not in source:
            raise LookupError(f"Mistake {item.name}/{mistake}: {old!r} is not in the solution.")
        source = source.replace(old, new)
    return source


def mistaken(course: Course, item: Item, mistake: str):
    """The function or class of an exercise with one mistake in it."""
    return define(course, item, mistake_source(course, item, mistake))


def catalogue(course: Course) -> list[tuple[Item, str]]:
    """Every (item, wrong answer) pair: each catalogued mistake and each wrong option of a question."""
    return [(item, m) for item in course.items for m in (item.wrong_options if item.is_question else item.mistakes)]
