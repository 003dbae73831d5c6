"""Grades into the LMS: a Canvas gradebook import CSV and a Moodle grade import CSV, as nbgrader
export plugins.

    nbgrader export --exporter=attention_course.grading.lms.CanvasGrades \\
        --CanvasGrades.roster=canvas_export.csv --to canvas_import.csv
    nbgrader export --exporter=attention_course.grading.lms.MoodleGrades \\
        --MoodleGrades.roster=moodle_export.csv --to moodle_import.csv

The roster is the file the LMS itself exports (Canvas: Grades > Export; Moodle: Grades > Export >
Plain text file). A roster row is matched to an nbgrader student by one of its columns
(`match_column`, the student's login by default). The grade is each assignment's total after
manual grades and late penalties. Nobody is dropped: a roster student with no grade gets an empty
cell (the LMS leaves it alone), and the students on one side only are listed in
`<to>.missing.txt` and in the log. The column rules each file follows are in docs/lms.md.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin
from traitlets import Unicode

from attention_course.model.manifest import load

from . import gradebook as records
from .coursedir import paths

CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS = "    Points Possible"
MOODLE_FIXED = ["First name", "Last name", "ID number", "Email address"]


class RosterError(ValueError):
    """A roster file that is not the LMS's export (the message says what is missing)."""


def read_roster(path: Path, needed: list[str]) -> tuple[list[str], list[dict[str, str]]]:
    """(header, rows) of an LMS roster export; the columns in `needed` must be there."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = list(reader.fieldnames or [])
        missing = [c for c in needed if c not in header]
        if missing:
            raise RosterError(f"{path}: no column {', '.join(map(repr, missing))} (columns: {', '.join(header)})")
        rows = [row for row in reader if any((v or "").strip() for v in row.values())]
    # Canvas's own "Points Possible" row is not a student
    rows = [row for row in rows if (row.get(header[0]) or "").strip() != CANVAS_POINTS.strip()]
    return header, rows


@dataclass
class Totals:
    """Each assignment's total per nbgrader student, the maximum, and every student nbgrader knows."""

    assignments: list[str]
    scores: dict[tuple[str, str], float]  # (student, assignment) -> total after late penalties
    max_scores: dict[str, float]
    students: list[str]


def totals(db: Path, assignments: list[str]) -> Totals:
    scores: dict[tuple[str, str], float] = {}
    max_scores: dict[str, float] = {}
    for assignment in assignments:
        for row in records.grades(db, assignment):
            key = (row.student, assignment)
            scores[key] = scores.get(key, 0.0) + row.score - row.late_penalty
        with Gradebook(f"sqlite:///{db}") as gradebook:
            try:
                max_scores[assignment] = gradebook.find_assignment(assignment).max_score
            except MissingEntry:  # an assignment nobody has graded yet
                max_scores[assignment] = 0.0
    with Gradebook(f"sqlite:///{db}") as gradebook:
        students = sorted(s.id for s in gradebook.students)
    return Totals(assignments, scores, max_scores, students)


def missing_lines(unmatched_lms: list[str], unmatched_nbgrader: list[str], match_column: str) -> list[str]:
    """The text of `<to>.missing.txt`: who is on one side only."""
    lines = [f"# matched by the roster column {match_column!r} to nbgrader student ids"]
    lines += [f"in the LMS roster, not in nbgrader (empty grade): {s}" for s in unmatched_lms]
    lines += [f"in nbgrader, not in the LMS roster (not in the file): {s}" for s in unmatched_nbgrader]
    return lines


def points(value: float) -> str:
    """A grade as both LMSs read it: a plain decimal with a point, no thousands separator."""
    return f"{round(value, 2):.2f}".rstrip("0").rstrip(".") if value == value else ""


class _LmsExport(ExportPlugin):
    roster = Unicode("", help="The LMS's own roster or gradebook export (CSV).").tag(config=True)
    fixed: list[str] = []
    default_file = ""

    def match(self) -> str:
        raise NotImplementedError

    def export(self, gradebook: Gradebook) -> None:
        if not self.roster:
            raise RosterError(f"--{type(self).__name__}.roster=<the LMS's roster export> is needed")
        root = Path(self.parent.coursedir.root)
        named = [str(a) for a in self.assignment]
        present = {a.name for a in gradebook.assignments}
        editions = [e.assignment for e in load(root).editions]
        assignments = [a for a in editions if a in present and (not named or a in named)]
        header, rows = read_roster(Path(self.roster), [*self.fixed, self.match()])
        result = totals(paths(root).gradebook, assignments)
        ids = {(row[self.match()] or "").strip() for row in rows}
        wanted = [str(s) for s in self.student]
        known = [s for s in result.students if not wanted or s in wanted]
        if wanted:  # the others' grades stay empty: the LMS leaves what it has for them alone
            result.scores = {key: score for key, score in result.scores.items() if key[0] in wanted}
        unmatched_lms = sorted(i for i in ids if i and i not in result.students)
        unmatched_lms += [
            " ".join(str(v or "") for v in list(row.values())[:2]) + " (no id)"
            for row in rows
            if not (row[self.match()] or "").strip()
        ]
        unmatched_nbgrader = [s for s in known if s not in ids]
        destination = Path(self.to or root / self.default_file)
        with open(destination, "w", newline="", encoding="utf-8") as handle:
            self.write(csv.writer(handle), header, rows, result)
        report = missing_lines(unmatched_lms, unmatched_nbgrader, self.match())
        Path(f"{destination}.missing.txt").write_text("\n".join(report) + "\n", encoding="utf-8")
        for line in report[1:]:
            self.log.warning(line)

    def grade_of(self, result: Totals, row: dict, assignment: str) -> str:
        student = (row[self.match()] or "").strip()
        score = result.scores.get((student, assignment))
        return "" if score is None else points(score)

    def write(self, writer, header: list[str], rows: list[dict], result: Totals) -> None:
        raise NotImplementedError


class CanvasGrades(_LmsExport):
    """A Canvas gradebook import CSV: Canvas's five fixed columns, then one column per assignment."""

    match_column = Unicode("SIS Login ID", help="The roster column that holds the nbgrader student id.").tag(
        config=True
    )
    fixed = CANVAS_FIXED
    default_file = "canvas_import.csv"

    def match(self) -> str:
        return self.match_column

    @staticmethod
    def column(header: list[str], assignment: str) -> str:
        """The roster's own column of the assignment (`name (canvas id)`), or a new one by name."""
        return next((h for h in header if h.rsplit(" (", 1)[0] == assignment and h.endswith(")")), assignment)

    def write(self, writer, header, rows, result) -> None:
        columns = [self.column(header, a) for a in result.assignments]
        writer.writerow([*CANVAS_FIXED, *columns])
        writer.writerow([CANVAS_POINTS, "", "", "", "", *(points(result.max_scores[a]) for a in result.assignments)])
        for row in rows:
            writer.writerow(
                [*(row[c] for c in CANVAS_FIXED), *(self.grade_of(result, row, a) for a in result.assignments)]
            )


class MoodleGrades(_LmsExport):
    """A Moodle grade import CSV: the identifying columns, then one column per assignment."""

    match_column = Unicode("ID number", help="The roster column that holds the nbgrader student id.").tag(config=True)
    fixed = MOODLE_FIXED
    default_file = "moodle_import.csv"

    def match(self) -> str:
        return self.match_column

    def write(self, writer, header, rows, result) -> None:
        writer.writerow([*MOODLE_FIXED, *result.assignments])
        for row in rows:
            writer.writerow(
                [*(row[c] for c in MOODLE_FIXED), *(self.grade_of(result, row, a) for a in result.assignments)]
            )
