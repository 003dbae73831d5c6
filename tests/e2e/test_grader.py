"""The grader, graded: one `make grade JOBS=2` run on a class of wrong, tricky and right submissions.

In a throw-away copy of the course:
- mutant students: each carries at most one catalogued wrong answer per item (a mistake of the
  manifest, or a wrong option of a question) and right answers elsewhere; every wrong answer
  must lose points on its own test cell, and nothing else may;
- trick students (tests/attacks.py): wrong answers dressed up with tricks inside the kernel;
- alternative students: right answers in other styles (the manifest's alternatives), which must
  keep full marks, and messy right answers;
and checks what a teacher gets: the course gradebook, grades.csv, feedback without hidden tests.
The mutation score per item is printed. Every other edition of the course takes part: some
students submit it, so a class may mix editions.
"""

from __future__ import annotations

import csv
from collections import defaultdict

import pytest

import attacks
from attention_course.model.manifest import load
from classroom import submission, write_submission, wrong_answer
from conftest import grade_class

pytestmark = pytest.mark.slow
COURSE = load()


def wrong_answers() -> dict[str, list[str]]:
    """Every catalogued wrong answer of every item."""
    return {i.name: (i.wrong_options if i.is_question else list(i.mistakes)) for i in COURSE.items}


def build_class(course_root) -> dict[str, tuple[str, dict[str, str], dict[str, int]]]:
    """Write the students; return, per student: assignment, the wrong answer each item carries,
    and the alternative (right answer in another style) each item carries.

    Mutant k carries the k-th wrong answer of every item that has one and hands in only the
    notebooks of those items (as a student who did part of the work), with an alternative on
    their other items; alternatives no mutant has room for go to the trick students' untouched
    items, then to students who hand in just the notebooks of the alternatives they carry."""
    course = load(course_root)
    editions = [e.assignment for e in course.editions]
    plan: dict[str, tuple[str, dict[str, str], dict[str, int]]] = {}
    catalogue = wrong_answers()
    placed: set[tuple[str, int]] = set()
    for k in range(max(len(v) for v in catalogue.values())):
        carried = {item: answers[k] for item, answers in catalogue.items() if k < len(answers)}
        handed = sorted({course.item(item).notebook for item in carried})
        others = {
            i.name: k % len(i.alternatives)
            for i in course.items
            if i.name not in carried and i.alternatives and i.notebook in handed
        }
        assignment = editions[k % len(editions)]
        answers = {item: wrong_answer(course, item, mistake) for item, mistake in carried.items()}
        answers |= {item: course.item(item).alternatives[n] for item, n in others.items()}
        placed |= set(others.items())
        notebooks = submission(course, answers, handed, course.edition(assignment).name)
        write_submission(course_root, f"mutant{k:02d}", notebooks, assignment)
        plan[f"mutant{k:02d}"] = (assignment, carried, others)
    left = [(i.name, n) for i in course.items for n in range(len(i.alternatives)) if (i.name, n) not in placed]
    for student in attacks.tricks(course):
        extra = {}
        for item, n in list(left):
            if item not in student.expected and item not in extra:
                extra[item] = n
                left.remove((item, n))
        student.answers |= {item: course.item(item).alternatives[n] for item, n in extra.items()}
        write_submission(course_root, student.name, student.build(course), "attention")
        plan[student.name] = ("attention", {}, extra)
    n = 0
    while left:  # the alternatives of items every student above answers in their own way
        extra = {}
        for item, k in list(left):
            if item not in extra:
                extra[item] = k
                left.remove((item, k))
        answers = {item: course.item(item).alternatives[k] for item, k in extra.items()}
        write_submission(course_root, f"styles{n}", submission(course, answers), "attention")
        plan[f"styles{n}"] = ("attention", {}, extra)
        n += 1
    return plan


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    plan = {}
    course, cells, output = grade_class(
        tmp_path_factory.mktemp("grader"), lambda c: plan.update(build_class(c)), jobs=2
    )
    return course, plan, cells, output


def test_every_wrong_answer_loses_points_on_its_own_cell_and_nowhere_else(graded):
    course, plan, cells, _ = graded
    killed, survived = defaultdict(int), []
    for student, (_, carried, _) in plan.items():
        if not student.startswith("mutant"):
            continue
        for item, mistake in carried.items():
            row = cells[(student, COURSE.item(item).test_cell)]
            if float(row["score"]) < float(row["max_score"]):
                killed[item] += 1
            else:
                survived.append(f"{item}/{mistake}")
        bad = {COURSE.item(i).test_cell for i in carried}
        handed = {p.stem for p in (course / "submitted" / student / plan[student][0]).glob("*.ipynb")}
        assert handed == {COURSE.item(i).notebook for i in carried}, student
        for (s, cell), row in cells.items():
            if s == student and cell not in bad and row["notebook"] in handed:
                assert row["score"] == row["max_score"], f"{student}: {cell} lost points: {row['reason']}"
    catalogue = wrong_answers()
    print("\nmutation score per item:")
    for item, answers in catalogue.items():
        print(f"  {item:30s} {killed[item]:2d} / {len(answers)} wrong answers lose points")
    print(f"  {'all':30s} {sum(killed.values()):2d} / {sum(len(a) for a in catalogue.values())}")
    assert survived == [], f"wrong answers that kept full marks: {survived}"
    assert sum(killed.values()) == sum(len(a) for a in catalogue.values())


def test_right_answers_in_other_styles_keep_full_marks(graded):
    _, plan, cells, _ = graded
    covered = set()
    for student, (_, _, alternatives) in plan.items():
        for item, n in alternatives.items():
            row = cells[(student, COURSE.item(item).test_cell)]
            assert row["score"] == row["max_score"], (
                f"{student}: alternative {n} of {item} lost points: {row['reason']}"
            )
            covered.add((item, n))
    assert covered == {(i.name, n) for i in COURSE.items for n in range(len(i.alternatives))}


def test_messy_right_answers_keep_full_marks(graded):
    _, _, cells, _ = graded
    own = {k[1]: r for k, r in cells.items() if k[0] == "messy"}
    assert len(own) == len(COURSE.items)
    lost = {c: r["reason"] for c, r in own.items() if r["score"] != r["max_score"]}
    assert lost == {}, f"messy lost points: {lost}"


@pytest.mark.parametrize("student", [s.name for s in attacks.tricks(COURSE) if s.name != "messy"])
def test_no_trick_inside_the_kernel_earns_marks(graded, student):
    _, _, cells, _ = graded
    trick = next(s for s in attacks.tricks(COURSE) if s.name == student)
    for item, (_kind, name) in trick.expected.items():
        row = cells[(student, COURSE.item(item).test_cell)]
        assert float(row["score"]) == 0, f"{name} earned {row['score']}"


def test_a_forbidden_built_in_is_refused_with_one_sentence(graded):
    _, _, cells, _ = graded
    for student in ("tricks_b", "tricks_c"):
        reason = cells[(student, "test_scaled_dot_product_attention")]["reason"]
        assert "may not rely on" in reason and reason.count("\n") == 0, reason


def test_the_grade_reason_names_the_mistake_the_answer_carries(graded):
    """The trusted grader names a catalogued mistake in the reason it records (what the class
    report counts), and never a mistake other than the one the answer carries."""
    from helpers.feedback import mistake_message
    from helpers.i18n import using

    _, plan, cells, _ = graded
    named, unnamed = [], []
    for student, (assignment, carried, _) in plan.items():
        if not student.startswith("mutant"):
            continue
        language = COURSE.language(assignment)
        for item, mistake in carried.items():
            if COURSE.item(item).is_choice:
                continue
            reason = cells[(student, COURSE.item(item).test_cell)]["reason"]
            with using(language):
                sentence = mistake_message(item, mistake)
            if sentence in reason:
                named.append(f"{item}/{mistake}")
            else:
                assert "Likely mistake" not in reason and "可能的错误" not in reason, (
                    f"{student}: {item}/{mistake} named as another mistake: {reason}"
                )
                unnamed.append(f"{item}/{mistake}")
    print(f"\nnamed in the grade's reason: {len(named)} of {len(named) + len(unnamed)}; not: {unnamed}")
    assert len(named) * 2 >= len(named) + len(unnamed), (named, unnamed)


def test_feedback_names_the_mistake_and_hides_the_hidden_tests(graded):
    course, plan, _, _ = graded
    assignment = plan["mutant00"][0]
    feedback = course / "feedback" / "mutant00" / assignment
    pages = {html.name: html.read_text() for html in feedback.glob("*.html")}
    assert len(pages) == len(COURSE.graded_notebooks())
    assert any("Likely mistake" in p or "可能的错误" in p for p in pages.values())
    for name, text in pages.items():
        assert "BEGIN HIDDEN TESTS" not in text and "hidden=True" not in text, name


def test_the_course_gradebook_holds_every_student_and_equals_grades_csv(graded):
    from nbgrader.api import Gradebook

    course, plan, _, _ = graded
    with open(course / "grades.csv") as handle:
        totals = {
            (r["student"], r["assignment"]): float(r["score"])
            for r in csv.DictReader(handle)
            if r["notebook"] == "TOTAL"
        }
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student, (assignment, _, _) in plan.items():
            submission_ = gradebook.find_submission(assignment, student)
            assert submission_.score == totals[(student, assignment)]
            assert not submission_.needs_manual_grade
    assert totals[("messy", "attention")] == COURSE.total_points


def test_a_chinese_submission_gets_chinese_feedback(graded):
    course, plan, _, _ = graded
    chinese = [(s, a) for s, (a, _, _) in plan.items() if a != "attention"]
    assert chinese, "no student submitted the Chinese edition"
    student, assignment = chinese[0]
    page = (course / "feedback" / student / assignment / "02_scaled_dot_product_attention.html").read_text()
    assert "评分摘要" in page and "得分" in page and 'lang="zh-CN"' in page
    assert "Grading summary" not in page


def test_the_grade_tables_are_nbgrader_export_plugins_a_teacher_can_run_alone(graded, tmp_path):
    from attention_course.grading.nbgrader_process import nbgrader

    course, _, _, _ = graded
    run_only = ("seed", "confinement", "problems")  # what only `make grade` knows about its run

    def strip(rows):
        return [{k: v for k, v in r.items() if k not in run_only} for r in rows]

    for exporter, table in (("CellGrades", "grades_by_cell.csv"), ("NotebookGrades", "grades.csv")):
        alone = tmp_path / table
        proc = nbgrader(
            ["export", f"--exporter=attention_course.grading.export.{exporter}", f"--to={alone}"], course, course
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        with open(course / table) as ours, open(alone) as theirs:
            written, exported = list(csv.DictReader(ours)), list(csv.DictReader(theirs))
        assert strip(written) == strip(exported) and written, table
