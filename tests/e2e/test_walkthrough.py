"""The README's term, as typed: its command blocks (`<!-- term:... -->`), parsed from the README
and run as they stand, the teacher's in a copy of the course with the session block first, each
student's in their own OS account through nbgrader's exchange (as on a JupyterHub).

Two students, one per edition; the English one submits a wrong answer, is collected, resubmits a
right one, and is collected again with `--update`; both are graded with `make grade`; a manual
grade and comment set as formgrader sets them reach the student with `generate_feedback --force`;
the export holds every student of the roster, one who never submitted included.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import shutil
import subprocess

import pytest

from attention_course.confinement import confine
from attention_course.model.manifest import load
from classroom import wrong_answer
from conftest import REPO, as_student, copy_course, describe

README = REPO / "README.md"
BLOCK = re.compile(r"<!-- term:(?P<label>[\w:-]+) -->\n```(?:bash|text)\n(?P<body>.*?)```", re.S)
COURSE_ID = "attention-course"
COMMENT = "See me about split_heads: right, but late in the term."


def blocks(text: str) -> dict[str, str]:
    found = {}
    for match in BLOCK.finditer(text):
        assert match["label"] not in found, f"two README blocks are labelled {match['label']}"
        found[match["label"]] = match["body"]
    return found


def commands(body: str) -> list[str]:
    return [line.split("  #")[0].strip() for line in body.splitlines() if line.strip() and not line.startswith("#")]


def test_each_edition_has_every_step_with_what_nbgrader_needs():
    found = blocks(README.read_text())
    for edition, assignment in (("en", "attention"), ("zh", "attention_zh")):
        lines = {step: commands(found[f"{edition}:{step}"]) for step in STEPS}
        assert f"nbgrader collect --update {assignment}" in lines["teacher:collect"], lines
        assert f"nbgrader generate_feedback --force {assignment}" in lines["teacher:feedback"], lines
        assert any(c.startswith(f"nbgrader db assignment add {assignment} --duedate=") for c in lines["teacher:setup"])
        for step, cmds in lines.items():
            named = [c for c in cmds if c.startswith("nbgrader ") and " export" not in c and " db student" not in c]
            assert all(assignment in c.split() for c in named), (step, cmds)
    assert "nbgrader db student import roster.csv" in commands(found["en:teacher:setup"])
    assert commands(found["teacher:session"]) == [". .venv/bin/activate"]


STEPS = (
    "teacher:setup",
    "student:fetch",
    "student:submit",
    "teacher:collect",
    "teacher:feedback",
    "student:return",
    "teacher:export",
)


def _account(name: str) -> pwd.struct_passwd:
    try:
        account = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
        account = pwd.getpwnam(name)
    for entry in ("attention", "attention_zh", ".jupyter"):
        shutil.rmtree(os.path.join(account.pw_dir, entry), ignore_errors=True)
    return account


class Term:
    def __init__(self, tmp, found):
        self.found = found
        self.root = copy_course(tmp / "course")
        (self.root / ".venv").symlink_to(REPO / ".venv")
        self.exchange = tmp / "exchange"
        self.exchange.mkdir()
        self.exchange.chmod(0o1777)
        with open(self.root / "nbgrader_config.py", "a") as config:
            config.write(
                f"\nc.Exchange.root = {str(self.exchange)!r}\n"
                "c.Grading.seconds = 20\nc.Grading.cell_timeout = 20\n"  # a faster term; no command changes
            )
        (self.root / "roster.csv").write_text(found["roster"])
        self.course = load(self.root)

    def teacher(self, label: str, only: str | None = None) -> str:
        body = self.found[label] if only is None else only
        script = self.found["teacher:session"] + "set -e\n" + body
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        env["PATH"] = "/usr/local/bin:/usr/bin:/bin"  # what a teacher's shell has: no venv until activated
        proc = subprocess.run(
            ["bash", "-c", script], cwd=self.root, env=env, capture_output=True, text=True, timeout=2400
        )
        assert proc.returncode == 0, f"{label}:\n{describe(proc)}"
        return proc.stdout

    def student(self, account: pwd.struct_passwd, label: str) -> str:
        """The block in the student's account and home, confined to it and the exchange."""
        proc = as_student(account, self.exchange, COURSE_ID, ["/bin/bash", "-e", "-c", self.found[label]])
        assert proc.returncode == 0, f"{account.pw_name}: {label}\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout


def _answer(folder: str, course, name: str | None = None, source: str | None = None, edition="en") -> None:
    """Every answer right (the source notebooks), or `name` answered with `source`."""
    for notebook in course.graded_notebooks():
        path = os.path.join(folder, f"{notebook}.ipynb")
        shutil.copy(course.source_dir(edition) / f"{notebook}.ipynb", path)
    if name is not None:
        item = course.item(name)
        path = os.path.join(folder, f"{item.notebook}.ipynb")
        nb = json.loads(open(path).read())
        for cell in nb["cells"]:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == item.answer_cell:
                cell["source"] = source
        open(path, "w").write(json.dumps(nb))


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    if os.geteuid() != 0 or confine.usable(["bwrap", "user"]):
        if os.environ.get("CI") == "true":
            pytest.fail("the README's term needs root (the students' accounts) and bubblewrap")
        pytest.skip("needs root and bubblewrap")
    t = Term(tmp_path_factory.mktemp("walk"), blocks(README.read_text()))
    en, zh = _account("atnwalken"), _account("atnwalkzh")
    t.teacher("en:teacher:setup")
    t.teacher("zh:teacher:setup")
    t.student(en, "en:student:fetch")
    t.student(zh, "zh:student:fetch")
    course = t.course
    t.wrong = wrong_answer(course, "split_heads", "bare_view")
    _answer(os.path.join(en.pw_dir, "attention"), course, "split_heads", t.wrong)
    _answer(os.path.join(zh.pw_dir, "attention_zh"), course, edition="zh-CN")
    t.student(en, "en:student:submit")
    t.student(zh, "zh:student:submit")
    first = [c for c in commands(t.found["en:teacher:collect"]) if c.startswith("nbgrader collect")]
    t.teacher("en:teacher:collect", only="\n".join(first) + "\n")  # collected before the resubmission
    t.first_collected = _answer_of(t.root / "submitted" / "atnwalken" / "attention", course, "split_heads")
    _answer(os.path.join(en.pw_dir, "attention"), course)  # the student puts it right and submits again
    t.student(en, "en:student:submit")
    t.graded_en = t.teacher("en:teacher:collect")
    t.graded_collected = _answer_of(t.root / "submitted" / "atnwalken" / "attention", course, "split_heads")
    t.graded_zh = t.teacher("zh:teacher:collect")
    _manual_grade(t.root, course, "atnwalken")
    for edition, account in (("en", en), ("zh", zh)):
        t.teacher(f"{edition}:teacher:feedback")
        t.student(account, f"{edition}:student:return")
    t.teacher("en:teacher:export")
    t.accounts = {"en": en, "zh": zh}
    return t


def _answer_of(folder, course, name: str) -> str:
    item = course.item(name)
    nb = json.loads((folder / f"{item.notebook}.ipynb").read_text())
    cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == item.answer_cell)
    return "".join(cell["source"])


def _manual_grade(root, course, student: str) -> None:
    """What formgrader's Save does for a TA's grade and comment: the gradebook's manual score and comment."""
    from nbgrader.api import Gradebook

    item = course.item("split_heads")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        grade = gradebook.find_grade(item.test_cell, item.notebook, "attention", student)
        grade.manual_score = grade.max_score - 1
        comment = gradebook.find_comment(item.answer_cell, item.notebook, "attention", student)
        comment.manual_comment = COMMENT
        gradebook.db.commit()


@pytest.mark.slow
def test_the_resubmission_is_what_was_graded(term):
    assert term.first_collected.strip() == term.wrong.strip()  # the first collection took the wrong one
    assert term.graded_collected.strip() != term.wrong.strip()  # --update took the resubmission
    with open(term.root / "grades.csv") as handle:
        totals = {r["student"]: r for r in csv.DictReader(handle) if r.get("notebook") == "TOTAL"}
    assert float(totals["atnwalken"]["score"]) == term.course.total_points, totals
    assert float(totals["atnwalkzh"]["score"]) == term.course.total_points, totals


@pytest.mark.slow
def test_the_second_make_grade_kept_the_first_editions_student(term):
    assert "atnwalken (attention): kept (graded earlier)" in term.graded_zh, term.graded_zh
    assert "atnwalkzh (attention_zh): graded" in term.graded_zh, term.graded_zh


@pytest.mark.slow
def test_the_manual_grade_and_comment_reach_the_student(term):
    pages = [
        os.path.join(base, name)
        for base, _, files in os.walk(os.path.join(term.accounts["en"].pw_dir, "attention", "feedback"))
        for name in files
        if name == "03_split_heads.html"
    ]
    assert pages, "no feedback fetched"
    text = open(pages[0]).read()
    assert COMMENT in text, text[:2000]
    zh_pages = list(os.walk(os.path.join(term.accounts["zh"].pw_dir, "attention_zh", "feedback")))
    assert any(name.endswith(".html") for _, _, files in zh_pages for name in files)


@pytest.mark.slow
def test_the_export_holds_the_whole_roster(term):
    with open(term.root / "grades-export.csv") as handle:
        rows = list(csv.DictReader(handle))
    students = {r["student_id"] for r in rows}
    roster = {line.split(",")[0] for line in term.found["roster"].splitlines()[1:]}
    assert roster <= students, (roster, students)
    absent = [r for r in rows if r["student_id"] == "atnabsent"]
    assert absent and all(float(r["score"]) == 0 for r in absent), absent
    en = [r for r in rows if r["student_id"] == "atnwalken" and r["assignment"] == "attention"]
    assert en and float(en[0]["score"]) == term.course.total_points - 1, en


@pytest.mark.slow
def test_every_student_was_graded_on_the_assignments_kept_seed(term):
    """No seed was typed: each assignment's was drawn once, kept in seeds.toml, and used for all."""
    from attention_course.grading import seeds

    kept = seeds.read(term.root)
    assert set(kept) == {"attention", "attention_zh"}, kept
    with open(term.root / "grades.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and all(int(r["seed"]) == kept[r["assignment"]] for r in rows), rows
    feedback = (term.root / "feedback" / "atnwalken" / "attention" / "01_scaling_problem.html").read_text()
    assert f"seed {kept['attention']}" in feedback
