"""The manifest (course.toml) agrees with the notebooks, and its cases hide no requirement."""

from __future__ import annotations

import re

import pytest

from attention_course.model import manifest
from attention_course.model.cases import all_cases, features
from attention_course.model.manifest import load
from helpers.cells import find_cell, is_answer_cell, is_test_cell, points, read_notebook
from helpers.checks import RAISING_MISTAKES

COURSE = load()
EXERCISES = COURSE.exercises()


@pytest.mark.parametrize("item", COURSE.items, ids=lambda i: i.name)
def test_each_item_names_real_cells_with_its_points(item):
    notebook = read_notebook(COURSE.source_notebook(item.notebook))
    answer, test = find_cell(notebook, item.answer_cell), find_cell(notebook, item.test_cell)
    assert answer is not None and is_answer_cell(answer), f"{item.notebook} has no answer cell {item.answer_cell!r}"
    assert test is not None and is_test_cell(test), f"{item.notebook} has no test cell {item.test_cell!r}"
    assert points(test) == item.points, (
        f"{item.test_cell}: {points(test)} points in the notebook, {item.points} in course.toml"
    )


def test_every_graded_cell_of_every_notebook_is_in_the_manifest():
    listed = {(i.notebook, i.test_cell) for i in COURSE.items}
    for notebook in COURSE.notebooks:
        for cell in read_notebook(COURSE.source_notebook(notebook))["cells"]:
            if is_test_cell(cell):
                gid = cell["metadata"]["nbgrader"]["grade_id"]
                assert (notebook, gid) in listed, f"{notebook}: test cell {gid} is graded but not in course.toml"


@pytest.mark.parametrize("item", EXERCISES, ids=lambda i: i.name)
def test_hidden_cases_only_use_kinds_of_input_a_visible_case_shows(item):
    cases = [c for c in all_cases(COURSE) if c.exercise == item.name]
    visible = set().union(*(features(c) for c in cases if not c.hidden))
    for case in cases:
        if case.hidden:
            unseen = features(case) - visible
            assert not unseen, f"{item.name}: hidden case {case.name!r} shows {unseen}, which no visible case does"
    assert any(c.hidden for c in cases) and any(not c.hidden for c in cases)


def test_the_feature_rule_can_fail():
    """A float64 hidden case next to float32-only visible cases is caught."""
    import torch

    from helpers.exercises import Case

    visible = features(Case("x", "v", {"q": torch.zeros(2, 3)}))
    hidden = features(Case("x", "h", {"q": torch.zeros(2, 3, dtype=torch.float64)}, hidden=True))
    assert hidden - visible == {("dtype", "float64")}


@pytest.mark.parametrize("item", EXERCISES, ids=lambda i: i.name)
def test_every_mistake_the_checks_can_name_has_a_sentence(item):
    """Mistakes named from how a call fails apply to every exercise with a raising case; the
    converter's structure mistakes to every converter."""
    cases = [c for c in all_cases(COURSE) if c.exercise == item.name]
    needed = set(RAISING_MISTAKES) if any(c.raises for c in cases) else set()
    if item.spec.get("call") == "torch_mha_converter":
        needed |= {"batch_first_default", "one_head"}
    missing = needed - set(item.mistakes)
    assert not missing, f"{item.name}: course.toml gives no sentence for {sorted(missing)}"


def test_each_item_draws_from_its_own_stream():
    """Cases of one exercise do not change when another exercise's cases change."""
    first = {c.exercise: c for c in all_cases(COURSE)}
    seeds = {i.name: COURSE.item_seed(i.name) for i in EXERCISES}
    assert len(set(seeds.values())) == len(seeds)
    assert first  # every exercise has cases


def _manifest_data() -> dict:
    import tomllib

    return tomllib.loads((manifest.REPO / manifest.MANIFEST).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            lambda d: d["items"][0]["cases"][1].update(hiden=True),
            "cases[1] (a batch): unknown key 'hiden' (did you mean 'hidden'?)",
        ),
        (lambda d: d["items"][0].update(points="2"), "items[0] (raw_scores) > points: '2' is not of type 'number'"),
        (lambda d: d["items"][0].update(kind="fn"), "items[0] (raw_scores) > kind: 'fn' is not one of"),
        (lambda d: d["editions"]["zh-CN"].update(langauge="zh"), "editions > zh-CN: unknown key 'langauge'"),
        (lambda d: d["course"].pop("notebooks"), "course: 'notebooks' is a required property"),
        (lambda d: d["items"][0]["cases"][0].update(dtype="float16"), "> dtype: 'float16' is not one of"),
        (lambda d: d["practice"][0].update(answr="A"), "practice[0] (dk_std): unknown key 'answr'"),
    ],
    ids=[
        "typo in a case",
        "points as text",
        "unknown kind",
        "typo in an edition",
        "no notebooks",
        "dtype",
        "typo in practice",
    ],
)
def test_a_manifest_with_a_wrong_key_or_type_fails_loudly(change, expected):
    from attention_course.model.manifest_schema import validate

    data = _manifest_data()
    validate(data)  # the real manifest has the shape
    change(data)
    with pytest.raises(ValueError, match=re.escape(expected)):
        validate(data)
