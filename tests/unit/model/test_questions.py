"""Questions: a graded one's release tells no right answer from a wrong one (its check reads only
the form, its explanations come with the feedback); a numeric one is judged within its tolerance;
a practice one explains every option at once; every question cell is written from the manifest."""

from __future__ import annotations

import ast
import json
import re

import nbformat
import pytest

from attention_course.authoring.edition import GRADER_ONLY, read_catalogue
from attention_course.authoring.question_cells import question_of
from attention_course.grading.answers import assigned, judge_choice, judge_numeric
from attention_course.model.manifest import load
from helpers import course as student_course
from helpers.feedback import CheckFailed
from helpers.i18n import using
from helpers.questions import check_choice, check_numeric, practice, render

COURSE = load()
QUESTIONS = COURSE.questions()
NUMERIC = COURSE.numeric_questions()
OTHER_LANGUAGES = [e.language for e in COURSE.editions if e.language != "en"]


@pytest.fixture(autouse=True)
def _student_view():
    with student_course.viewing(COURSE.student_view()):
        yield


def _said(capsys, call) -> str:
    call()
    return capsys.readouterr().out


# ------------------------------------------------------------------ graded: the visible check


@pytest.mark.parametrize("item", QUESTIONS, ids=lambda i: i.name)
def test_a_graded_check_answers_every_option_alike(item, capsys):
    said = {}
    for option, text in item.spec["options"].items():
        out = _said(capsys, lambda o=option: check_choice(item.name, f" {o.lower()} "))
        said[option] = out.replace(text, "<text>").replace(f" {option} ", " <letter> ")
    assert len(set(said.values())) == 1, said
    assert "feedback" in next(iter(said.values()))
    with pytest.raises(CheckFailed, match="one of"):
        check_choice(item.name, "Z")
    with pytest.raises(CheckFailed, match="one of"):
        check_choice(item.name, "")  # the blank release fails its check


@pytest.mark.parametrize("item", QUESTIONS, ids=lambda i: i.name)
def test_the_grader_explains_the_chosen_option_right_or_wrong(item):
    for option, why in item.explanations.items():
        score, reason = judge_choice(item, option.lower())
        assert score == (item.points if option == item.answer else 0.0)
        assert reason.startswith("Right" if option == item.answer else f"Not {option}") and why in reason
    assert judge_choice(item, None)[0] == 0.0 and "not set" in judge_choice(item, None)[1]
    assert judge_choice(item, "Q")[0] == 0.0


@pytest.mark.parametrize("language", OTHER_LANGUAGES)
def test_the_grader_explains_in_the_submissions_language(language):
    item = QUESTIONS[0]
    with using(language):
        score, reason = judge_choice(item, item.answer, language)
    assert score == item.points
    assert item.explanations[item.answer] not in reason and re.search(r"[\u4e00-\u9fff]", reason), reason


# ------------------------------------------------------------------ numeric: the check and the verdict


def _cell(source: str):
    return ast.parse(source, mode="eval").body


def _allowed(item) -> float:
    relative, absolute = item.tolerance
    return max(relative * abs(item.value), absolute)


def test_some_questions_are_numeric():
    assert len(NUMERIC) >= 2, [i.name for i in NUMERIC]


@pytest.mark.parametrize("item", NUMERIC, ids=lambda i: i.name)
def test_a_numeric_check_says_the_same_of_a_right_and_a_wrong_number(item, capsys):
    right = _said(capsys, lambda: check_numeric(item.name, item.value))
    wrong = _said(capsys, lambda: check_numeric(item.name, item.value * 3 + 1))
    assert right.replace(f"{item.value:g}", "<n>") == wrong.replace(f"{item.value * 3 + 1:g}", "<n>"), (right, wrong)
    assert "feedback" in right
    for bad, says in [(None, "Set"), ("", "not a number"), ("about 3", "not a number"), (float("nan"), "finite")]:
        with pytest.raises(CheckFailed, match=says):  # None: the blank release fails its check
            check_numeric(item.name, bad)


@pytest.mark.parametrize("item", NUMERIC, ids=lambda i: i.name)
def test_a_right_number_in_any_form_within_the_tolerance_keeps_the_points(item):
    inside = item.value + 0.9 * _allowed(item)
    for source in [repr(item.value), f"'{item.value}'", f"{item.value * 8} / 8", f"'{item.value * 4}/4'", repr(inside)]:
        score, reason = judge_numeric(item, _cell(source))
        assert score == item.points, (source, reason)
        assert reason.startswith("Right") and item.spec["reasoning"] in reason, reason


@pytest.mark.parametrize("item", NUMERIC, ids=lambda i: i.name)
def test_a_wrong_number_or_no_number_loses_the_points_with_a_reason(item):
    margin = 1.1 * _allowed(item) or 0.5  # just outside (an exact answer: half a unit off)
    outside = [item.value + margin, item.value - margin, -item.value]
    for source in [*map(repr, outside), *item.wrong_options]:
        score, reason = judge_numeric(item, _cell(source))
        assert score == 0.0, (source, reason)
        if "nan" not in source:
            assert reason.startswith("Not ") and item.spec["reasoning"] in reason, reason
    for source, says in [
        ("None", "not set"),
        ("float('nan')", "numbers only"),
        ("'inf'", "finite"),
        ("1e400", "finite"),
        ("'thirty-two'", "not a number"),
        ("answer", "numbers only"),
    ]:
        score, reason = judge_numeric(item, _cell(source))
        assert score == 0.0 and says in reason, (source, reason)
    assert judge_numeric(item, None) == (0.0, f"No answer: {item.variable} is not set.")


@pytest.mark.parametrize("language", OTHER_LANGUAGES)
def test_the_numeric_verdict_explains_in_the_submissions_language(language):
    item = NUMERIC[0]
    with using(language):
        for source in (repr(item.value), repr(item.value * 2)):
            _score, reason = judge_numeric(item, _cell(source), language)
            assert item.spec["reasoning"] not in reason and re.search(r"[\u4e00-\u9fff]", reason), reason


# ------------------------------------------------------------------ graded: nothing released tells


def test_the_student_view_of_a_graded_question_is_its_text_and_options_only():
    for entry in COURSE.student_view()["items"]:
        if entry["kind"] == "choice":
            assert set(entry) == {"name", "kind", "notebook", "variable", "question", "options"}, entry
        if entry["kind"] == "numeric":
            assert set(entry) == {"name", "kind", "notebook", "variable", "question", "unit"}, entry


def test_options_are_of_similar_length_and_the_right_one_is_rarely_the_longest():
    longest_right = 0
    for item in QUESTIONS:
        lengths = {o: len(t.replace("`", "")) for o, t in item.spec["options"].items()}
        assert max(lengths.values()) <= 1.5 * min(lengths.values()), (item.name, lengths)
        longest_right += max(lengths, key=lengths.get) == item.answer
    assert longest_right <= len(QUESTIONS) // 4, f"the right option is the longest in {longest_right} questions"


def _explanations(language: str) -> list[str]:
    """Every graded explanation as it would appear in a release of `language`."""
    if language == "en":
        return [why for item in QUESTIONS + NUMERIC for why in item.explanations.values()]
    catalogue = read_catalogue(COURSE, language)
    found = []
    for item in QUESTIONS + NUMERIC:
        for why in item.explanations.values():
            message = catalogue.get(why, context=f"{GRADER_ONLY}{item.name}")
            assert message is not None and message.string, f"{item.name}: {why!r} is not translated"
            found.append(message.string)
    return found


@pytest.mark.parametrize("edition", COURSE.editions, ids=lambda e: e.name)
def test_no_released_file_holds_a_graded_explanation_or_answer(edition):
    """Scan every file a student gets (the release's notebooks, the helpers package with its data
    and compiled messages) for what would tell the right option: any explanation of a graded
    question, or its answer as data."""
    release = COURSE.release_dir(edition.name)
    needles = [re.sub(r"\s+", " ", w)[:40] for w in _explanations(edition.language) + _explanations("en")]
    for path in [*release.rglob("*"), *COURSE.helpers_dir.rglob("*")]:
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        text = re.sub(r"\s+", " ", path.read_bytes().decode("utf-8", "replace"))
        for needle in needles:
            assert needle not in text, f"{path} holds {needle!r}"
    view = json.loads((COURSE.data_dir / "course.json").read_text(encoding="utf-8"))
    for entry in view["items"]:
        secret = {"answer", "digest", "why_not", "explain", "value", "rel_tol", "abs_tol", "reasoning", "wrong"}
        assert not secret & set(entry), entry["name"]


@pytest.mark.parametrize("edition", COURSE.editions, ids=lambda e: e.name)
def test_a_released_numeric_answer_cell_is_blank_and_nothing_holds_the_solution(edition):
    from attention_course.model.reference import solution_lines
    from helpers.cells import find_cell, read_notebook

    data = (COURSE.data_dir / "course.json").read_text(encoding="utf-8")
    for item in NUMERIC:
        released = read_notebook(COURSE.release_dir(edition.name) / f"{item.notebook}.ipynb")
        assert judge_numeric(item, assigned(released, item))[0] == 0.0
        assert cell_text(find_cell(released, item.answer_cell)).startswith(f"{item.variable} = None  # ")
        for line in solution_lines(COURSE, item):
            assert line not in json.dumps(released) and line not in data, line
        for wrong in item.wrong_options:
            assert f"{item.variable} = {wrong}" not in data


def cell_text(cell) -> str:
    from helpers.cells import cell_source

    return cell_source(cell)


# ------------------------------------------------------------------ practice


@pytest.mark.parametrize("question", COURSE.practice, ids=lambda p: p.name)
def test_practice_explains_every_option_at_once(question, capsys):
    for option, why in question.explain.items():
        out = _said(capsys, lambda o=option: practice(question.name, o))
        assert why in out
        assert out.startswith("✓" if option == question.answer else "✗"), out
    assert "between the quotes" in _said(capsys, lambda: practice(question.name, ""))


def test_an_unknown_question_lists_the_known_ones():
    with pytest.raises(ValueError, match="dk_std"):
        practice("dk_sd", "A")


# ------------------------------------------------------------------ question cells


@pytest.mark.parametrize("edition", COURSE.editions, ids=lambda e: e.name)
def test_every_question_has_one_cell_written_from_the_manifest(edition):
    view = COURSE.student_view()
    specs = {**{i["name"]: i for i in view["items"]}, **{p["name"]: p for p in view["practice"]}}
    wanted = {q.name for q in QUESTIONS + NUMERIC} | {p.name for p in COURSE.practice}
    seen = []
    for notebook in COURSE.notebooks:
        nb = nbformat.read(COURSE.release_dir(edition.name) / f"{notebook}.ipynb", as_version=4)
        for cell in nb.cells:
            name = question_of(cell)
            if name:
                seen.append(name)
                assert specs[name]["notebook"] == notebook
                with using(edition.language):
                    points = COURSE.item(name).points if specs[name]["kind"] != "practice" else None
                    assert cell.source == render(specs[name], points), f"{notebook}: {name} is stale; run make outputs"
    assert sorted(seen) == sorted(wanted)


@pytest.mark.parametrize("item", QUESTIONS, ids=lambda i: i.name)
def test_the_source_notebook_answers_what_the_manifest_says(item):
    from attention_course.grading.answers import choice_answer
    from helpers.cells import read_notebook

    assert choice_answer(read_notebook(COURSE.source_notebook(item.notebook)), item) == item.answer


@pytest.mark.parametrize("item", NUMERIC, ids=lambda i: i.name)
def test_the_source_notebook_gives_a_numeric_question_its_right_value(item):
    from helpers.cells import read_notebook

    score, reason = judge_numeric(item, assigned(read_notebook(COURSE.source_notebook(item.notebook)), item))
    assert score == item.points, reason
