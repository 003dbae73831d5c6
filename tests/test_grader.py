"""The grader, graded: `make grade` on a class of wrong and right submissions.

In a throw-away copy of the course, one `make grade JOBS=2` run grades:
- mutant students: each carries at most one catalogued mistake per exercise (from
  `grading/mistakes.py`, plus the wrong options of the quick check) and right answers elsewhere;
  every mistake must lose points on its own test cell, and nothing else may;
- alternative students: right answers in other styles (`grading/alternatives.py`), which must keep
  full marks;
and checks what a teacher gets: grades.csv, feedback HTML without hidden tests, autograded copies.
The mutation score per exercise is printed.
"""
from __future__ import annotations

import csv
from collections import defaultdict

import pytest

from conftest import grade_class

from grading.alternatives import ALTERNATIVES
from grading.classroom import submission, wrong_answer, write_submission
from grading.mistakes import EDITS
from grading.trusted import QUICK_CHECK, graded_notebooks
from grading.trusted import target_cell
from grading.trusted import test_cells as cells_of_notebook

QUICK_CHECK_WRONG = ["A", "C", "D"]
MUTANTS_PER_EXERCISE = 7  # through the real grader; tests/test_checks.py runs every catalogued mistake


def mistakes_by_target() -> dict[str, list[str]]:
    found = {target: list(mistakes)[:MUTANTS_PER_EXERCISE] for target, mistakes in EDITS.items()}
    found[QUICK_CHECK] = QUICK_CHECK_WRONG
    return found


def cell_of(target: str) -> tuple[str, str]:
    return target_cell(target)


def build_class(course) -> dict[str, dict[str, str]]:
    """Write the students; return, per student, which mistake each target carries."""
    plan: dict[str, dict[str, str]] = {}
    catalogue = mistakes_by_target()
    for k in range(MUTANTS_PER_EXERCISE):
        carried = {t: m[k] for t, m in catalogue.items() if k < len(m)}
        answers = {t: wrong_answer(t, mistake) for t, mistake in carried.items()}
        write_submission(course, f"mutant{k:02d}", submission(answers))
        plan[f"mutant{k:02d}"] = carried
    for i in range(2):
        answers = {t: styles[i] for t, styles in ALTERNATIVES.items()}
        write_submission(course, f"alternative{i}", submission(answers, notebooks=graded_notebooks()))
        plan[f"alternative{i}"] = {}
    return plan


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    plan = {}
    course, cells, output = grade_class(tmp_path_factory.mktemp("grader"), lambda course: plan.update(build_class(course)))
    return course, plan, cells, output


def test_every_mistake_loses_points_on_its_own_cell_and_nowhere_else(graded):
    course, plan, cells, _ = graded
    killed, survived = defaultdict(int), []
    for student, carried in plan.items():
        if not carried:
            continue
        for target, mistake in carried.items():
            _, grade_id = cell_of(target)
            row = cells[(student, grade_id)]
            if float(row["score"]) < float(row["max_score"]):
                killed[target] += 1
            else:
                survived.append(f"{target}/{mistake}")
        bad_targets = {cell_of(t)[1] for t in carried}
        notebooks = {cell_of(t)[0] for t in carried}
        for (s, grade_id), row in cells.items():
            if s == student and row["notebook"] in notebooks and grade_id not in bad_targets:
                assert row["score"] == row["max_score"], f"{student}: {grade_id} lost points: {row['reason']}"
    catalogue = mistakes_by_target()
    print("\nmutation score per exercise:")
    for target, mistakes in catalogue.items():
        print(f"  {target:30s} {killed[target]:2d} / {len(mistakes)} mistakes lose points")
    total = sum(len(m) for m in catalogue.values())
    print(f"  {'all':30s} {sum(killed.values()):2d} / {total}")
    assert all(len(m) >= 6 for t, m in catalogue.items() if t != QUICK_CHECK) and total >= 40
    assert survived == [], f"mistakes that kept full marks: {survived}"


def test_right_answers_in_other_styles_keep_full_marks(graded):
    _, plan, cells, _ = graded
    for student in (s for s, carried in plan.items() if not carried):
        lost = {k[1]: r["reason"] for k, r in cells.items() if k[0] == student and r["score"] != r["max_score"]}
        assert lost == {}, f"{student} lost points: {lost}"


def test_feedback_names_the_mistake_and_hides_the_hidden_tests(graded):
    course, plan, _, _ = graded
    feedback = course / "feedback" / "mutant00" / "attention"
    page = (feedback / "02_scaled_dot_product_attention.html").read_text()
    assert "Grading summary" in page and "Likely mistake" in page
    for html in feedback.glob("*.html"):
        text = html.read_text()
        assert "BEGIN HIDDEN TESTS" not in text and "hidden=True" not in text, html.name


def test_grades_csv_has_every_student_notebook_and_total(graded):
    course, plan, _, _ = graded
    with open(course / "grades.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert set(rows[0]) >= {"student", "notebook", "score", "max_score"}
    totals = {r["student"]: r for r in rows if r["notebook"] == "TOTAL"}
    assert set(plan) <= set(totals)
    full = sum(c.points for nb in graded_notebooks() for c in cells_of_notebook(nb))
    assert all(float(t["max_score"]) == full for t in totals.values())
    assert float(totals["alternative0"]["score"]) == full


