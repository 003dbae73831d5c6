"""A term through nbgrader's exchange, with students as separate OS accounts, as on a JupyterHub.

The teacher releases the assignment; two students (OS users, created when the test runs as root,
as CI does) fetch it, answer (alice: every answer right; bob: one exercise wrong, and late) and
submit; the teacher collects, runs `make grade`, releases the feedback; each student fetches their
own feedback. Then: the course gradebook is the record (`nbgrader export` gives the totals of
grades.csv), bob's late notebooks carry the course's penalty, and formgrader, opened in a real
browser, shows the trusted scores (screenshots in build/screenshots/). Last, bob is granted an
extension (extensions.csv) and regraded, and the Canvas import carries both totals.

The students' nbgrader runs confined as their own user (attention_course/confinement/confine.py, bubblewrap + user):
on these machines the course's Python lives under /root, which no other account may enter, and
bubblewrap recreates just that path for them.
"""

from __future__ import annotations

import csv
import datetime
import os
import pwd
import shutil
import subprocess
import sys
import time

import pytest

from attention_course.confinement import confine
from attention_course.model.manifest import load
from classroom import wrong_answer
from conftest import REPO, as_student, copy_course, describe, give_to, run

pytestmark = pytest.mark.slow
STUDENTS = ("atnalice", "atnbob")
COURSE_ID = "attention-course"


def _accounts() -> dict[str, pwd.struct_passwd]:
    found = {}
    for name in STUDENTS:
        try:
            found[name] = pwd.getpwnam(name)
        except KeyError:
            if os.geteuid() != 0:
                break
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
            found[name] = pwd.getpwnam(name)
    return found


class Term:
    """The course copy, the exchange and the students' accounts."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.root = copy_course(tmp / "course")
        self.exchange = tmp / "exchange"
        self.exchange.mkdir(mode=0o777)
        self.exchange.chmod(0o1777)
        with open(self.root / "nbgrader_config.py", "a") as config:
            config.write(
                f"\nc.Exchange.root = {str(self.exchange)!r}\nc.LateSubmissionPlugin.penalty_method = 'zero'\n"
            )
        self.course = load(self.root)

    def teacher(self, *args, timeout=600) -> subprocess.CompletedProcess:
        proc = run(["nbgrader", *args], cwd=self.root, timeout=timeout)
        assert proc.returncode == 0, describe(proc)
        return proc

    def student(self, account: pwd.struct_passwd, *args) -> subprocess.CompletedProcess:
        """nbgrader as the student, in their home, confined to it and the exchange."""
        nbgrader = os.path.join(os.path.dirname(sys.executable), "nbgrader")
        proc = as_student(account, self.exchange, COURSE_ID, [nbgrader, *args])
        assert proc.returncode == 0, f"{account.pw_name}: nbgrader {' '.join(args)}\n{proc.stdout}\n{proc.stderr}"
        return proc


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    accounts = _accounts()
    if len(accounts) < len(STUDENTS) or confine.usable(["bwrap", "user"]):
        if os.environ.get("CI") == "true":
            pytest.fail("the exchange round trip needs root (to create the students' accounts) and bubblewrap")
        pytest.skip("needs root or the accounts " + ", ".join(STUDENTS) + ", and bubblewrap")
    for account in accounts.values():  # a clean home: earlier runs leave fetched assignments
        for name in ("attention", ".jupyter"):
            shutil.rmtree(os.path.join(account.pw_dir, name), ignore_errors=True)
    t = Term(tmp_path_factory.mktemp("term"))
    alice, bob = accounts["atnalice"], accounts["atnbob"]
    t.teacher("release_assignment", "attention", "--force")
    for account in (alice, bob):
        t.student(account, "fetch_assignment", "attention")
    course = t.course
    for account in (alice, bob):  # the students answer in their own copies
        folder = os.path.join(account.pw_dir, "attention")
        for notebook in course.graded_notebooks():
            shutil.copy(course.source_notebook(notebook), os.path.join(folder, f"{notebook}.ipynb"))
    _write_answer(
        os.path.join(bob.pw_dir, "attention"), course, "split_heads", wrong_answer(course, "split_heads", "bare_view")
    )
    give_to(alice.pw_dir, alice)
    give_to(bob.pw_dir, bob)
    t.student(alice, "submit", "attention")
    time.sleep(1.5)
    due = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    time.sleep(1.5)
    t.student(bob, "submit", "attention")
    t.teacher("db", "assignment", "add", "attention", f"--duedate={due.isoformat()}")
    t.teacher("collect", "attention")
    proc = run(["make", "grade", f"VENV={REPO / '.venv'}", "GRADE_ARGS=--seed 7"], cwd=t.root, timeout=1800)
    assert proc.returncode == 0, describe(proc)
    t.teacher("release_feedback", "attention")
    for account in (alice, bob):
        t.student(account, "fetch_feedback", "attention")
    t.teacher("export", "--to=export.csv")
    t.accounts = accounts
    return t


def _write_answer(folder, course, item_name, source) -> None:
    import json

    item = course.item(item_name)
    path = os.path.join(folder, f"{item.notebook}.ipynb")
    with open(path) as handle:
        notebook = json.load(handle)
    for cell in notebook["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == item.answer_cell:
            cell["source"] = source
    with open(path, "w") as handle:
        json.dump(notebook, handle)


def _totals(path, score="score") -> dict[str, float]:
    with open(path) as handle:
        return {
            r.get("student_id") or r["student"]: float(r[score])
            for r in csv.DictReader(handle)
            if r.get("notebook", "TOTAL") == "TOTAL"
        }


def test_the_submissions_are_named_by_the_os_users(term):
    assert sorted(p.name for p in (term.root / "submitted").iterdir()) == list(STUDENTS)
    for student in STUDENTS:
        assert (term.root / "submitted" / student / "attention" / "timestamp.txt").exists()


def test_nbgrader_export_gives_the_totals_of_grades_csv(term):
    exported = _totals(term.root / "export.csv")
    ours = _totals(term.root / "grades.csv")
    assert exported == ours and set(exported) == set(STUDENTS)
    assert ours["atnalice"] == term.course.total_points


def test_a_late_submission_gets_the_courses_penalty(term):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{term.root / 'gradebook.db'}") as gradebook:
        alice, bob = (gradebook.find_submission("attention", s) for s in STUDENTS)
        assert alice.total_seconds_late == 0 and bob.total_seconds_late > 0
        assert bob.late_submission_penalty == bob.score > 0  # "zero": the late notebooks lose every mark
    assert _totals(term.root / "grades.csv")["atnbob"] == 0


def test_each_student_fetches_their_own_feedback(term):
    for student, account in term.accounts.items():
        pages = [p for p in _rglob(os.path.join(account.pw_dir, "attention", "feedback")) if p.endswith(".html")]
        assert {os.path.basename(p)[:-5] for p in pages} >= set(term.course.graded_notebooks()), pages
        with open(next(p for p in pages if "03_split_heads" in p)) as handle:
            text = handle.read()
        assert "Grading summary" in text
        assert ("✗ <strong>test_split_heads" in text) == (student == "atnbob"), text[:3000]


def _rglob(folder):
    for base, _, files in os.walk(folder):
        for name in files:
            yield os.path.join(base, name)


def test_formgrader_shows_the_trusted_scores_in_a_browser(term):
    from browser import browser_page, jupyterlab

    with jupyterlab(term.root, teacher=True) as url, browser_page() as page:
        page.goto(f"{url}/formgrader/manage_students")
        page.wait_for_selector("text=atnalice", timeout=60_000)
        page.wait_for_timeout(1500)
        page.screenshot(path=str(REPO / "build" / "screenshots" / "formgrader_students.png"), full_page=True)
        text = page.inner_text("body")
        total = f"{term.course.total_points:g}"
        assert "atnalice" in text and "atnbob" in text and total in text, text[:2000]
        page.goto(f"{url}/formgrader/gradebook/attention/03_split_heads")
        page.wait_for_selector("table tbody tr", timeout=60_000)
        page.wait_for_timeout(1000)
        page.screenshot(path=str(REPO / "build" / "screenshots" / "formgrader_notebook.png"), full_page=True)


def test_an_extension_lifts_the_penalty_and_the_lms_export_carries_the_totals(term):
    """Last, as a teacher would do it after the fact: bob is granted an extension; regrading him
    lifts his penalty (extensions.csv); then the Canvas import from Canvas's own roster export."""
    from test_lms import read_canvas

    alice, bob = STUDENTS
    (term.root / "extensions.csv").write_text(f"student,assignment,due\n{bob},attention,+1h\n")
    proc = run(
        ["make", "grade", f"VENV={REPO / '.venv'}", f"STUDENT={bob}", "GRADE_ARGS=--seed 7 --regrade"],
        cwd=term.root,
        timeout=1800,
    )
    assert proc.returncode == 0, describe(proc)
    totals = _totals(term.root / "grades.csv")
    assert totals[bob] > 0 and totals[alice] == term.course.total_points
    roster = term.root / "canvas_roster.csv"
    roster.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,attention (77)\n"
        f'"Lovelace, Alice",1,S1,{alice},A,\n"Bohr, Bob",2,S2,{bob},A,\n"Curie, Carol",3,S3,carol,A,\n'
    )
    term.teacher(
        "export",
        "--exporter=attention_course.grading.lms.CanvasGrades",
        f"--CanvasGrades.roster={roster}",
        f"--to={term.root / 'canvas.csv'}",
    )
    _columns, rows, _points = read_canvas(term.root / "canvas.csv")
    assert {k: r["attention (77)"] for k, r in rows.items()} == {
        alice: f"{totals[alice]:g}",
        bob: f"{totals[bob]:g}",
        "carol": "",
    }
    assert "carol" in (term.root / "canvas.csv.missing.txt").read_text()
