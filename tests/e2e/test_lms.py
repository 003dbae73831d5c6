"""The LMS exports, read back with each LMS's import rules (docs/lms.md): a Canvas gradebook
import CSV and a Moodle grade import CSV from the LMS's own roster export, through `nbgrader export`."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
from small_gradebook import graded_class

from attention_course.grading.lms import CANVAS_FIXED, MOODLE_FIXED, RosterError, read_roster

CANVAS_ROSTER = """Student,ID,SIS User ID,SIS Login ID,Section,attention (5678),Quiz 1 (91)
    Points Possible,,,,,6.00,10.00
"Lovelace, Ada",101,S001,ada,Sec A,,8
"Bohr, Bo",102,S002,bo,Sec A,,7
"Dane, Dan",104,S004,dan,Sec B,,9
"""
MOODLE_ROSTER = """First name,Last name,ID number,Institution,Department,Email address,Assignment: attention (Real)
Ada,Lovelace,ada,Uni,CS,ada@uni.example,-
Bo,Bohr,bo,Uni,CS,bo@uni.example,-
Dan,Dane,dan,Uni,CS,dan@uni.example,-
"""


def read_canvas(path: Path) -> tuple[list[str], dict[str, dict[str, str]], dict[str, str]]:
    """A Canvas gradebook import, read as Canvas reads it: the five fixed columns first, an
    optional "Points Possible" row, each student found by ID, SIS User ID or SIS Login ID, each
    grade empty (unchanged) or a number. Returns (assignment columns, rows by login, points)."""
    with open(path, newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    header, body = table[0], table[1:]
    assert header[:5] == CANVAS_FIXED, header
    assignments = header[5:]
    possible = {}
    if body and body[0][0].strip() == "Points Possible":
        possible = dict(zip(assignments, body[0][5:], strict=True))
        body = body[1:]
    rows = {}
    for line in body:
        assert len(line) == len(header), line
        row = dict(zip(header, line, strict=True))
        assert row["ID"] or row["SIS User ID"] or row["SIS Login ID"], f"Canvas cannot find {row}"
        for column in assignments:
            assert row[column] == "" or float(row[column]) >= 0, row[column]
        rows[row["SIS Login ID"]] = row
    return assignments, rows, possible


def read_moodle(path: Path, identify: str = "ID number") -> tuple[list[str], dict[str, dict[str, str]]]:
    """A Moodle grade import, read as Moodle reads it: a header row, one identifying column whose
    values are unique, each grade item column empty (skipped) or a decimal with a point."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header = list(reader.fieldnames)
        rows = list(reader)
    assert identify in header
    keys = [r[identify] for r in rows]
    assert all(keys) and len(set(keys)) == len(keys), keys
    items = [h for h in header if h not in MOODLE_FIXED]
    for row in rows:
        for item in items:
            assert row[item] == "" or ("," not in row[item] and float(row[item]) >= 0), row[item]
    return items, {r[identify]: r for r in rows}


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """small_gradebook's class with cy's submission: ada late, with a teacher's manual score; bo on
    time; cy in nbgrader only; dan in the LMS only."""
    root = graded_class(tmp_path_factory.mktemp("lms"), cy_submits=True)
    (root / "canvas_roster.csv").write_text(CANVAS_ROSTER, encoding="utf-8")
    (root / "moodle_roster.csv").write_text(MOODLE_ROSTER, encoding="utf-8")
    return root


def export(root: Path, kind: str, roster: Path | None = None) -> subprocess.CompletedProcess:
    """`nbgrader export` with the course's LMS plugin (nbgrader loads it as a teacher's would)."""
    roster = roster or root / f"{kind.lower()}_roster.csv"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "nbgrader",
            "export",
            f"--exporter=attention_course.grading.lms.{kind}Grades",
            f"--{kind}Grades.roster={roster}",
            f"--to={root / (kind.lower() + '.csv')}",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_canvas_import_has_the_totals_under_canvas_own_column(course):
    proc = export(course, "Canvas")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assignments, rows, possible = read_canvas(course / "canvas.csv")
    assert assignments == ["attention (5678)"] and possible == {"attention (5678)": "6"}
    # ada: 2 - 0.5 late + 3.5 manual = 5; bo: full marks; dan: in Canvas only, left empty
    assert {k: r["attention (5678)"] for k, r in rows.items()} == {"ada": "5", "bo": "6", "dan": ""}
    assert rows["ada"]["ID"] == "101" and rows["ada"]["Student"] == "Lovelace, Ada"
    missing = (course / "canvas.csv.missing.txt").read_text()
    assert "not in nbgrader (empty grade): dan" in missing
    assert "not in the LMS roster (not in the file): cy" in missing


@pytest.mark.slow
def test_moodle_import_has_the_totals_keyed_by_id_number(course):
    proc = export(course, "Moodle")
    assert proc.returncode == 0, proc.stderr[-2000:]
    items, rows = read_moodle(course / "moodle.csv")
    assert items == ["attention"]
    assert {k: r["attention"] for k, r in rows.items()} == {"ada": "5", "bo": "6", "dan": ""}
    assert rows["bo"]["Email address"] == "bo@uni.example"
    assert "cy" in (course / "moodle.csv.missing.txt").read_text()


@pytest.mark.slow
def test_a_roster_without_the_matching_column_is_refused(course, tmp_path):
    bad = tmp_path / "roster.csv"
    bad.write_text("Name,Email\nAda,ada@uni.example\n")
    with pytest.raises(RosterError, match="SIS Login ID"):
        read_roster(bad, [*CANVAS_FIXED])
    proc = export(course, "Canvas", bad)
    assert proc.returncode != 0 and "no column" in proc.stderr
