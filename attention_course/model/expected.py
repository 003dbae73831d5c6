"""The expected results of a case: the reference solution run in float64.

The build stores them for the visible cases (helpers/data/check_cases.npz); the trusted grader
computes them for its own cases at grading time. `known_mistakes` gives, for one case, the result
of each catalogued mistake that a student could reproduce and that no other mistake shares: the
build stores them with the visible cases, the grader computes them for a case a student failed.
"""

from __future__ import annotations

import functools
import warnings

import torch

from helpers.exercises import Case, run_case

from .manifest import Course
from .reference import mistaken, reference


def in_float64(case: Case) -> Case:
    """A copy of a case with floating-point inputs in float64."""
    tensors = {k: v.double() if v.is_floating_point() else v.clone() for k, v in case.tensors.items()}
    return Case(case.exercise, case.name, tensors, dict(case.params), case.hidden, case.raises)


def results_of(obj, case: Case, spec: dict) -> tuple | None:
    """The results of `obj` on a case as detached tensors, or None if it failed. Floating-point
    results are in float64 when the case has floating-point inputs (the reference runs in float64);
    other results (a boolean mask, the results of a case whose inputs are plain parameters) keep
    their dtype, which the checks then ask of a student's result."""
    outcome = run_case(obj, case, spec)
    if outcome.results is None or not all(isinstance(r, torch.Tensor) for r in outcome.results):
        return None
    floating = any(t.is_floating_point() for t in case.tensors.values())
    return tuple(r.detach().double() if floating and r.is_floating_point() else r.detach() for r in outcome.results)


def expected_results(course: Course, case: Case, spec: dict) -> tuple:
    """The reference solution's results on a case, computed in float64."""
    expected = results_of(reference(course, course.item(case.exercise)), in_float64(case), spec)
    if expected is None:
        raise RuntimeError(f"The reference solution fails on {case.exercise} / {case.name}.")
    return expected


def _seeded_results(obj, case: Case, spec: dict, seed: int) -> tuple | None:
    torch.manual_seed(seed)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return results_of(obj, case, spec)


def differs(a: tuple | None, b: tuple | None) -> bool:
    """Whether two tuples of results are told apart (shape, boolean or not, values beyond 1e-6)."""
    if a is None or b is None:
        return a is not b
    return len(a) != len(b) or any(
        x.shape != y.shape
        or (x.dtype == torch.bool) != (y.dtype == torch.bool)
        or not torch.allclose(x.double(), y.double(), atol=1e-6, rtol=1e-6, equal_nan=True)
        for x, y in zip(a, b)
    )


@functools.lru_cache(maxsize=64)
def _mistaken(course: Course, exercise: str, mistake: str):
    return mistaken(course, course.item(exercise), mistake)


def known_mistakes(course: Course, case: Case, spec: dict) -> dict[str, tuple]:
    """The result of each catalogued mistake of the case's exercise on this case (in the case's own
    dtype, as a student would run it), kept when it differs from the expected results, does not
    depend on random initial weights, and is not shared with another mistake."""
    found = {}
    for mistake in course.item(case.exercise).mistakes:
        obj = _mistaken(course, case.exercise, mistake)
        got = _seeded_results(obj, case, spec, 0)
        if got is None or differs(got, _seeded_results(obj, case, spec, 1)):
            continue  # it failed, or depends on random initial weights: no student could reproduce it
        if differs(got, case.expected):
            found[mistake] = got
    # A result that two mistakes share cannot tell them apart: name neither on this case.
    return {
        m: got for m, got in found.items() if not any(n != m and not differs(got, other) for n, other in found.items())
    }
