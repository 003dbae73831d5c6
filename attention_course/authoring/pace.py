"""How long a notebook takes: its core and full word counts, and the reading times they give.

The core of a notebook is everything before its first `## Optional` section and between its
optional sections; hints (`<details>` boxes) and display maths are not read on the way through,
so they are not counted. Times come from the counts, never typed by hand: the notebooks'
headers, the start page and the READMEs quote `minutes(...)`, and tests/test_pace.py holds
them to it and every core to `CORE_WORDS`.

Run `python -m attention_course.authoring.pace` for the table, and with `--write` to put the counted
times into the English headers, the start page and both READMEs (translate the changed cells
afterwards, as for any English change).
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass

import nbformat

from attention_course.model.manifest import Course, load

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
    exercises: int = 0  # graded exercises (questions aside): their time comes on top

    @property
    def core_minutes(self) -> int:
        return minutes(self.core_words, self.core_code_cells)

    @property
    def full_minutes(self) -> int:
        return minutes(self.full_words, self.code_cells)


def minutes(word_count: int, code_cells: int) -> int:
    """Reading and running time in whole minutes (exercises not included)."""
    return max(1, round(word_count / WORDS_PER_MINUTE + code_cells * MINUTES_PER_CODE_CELL))


def pace_of(notebook: nbformat.NotebookNode, name: str = "", exercises: int = 0) -> Pace:
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
    return Pace(name, core, full, core_code, code, exercises)


def course_pace(course: Course) -> list[Pace]:
    """The pace of every source notebook of the English edition, in course order."""
    return [
        pace_of(
            nbformat.read(course.source_notebook(name), as_version=4),
            name,
            sum(not item.is_choice for item in course.items_in(name)),
        )
        for name in course.notebooks
    ]


def total_minutes(paces: list[Pace], core: bool = True) -> int:
    """The reading time of the whole course, rounded to five minutes."""
    total = sum(p.core_minutes if core else p.full_minutes for p in paces)
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
    extra = " plus the exercise" if p.exercises == 1 else " plus the exercises" if p.exercises else ""
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
                        r"about \d+ minutes of reading and running in all",
                        f"about {total_minutes(paces)} minutes of reading and running in all",
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
    print(f"{'notebook':34} {'core words':>10} {'full words':>10} {'core min':>8} {'full min':>8}")
    for p in paces:
        flag = "  over" if p.core_words > CORE_WORDS else ""
        print(f"{p.notebook:34} {p.core_words:10} {p.full_words:10} {p.core_minutes:8} {p.full_minutes:8}{flag}")
    print(f"{'in all':34} {'':10} {'':10} {total_minutes(paces):8} {total_minutes(paces, False):8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
