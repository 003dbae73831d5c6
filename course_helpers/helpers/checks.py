"""The checks a student runs: staged, specific, and quiet when all is well.

`check(name, obj)` calls the student's function or class on the stored cases of
`check_cases.npz` and judges each result in stages: it runs at all, type, shape, dtype, finite
values, values, masked weights exactly 0, inputs unchanged. The first failure raises
`CheckFailed` with one short message that says what was expected, what came back, and, when
the result matches a known wrong answer, which mistake it is. For a graded question,
`check(name, answer)` only confirms the form of the answer (`helpers.questions`).

`judge` is also what the course's grader uses, on the numbers a submission returns.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import textwrap
import warnings

import torch

from . import course
from .casefile import load_cases
from .exercises import Case, Outcome, run_case
from .feedback import CheckFailed, explain_error, first_difference, mistake_message, passed, preview, shape_of
from .i18n import _, listing
from .policy import check_exercise, refusal
from .questions import check_choice, check_numeric
from .statements import session_statements

RTOL = ATOL = 1e-5  # float32 results against a float64 reference
MISTAKE_TOLERANCE = 1e-4  # how close a result must be to a known wrong answer to name it

# Mistakes that the checks name from the way a call fails, for any exercise whose manifest entry
# gives them a sentence (tests/unit/model/test_manifest.py checks every exercise they apply to has one).
RAISING_MISTAKES = ("no_value_error", "assert_instead", "message_without_numbers")
OVERFLOW_MISTAKE = "naive_softmax"


@functools.lru_cache(maxsize=1)
def _all_cases() -> tuple[Case, ...]:
    return tuple(load_cases())


def cases_for(exercise: str, hidden: bool = False) -> list[Case]:
    """The stored cases of an exercise: the visible ones, or the hidden ones when present."""
    return [c for c in _all_cases() if c.exercise == exercise and c.hidden == hidden]


# ----------------------------------------------------------------------------- judging


def scale_of(expected: torch.Tensor) -> float:
    """The size of the numbers in a result: rounding errors of float32 grow with it."""
    finite = expected.detach().double().abs()
    finite = finite[torch.isfinite(finite)]
    return max(1.0, float(finite.max())) if finite.numel() else 1.0


def _close(a: torch.Tensor, b: torch.Tensor, tol: float = ATOL) -> bool:
    """Equal within `tol`, relative to each value and to the largest value of the result. A boolean
    tensor is close only to a boolean tensor with the same entries."""
    if (a.dtype == torch.bool) != (b.dtype == torch.bool):
        return False
    return a.shape == b.shape and bool(
        torch.allclose(a.detach().double(), b.detach().double(), rtol=tol, atol=tol * scale_of(b), equal_nan=True)
    )


def expected_dtype(case: Case, want: torch.Tensor) -> torch.dtype:
    """The dtype a result must have: that of the floating-point inputs (results keep the input
    dtype), or, where the inputs give none (a mask built from a length), the expected result's."""
    return next((t.dtype for t in case.tensors.values() if t.is_floating_point()), want.dtype)


def _dtype_message(where: str, label: str, got: torch.Tensor, want_dtype: torch.dtype, from_inputs: bool) -> str:
    got_name, want_name = str(got.dtype).removeprefix("torch."), str(want_dtype).removeprefix("torch.")
    if from_inputs:
        return _("{where}, {label} is {got} but the inputs are {want}: results keep the input dtype.").format(
            where=where, label=label, got=got_name, want=want_name
        )
    if want_dtype == torch.bool:
        return _("{where}, {label} should be a boolean tensor (True or False in each entry); it is {got}.").format(
            where=where, label=label, got=got_name
        )
    return _("{where}, {label} should be {want}; it is {got}.").format(
        where=where, label=label, want=want_name, got=got_name
    )


def recognise_mistake(case: Case, results: tuple) -> str | None:
    """The id of the known wrong answer that `results` reproduces, if any."""
    if not all(isinstance(r, torch.Tensor) for r in results):
        return None
    for mistake, wrong in case.mistakes.items():
        if len(wrong) == len(results) and all(_close(r, w, MISTAKE_TOLERANCE) for r, w in zip(results, wrong)):
            return mistake
    return None


def _likely(sentence: str) -> str:
    """ "Likely mistake: <sentence>", with no space after a full-width colon (Chinese)."""
    label = _("Likely mistake:")
    return label + ("" if label.endswith("：") else " ") + sentence


def _with_mistake(message: str, case: Case, mistake: str | None) -> str:
    sentence = mistake_message(case.exercise, mistake) if mistake else ""
    return message + "\n" + _likely(sentence) if sentence else message


def numbers_to_name(case: Case) -> list[str]:
    """The numbers a ValueError about a case's sizes must name: its whole-number parameters and
    the size of the last axis of each input."""
    numbers = [str(v) for v in case.params.values() if isinstance(v, int) and not isinstance(v, bool)]
    numbers += [str(t.shape[-1]) for k, t in case.tensors.items() if "." not in k and t.dim()]
    return list(dict.fromkeys(numbers))


def _judge_error(case: Case, outcome: Outcome) -> str:
    kind, text = outcome.error
    inputs = case.describe_inputs()
    if kind == "NotImplementedError":
        return _(
            "`{name}` is not implemented yet: replace `raise NotImplementedError()` with your code and "
            "run its cell again."
        ).format(name=case.exercise)
    if case.raises:
        if kind == "AssertionError":
            return _with_mistake(
                _("For {inputs} it should raise {want}; it raised AssertionError.").format(
                    inputs=inputs, want=case.raises
                ),
                case,
                "assert_instead",
            )
        if kind != case.raises:
            return _with_mistake(
                _("For {inputs} it should raise {want}; it raised {kind}: {text}").format(
                    inputs=inputs, want=case.raises, kind=kind, text=text
                ),
                case,
                "no_value_error",
            )
        numbers = numbers_to_name(case)
        if any(n not in text for n in numbers):
            return _with_mistake(
                _("The {kind} says {text!r}; it should name the numbers {numbers}.").format(
                    kind=kind, text=text, numbers=_(" and ").join(numbers)
                ),
                case,
                "message_without_numbers",
            )
        return ""
    hint = explain_error(kind, text)
    message = _("For {inputs} it raised {kind}: {text}").format(
        inputs=inputs, kind=kind, text=textwrap.shorten(text, 300)
    )
    return message + ("\n" + _("Hint:") + " " + hint if hint else "")


def judge(case: Case, outcome: Outcome) -> str:
    """An empty string when the outcome is right for the case, else one short message."""
    spec = course.item(case.exercise)
    if outcome.problem:
        return _with_mistake(outcome.problem, case, outcome.mistake)
    if outcome.error:
        return _judge_error(case, outcome)
    if case.raises:
        return _with_mistake(
            _("For {inputs} it should raise {want}; it returned normally.").format(
                inputs=case.describe_inputs(), want=case.raises
            ),
            case,
            "no_value_error",
        )
    results, names = outcome.results, spec["outputs"]
    mistake = recognise_mistake(case, results)
    where = _("For {inputs}").format(inputs=case.describe_inputs())

    def label(name: str) -> str:
        return f"`{name}`" if len(names) > 1 else _("the result")

    for name, got, want in zip(names, results, case.expected):
        if not isinstance(got, torch.Tensor):
            return _with_mistake(
                _("{where}, {label} should be a torch.Tensor; it is {got}.").format(
                    where=where, label=label(name), got=shape_of(got)
                ),
                case,
                mistake,
            )
        if got.shape != want.shape:
            return _with_mistake(
                _("{where}, {label} should have shape {want}; it has shape {got}.").format(
                    where=where, label=label(name), want=shape_of(want), got=shape_of(got)
                ),
                case,
                mistake,
            )
    from_inputs = any(t.is_floating_point() for t in case.tensors.values())
    for name, got, want in zip(names, results, case.expected):
        want_dtype = expected_dtype(case, want)
        if got.dtype != want_dtype:
            message = _dtype_message(where, label(name), got, want_dtype, from_inputs)
            return message if from_inputs else _with_mistake(message, case, mistake)
        if torch.isfinite(want).all() and not torch.isfinite(got).all():
            return _with_mistake(
                _("{where}, {label} contains NaN or inf; every value should be finite.").format(
                    where=where, label=label(name)
                ),
                case,
                mistake or OVERFLOW_MISTAKE,
            )
        if not _close(got, want):
            index = first_difference(got, want, ATOL * scale_of(want), RTOL)
            at = _(" at index {index}").format(index=list(index)) if index else ""
            return _with_mistake(
                _("{where}, {label} has wrong values{at}:\n  expected {want}\n  received {got}").format(
                    where=where, label=label(name), at=at, want=preview(want, index), got=preview(got, index)
                ),
                case,
                mistake,
            )
    masked = spec.get("masked_output")
    if masked and "mask" in case.tensors:
        weights = results[names.index(masked)]
        blocked = ~case.tensors["mask"].bool().expand_as(weights)
        if (weights[blocked] != 0).any():
            return _with_mistake(
                _("{where}, {label} where the mask is False should be exactly 0; the largest is {largest:.3g}.").format(
                    where=where, label=label(masked), largest=weights[blocked].abs().max().item()
                ),
                case,
                mistake,
            )
    if outcome.changed_inputs:
        return _(
            "{where}, your code changed its input {names} in place; compute new tensors and leave the "
            "inputs as they were."
        ).format(where=where, names=listing(outcome.changed_inputs))
    return ""


# ----------------------------------------------------------------------------- running


def forbidden_message(name: str, obj) -> str:
    """The grader's own refusal, when the statements behind `obj` (as this session ran them) do
    what an exercise that forbids the built-ins does not allow; empty when its policy passes."""
    forbidden = tuple(course.item(name).get("forbidden", ()))
    if not forbidden:
        return ""
    names = tuple(course.exercises())
    found = check_exercise(session_statements(name, obj), name, forbidden, names)
    return refusal(name, found) if found else ""


def run_quietly(obj, case: Case) -> Outcome:
    """Run a case with warnings and stderr swallowed: they must never cost marks."""
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        return run_case(obj, case)


def _mistake_from_other_cases(obj, others: list[Case]) -> str:
    """When the failing case could not tell which mistake it is, ask the next cases."""
    for case in others:
        outcome = run_quietly(obj, case)
        found = recognise_mistake(case, outcome.results) if outcome.results else None
        sentence = mistake_message(case.exercise, found) if found else ""
        if sentence:
            return "\n" + _likely(sentence)
    return ""


def _check_exercise(name: str, obj) -> None:
    what = _("class") if course.is_class(name) else _("function")
    if not (inspect.isclass(obj) if course.is_class(name) else callable(obj)):
        raise CheckFailed(
            _("Pass your {what} itself to the check: check({name!r}, {name}); got {got}.").format(
                what=what, name=name, got=shape_of(obj)
            )
        )
    problem = forbidden_message(name, obj)
    if problem:
        raise CheckFailed(problem)
    cases = cases_for(name)
    for i, case in enumerate(cases):
        outcome = run_quietly(obj, case)
        message = judge(case, outcome)
        if message:
            named = _("Likely mistake:") in message or (outcome.error or ("",))[0] == "NotImplementedError"
            raise CheckFailed(message + ("" if named else _mistake_from_other_cases(obj, cases[i + 1 :])))
    passed(_("`{name}` passed all {count} visible checks.").format(name=name, count=len(cases)))


def check(name: str, obj) -> None:
    """Check an exercise (`obj` is your function or class) or a question (`obj` is your answer).

    Raises `CheckFailed` with one message at the first failure; prints a ✓ line when all pass.
    Only the visible cases are here: the hidden ones (`hidden = true` in the manifest) never
    reach a student's files, and the trusted grader runs them itself, with fresh values.
    """
    spec = course.item(name)
    if spec["kind"] == "choice":
        check_choice(name, obj)
        return
    if spec["kind"] == "numeric":
        check_numeric(name, obj)
        return
    _check_exercise(name, obj)
