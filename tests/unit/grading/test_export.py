"""The grade tables as nbgrader export plugins (attention_course/grading/export.py), run in this
process on a small gradebook (no `nbgrader export` process, no grading run): grades.csv with a row
per notebook and a total (late penalties and manual grades applied, the run's seed, confinement and
problems, the student's extension) and grades_by_cell.csv with a row per graded cell and its reason."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from small_gradebook import DUE, A, ExportApp, gradebook, graded_class, submit, url

from attention_course.grading.export import CELL_COLUMNS, NOTEBOOK_COLUMNS, CellGrades, NotebookGrades
from conftest import REPO

pytestmark = pytest.mark.filterwarnings("ignore::Warning:nbgrader.api")  # SQLAlchemy's autoflush notes

NB1, NB2 = "01_scaling_problem", "02_scaled_dot_product_attention"


@pytest.fixture(scope="module")
def _graded(tmp_path_factory) -> Path:
    """small_gradebook's class (ada late with a manual grade, bo full marks, cy nothing), and a
    start page nothing grades."""
    root = graded_class(tmp_path_factory.mktemp("export") / "course")
    with Gradebook(url(root / "gradebook.db")) as gb:
        gb.add_notebook("00_start_here", A)  # no graded cell: no row
    return root


@pytest.fixture
def course(_graded, tmp_path) -> Path:
    """A test's own copy of the graded course (built once)."""
    return Path(shutil.copytree(_graded, tmp_path / "course"))


def _export(plugin_class, root: Path, **traits) -> list[list[str]]:
    """Run an exporter as `nbgrader export` would; the table it wrote, as rows."""
    plugin = plugin_class(parent=ExportApp(root), **traits)
    with Gradebook(url(root / "gradebook.db")) as gb:
        plugin.export(gb)
    with open(traits.get("to") or root / plugin_class.default_file, newline="") as handle:
        return list(csv.reader(handle))


def _run_record(root: Path, entries: list[dict]) -> str:
    path = root / "build" / "grading" / "run.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entries), encoding="utf-8")
    return str(path)


def test_grades_has_a_row_per_graded_notebook_and_a_total_after_penalties_and_manual_grades(course):
    table = _export(NotebookGrades, course)
    assert table[0] == NOTEBOOK_COLUMNS
    rows = [row[:6] for row in table[1:]]
    assert rows == [
        ["ada", A, NB1, "1.5", "2", "0.5"],
        ["ada", A, NB2, "3.5", "4", "0"],
        ["ada", A, "TOTAL", "5", "6", "0.5"],
        ["bo", A, NB1, "2", "2", "0"],
        ["bo", A, NB2, "4", "4", "0"],
        ["bo", A, "TOTAL", "6", "6", "0"],
    ]
    assert all(row[6:] == ["", "", "", ""] for row in table[1:]), "no run record, no extensions"


def test_the_run_record_stamps_its_students_rows_and_puts_the_problems_on_the_total(course):
    record = _run_record(
        course,
        [{"student": "ada", "assignment": A, "seed": 11, "confinement": "bwrap+landlock", "problems": "late"}],
    )
    table = _export(NotebookGrades, course, run_record=record)
    stamps = {(row[0], row[2]): row[6:9] for row in table[1:]}
    assert stamps[("ada", NB1)] == stamps[("ada", NB2)] == ["", "11", "bwrap+landlock"]
    assert stamps[("ada", "TOTAL")] == ["late", "11", "bwrap+landlock"]
    assert stamps[("bo", "TOTAL")] == ["", "", ""], "a student the run did not grade has no stamp"


def test_a_students_extension_is_on_each_of_their_rows(course):
    (course / "extensions.csv").write_text("student,assignment,due\nada,attention,+48h\nbo,attention_zh,+1h\n")
    table = _export(NotebookGrades, course)
    extension = {(row[0], row[2]): row[9] for row in table[1:]}
    assert extension[("ada", NB1)] == extension[("ada", "TOTAL")] == "+48h"
    assert extension[("bo", "TOTAL")] == "", "bo's extension is for another assignment"


def test_grades_keeps_to_the_students_and_assignments_asked_for(course, tmp_path):
    only_bo = _export(NotebookGrades, course, student=["bo"], to=str(tmp_path / "bo.csv"))
    assert {row[0] for row in only_bo[1:]} == {"bo"} and len(only_bo) == 4
    assert not (course / "grades.csv").exists(), "--to names the file"
    other = _export(NotebookGrades, course, assignment=["attention_zh"])
    assert other == [NOTEBOOK_COLUMNS], "nobody submitted the Chinese edition"


def test_grades_by_cell_has_a_row_per_graded_cell_with_the_reason_below_full_marks(course):
    table = _export(CellGrades, course)
    assert table[0] == CELL_COLUMNS
    assert table[1:] == [
        ["ada", A, NB1, "test_raw_scores", "2", "2", ""],
        ["ada", A, NB2, "test_scaled_dot_product_attention", "3.5", "4", "the softmax runs over the queries"],
        ["bo", A, NB1, "test_raw_scores", "2", "2", ""],
        ["bo", A, NB2, "test_scaled_dot_product_attention", "4", "4", ""],
    ]


def test_no_response_is_a_reason_only_below_full_marks(tmp_path):
    root = tmp_path / "course"
    root.mkdir()
    for name in ("nbgrader_config.py", "course.toml"):
        shutil.copy(REPO / name, root / name)
    db = gradebook(root / "gradebook.db", students=("ada",))
    blank = {"raw_scores": "No response.", "scaled_dot_product_attention": "No response."}
    submit(db, "ada", {"test_raw_scores": 2.0, "test_scaled_dot_product_attention": 0.0}, DUE, comments=blank)
    reasons = {row[3]: row[6] for row in _export(CellGrades, root)[1:]}
    assert reasons == {"test_raw_scores": "", "test_scaled_dot_product_attention": "No response."}


def test_a_graded_cell_the_manifest_does_not_list_has_no_reason(tmp_path):
    root = tmp_path / "course"
    root.mkdir()
    for name in ("nbgrader_config.py", "course.toml"):
        shutil.copy(REPO / name, root / name)
    db = gradebook(root / "gradebook.db", students=("101",))
    with Gradebook(url(db)) as gb:
        gb.add_grade_cell("test_extra", NB1, A, max_score=1, cell_type="code")
        gb.add_solution_cell("test_extra", NB1, A)  # an answer cell named like the test cell
    submit(db, "101", {"test_raw_scores": 1.0}, DUE, comments={"raw_scores": "scaled twice"})
    with Gradebook(url(db)) as gb:
        gb.find_comment("test_extra", NB1, A, "101").auto_comment = "not the course's"
        gb.db.commit()
    rows = _export(CellGrades, root, student=[101])  # a numeric id, as a command line may give it
    reasons = {row[3]: (row[0], row[4], row[6]) for row in rows[1:]}
    assert reasons["test_extra"] == ("101", "0", "")
    assert reasons["test_raw_scores"] == ("101", "1", "scaled twice")


def test_grades_by_cell_keeps_to_the_students_asked_for_and_writes_where_told(course, tmp_path):
    rows = _export(CellGrades, course, student=["ada"], to=str(tmp_path / "cells.csv"))
    assert {row[0] for row in rows[1:]} == {"ada"} and len(rows) == 3
    assert not (course / "grades_by_cell.csv").exists()


def test_a_teachers_full_manual_grade_leaves_no_automatic_reason_beside_it(course):
    with Gradebook(url(course / "gradebook.db")) as gb:
        gb.find_grade("test_scaled_dot_product_attention", NB2, A, "ada").manual_score = 4.0
        gb.db.commit()
    row = next(r for r in _export(CellGrades, course)[1:] if r[0] == "ada" and r[2] == NB2)
    assert row[4:] == ["4", "4", ""]
