"""`attention_course.authoring.nbgrader_release`, the release's ClearSolutions, without `nbgrader
generate_assignment`: the stubs of a multiple-choice and a numeric question (in the edition's language), the
exercise stub of each edition as course.toml declares it (read from the course at the CourseDirectory's
root), and, on the repository's source notebooks, answer cells cleared exactly as the committed releases
(notebooks/<assignment>/) have them.
"""

from __future__ import annotations

import nbformat
import pytest
from traitlets.config import Config

from attention_course.authoring.nbgrader_release import ClearSolutionsAndQuestions, numeric_stub, question_stub
from attention_course.model.manifest import load
from conftest import REPO

COURSE = load()
EDITIONS = [(e.name, e.assignment) for e in COURSE.editions]
EXERCISE_STUB = "raise NotImplementedError()"


def _grade_id(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def _solutions(nb) -> dict[str, str]:
    return {_grade_id(c): c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")}


def _cleared(notebook: str, assignment: str, root=REPO, source_assignment: str | None = None):
    """A source notebook through ClearSolutionsAndQuestions (under a CourseDirectory on `root`); the
    notebook and the preprocessor."""
    config = Config()
    config.CourseDirectory.root = str(root)
    clear = ClearSolutionsAndQuestions(config=config)
    nb = nbformat.read(REPO / "source" / (source_assignment or assignment) / f"{notebook}.ipynb", as_version=4)
    nb, _resources = clear.preprocess(nb, {"nbgrader": {"notebook": notebook, "assignment": assignment}})
    return nb, clear


def test_a_choice_stub_lists_the_options_in_double_quotes():
    assert question_stub("softmax_axis_answer", {"A": "rows", "B": "columns"}) == 'softmax_axis_answer = ""  # "A", "B"'
    assert question_stub("x", ["A", "B", "C", "D"]) == 'x = ""  # "A", "B", "C", "D"'


def test_a_numeric_stub_says_a_number_in_the_editions_language():
    assert numeric_stub("quick_check_answer") == "quick_check_answer = None  # a number"
    assert numeric_stub("quick_check_answer", "zh-CN") == "quick_check_answer = None  # 一个数"
    assert numeric_stub("v", "fr") == "v = None  # a number"  # no catalogue: English


@pytest.mark.parametrize("edition, assignment", EDITIONS)
def test_answer_cells_are_cleared_as_the_committed_release_has_them(edition, assignment):
    for notebook in COURSE.graded_notebooks():
        nb, _clear = _cleared(notebook, assignment)
        released = nbformat.read(REPO / COURSE.release / assignment / f"{notebook}.ipynb", as_version=4)
        assert _solutions(nb) == _solutions(released), f"{assignment}/{notebook}"


@pytest.mark.parametrize("edition, assignment", EDITIONS)
def test_every_question_gets_its_stub_and_every_exercise_the_editions(edition, assignment):
    language = COURSE.edition(edition).language
    code_stub = COURSE.edition(edition).code_stub
    for notebook in COURSE.graded_notebooks():
        cleared = _solutions(_cleared(notebook, assignment)[0])
        for item in COURSE.items_in(notebook):
            if item.is_numeric:
                assert cleared[item.answer_cell] == numeric_stub(item.variable, language)
            elif item.is_choice:
                assert cleared[item.answer_cell] == question_stub(item.variable, item.spec["options"])
            else:
                assert code_stub.splitlines()[0] in cleared[item.answer_cell], item.name
                assert cleared[item.answer_cell].endswith(EXERCISE_STUB), item.name


def test_an_exercise_after_a_question_gets_the_exercise_stub_back():
    nb, clear = _cleared("01_scaling_problem", "attention")
    order = [_grade_id(c) for c in nb.cells if _grade_id(c)]
    assert order.index("quick_check") < order.index("saturated_share")
    cleared = _solutions(nb)
    assert cleared["quick_check"] == "quick_check_answer = None  # a number"
    assert "    # YOUR CODE HERE\n    raise NotImplementedError()" in cleared["saturated_share"]
    assert clear.code_stub["python"] == COURSE.edition("en").code_stub  # put back after the question


def test_test_cells_are_left_as_they_are():
    source = nbformat.read(REPO / "source" / "attention" / "01_scaling_problem.ipynb", as_version=4)
    tests = {_grade_id(c): c.source for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")}
    nb, _clear = _cleared("01_scaling_problem", "attention")
    assert {_grade_id(c): c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")} == tests


def test_an_assignment_of_no_edition_gets_nbgraders_stub_and_english():
    cleared = _solutions(_cleared("01_scaling_problem", "extra", source_assignment="attention_zh")[0])
    assert cleared["raw_scores"].endswith("    # YOUR CODE HERE\n    raise NotImplementedError()")
    assert cleared["quick_check"] == "quick_check_answer = None  # a number"


def test_the_stub_comes_from_the_course_at_the_course_folders_root(tmp_path):
    (tmp_path / "source").mkdir()
    manifest = (REPO / "course.toml").read_text(encoding="utf-8")
    old = 'code_stub = "# 在这里写你的代码\\nraise NotImplementedError()"'
    assert old in manifest
    (tmp_path / "course.toml").write_text(
        manifest.replace(old, 'code_stub = "# 请写代码\\nraise NotImplementedError()"'), encoding="utf-8"
    )
    cleared = _solutions(_cleared("01_scaling_problem", "attention_zh", root=tmp_path)[0])
    assert cleared["raw_scores"].endswith("    # 请写代码\n    raise NotImplementedError()")
    assert cleared["quick_check"] == "quick_check_answer = None  # 一个数"
