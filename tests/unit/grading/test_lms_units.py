"""The LMS exports' own logic (attention_course/grading/lms.py), in this process on a small
gradebook: reading a roster, each assignment's totals, the grade as a number both LMSs read, the
Canvas column of an assignment, the report of who is on one side only, and the Canvas and Moodle
plugins run as `nbgrader export` runs them (tests/e2e/test_lms.py runs `nbgrader export` itself)."""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from small_gradebook import A, ExportApp, graded_class, url

from attention_course.grading.lms import (
    CANVAS_FIXED,
    CANVAS_POINTS,
    MOODLE_FIXED,
    CanvasGrades,
    MoodleGrades,
    RosterError,
    missing_lines,
    points,
    read_roster,
    totals,
)

pytestmark = pytest.mark.filterwarnings("ignore::Warning:nbgrader.api")  # SQLAlchemy's autoflush notes

CANVAS_ROSTER = """Student,ID,SIS User ID,SIS Login ID,Section,attention (5678),Quiz 1 (91)
    Points Possible,,,,,6.00,10.00
"Lovelace, Ada",101,S001,ada,Sec A,,8
"Bohr, Bo",102,S002,bo,Sec A,,7
"Dane, Dan",104,S004,dan,Sec B,,9
"Eve, Ed",105,S005,,Sec B,,9
"""
MOODLE_ROSTER = """First name,Last name,ID number,Username,Email address
Ada,Lovelace,A-1,ada,ada@uni.example
Bo,Bohr,B-2,bo,bo@uni.example
Dan,Dane,D-4,dan,dan@uni.example
"""


@pytest.fixture(scope="module")
def _graded(tmp_path_factory) -> Path:
    """small_gradebook's class (ada late with a manual grade, bo full marks, cy in nbgrader only),
    and the two LMS rosters."""
    root = graded_class(tmp_path_factory.mktemp("lms") / "course")
    (root / "canvas_roster.csv").write_text(CANVAS_ROSTER, encoding="utf-8")
    (root / "moodle_roster.csv").write_text(MOODLE_ROSTER, encoding="utf-8")
    return root


@pytest.fixture
def course(_graded, tmp_path) -> Path:
    """A test's own copy of the graded course (built once)."""
    return Path(shutil.copytree(_graded, tmp_path / "course"))


def _export(plugin_class, root: Path, **traits) -> tuple[list[list[str]], str]:
    """Run an LMS exporter as `nbgrader export` would: (the table it wrote, its missing.txt)."""
    plugin = plugin_class(parent=ExportApp(root), **traits)
    with Gradebook(url(root / "gradebook.db")) as gb:
        plugin.export(gb)
    written = Path(traits.get("to") or root / plugin_class.default_file)
    with open(written, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle)), Path(f"{written}.missing.txt").read_text(encoding="utf-8")


# ------------------------------------------------------------------ the pieces


def test_a_roster_is_read_without_its_byte_order_mark_blank_rows_or_the_points_possible_row(tmp_path):
    roster = tmp_path / "roster.csv"
    lines = CANVAS_ROSTER.splitlines()
    roster.write_text("\ufeff" + "\n".join([lines[0], lines[1], ",,,,,,", *lines[2:]]) + "\n", encoding="utf-8")
    header, rows = read_roster(roster, [*CANVAS_FIXED, "SIS Login ID"])
    assert header[0] == "Student" and header[-1] == "Quiz 1 (91)"
    assert [row["SIS Login ID"] for row in rows] == ["ada", "bo", "dan", ""]
    assert rows[0]["Student"] == "Lovelace, Ada"


def test_a_roster_without_a_needed_column_names_each_missing_one_and_what_it_has(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("First name,Last name,Email address\nAda,Lovelace,ada@uni.example\n", encoding="utf-8")
    with pytest.raises(RosterError) as raised:
        read_roster(roster, [*MOODLE_FIXED, "Username"])
    message = str(raised.value)
    assert "'ID number', 'Username'" in message and "'First name'" not in message.split("(columns")[0]
    assert "(columns: First name, Last name, Email address)" in message


@pytest.mark.parametrize(
    "value, text",
    [(5.0, "5"), (10.0, "10"), (100.0, "100"), (0.0, "0"), (4.5, "4.5"), (4.25, "4.25"), (2 / 3, "0.67")]
    + [(4.999, "5"), (1234.5, "1234.5"), (math.nan, "")],
)
def test_a_grade_is_a_plain_decimal_with_at_most_two_places(value, text):
    assert points(value) == text


def test_the_missing_report_says_how_it_matched_and_who_is_on_one_side_only():
    lines = missing_lines(["dan", "Eve, Ed 105 (no id)"], ["cy"], "SIS Login ID")
    assert lines == [
        "# matched by the roster column 'SIS Login ID' to nbgrader student ids",
        "in the LMS roster, not in nbgrader (empty grade): dan",
        "in the LMS roster, not in nbgrader (empty grade): Eve, Ed 105 (no id)",
        "in nbgrader, not in the LMS roster (not in the file): cy",
    ]
    assert missing_lines([], [], "ID number") == ["# matched by the roster column 'ID number' to nbgrader student ids"]


def test_an_assignment_goes_under_the_rosters_own_column_or_a_new_one_by_its_name():
    header = [*CANVAS_FIXED, "attention_zh (12)", "attention (5678)", "Attention (9)"]
    assert CanvasGrades.column(header, "attention") == "attention (5678)"
    assert CanvasGrades.column(header, "attention_zh") == "attention_zh (12)"
    assert CanvasGrades.column([*CANVAS_FIXED, "attention_zh (12)"], "attention") == "attention"
    assert CanvasGrades.column([*CANVAS_FIXED, "attention"], "attention") == "attention"


def test_totals_are_after_manual_grades_and_late_penalties_with_every_student_nbgrader_knows(course):
    result = totals(course / "gradebook.db", [A, "attention_zh"])
    assert result.assignments == [A, "attention_zh"]
    assert result.scores == {("ada", A): 5.0, ("bo", A): 6.0}  # ada: 2 - 0.5 + 3.5
    assert result.max_scores == {A: 6.0, "attention_zh": 0.0}  # nobody graded the Chinese edition
    assert result.students == ["ada", "bo", "cy"]


# ------------------------------------------------------------------ the plugins


def test_canvas_gets_its_fixed_columns_the_points_possible_and_each_roster_student_in_roster_order(course):
    table, missing = _export(CanvasGrades, course, roster=str(course / "canvas_roster.csv"))
    assert table[0] == [*CANVAS_FIXED, "attention (5678)"], "the course's assignments only, under Canvas's column"
    assert table[1] == [CANVAS_POINTS, "", "", "", "", "6"]
    assert table[2:] == [
        ["Lovelace, Ada", "101", "S001", "ada", "Sec A", "5"],
        ["Bohr, Bo", "102", "S002", "bo", "Sec A", "6"],
        ["Dane, Dan", "104", "S004", "dan", "Sec B", ""],
        ["Eve, Ed", "105", "S005", "", "Sec B", ""],
    ]
    assert missing.splitlines() == [
        "# matched by the roster column 'SIS Login ID' to nbgrader student ids",
        "in the LMS roster, not in nbgrader (empty grade): dan",
        "in the LMS roster, not in nbgrader (empty grade): Eve, Ed 105 (no id)",
        "in nbgrader, not in the LMS roster (not in the file): cy",
    ]


def test_moodle_matches_by_the_column_it_is_told_and_writes_where_it_is_told(course, tmp_path):
    to = tmp_path / "out" / "moodle.csv"
    to.parent.mkdir()
    table, missing = _export(
        MoodleGrades, course, roster=str(course / "moodle_roster.csv"), match_column="Username", to=str(to)
    )
    assert table[0] == [*MOODLE_FIXED, A]
    assert {row[2]: row[4] for row in table[1:]} == {"A-1": "5", "B-2": "6", "D-4": ""}
    assert "in the LMS roster, not in nbgrader (empty grade): dan" in missing and "'Username'" in missing
    assert not (course / "moodle_import.csv").exists()


def test_moodle_by_its_default_column_finds_nobody_when_the_ids_are_elsewhere(course):
    table, missing = _export(MoodleGrades, course, roster=str(course / "moodle_roster.csv"))
    assert [row[-1] for row in table[1:]] == ["", "", ""]
    assert "not in nbgrader (empty grade): A-1" in missing and "not in the LMS roster (not in the file): ada" in missing


def test_only_the_students_asked_for_get_a_grade_or_are_reported_missing_from_the_roster(course):
    table, missing = _export(CanvasGrades, course, roster=str(course / "canvas_roster.csv"), student=["ada"])
    assert "cy" not in missing
    grades = {row[3]: row[-1] for row in table[2:]}
    assert grades["ada"] == "5" and grades["bo"] == "", "only ada's grade is filled in"
    _, missing = _export(CanvasGrades, course, roster=str(course / "canvas_roster.csv"), student=["cy"])
    assert "in nbgrader, not in the LMS roster (not in the file): cy" in missing


def test_an_assignment_not_asked_for_or_not_in_the_gradebook_gets_no_column(course):
    table, _ = _export(CanvasGrades, course, roster=str(course / "canvas_roster.csv"), assignment=["attention_zh"])
    assert table[0] == CANVAS_FIXED and table[1] == [CANVAS_POINTS, "", "", "", ""]


def test_an_export_without_a_roster_or_with_the_wrong_one_is_refused_before_writing(course):
    with pytest.raises(RosterError, match=r"--CanvasGrades\.roster="):
        _export(CanvasGrades, course)
    with pytest.raises(RosterError, match="SIS Login ID"):
        _export(CanvasGrades, course, roster=str(course / "moodle_roster.csv"))
    assert not (course / "canvas_import.csv").exists()
