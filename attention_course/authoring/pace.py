"""How long a notebook takes: the course's clock, counted from the notebooks, never typed by hand.

The clock counts everything a student meets on the way through a notebook: prose (markdown, hints
in `<details>` boxes and display maths left out: they are read only when needed), tables (a
row at a time), code (each cell run and its output looked at, and each line read), the questions
(graded and practice) and the exercises (by their points). The core of a notebook is everything
before its first `## Optional` section and between its optional sections. docs/pace.md says how
the rates were chosen and how to check them against a timed read-through.

The notebooks' headers, the start page and the READMEs quote these counts; tests/unit/authoring/test_pace.py
holds them to it. Run `python -m attention_course.authoring.pace` for the table, and with
`--write` to put the counted times into the English headers, the start page and both READMEs
(translate the changed cells afterwards, as for any English change).
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass

import nbformat

from attention_course.model.manifest import Course, load

WORDS_PER_MINUTE = 100  # technical prose with formulas, read carefully
MINUTES_PER_CODE_CELL = 0.2  # run it and look at what it prints or draws (12 s)
MINUTES_PER_CODE_LINE = 0.08  # read a line of code and see what it does (5 s)
MINUTES_PER_TABLE_ROW = 0.1  # read one row of a table across (6 s)
MINUTES_PER_QUESTION = 1.0  # read a question and its four options, choose, read the answer
MINUTES_PER_POINT = 2.0  # an exercise: 4 minutes for a 2-point function, 10 for the 5-point module
CORE_PATH = (
    "01_scaling_problem",
    "02_scaled_dot_product_attention",
    "03_split_heads",
    "04_concat_heads",
    "05_output_projection",
    "06_nn_multiheadattention",
)  # the path the course's hour is about

_HIDDEN = re.compile(r"<details>.*?</details>|\$\$.*?\$\$", re.S)
_WORD = re.compile(r"[A-Za-z0-9_'’.\-/√·×=()\[\],`$\\^{}+*]+")
_SECTION = re.compile(r"(?m)^(?=## )")
_TABLE_ROW = re.compile(r"(?m)^\|(?!\s*-)")


def words(markdown: str) -> int:
    """Words of a markdown text as read on the way through (hints and display maths left out)."""
    return len(_WORD.findall(_HIDDEN.sub(" ", markdown)))


def table_rows(markdown: str) -> int:
    """Rows of the tables of a markdown text (header rows included, rule rows and hints left out)."""
    return len(_TABLE_ROW.findall(_HIDDEN.sub(" ", markdown)))


def code_lines(source: str) -> int:
    """Lines of code a student reads (blank lines and nbgrader's markers left out)."""
    return sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("### "))


@dataclass(frozen=True)
class Counts:
    """What one part of a notebook (its core, or all of it) asks a student to read and do."""

    words: int = 0
    code_cells: int = 0
    code_lines: int = 0
    table_rows: int = 0
    questions: int = 0
    points: float = 0  # of the graded exercises (questions aside)

    @property
    def minutes(self) -> int:
        return minutes(self)


@dataclass(frozen=True)
class Pace:
    """The counts of one notebook: its core, and the whole of it."""

    notebook: str
    core: Counts
    full: Counts

    @property
    def core_minutes(self) -> int:
        return self.core.minutes

    @property
    def full_minutes(self) -> int:
        return self.full.minutes

    @property
    def exercises(self) -> bool:
        return self.full.points > 0


def minutes(c: Counts) -> int:
    """Reading, running, answering and exercise time in whole minutes."""
    total = (
        c.words / WORDS_PER_MINUTE
        + c.code_cells * MINUTES_PER_CODE_CELL
        + c.code_lines * MINUTES_PER_CODE_LINE
        + c.table_rows * MINUTES_PER_TABLE_ROW
        + c.questions * MINUTES_PER_QUESTION
        + c.points * MINUTES_PER_POINT
    )
    return max(1, round(total))


def pace_of(notebook: nbformat.NotebookNode, name: str = "", points: float = 0) -> Pace:
    """Count a notebook's core and the whole of it; `points` are its exercises' (all in its core)."""
    core = {"words": 0, "code_cells": 0, "code_lines": 0, "table_rows": 0, "questions": 0}
    full = dict(core)
    optional = False
    for cell in notebook.cells:
        if cell.cell_type == "code":
            parts = [(optional, {"code_cells": 1, "code_lines": code_lines(cell.source)})]
        elif cell.cell_type == "markdown" and cell.get("metadata", {}).get("question"):
            parts = [(optional, {"questions": 1})]
        elif cell.cell_type == "markdown":
            parts = []
            for part in _SECTION.split(cell.source):
                if part.startswith("## "):
                    optional = part.startswith("## Optional")
                parts.append((optional, {"words": words(part), "table_rows": table_rows(part)}))
        else:
            parts = []
        for in_optional, counted in parts:
            for key, n in counted.items():
                full[key] += n
                core[key] += 0 if in_optional else n
    return Pace(name, Counts(**core, points=points), Counts(**full, points=points))


def course_pace(course: Course) -> list[Pace]:
    """The pace of every source notebook of the English edition, in course order."""
    return [
        pace_of(
            nbformat.read(course.source_notebook(name), as_version=4),
            name,
            sum(item.points for item in course.items_in(name) if not item.is_question),
        )
        for name in course.notebooks
    ]


def total_minutes(paces: list[Pace], core: bool = True) -> int:
    """The time of the core path (01 to 06, core sections) or of every notebook in full, rounded
    up to five minutes."""
    if core:
        total = sum(p.core_minutes for p in paces if p.notebook in CORE_PATH)
    else:
        total = sum(p.full_minutes for p in paces)
    return 5 * math.ceil(total / 5)


def _row_times(text: str, paces: list[Pace], unit: str) -> str:
    """`text` with the last two cells of each notebook's table row set to its core and full time."""
    by_name = {p.notebook: p for p in paces}
    lines = []
    for line in text.splitlines():
        names = [n for n in by_name if n in line]
        if line.startswith("|") and names and re.search(rf"\| \d+ {unit} \| \d+ {unit} \|$", line):
            p = by_name[names[0]]
            line = re.sub(
                rf"\| \d+ {unit} \| \d+ {unit} \|$", f"| {p.core_minutes} {unit} | {p.full_minutes} {unit} |", line
            )
        lines.append(line)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def header_line(p: Pace) -> str:
    """The time line of a notebook's header."""
    extra = ", exercises included" if p.exercises else ""
    if p.core_minutes == p.full_minutes:
        return f"*About {p.core_minutes} minutes{extra}.*"
    return f"*About {p.core_minutes} minutes{extra}; {p.full_minutes} minutes with the* Optional *sections.*"


_HEADER_LINE = re.compile(r"^\*(About \d+ minutes|Core path: about).*\*$", re.M | re.S)


def write_times(course: Course, only: list[str] | None = None) -> None:
    """Put the counted times into the headers of the English notebooks (`only` some of them), the
    start page and the READMEs."""
    paces = course_pace(course)
    for p in paces:
        if only and p.notebook not in only and p.notebook != course.notebooks[0]:
            continue
        path = course.source_notebook(p.notebook)
        nb = nbformat.read(path, as_version=4)
        first = nb.cells[0]
        head, sep, rest = first.source.partition("\n## ")
        paragraphs = head.split("\n\n")
        timed = [i for i, para in enumerate(paragraphs) if _HEADER_LINE.fullmatch(para.strip())]
        if timed:
            paragraphs[timed[0]] = header_line(p)
        else:
            paragraphs.append(header_line(p))
        first.source = "\n\n".join(paragraphs) + sep + rest
        if p.notebook == course.notebooks[0]:
            for cell in nb.cells:
                if cell.cell_type == "markdown":
                    cell.source = _row_times(cell.source, paces, "min")
                    cell.source = re.sub(
                        r"about \d+ minutes in all",
                        f"about {total_minutes(paces)} minutes in all",
                        cell.source,
                    )
                    cell.source = re.sub(
                        r"whole notebooks, about \d+ minutes",
                        f"whole notebooks, about {total_minutes(paces, False)} minutes",
                        cell.source,
                    )
        nbformat.write(nb, path)
    for readme, unit in (("README.md", "min"), ("README.zh-CN.md", "分钟")):
        path = course.root / readme
        path.write_text(_row_times(path.read_text(encoding="utf-8"), paces, unit), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    course = load()
    if "--write" in argv:
        write_times(course, [a for a in argv if a != "--write"] or None)
    paces = course_pace(course)
    print(
        f"{'notebook':34} {'words':>6} {'code':>5} {'lines':>5} {'rows':>4} {'qs':>3} {'points':>6}"
        f" {'core':>5} {'full':>5}"
    )
    for p in paces:
        c = p.core
        print(
            f"{p.notebook:34} {c.words:6} {c.code_cells:5} {c.code_lines:5} {c.table_rows:4} {c.questions:3} "
            f"{c.points:6g} {p.core_minutes:5} {p.full_minutes:5}"
        )
    print(f"{'core path (01-06), in all':34} {'':40} {total_minutes(paces):5} {total_minutes(paces, False):5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
