"""How long a notebook takes: its core and full word counts, and the reading times they give.

The core of a notebook is everything before its first `## Optional` section and between its
optional sections; hints (`<details>` boxes) and display maths are not read on the way through,
so they are not counted. Times come from the counts, never typed by hand: the notebooks'
headers, the start page and the READMEs quote `minutes(...)`, and tests/test_pace.py holds
them to it and every core to `CORE_WORDS`.

Run `python -m grading.pace` for the table.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass

import nbformat

from .manifest import Course, load

CORE_WORDS = 600  # the most core markdown a notebook may have: about six minutes of reading
WORDS_PER_MINUTE = 100  # technical prose with formulas, read carefully
MINUTES_PER_CODE_CELL = 0.3  # run it and glance at what it prints or draws (about 20 s)

_HIDDEN = re.compile(r"<details>.*?</details>|\$\$.*?\$\$", re.S)
_WORD = re.compile(r"[A-Za-z0-9_'’.\-/√·×=()\[\],`$\\^{}+*]+")
_SECTION = re.compile(r"(?m)^(?=## )")


def words(markdown: str) -> int:
    """Words of a markdown text as read on the way through (hints and display maths left out)."""
    return len(_WORD.findall(_HIDDEN.sub(" ", markdown)))


@dataclass(frozen=True)
class Pace:
    """The counts of one notebook."""

    notebook: str
    core_words: int
    full_words: int
    core_code_cells: int
    code_cells: int

    @property
    def core_minutes(self) -> int:
        return minutes(self.core_words, self.core_code_cells)

    @property
    def full_minutes(self) -> int:
        return minutes(self.full_words, self.code_cells)


def minutes(word_count: int, code_cells: int) -> int:
    """Reading and running time in whole minutes (exercises not included)."""
    return max(1, round(word_count / WORDS_PER_MINUTE + code_cells * MINUTES_PER_CODE_CELL))


def pace_of(notebook: nbformat.NotebookNode, name: str = "") -> Pace:
    """Count a notebook's core and full words and code cells."""
    core = full = core_code = code = 0
    optional = False
    for cell in notebook.cells:
        if cell.cell_type == "code":
            code += 1
            core_code += not optional
            continue
        if cell.cell_type != "markdown":
            continue
        for part in _SECTION.split(cell.source):
            if part.startswith("## "):
                optional = part.startswith("## Optional")
            n = words(part)
            full += n
            core += 0 if optional else n
    return Pace(name, core, full, core_code, code)


def course_pace(course: Course) -> list[Pace]:
    """The pace of every source notebook of the English edition, in course order."""
    return [
        pace_of(nbformat.read(course.source_notebook(name), as_version=4), name) for name in course.notebooks
    ]


def total_minutes(paces: list[Pace], core: bool = True) -> int:
    """The reading time of the whole course, rounded to five minutes."""
    total = sum(p.core_minutes if core else p.full_minutes for p in paces)
    return 5 * math.ceil(total / 5)


def main() -> int:
    paces = course_pace(load())
    print(f"{'notebook':34} {'core words':>10} {'full words':>10} {'core min':>8} {'full min':>8}")
    for p in paces:
        flag = "  over" if p.core_words > CORE_WORDS else ""
        print(f"{p.notebook:34} {p.core_words:10} {p.full_words:10} {p.core_minutes:8} {p.full_minutes:8}{flag}")
    print(f"{'in all':34} {'':10} {'':10} {total_minutes(paces):8} {total_minutes(paces, False):8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
