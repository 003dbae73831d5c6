"""The checks a student runs on an exercise: staged, specific, and quiet when all is well.

`check_exercise(name, obj)` calls the student's function or class on the stored cases of
`check_cases.npz` and judges each result in stages: it runs at all, type, shape, dtype,
finite values, values, masked weights exactly 0, inputs unchanged. The first failure raises
`CheckFailed` with one short message that says what was expected, what came back, and, when
the result matches a known wrong answer, which mistake it is.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import io
import textwrap
import warnings

import torch

from .casefile import load_cases
from .exercises import EXERCISES, Case, Outcome, run_case
from .feedback import MISTAKES, CheckFailed, explain_error, first_difference, mistake_message, passed, preview, shape_of
from .notebook_code import forbidden_uses

RTOL = ATOL = 1e-5          # float32 results against a float64 reference
MISTAKE_TOLERANCE = 1e-4    # how close a result must be to a known wrong answer to name it


@functools.lru_cache(maxsize=1)
def _all_cases() -> tuple[Case, ...]:
    return tuple(load_cases())


def cases_for(exercise: str, hidden: bool = False) -> list[Case]:
    """The stored cases of an exercise: the visible ones, or the hidden ones."""
    return [c for c in _all_cases() if c.exercise == exercise and c.hidden == hidden]


# ----------------------------------------------------------------------------- judging

def scale_of(expected: torch.Tensor) -> float:
    """The size of the numbers in a result: rounding errors of float32 grow with it."""
    finite = expected.detach().double().abs()
    finite = finite[torch.isfinite(finite)]
    return max(1.0, float(finite.max())) if finite.numel() else 1.0


def _close(a: torch.Tensor, b: torch.Tensor, tol: float = ATOL) -> bool:
    """Equal within `tol`, relative to each value and to the largest value of the result."""
    return a.shape == b.shape and bool(torch.allclose(a.detach().double(), b.detach().double(),
                                                      rtol=tol, atol=tol * scale_of(b), equal_nan=True))


def recognise_mistake(case: Case, results: tuple) -> str | None:
    """The id of the known wrong answer that `results` reproduces, if any."""
    if not all(isinstance(r, torch.Tensor) for r in results):
        return None
    for mistake, wrong in case.mistakes.items():
        if len(wrong) == len(results) and all(_close(r, w, MISTAKE_TOLERANCE) for r, w in zip(results, wrong)):
            return mistake
    return None


def _with_mistake(message: str, case: Case, mistake: str | None) -> str:
    if mistake is None:
        return message
    return f"{message}\nLikely mistake: {mistake_message(case.exercise, mistake)}"


def _judge_error(case: Case, outcome: Outcome) -> str:
    kind, text = outcome.error
    name = case.exercise
    if kind == "NotImplementedError":
        return (f"`{name}` is not implemented yet: replace `raise NotImplementedError()` "
                f"with your code and run its cell again.")
    if case.raises:
        if kind == "AssertionError":
            return _with_mistake(f"For {case.describe_inputs()} it should raise ValueError; "
                                 f"it raised AssertionError.", case, "assert_instead")
        if kind != case.raises:
            return (f"For {case.describe_inputs()} it should raise {case.raises}; "
                    f"it raised {kind}: {text}")
        numbers = [str(case.params[p]) for p in ("num_heads",) if p in case.params]
        numbers += [str(case.tensors["x"].shape[-1])] if "x" in case.tensors else []
        numbers += [str(case.params["d_model"])] if "d_model" in case.params else []
        missing = [n for n in numbers if n not in text]
        if missing:
            return _with_mistake(f"The ValueError says {text!r}; it should name both numbers "
                                 f"({' and '.join(numbers)}).", case, "message_without_numbers")
        return ""
    hint = explain_error(kind, text)
    return (f"For {case.describe_inputs()} it raised {kind}: {textwrap.shorten(text, 300)}"
            + (f"\nHint: {hint}" if hint else ""))


def judge(case: Case, outcome: Outcome) -> str:
    """An empty string when the outcome is right for the case, else one short message."""
    exercise = EXERCISES[case.exercise]
    if outcome.problem:
        return _with_mistake(outcome.problem, case, outcome.mistake)
    if outcome.error:
        return _judge_error(case, outcome)
    if case.raises:
        return _with_mistake(f"For {case.describe_inputs()} it should raise {case.raises} "
                             f"(d_model is not divisible by num_heads); it returned normally.",
                             case, "no_value_error")
    results = outcome.results
    names = exercise.outputs
    mistake = recognise_mistake(case, results)
    where = f"For {case.describe_inputs()}"
    for name, got, want in zip(names, results, case.expected):
        label = f"`{name}`" if len(names) > 1 else "the result"
        if not isinstance(got, torch.Tensor):
            return _with_mistake(f"{where}, {label} should be a torch.Tensor; it is {shape_of(got)}.",
                                 case, mistake)
        if got.shape != want.shape:
            return _with_mistake(f"{where}, {label} should have shape {shape_of(want)}; "
                                 f"it has shape {shape_of(got)}.", case, mistake)
    input_dtype = next(t.dtype for t in case.tensors.values() if t.is_floating_point())
    for name, got, want in zip(names, results, case.expected):
        label = f"`{name}`" if len(names) > 1 else "the result"
        if got.dtype != input_dtype:
            return (f"{where}, {label} is {str(got.dtype)[6:]} but the inputs are "
                    f"{str(input_dtype)[6:]}: results keep the input dtype.")
        if torch.isfinite(want).all() and not torch.isfinite(got).all():
            return _with_mistake(f"{where}, {label} contains NaN or inf; every value should be finite.",
                                 case, mistake or _overflow_mistake(case.exercise))
        if not _close(got, want):
            index = first_difference(got, want, ATOL * scale_of(want), RTOL)
            at = f" at index {list(index)}" if index else ""
            return _with_mistake(f"{where}, {label} has wrong values{at}:\n"
                                 f"  expected {preview(want, index)}\n  received {preview(got, index)}",
                                 case, mistake)
    if exercise.masked_output is not None and "mask" in case.tensors:
        weights = results[exercise.masked_output]
        blocked = ~case.tensors["mask"].bool().expand_as(weights)
        if (weights[blocked] != 0).any():
            return _with_mistake(f"{where}, weights where the mask is False should be exactly 0; "
                                 f"the largest is {weights[blocked].abs().max().item():.3g}.", case, mistake)
    if outcome.changed_inputs:
        return (f"{where}, your code changed its input {', '.join(outcome.changed_inputs)} in place; "
                f"compute new tensors and leave the inputs as they were.")
    return ""


def _overflow_mistake(exercise: str) -> str | None:
    """NaN from finite inputs in an attention exercise is almost always exp() overflowing."""
    return "naive_softmax" if (exercise, "naive_softmax") in MISTAKES else None


# ----------------------------------------------------------------------------- running

def _source_of(obj) -> str:
    try:
        return textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        return ""


def forbidden_message(name: str, obj) -> str:
    """A message when the code of `obj` calls a built-in that the exercise forbids."""
    exercise = EXERCISES[name]
    if not exercise.forbidden:
        return ""
    uses = forbidden_uses(_source_of(obj), exercise.forbidden, own_name=name)
    if not uses:
        return ""
    return (f"`{name}` uses {uses[0]}: this exercise asks you to write attention yourself, "
            f"so the built-in earns no marks here (you will meet it in notebook 06).")


def run_quietly(obj, case: Case) -> Outcome:
    """Run a case with warnings and stderr swallowed: they must never cost marks."""
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        return run_case(obj, case)


def _mistake_from_other_cases(obj, message: str, others: list[Case]) -> str:
    """When the failing case could not tell which mistake it is, ask the next cases."""
    if "Likely mistake:" in message or "not implemented yet" in message:
        return ""
    for case in others:
        outcome = run_quietly(obj, case)
        mistake = recognise_mistake(case, outcome.results) if outcome.results else None
        if mistake:
            return f"\nLikely mistake: {mistake_message(case.exercise, mistake)}"
    return ""


def check_exercise(name: str, obj, hidden: bool = False) -> None:
    """Check `obj` against the stored cases of exercise `name`; raise `CheckFailed` on a failure."""
    if name not in EXERCISES:
        raise ValueError(f"No exercise is called {name!r}; choose one of {sorted(EXERCISES)}.")
    what = "class" if EXERCISES[name].is_class else "function"
    if not (inspect.isclass(obj) if EXERCISES[name].is_class else callable(obj)):
        raise CheckFailed(f"Pass your {what} itself to the check: check_{name}({name}); "
                          f"got {shape_of(obj)}.")
    problem = forbidden_message(name, obj)
    if problem:
        raise CheckFailed(problem)
    cases = cases_for(name, hidden)
    for i, case in enumerate(cases):
        message = judge(case, run_quietly(obj, case))
        if message:
            raise CheckFailed(message + _mistake_from_other_cases(obj, message, cases[i + 1:]))
    if not hidden:
        passed(f"`{name}` passed all {len(cases)} visible checks.")


def check_raw_scores(fn, hidden: bool = False) -> None:
    """Check `raw_scores(q, k)`."""
    check_exercise("raw_scores", fn, hidden)


def check_scaled_scores(fn, hidden: bool = False) -> None:
    """Check `scaled_scores(q, k)`."""
    check_exercise("scaled_scores", fn, hidden)


def check_scaled_dot_product_attention(fn, hidden: bool = False) -> None:
    """Check `scaled_dot_product_attention(q, k, v, mask=None)`."""
    check_exercise("scaled_dot_product_attention", fn, hidden)


def check_split_heads(fn, hidden: bool = False) -> None:
    """Check `split_heads(x, num_heads)`."""
    check_exercise("split_heads", fn, hidden)


def check_concat_heads(fn, hidden: bool = False) -> None:
    """Check `concat_heads(x)`."""
    check_exercise("concat_heads", fn, hidden)


def check_multi_head_attention(cls, hidden: bool = False) -> None:
    """Check the class `MultiHeadAttention`."""
    check_exercise("MultiHeadAttention", cls, hidden)


def check_to_torch_mha(fn, hidden: bool = False) -> None:
    """Check `to_torch_mha(mha)`."""
    check_exercise("to_torch_mha", fn, hidden)


# ----------------------------------------------------------------------------- quick check

QUICK_CHECK_OPTIONS = {
    "A": "To make attention faster to compute.",
    "B": "To keep the scores' variance near 1, so the softmax does not saturate and gradients "
         "do not vanish.",
    "C": "To make each row of attention weights sum to 1.",
    "D": "To make the scores independent of the sequence length.",
}
_SALT = "attention-quick-check/"
QUICK_CHECK_DIGEST = "7fe8c47d6f7a600b341c99c8ebe0ba59b927668674c64c299fa45a8adce01aae"  # sha256 of the salt and the right option
_WHY_NOT = {
    "A": "Dividing by a number adds work, it saves none; the reason is what the softmax does "
         "with large scores.",
    "C": "The softmax already makes each row sum to 1, scaled or not.",
    "D": "Each score is one dot product of length d_k; the number of positions does not change it.",
}


def _digest(option: str) -> str:
    return hashlib.sha256((_SALT + option).encode()).hexdigest()


def check_quick_check(answer) -> None:
    """Check the multiple-choice answer of notebook 01 (one of "A", "B", "C", "D")."""
    option = str(answer).strip().upper().strip("()\"'. ")
    if option not in QUICK_CHECK_OPTIONS:
        raise CheckFailed(f"Set quick_check_answer to one of {', '.join(QUICK_CHECK_OPTIONS)} "
                          f"(a string such as \"A\"); it is {answer!r}.")
    if _digest(option) != QUICK_CHECK_DIGEST:
        raise CheckFailed(f"Not {option}. {_WHY_NOT[option]}")
    passed(f"Right: {QUICK_CHECK_OPTIONS[option]}")

