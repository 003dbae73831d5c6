"""The released checks: right answers pass, known wrong answers fail and are named."""
from __future__ import annotations

import pytest

import grading  # noqa: F401  (puts source/attention on sys.path)
from grading.alternatives import ALTERNATIVES
from grading.mistakes import EDITS, mistake_source, mistaken, unexplained
from grading.reference import define, notebook_path, reference, solution_source
from helpers.checks import QUICK_CHECK_OPTIONS, cases_for, check_exercise, check_quick_check
from helpers.exercises import EXERCISES
from helpers.feedback import MISTAKES, CheckFailed

READY = [name for name in EXERCISES if notebook_path(name).exists()]
CATALOGUE = [(e, m) for e in READY for m in EDITS[e]]


def failure(name, obj, hidden=False) -> str:
    """The message of the first failing check, or '' when all pass."""
    try:
        check_exercise(name, obj, hidden=hidden)
    except CheckFailed as failed:
        return str(failed)
    return ""


@pytest.mark.parametrize("name", READY)
def test_reference_solution_passes_visible_and_hidden_checks(name, capsys):
    assert failure(name, reference(name)) == ""
    assert failure(name, reference(name), hidden=True) == ""
    assert "✓" in capsys.readouterr().out


@pytest.mark.parametrize("name", READY)
def test_every_exercise_has_visible_and_hidden_cases(name):
    assert len(cases_for(name)) >= 2 and len(cases_for(name, hidden=True)) >= 3


@pytest.mark.parametrize("name", READY)
def test_a_blank_stub_is_reported_as_not_implemented(name):
    stub = solution_source(name)
    # nbgrader's stub: the solution region becomes `raise NotImplementedError()`
    body = [line for line in stub.splitlines() if line.strip()]
    head = body[0]
    if head.startswith("class"):
        source = (f"{head}\n    def __init__(self, d_model, num_heads, bias=True):\n"
                  f"        raise NotImplementedError()\n")
    else:
        source = f"{head}\n    raise NotImplementedError()\n"
    message = failure(name, define(source, name))
    assert "not implemented yet" in message


@pytest.mark.parametrize("exercise,mistake", CATALOGUE, ids=[f"{e}-{m}" for e, m in CATALOGUE])
def test_every_known_mistake_fails_and_is_named_when_recognised(exercise, mistake):
    wrong = mistaken(exercise, mistake)
    message = failure(exercise, wrong) or failure(exercise, wrong, hidden=True)
    assert message, f"{exercise}/{mistake} passed every check"
    if "Likely mistake:" in message:
        assert MISTAKES[(exercise, mistake)] in message, message


def test_most_mistakes_are_named_by_the_visible_checks():
    named = [(e, m) for e, m in CATALOGUE if MISTAKES[(e, m)] in failure(e, mistaken(e, m))]
    missing = sorted(set(CATALOGUE) - set(named))
    # Mistakes that raise (e.g. .view after .transpose) get an error hint instead of a name.
    assert len(named) >= 0.75 * len(CATALOGUE), f"not named: {missing}"


def test_every_catalogued_mistake_has_a_sentence():
    assert unexplained() == []


def test_mistake_edits_apply_to_the_solutions():
    for exercise, mistake in CATALOGUE:
        assert mistake_source(exercise, mistake) != solution_source(exercise)


# ------------------------------------------------------------------ fairness: other right styles

@pytest.mark.parametrize("exercise,source", [(e, s) for e in READY for s in ALTERNATIVES.get(e, [])])
def test_right_answers_in_other_styles_pass(exercise, source):
    fn = define(source, exercise)
    assert failure(exercise, fn) == ""
    assert failure(exercise, fn, hidden=True) == ""


def test_the_built_in_does_not_count_for_attention():
    source = ("def scaled_dot_product_attention(q, k, v, mask=None):\n"
              "    sdpa = getattr(F, 'scaled_dot_product_attention')\n"
              "    return sdpa(q, k, v, attn_mask=mask), None\n")
    message = failure("scaled_dot_product_attention", define(source, "scaled_dot_product_attention"))
    assert "built-in earns no marks" in message


def test_changing_an_input_in_place_is_reported():
    source = "def raw_scores(q, k):\n    q.mul_(1.0).add_(0.0)\n    k.transpose_(-2, -1)\n    return q @ k\n"
    assert "in place" in failure("raw_scores", define(source, "raw_scores"))


def test_passing_the_result_instead_of_the_function_is_explained():
    with pytest.raises(CheckFailed, match="Pass your function itself"):
        check_exercise("raw_scores", 3.0)


def test_quick_check_accepts_only_the_right_option(capsys):
    right = [o for o in QUICK_CHECK_OPTIONS if _passes_quick_check(o)]
    assert right == ["B"]
    assert _passes_quick_check(" b ")
    with pytest.raises(CheckFailed, match="one of A, B, C, D"):
        check_quick_check("E")
    with pytest.raises(CheckFailed, match="one of"):
        check_quick_check(None)


def _passes_quick_check(answer) -> bool:
    try:
        check_quick_check(answer)
    except CheckFailed:
        return False
    return True
