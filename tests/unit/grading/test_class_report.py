"""What the class got wrong: the report counts the named mistakes and failing cases that grading
recorded in the gradebook (here written through nbgrader's API as grading writes them), with the
share of students, an example and a link to the teaching section; it changes nothing."""

from __future__ import annotations

import csv
import hashlib
import subprocess
import sys

import pytest
from small_gradebook import DUE, gradebook, submit

from attention_course.grading.class_report import teaching_section
from attention_course.model.cases import item_cases
from attention_course.model.manifest import load
from conftest import REPO, course_skeleton

RAW = "raw_scores"


def _reason(course, case_name: str, mistake: str | None) -> str:
    case = next(c for c in item_cases(course, course.item(RAW)) if c.name == case_name)
    text = f"For {case.describe_inputs()}, the result has the wrong values."
    if mistake:
        text += "\nLikely mistake: " + course.item(RAW).mistakes[mistake].sentence
    return text


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    course = load(REPO)
    root = course_skeleton(tmp_path_factory.mktemp("report"))
    db = gradebook(root / "gradebook.db", students=("s_ada", "s_bo", "s_cy"))
    full = {"test_raw_scores": 2.0, "test_scaled_dot_product_attention": 4.0}
    submit(db, "s_ada", full, DUE)
    submit(
        db, "s_bo", {**full, "test_raw_scores": 0.0}, DUE, comments={RAW: _reason(course, "one query", "no_transpose")}
    )
    submit(
        db,
        "s_cy",
        {"test_raw_scores": 0.0},
        DUE,
        comments={
            RAW: _reason(course, "a batch", "no_transpose"),
            "scaled_dot_product_attention": "`scaled_dot_product_attention` is not defined in this notebook.",
        },
    )
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    proc = subprocess.run(
        [sys.executable, "-m", "attention_course.grading.class_report", "--course", str(root)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before, "the report changed the gradebook"
    assert not (root / "autograded").exists()
    with open(root / "build" / "report" / "class_report.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return root, rows


def test_mistakes_and_cases_are_counted_with_their_share(reported):
    _root, rows = reported
    by = {(r["item"], r["kind"], r["what"]): r for r in rows}
    assert by[(RAW, "mistake", "no_transpose")]["students"] == "2"
    assert by[(RAW, "mistake", "no_transpose")]["share"] == "0.67"
    assert by[(RAW, "hidden case", "one query")]["students"] == "1"
    assert by[(RAW, "case", "a batch")]["students"] == "1"
    other = by[
        ("scaled_dot_product_attention", "other", "`scaled_dot_product_attention` is not defined in this notebook.")
    ]
    assert other["students"] == "1"
    assert len(rows) == 4 and rows[0]["what"] == "no_transpose"


def test_the_page_is_anonymous_and_links_the_teaching_section(reported):
    root, rows = reported
    page = (root / "build" / "report" / "class_report.html").read_text()
    assert not any(student in page for student in ("s_ada", "s_bo", "s_cy"))
    link = teaching_section(load(REPO), load(REPO).item(RAW))
    assert link.startswith("../../notebooks/attention/01_scaling_problem.ipynb#") and link in page
    assert (root / "build" / "report" / link).resolve().with_suffix(".ipynb").name == "01_scaling_problem.ipynb"


def test_without_a_gradebook_it_says_so_and_creates_none(tmp_path):
    from attention_course.grading.class_report import write

    with pytest.raises(SystemExit, match="grade first"):
        write(load(REPO), tmp_path, tmp_path / "out")
    assert not (tmp_path / "gradebook.db").exists()
