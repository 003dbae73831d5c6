"""The clock counts prose, code, tables, questions and exercises, and every time the course quotes comes from it."""

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
        nbformat.v4.new_code_cell("y = 2\n\nz = 3"),
        nbformat.v4.new_markdown_cell("## Recap\n\nback in core"),
    ]
    p = pace.pace_of(nb)
    assert (p.core.words, p.full.words) == (1 + 5 + 1 + 3, 1 + 5 + 3 + 3 + 1 + 3)  # headings' # marks are not words
    assert (p.core.code_cells, p.full.code_cells) == (1, 2)
    assert (p.core.code_lines, p.full.code_lines) == (1, 3)  # blank lines are not read


def test_the_clock_counts_code_tables_questions_and_exercises():
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |"
    question = nbformat.v4.new_markdown_cell("**Which?**\n\n- **A.** one\n- **B.** two")
    question.metadata["question"] = "some_question"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(table), question, nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1")]
    p = pace.pace_of(nb, points=2)
    assert (p.core.table_rows, p.core.questions, p.core.code_cells, p.core.code_lines) == (3, 1, 1, 1)
    assert p.core.words == pace.words(table)  # a question is counted as a question, not as prose
    expected = (
        p.core.words / pace.WORDS_PER_MINUTE
        + 3 * pace.MINUTES_PER_TABLE_ROW
        + pace.MINUTES_PER_QUESTION
        + pace.MINUTES_PER_CODE_CELL
        + pace.MINUTES_PER_CODE_LINE
        + 2 * pace.MINUTES_PER_POINT
    )
    assert p.core_minutes == round(expected)


def test_every_exercise_point_of_a_notebook_is_on_its_clock():
    for notebook in COURSE.notebooks:
        points = sum(item.points for item in COURSE.items_in(notebook) if not item.is_question)
        assert PACES[notebook].core.points == points


def test_the_express_notebook_takes_at_most_ten_minutes():
    p = PACES["00_express"]
    assert p.full_minutes <= 10, f"00_express: {p.full_minutes} minutes by the clock; at most 10"


def test_the_core_path_is_01_to_06():
    assert set(pace.CORE_PATH) <= set(COURSE.notebooks)
    assert "00_express" not in pace.CORE_PATH and "07_transformer_block" not in pace.CORE_PATH


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
