"""The expected results of a case: the reference solution run in float64.

The build stores them for the visible cases (helpers/data/check_cases.npz); the trusted grader
computes them for its own cases at grading time.
"""

from __future__ import annotations

import torch

from helpers.exercises import Case, run_case

from .manifest import Course
from .reference import reference


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
