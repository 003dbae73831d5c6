"""The contributors' recipe, walked on a copy of the course: add an exercise, run one make target,
and it is checked, released and graded (CONTRIBUTING.md, "Recipe: add an exercise")."""

from __future__ import annotations

import csv
import re
import textwrap

import nbformat
import pytest
from conftest import REPO, copy_course, describe, run

from grading.manifest import load
from tools.classroom import submission, write_submission, wrong_answer

pytestmark = pytest.mark.slow
NOTEBOOK = "01_scaling_problem"


def _recipe_blocks() -> tuple[str, str, str]:
    """The answer cell, the test cell and the manifest entry the guide shows, in that order."""
    guide = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    recipe = guide[guide.index("## Recipe: add an exercise") :]
    blocks = [
        (lang, textwrap.dedent(body))
        for lang, body in re.findall(r"```(python|toml)\n(.*?)^\s*```", recipe, re.S | re.M)
    ]
    (_, answer), (_, test), (_, entry) = blocks[:3]
    assert [lang for lang, _ in blocks[:3]] == ["python", "python", "toml"]
    return answer.strip(), test.strip(), "\n" + entry


ANSWER, TEST, ENTRY = _recipe_blocks()


def _meta(grade_id, solution, points=None):
    meta = {
        "grade": not solution,
        "grade_id": grade_id,
        "locked": not solution,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = copy_course(tmp_path_factory.mktemp("recipe") / "course")
    # 1. the cells, at the end of the notebook
    path = root / "source" / "attention" / f"{NOTEBOOK}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells += [
        nbformat.v4.new_code_cell(ANSWER, metadata=_meta("double_scores", True)),
        nbformat.v4.new_code_cell(TEST, metadata=_meta("test_double_scores", False, 1)),
    ]
    nbformat.write(nb, path)
    # 2. the manifest entry
    with open(root / "course.toml", "a") as handle:
        handle.write(ENTRY)
    # 3. one make target
    proc = run(["make", "outputs", f"VENV={REPO / '.venv'}", f"NOTEBOOKS={NOTEBOOK}"], cwd=root, timeout=1200)
    assert proc.returncode == 0, describe(proc)
    return load(root)


def test_the_new_exercise_is_released_as_a_stub_with_its_visible_cases(course):
    released = nbformat.read(course.release_dir() / f"{NOTEBOOK}.ipynb", as_version=4)
    answer = next(c for c in released.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "double_scores")
    assert "raise NotImplementedError()" in answer.source and "2 * q @" not in answer.source
    from helpers.casefile import load_cases

    cases = [c for c in load_cases(course.data_dir / "check_cases.npz") if c.exercise == "double_scores"]
    assert len(cases) == 2 and all(c.expected for c in cases)


def test_the_source_notebook_ran_and_its_check_passed(course):
    nb = nbformat.read(course.source_notebook(NOTEBOOK), as_version=4)
    test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_double_scores")
    assert "passed all 2 visible checks" in "".join(o.get("text", "") for o in test.outputs)


def test_the_new_exercise_is_graded(course):
    root = course.root
    write_submission(root, "right", submission(course, {}, [NOTEBOOK]), "attention")
    write_submission(
        root,
        "wrong",
        submission(course, {"double_scores": wrong_answer(course, "double_scores", "forgot_the_factor")}, [NOTEBOOK]),
        "attention",
    )
    proc = run(
        ["make", "grade", f"VENV={REPO / '.venv'}", "GRADE_ARGS=--seed 3 --student right --student wrong"],
        cwd=root,
        timeout=1200,
    )
    assert proc.returncode == 0, describe(proc)
    with open(root / "grades_by_cell.csv") as handle:
        rows = {(r["student"], r["cell"]): r for r in csv.DictReader(handle)}
    assert rows[("right", "test_double_scores")]["score"] == "1"
    assert rows[("wrong", "test_double_scores")]["score"] == "0"
    assert "Multiply the scores by 2." in "".join(
        p.read_text() for p in (root / "feedback" / "wrong" / "attention").glob(f"{NOTEBOOK}.html")
    )
