"""nbgrader's own round trip, plain `nbgrader autograde` in the course folder, with the course's
plugins (confined kernels, the trusted verdict) as its nbgrader_config.py sets them.

Two students submit in a private copy of the course: `blank_en` hands in the English release
unchanged and must score 0 on every graded cell; `solutions_zh-CN` hands in the Chinese edition's
source notebooks (solutions included; nbgrader restores the test cells itself) and must get full
marks with nothing left for manual grading. (The English solutions get full marks through
`make grade` in the attack and exchange suites.) `nbgrader validate` is not used: it exits 0 even
when a notebook fails.
"""

from __future__ import annotations

import shutil

import pytest

from attention_course.model.manifest import load
from conftest import copy_course, describe, run

pytestmark = pytest.mark.slow
COURSE = load()
EDITIONS = [e.name for e in COURSE.editions]
BLANK, SOLVED = EDITIONS[0], EDITIONS[-1]  # English blank release, Chinese solutions


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Autograde every student once; yield the course copy."""
    root = copy_course(tmp_path_factory.mktemp("autograde") / "course")
    course = load(root)
    for edition, student, folder in (
        (BLANK, f"blank_{BLANK}", course.release_dir(BLANK)),
        (SOLVED, f"solutions_{SOLVED}", course.source_dir(SOLVED)),
    ):
        assignment = course.edition(edition).assignment
        proc = run(["nbgrader", "generate_assignment", assignment, "--force"], cwd=root)
        assert proc.returncode == 0, describe(proc)
        submitted = root / "submitted" / student / assignment
        shutil.copytree(course.release_dir(edition), submitted)  # the whole folder they were given
        for nb in folder.glob("*.ipynb"):  # ... with their answers
            shutil.copy2(nb, submitted / nb.name)
        proc = run(["nbgrader", "autograde", assignment, "--force"], cwd=root, timeout=1800)
        assert proc.returncode == 0, describe(proc)
    return root


def grades_of(root, assignment: str, student: str):
    """[(notebook, cell, score, max score, needs manual grade)] and whether the submission needs any."""
    from nbgrader.api import Gradebook

    rows = []
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        submission = gb.find_submission(assignment, student)
        for nb in submission.notebooks:
            for grade in nb.grades:
                rows.append((nb.name, grade.name, grade.score, grade.max_score, grade.needs_manual_grade))
        return rows, bool(submission.needs_manual_grade)


def test_blank_release_scores_zero(graded, edition=BLANK):
    rows, _ = grades_of(graded, COURSE.edition(edition).assignment, f"blank_{edition}")
    assert len(rows) == len(COURSE.items) and sum(r[3] for r in rows) == COURSE.total_points
    scored = [f"{nb}:{name} scored {score}/{top}" for nb, name, score, top, _ in rows if score != 0]
    assert not scored, "the blank release earns marks:\n" + "\n".join(scored)


def test_solutions_score_full_marks_with_nothing_left_for_manual_grading(graded, edition=SOLVED):
    rows, needs_manual = grades_of(graded, COURSE.edition(edition).assignment, f"solutions_{edition}")
    manual = [f"{nb}:{name}" for nb, name, *_, flag in rows if flag]
    assert not manual and not needs_manual, "left for manual grading:\n" + "\n".join(manual or ["(the submission)"])
    lost = [f"{nb}:{name} scored {score}/{top}" for nb, name, score, top, _ in rows if score != top]
    assert not lost, "the solutions lose marks:\n" + "\n".join(lost)


@pytest.mark.parametrize("edition, student", [(BLANK, f"blank_{BLANK}"), (SOLVED, f"solutions_{SOLVED}")])
def test_the_grading_summary_reaches_the_autograded_notebook(graded, edition, student):
    folder = graded / "autograded" / student / COURSE.edition(edition).assignment
    for notebook in COURSE.graded_notebooks():
        text = (folder / f"{notebook}.ipynb").read_text()
        assert '"grading_summary": true' in text and "seed" in text, notebook
