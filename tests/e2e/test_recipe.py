"""The contributors' recipe, walked on a copy of the course: add an exercise, run one make target,
and it is checked, released and graded (CONTRIBUTING.md, "Recipe: add an exercise")."""

from __future__ import annotations

import csv
import hashlib
import re
import textwrap

import nbformat
import pytest

from attention_course.authoring.edition import read_catalogue, write_catalogue
from attention_course.model.manifest import load
from classroom import submission, write_submission, wrong_answer
from conftest import COURSE_PIECES, REPO, copy_course, describe, run

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


def _files(root) -> dict[str, str]:
    """Every file of the course pieces under `root` with its digest (caches and build output left out)."""
    found = {}
    for piece in COURSE_PIECES:
        top = root / piece
        for path in [top] if top.is_file() else sorted(top.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and not re.search(r"(^|/)(__pycache__|\.ipynb_checkpoints|build)/|\.egg-info/", rel):
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _guide_commit() -> tuple[set[str], set[str], int, int]:
    """The files of an exercise's commit as the guide lists them: (edited or translated by
    hand, written by `make outputs`, and the two counts it gives)."""
    guide = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    paragraph = guide[guide.index("**An exercise's commit**") :].split("\n\n")[0]
    by_hand, generated = paragraph.split("`make outputs` writes", 1)
    generated = generated.split("`tests/e2e/test_recipe.py`")[0]

    def named(text: str) -> set[str]:
        return {p.replace("<notebook>", NOTEBOOK) for p in re.findall(r"`([\w./<>-]+\.\w+)`", text)}

    counts = re.search(r"(\w+) files, (\w+) by hand and (\w+) generated", paragraph)
    words = dict(zip("one two three four five six seven eight nine ten eleven twelve".split(), range(1, 13)))
    total, hand, made = (words[counts[i]] for i in (1, 2, 3))
    assert total == hand + made, paragraph
    return named(by_hand), named(generated), hand, made


def _translate(root) -> list[str]:
    """What a translator does in step 4: every new unit of the zh-CN catalogue gets its translation
    (code cells keep their code; the mistake's sentence in Chinese). The units translated."""
    course = load(root)
    catalog = read_catalogue(course, "zh-CN")
    done = []
    for message in catalog:
        if not message.id or message.string:
            continue
        if message.context == "mistake/double_scores/forgot_the_factor":
            message.string = "把分数乘以 2。"
        elif (message.context or "").startswith(f"{NOTEBOOK}/"):
            message.string = message.id  # the answer cell: its docstring may stay English in this walk
        else:
            continue
        done.append(message.context)
    write_catalogue(course, "zh-CN", catalog)
    return done


WALK: dict = {}  # what the walk of the recipe saw, for the tests below


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = copy_course(tmp_path_factory.mktemp("recipe") / "course")
    before = _files(root)
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
    outputs = ["make", "outputs", f"VENV={REPO / '.venv'}", f"NOTEBOOKS={NOTEBOOK}"]
    proc = run(outputs, cwd=root, timeout=1200)
    assert proc.returncode == 0, describe(proc)
    WALK["first"] = proc.stdout
    # 4. translate what it added to the catalogues, and the target again
    WALK["translated"] = _translate(root)
    proc = run(outputs, cwd=root, timeout=1200)
    assert proc.returncode == 0, describe(proc)
    WALK["second"] = proc.stdout
    after = _files(root)
    WALK["changed"] = {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}
    return load(root)


def test_make_outputs_puts_the_new_units_in_the_catalogue_and_lists_them(course):
    assert sorted(WALK["translated"]) == [
        f"{NOTEBOOK}/{cell.id}"
        for cell in nbformat.read(course.source_notebook(NOTEBOOK), as_version=4).cells
        if "double_scores" in cell.source and "check(" not in cell.source
    ] + ["mistake/double_scores/forgot_the_factor"]
    assert "lacks 2 unit(s), left in English" in WALK["first"], WALK["first"]
    assert "lacks" not in WALK["second"], WALK["second"]


def test_the_exercise_reaches_the_other_edition(course):
    released = nbformat.read(course.release_dir("zh-CN") / f"{NOTEBOOK}.ipynb", as_version=4)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in released.cells]
    assert "double_scores" in ids and "test_double_scores" in ids
    import gettext

    with open(course.data_dir / "locale" / "zh_CN" / "LC_MESSAGES" / "course.mo", "rb") as handle:
        compiled = gettext.GNUTranslations(handle)  # the copy's messages, as the checks read them
    assert compiled.pgettext("mistake/double_scores/forgot_the_factor", "Multiply the scores by 2.") == "把分数乘以 2。"


def test_the_guide_names_every_file_of_the_exercises_commit(course):
    by_hand, generated, hand_count, generated_count = _guide_commit()
    assert WALK["changed"] == by_hand | generated, (sorted(WALK["changed"]), sorted(by_hand | generated))
    assert (len(by_hand), len(generated)) == (hand_count, generated_count)


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
