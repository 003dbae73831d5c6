"""The released checks: right answers pass, known wrong answers fail and are named."""

from __future__ import annotations

import pytest

from attention_course.model.cases import all_cases
from attention_course.model.expected import expected_results
from attention_course.model.manifest import load
from attention_course.model.reference import answer_source, catalogue, define, mistake_source, mistaken, reference
from helpers import course as student_course
from helpers.checks import cases_for, check, judge, run_quietly
from helpers.feedback import CheckFailed, mistake_message

COURSE = load()
EXERCISES = COURSE.exercises()
MISTAKES = [(i, m) for i, m in catalogue(COURSE) if not i.is_question]


def failure(name, obj) -> str:
    """The message of the first failing visible check, or '' when all pass."""
    try:
        check(name, obj)
    except CheckFailed as failed:
        return str(failed)
    return ""


def hidden_failure(item, obj) -> str:
    """The first failing hidden case (drawn like the grader draws them), or ''."""
    with student_course.viewing(COURSE.student_view()):
        views = {i["name"]: i for i in COURSE.student_view()["items"]}
        for case in all_cases(COURSE, seed=99):
            if case.exercise == item.name and case.hidden:
                if not case.raises:
                    case.expected = expected_results(COURSE, case, views[item.name])
                message = judge(case, run_quietly(obj, case))
                if message:
                    return message
    return ""


@pytest.mark.parametrize("item", EXERCISES, ids=lambda i: i.name)
def test_reference_solution_passes_visible_and_hidden_cases(item, capsys):
    assert failure(item.name, reference(COURSE, item)) == ""
    assert "✓" in capsys.readouterr().out
    assert hidden_failure(item, reference(COURSE, item)) == ""


@pytest.mark.parametrize("item", EXERCISES, ids=lambda i: i.name)
def test_a_blank_stub_is_reported_as_not_implemented(item):
    head = answer_source(COURSE, item).splitlines()[0]
    if head.startswith("class"):
        source = f"{head}\n    def __init__(self, *args, **kwargs):\n        raise NotImplementedError()\n"
    else:
        source = f"{head}\n    raise NotImplementedError()\n"
    assert "not implemented yet" in failure(item.name, define(COURSE, item, source))


@pytest.mark.parametrize("item,mistake", MISTAKES, ids=[f"{i.name}-{m}" for i, m in MISTAKES])
def test_every_known_mistake_fails(item, mistake):
    wrong = mistaken(COURSE, item, mistake)
    assert failure(item.name, wrong) or hidden_failure(item, wrong), f"{item.name}/{mistake} passed every check"


def test_most_mistakes_are_named_by_the_visible_checks():
    named = [(i.name, m) for i, m in MISTAKES if i.mistakes[m].sentence in failure(i.name, mistaken(COURSE, i, m))]
    missing = sorted({(i.name, m) for i, m in MISTAKES} - set(named))
    # Mistakes that raise (e.g. .view after .transpose) get an error hint instead of a name.
    assert len(named) >= 0.8 * len(MISTAKES), f"not named: {missing}"


def test_a_named_mistake_is_named_by_its_own_sentence():
    """Where the message names a mistake, it is the mistake the answer carries."""
    for item, mistake in MISTAKES:
        message = failure(item.name, mistaken(COURSE, item, mistake))
        others = [m.sentence for name, m in item.mistakes.items() if name != mistake and m.sentence in message]
        assert not others, f"{item.name}/{mistake} was named as another mistake: {others}"


def test_mistake_edits_apply_to_the_solutions():
    for item, mistake in MISTAKES:
        assert mistake_source(COURSE, item, mistake) != answer_source(COURSE, item)


def test_an_unknown_mistake_has_no_sentence_and_does_not_raise():
    assert mistake_message("raw_scores", "no_such_mistake") == ""
    assert mistake_message("no_such_exercise", "x") == ""


# ------------------------------------------------------------------ fairness: other right styles

ALTERNATIVES = [(i, s) for i in EXERCISES for s in i.alternatives]


@pytest.mark.parametrize("item,source", ALTERNATIVES, ids=[f"{i.name}-{n}" for n, (i, _) in enumerate(ALTERNATIVES)])
def test_right_answers_in_other_styles_pass(item, source):
    fn = define(COURSE, item, source)
    assert failure(item.name, fn) == ""
    assert hidden_failure(item, fn) == ""


def test_the_built_in_does_not_count_for_attention():
    item = COURSE.item("scaled_dot_product_attention")
    source = (
        "def scaled_dot_product_attention(q, k, v, mask=None):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None\n"
    )
    assert "may not rely on the built-in F.scaled_dot_product_attention" in failure(
        item.name, define(COURSE, item, source)
    )


def test_changing_an_input_in_place_is_reported():
    item = COURSE.item("raw_scores")
    source = "def raw_scores(q, k):\n    q.mul_(1.0).add_(0.0)\n    k.transpose_(-2, -1)\n    return q @ k\n"
    assert "in place" in failure(item.name, define(COURSE, item, source))


def test_passing_the_result_instead_of_the_function_is_explained():
    with pytest.raises(CheckFailed, match="Pass your function itself"):
        check("raw_scores", 3.0)


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError, match="raw_scores"):
        check("raw_score", None)


def test_visible_cases_come_from_the_case_file():
    assert all(not c.hidden for c in cases_for("raw_scores")) and cases_for("raw_scores")
    assert cases_for("raw_scores", hidden=True) == []


# ------------------------------------------------------------------ raw errors become one sentence

BATCH_T = """
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.T / math.sqrt(q.shape[-1])
    return torch.softmax(scores, -1) @ v, torch.softmax(scores, -1)
"""
IF_MASK = """
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, -1)
    return weights @ v, weights
"""


@pytest.mark.parametrize(
    "source, sentence",
    [(BATCH_T, "reverses every axis"), (IF_MASK, "asks one True or False of a whole tensor")],
    ids=["k.T on a batch", "if mask"],
)
def test_a_common_raw_error_gets_one_sentence(source, sentence):
    item = COURSE.item("scaled_dot_product_attention")
    assert sentence in failure(item.name, define(COURSE, item, source))


def test_the_queries_length_used_for_the_keys_gets_one_sentence():
    right = reference(COURSE, COURSE.item("MultiHeadAttention"))

    class KeysOfQueryLength(right):
        def forward(self, query, key, value, mask=None):
            B, T_q, _ = query.shape
            self.W_k(key).view(B, T_q, self.num_heads, self.d_head)  # T_q where T_k belongs
            return super().forward(query, key, value, mask)

    assert "not the queries' T_q" in failure("MultiHeadAttention", KeysOfQueryLength)


# ------------------------------------------------------------------ a case of plain parameters, a boolean result


def _mask_case(T: int = 3):
    import torch

    from helpers.exercises import Case

    return Case("causal_mask", "three positions", {}, {"T": T}, expected=(torch.ones(T, T, dtype=torch.bool).tril(),))


def test_a_case_of_parameters_only_describes_them_and_judges_a_right_mask():
    import torch

    case = _mask_case()
    assert case.describe_inputs() == "T=3"
    with student_course.viewing(COURSE.student_view()):
        assert judge(case, run_quietly(lambda T: torch.ones(T, T, dtype=torch.bool).tril(), case)) == ""


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_a_mask_of_numbers_is_told_to_be_boolean(dtype):
    import torch

    case = _mask_case()
    with student_course.viewing(COURSE.student_view()):
        wrong = judge(case, run_quietly(lambda T: torch.ones(T, T, dtype=getattr(torch, dtype)).tril(), case))
    assert wrong == f"For T=3, the result should be a boolean tensor (True or False in each entry); it is {dtype}."


def test_a_wrong_boolean_mask_shows_its_row_as_true_and_false():
    import torch

    case = _mask_case()
    with student_course.viewing(COURSE.student_view()):
        wrong = judge(case, run_quietly(lambda T: torch.ones(T, T, dtype=torch.bool).triu(), case))
    assert "at index [0]" in wrong
    assert "expected [True, False, False]" in wrong and "received [True, True, True]" in wrong


def test_a_boolean_result_is_close_only_to_a_boolean_one():
    import torch

    from helpers.checks import _close

    mask = torch.ones(2, 2, dtype=torch.bool).tril()
    assert _close(mask, mask.clone()) and not _close(mask.double(), mask) and not _close(mask, mask.double())


def test_the_grader_gets_a_boolean_result_back_as_boolean():
    """The sandbox sends every result as float64 numbers with its dtype's name; a mask comes back bool."""
    import numpy as np
    import torch

    from attention_course.grading.trusted import _outcome

    entry = {"error": None, "problem": None, "mistake": None, "results": ["r0"], "dtypes": ["torch.bool"]}
    outcome = _outcome(0, entry, {"c0/r0": torch.from_numpy(np.array([[1.0, 0.0], [1.0, 1.0]]))})
    assert outcome.results[0].dtype == torch.bool and outcome.results[0].tolist() == [[True, False], [True, True]]


def test_a_named_mistake_reads_as_chinese_in_the_chinese_edition():
    """No space after the full-width colon of 可能的错误：, a space after the English colon."""
    from helpers.i18n import using

    item = COURSE.item("scaled_scores")
    with using("zh-CN"):
        message = failure(item.name, mistaken(COURSE, item, "no_scale"))
    assert "可能的错误：" in message and "可能的错误： " not in message, message
    assert "Likely mistake: " in failure(item.name, mistaken(COURSE, item, "no_scale"))
