"""Late penalties: the teacher's extensions file and the per-day penalty, through nbgrader's own
late-penalty step (`AssignLatePenalties` with the course's plugin)."""

from __future__ import annotations

import datetime

import nbformat
import pytest
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import AssignLatePenalties
from small_gradebook import DUE, A, gradebook, submit, url
from traitlets.config import Config, Configurable

from attention_course.grading.late import CourseLatePenalty, ExtensionsError, parse, per_day_penalty, read

NB = "01_scaling_problem"
FULL = {"test_raw_scores": 2.0, "test_scaled_dot_product_attention": 4.0}


def test_a_file_gives_new_dates_and_extra_hours():
    found = parse("student,assignment,due\n# granted by mail\n\nada,attention,2026-11-03 18:00\nbo,attention,+48h\n")
    assert found[("ada", A)].due(DUE) == datetime.datetime(2026, 11, 3, 18, 0)
    assert found[("bo", A)].due(DUE) == DUE + datetime.timedelta(hours=48)
    offset = parse("student,assignment,due\ncy,attention,2026-11-03T18:00+02:00\n")
    assert offset[("cy", A)].until == datetime.datetime(2026, 11, 3, 16, 0)


@pytest.mark.parametrize(
    "text, line",
    [
        ("student,assignment,due\nada,attention,next tuesday\n", 2),
        ("student,assignment,due\nada,attention,+2h\n\nbo,attention\n", 4),
        ("student,assignment,due\nada,attention,-3h\n", 2),
        ("student,assignment,due\nada,attention,+1h\nada,attention,+2h\n", 3),
        ("who,what,when\nada,attention,+1h\n", 1),
    ],
)
def test_a_malformed_line_is_refused_with_its_number(text, line):
    with pytest.raises(ExtensionsError, match=rf"line {line}:"):
        parse(text)


def test_no_file_means_no_extensions(tmp_path):
    assert read(tmp_path) == {}


def test_per_day_counts_started_days_and_stops_at_the_score():
    assert per_day_penalty(1.0, 0, 4.0) == 0.0
    assert per_day_penalty(1.0, 60, 4.0) == 1.0
    assert per_day_penalty(1.0, 86400 + 1, 4.0) == 2.0
    assert per_day_penalty(1.0, 10 * 86400, 4.0) == 4.0


class _Run(Configurable):
    """What nbgrader's autograde hands its late-penalty step: the course directory."""

    def __init__(self, root):
        super().__init__()
        self.coursedir = CourseDirectory(root=str(root))


def _penalty(root, db, student, config: dict) -> float | None:
    cfg = Config()
    cfg.AssignLatePenalties.plugin_class = CourseLatePenalty
    for key, value in config.items():
        setattr(cfg.CourseLatePenalty, key, value)
    step = AssignLatePenalties(config=cfg, parent=_Run(root))
    resources = {"nbgrader": {"notebook": NB, "assignment": A, "student": student, "db_url": url(db)}}
    step.preprocess(nbformat.v4.new_notebook(), resources)
    with Gradebook(url(db)) as gb:
        return gb.find_submission_notebook(NB, A, student).late_submission_penalty


@pytest.fixture
def late_class(tmp_path):
    db = gradebook(tmp_path / "gradebook.db", students=("ada", "bo", "cy"))
    two_days_late = DUE + datetime.timedelta(hours=30)
    for student in ("ada", "bo", "cy"):
        submit(db, student, FULL, two_days_late)
    return tmp_path, db


def test_the_extension_decides_lateness_for_its_student_only(late_class):
    root, db = late_class
    (root / "extensions.csv").write_text("student,assignment,due\nada,attention,+36h\nbo,attention,+12h\n")
    settings = {"penalty_method": "per_day", "points_per_day": 0.5}
    assert _penalty(root, db, "ada", settings) is None  # on time with 36 extra hours
    assert _penalty(root, db, "bo", settings) == 0.5  # 18 hours late: one started day
    assert _penalty(root, db, "cy", settings) == 1.0  # 30 hours late: two started days
    assert _penalty(root, db, "cy", {"penalty_method": "zero"}) == 2.0
    assert _penalty(root, db, "ada", {"penalty_method": "zero"}) is None


def test_a_regrade_keeps_the_extension_and_a_bad_file_stops_grading(late_class):
    root, db = late_class
    (root / "extensions.csv").write_text("student,assignment,due\nada,attention,2026-11-03 00:00\n")
    for _ in range(2):
        assert _penalty(root, db, "ada", {"penalty_method": "zero"}) is None
    (root / "extensions.csv").write_text("student,assignment,due\nada,attention,soon\n")
    with pytest.raises(ExtensionsError, match="line 2"):
        _penalty(root, db, "ada", {"penalty_method": "zero"})
