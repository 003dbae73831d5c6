"""Late penalties with per-student extensions, plugged into nbgrader's late-penalty step.

nbgrader has one due date per assignment and two penalties (`none`, `zero`). `CourseLatePenalty`
is the `AssignLatePenalties.plugin_class` of nbgrader_config.py, so `make grade`, plain
`nbgrader autograde` and formgrader's button all apply it:
- the teacher's extensions file (`extensions.csv` at the course root) moves one student's due
  date for one assignment, to a new date or by extra hours; a regrade reads it again, so the
  extension is kept;
- `penalty_method = "per_day"` takes `points_per_day` from each notebook per started day late
  (never more than the notebook's score); `none` and `zero` are nbgrader's own.

The extensions file is CSV with a header line `student,assignment,due`; `due` is either a date
and time (`2026-11-03 18:00`, UTC unless it carries an offset such as `+01:00`) or extra hours
(`+48h`). Blank lines and lines starting with `#` are skipped. A malformed line is refused with
its line number, and nothing is graded with a half-read file.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
from dataclasses import dataclass
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Enum, Float, Unicode

EXTENSIONS_FILE = "extensions.csv"
HEADER = ["student", "assignment", "due"]
DAY = 86400.0


class ExtensionsError(ValueError):
    """A malformed extensions file (the message names the file and the line)."""


@dataclass(frozen=True)
class Extension:
    """One student's extension of one assignment: a new due date, or extra hours."""

    student: str
    assignment: str
    until: dt.datetime | None = None  # naive UTC, as nbgrader stores dates
    hours: float = 0.0

    def due(self, assignment_due: dt.datetime) -> dt.datetime:
        """The student's due date, given the assignment's."""
        return self.until if self.until is not None else assignment_due + dt.timedelta(hours=self.hours)

    def describe(self) -> str:
        """How the extension reads in the feedback and the grade tables."""
        if self.until is not None:
            return f"{self.until:%Y-%m-%d %H:%M} UTC"
        return f"+{self.hours:g}h"


def _parse_due(text: str) -> tuple[dt.datetime | None, float]:
    text = text.strip()
    if text.startswith("+") and text.endswith("h"):
        hours = float(text[1:-1])
        if not math.isfinite(hours) or hours <= 0:
            raise ValueError("extra hours must be a positive number")
        return None, hours
    when = dt.datetime.fromisoformat(text)
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC).replace(tzinfo=None)
    return when, 0.0


def parse(text: str, name: str = EXTENSIONS_FILE) -> dict[tuple[str, str], Extension]:
    """(student, assignment) -> Extension, from the text of an extensions file."""
    lines = enumerate(text.splitlines(), 1)
    rows = [(n, line) for n, line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not rows:
        return {}
    first_number, first = rows[0]
    if [c.strip() for c in next(csv.reader([first]))] != HEADER:
        raise ExtensionsError(f"{name} line {first_number}: the first line must be `{','.join(HEADER)}`")
    result: dict[tuple[str, str], Extension] = {}
    for number, line in rows[1:]:
        cells = [c.strip() for c in next(csv.reader(io.StringIO(line)))]
        if len(cells) != 3 or not all(cells):
            raise ExtensionsError(f"{name} line {number}: expected student,assignment,due; got {line.strip()!r}")
        student, assignment, due = cells
        try:
            until, hours = _parse_due(due)
        except ValueError as error:
            raise ExtensionsError(
                f"{name} line {number}: {due!r} is neither a date (2026-11-03 18:00) nor extra hours (+48h): {error}"
            ) from None
        if (student, assignment) in result:
            raise ExtensionsError(f"{name} line {number}: a second extension for {student} on {assignment}")
        result[(student, assignment)] = Extension(student, assignment, until, hours)
    return result


def read(root: Path, name: str = EXTENSIONS_FILE) -> dict[tuple[str, str], Extension]:
    """The extensions of a course (none when the file does not exist)."""
    path = Path(root) / name
    return parse(path.read_text(encoding="utf-8"), str(path)) if path.exists() else {}


def seconds_late(timestamp: dt.datetime | None, due: dt.datetime | None) -> float:
    """Seconds after the due date (0 when on time or either date is missing)."""
    if timestamp is None or due is None:
        return 0.0
    return max(0.0, (timestamp - due).total_seconds())


def per_day_penalty(points_per_day: float, late: float, score: float) -> float:
    """`points_per_day` per started day late, at most the score."""
    return min(score, math.ceil(late / DAY) * points_per_day) if late > 0 else 0.0


def _coursedir(plugin):
    node = plugin
    while node is not None:
        if getattr(node, "coursedir", None) is not None:
            return node.coursedir
        node = getattr(node, "parent", None)
    return None


def course_root(plugin) -> Path | None:
    """The course root of the grading run (through a `make grade` slot, the course's own)."""
    coursedir = _coursedir(plugin)
    if coursedir is None:
        return None
    linked = (Path(coursedir.root) / coursedir.source_directory).resolve().parent
    return linked if (linked / "course.toml").exists() else Path(coursedir.root)


class CourseLatePenalty(LateSubmissionPlugin):
    """nbgrader's late penalty, counted from each student's own due date, with a per-day method."""

    penalty_method = Enum(
        ("none", "zero", "per_day"),
        default_value="none",
        help="'none': record lateness only; 'zero': a late notebook scores 0; "
        "'per_day': points_per_day off each notebook per started day late.",
    ).tag(config=True)
    points_per_day = Float(0.0, help="Points taken from each notebook per started day late (per_day).").tag(config=True)
    extensions_file = Unicode(EXTENSIONS_FILE, help="The teacher's extensions, relative to the course root.").tag(
        config=True
    )

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float):
        late = self.seconds_late(student_id, total_seconds_late)
        if late <= 0:
            self.log.info("%s is on time with their extension", student_id)
            return None
        if self.penalty_method == "per_day":
            return per_day_penalty(self.points_per_day, late, score)
        return super().late_submission_penalty(student_id, score, late)

    def seconds_late(self, student_id: str, total_seconds_late: float) -> float:
        """Seconds late against the student's own due date (nbgrader's count without extension)."""
        step = self.parent  # nbgrader's AssignLatePenalties: its gradebook and assignment are open
        root = course_root(self)
        assignment = getattr(step, "assignment_id", None)
        if root is None or assignment is None:
            return total_seconds_late
        extension = read(root, self.extensions_file).get((student_id, assignment))
        if extension is None:
            return total_seconds_late
        submission = step.gradebook.find_submission(assignment, student_id)
        return seconds_late(submission.timestamp, extension.due(submission.assignment.duedate))
