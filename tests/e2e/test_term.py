"""A teacher's term on one graded class (three students, `make grade`): extensions and per-day
penalties applied by grading and kept by a plain `nbgrader autograde` regrade, shown in the
feedback; the class report and the Canvas export read that grading."""

from __future__ import annotations

import csv
import datetime

import pytest
from nbgrader.api import Gradebook
from test_lms import CANVAS_ROSTER, read_canvas

from attention_course.grading.coursedir import CoursePaths
from attention_course.model.manifest import load
from classroom import submission, write_submission, wrong_answer
from conftest import REPO, grade_class, run

pytestmark = pytest.mark.slow
DUE = datetime.datetime(2026, 11, 1, 12, 0)
NB = "01_scaling_problem"
LATE = datetime.timedelta(hours=30)  # two started days


def _students(root):
    course = load(root)
    plan = {
        "ada": {},
        "bo": {"raw_scores": wrong_answer(course, "raw_scores", "transposed_result")},
        "cy": {
            "raw_scores": wrong_answer(course, "raw_scores", "transposed_result"),
            "scaled_scores": wrong_answer(course, "scaled_scores", "divide_by_d"),
        },
    }
    for student, answers in plan.items():
        folder = write_submission(root, student, submission(course, answers, [NB]), "attention")
        (folder / "timestamp.txt").write_text((DUE + LATE).isoformat(" "))


def _before(root):
    (root / "extensions.csv").write_text("student,assignment,due\nbo,attention,+48h\n")
    with open(root / "nbgrader_config.py", "a") as handle:
        handle.write('\nc.CourseLatePenalty.penalty_method = "per_day"\nc.CourseLatePenalty.points_per_day = 0.5\n')
    with Gradebook(f"sqlite:///{CoursePaths(root).gradebook}") as gradebook:
        gradebook.update_or_create_assignment("attention", duedate=DUE)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    root, _cells, _out = grade_class(tmp_path_factory.mktemp("term") / "course", _students, before_grading=_before)
    return root


def _penalties(root) -> dict[str, float]:
    with open(root / "grades.csv", newline="") as handle:
        return {r["student"]: float(r["late_penalty"]) for r in csv.DictReader(handle) if r["notebook"] == NB}


def test_make_grade_counts_lateness_from_each_students_own_due_date(term):
    penalties = _penalties(term)
    assert penalties["ada"] == 1.0  # 0.5 a day, two started days
    assert penalties["bo"] == 0.0  # on time with 48 extra hours
    assert 0 < penalties["cy"] <= 1.0  # never more than the notebook's score
    with open(term / "grades.csv", newline="") as handle:
        extensions = {r["student"]: r["extension"] for r in csv.DictReader(handle) if r["notebook"] == NB}
    assert extensions == {"ada": "", "bo": "+48h", "cy": ""}


def test_the_feedback_shows_the_extension_and_the_penalty(term):
    bo = (term / "feedback" / "bo" / "attention" / f"{NB}.html").read_text()
    ada = (term / "feedback" / "ada" / "attention" / f"{NB}.html").read_text()
    assert '<li class="extension">Extension: +48h' in bo and 'class="late-penalty"' not in bo
    assert 'class="late-penalty"' in ada and 'class="extension"' not in ada


def test_plain_nbgrader_autograde_keeps_the_extension(term):
    proc = run(["nbgrader", "autograde", "attention", "--student", "bo", "--force"], cwd=term, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with Gradebook(f"sqlite:///{CoursePaths(term).gradebook}") as gradebook:
        assert not gradebook.find_submission_notebook(NB, "attention", "bo").late_submission_penalty


def test_the_class_report_reads_the_grading(term):
    proc = run(["make", "report", f"VENV={REPO / '.venv'}"], cwd=term, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(term / "build" / "report" / "class_report.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    raw = [r for r in rows if r["item"] == "raw_scores"]
    assert raw and all(r["submitted"] == "3" for r in raw)
    assert sum(int(r["students"]) for r in raw if r["kind"] != "other") >= 2, rows
    assert any(r["item"] == "scaled_scores" for r in rows)
    assert "ada" not in (term / "build" / "report" / "class_report.html").read_text()


def test_the_canvas_export_gives_the_totals_of_grades_csv(term):
    (term / "canvas_roster.csv").write_text(CANVAS_ROSTER)
    proc = run(
        [
            "nbgrader",
            "export",
            "--exporter=attention_course.grading.lms.CanvasGrades",
            f"--CanvasGrades.roster={term / 'canvas_roster.csv'}",
            f"--to={term / 'canvas.csv'}",
        ],
        cwd=term,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(term / "grades.csv", newline="") as handle:
        totals = {r["student"]: float(r["score"]) for r in csv.DictReader(handle) if r["notebook"] == "TOTAL"}
    _assignments, rows, _possible = read_canvas(term / "canvas.csv")
    assert float(rows["ada"]["attention (5678)"]) == totals["ada"]
    assert rows["dan"]["attention (5678)"] == ""
    assert "cy" in (term / "canvas.csv.missing.txt").read_text()


def _offline(page, allowed: str = "file:") -> list[str]:
    """Abort every request that leaves `allowed` (the test's server or the disk); return them."""
    blocked = []

    def handle(route):
        if route.request.url.startswith((allowed, "file:", "data:")):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", handle)
    return blocked


def _rendered_maths(page) -> int:
    page.wait_for_selector("mjx-container svg", timeout=60_000)
    return page.locator("mjx-container").count()


def test_the_feedback_page_renders_maths_offline(term):
    from browser import SHOTS, browser_page

    path = term / "feedback" / "ada" / "attention" / f"{NB}.html"
    assert "cdnjs" not in path.read_text()
    with browser_page() as page:
        blocked = _offline(page)
        page.goto(path.as_uri())
        assert _rendered_maths(page) > 3
        page.screenshot(path=str(SHOTS / "feedback_offline_maths.png"))
        assert "\\sqrt{d_k}" not in page.inner_text("body")
    assert not [u for u in blocked if "mathjax" in u.lower()], blocked


def test_formgrader_renders_maths_offline(term):
    from browser import SHOTS, browser_page, jupyterlab

    with Gradebook(f"sqlite:///{CoursePaths(term).gradebook}") as gradebook:
        notebook_id = gradebook.find_submission_notebook(NB, "attention", "ada").id
    with jupyterlab(term, teacher=True) as url, browser_page() as page:
        blocked = _offline(page, url)
        page.goto(f"{url}/formgrader/submissions/{notebook_id}/?index=0")
        assert _rendered_maths(page) > 3
        page.screenshot(path=str(SHOTS / "formgrader_offline_maths.png"))
    assert not [u for u in blocked if "mathjax" in u.lower()], blocked
