"""Every notebook's core fits in ten minutes, and every time the course quotes comes from the counts."""

from __future__ import annotations

import re

import nbformat
import pytest

from attention_course.authoring import pace
from attention_course.model import manifest

COURSE = manifest.load()
PACES = {p.notebook: p for p in pace.course_pace(COURSE)}


def test_words_leave_out_hints_and_display_maths():
    text = "One two. <details><summary>Hint</summary>not read</details> three $$a + b$$ four"
    assert pace.words(text) == 4


def test_optional_sections_count_in_the_full_notebook_only():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title\n\nfive words of core prose"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("## Optional: a lab\n\nthree more words"),
        nbformat.v4.new_code_cell("y = 2"),
        nbformat.v4.new_markdown_cell("## Recap\n\nback in core"),
    ]
    p = pace.pace_of(nb)
    assert (p.core_words, p.full_words) == (1 + 5 + 1 + 3, 1 + 5 + 3 + 3 + 1 + 3)  # headings' # marks are not words
    assert (p.core_code_cells, p.code_cells) == (1, 2)


@pytest.mark.parametrize("notebook", COURSE.notebooks)
def test_the_core_is_at_most_600_words(notebook):
    p = PACES[notebook]
    assert p.core_words <= pace.CORE_WORDS, (
        f"{notebook}: {p.core_words} words of core markdown; at most {pace.CORE_WORDS} "
        "(move the rest into a `## Optional: ...` section)"
    )


def _header(notebook: str, edition: str = "en") -> str:
    """The first cell of a notebook up to its first section."""
    first = nbformat.read(COURSE.source_notebook(notebook, edition), as_version=4).cells[0].source
    return first.split("\n## ")[0]


@pytest.mark.parametrize("notebook", COURSE.notebooks)
def test_each_header_gives_the_counted_time(notebook):
    p = PACES[notebook]
    header = _header(notebook)
    quoted = [int(n) for n in re.findall(r"(\d+) minutes", header)]
    want = [p.core_minutes] if p.core_minutes == p.full_minutes else [p.core_minutes, p.full_minutes]
    assert quoted == want, f"{notebook}: the header says {quoted} minutes; the counts give {want}"


@pytest.mark.parametrize("notebook", COURSE.notebooks)
def test_the_chinese_header_gives_the_same_times(notebook):
    english = re.findall(r"(\d+) minutes", _header(notebook))
    chinese = re.findall(r"约\s*(\d+)\s*分钟", _header(notebook, "zh-CN"))
    assert chinese == english


def _table_times(text: str, unit: str) -> dict[str, tuple[int, int]]:
    """notebook -> (core, whole) minutes, read from the rows of a markdown table."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        names = [n for n in COURSE.notebooks if n in line or f"({n}.ipynb)" in line]
        if len(cells) >= 3 and names:
            minutes = [re.fullmatch(rf"(\d+) {unit}", c) for c in cells[-2:]]
            if all(minutes):
                rows[names[0]] = tuple(int(m.group(1)) for m in minutes)
    return rows


def _expected() -> dict[str, tuple[int, int]]:
    return {n: (p.core_minutes, p.full_minutes) for n, p in PACES.items()}


def test_the_start_page_gives_the_counted_times():
    start = nbformat.read(COURSE.source_notebook("00_start_here"), as_version=4)
    text = "\n".join(c.source for c in start.cells if c.cell_type == "markdown")
    expected = {n: t for n, t in _expected().items() if n != "00_start_here"}  # the page does not list itself
    assert _table_times(text, "min") == expected
    assert f"about {pace.total_minutes(list(PACES.values()))} minutes" in text
    assert f"about {pace.total_minutes(list(PACES.values()), core=False)} minutes" in text


@pytest.mark.parametrize("readme, unit", [("README.md", "min"), ("README.zh-CN.md", "分钟")])
def test_the_readmes_give_the_counted_times(readme, unit):
    text = (manifest.REPO / readme).read_text(encoding="utf-8")
    assert _table_times(text, unit) == _expected()
