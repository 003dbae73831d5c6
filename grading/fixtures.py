"""Write the case file the checks read: cases, expected results and known wrong results.

    python -m grading.fixtures          # rewrite source/attention/helpers/check_cases.npz

Expected results come from the reference solutions run in float64; a known wrong result is
stored for a case when that mistake returns something different from the right answer there.
"""
from __future__ import annotations

import warnings

import torch

from helpers.casefile import CASES_FILE, save_cases
from helpers.exercises import EXERCISES, Case, run_case

from .cases import all_cases
from .mistakes import EDITS, mistaken
from .reference import notebook_path, reference


def in_float64(case: Case) -> Case:
    """A copy of a case with floating-point inputs in float64."""
    tensors = {k: v.double() if v.is_floating_point() else v.clone() for k, v in case.tensors.items()}
    return Case(case.exercise, case.name, tensors, dict(case.params), case.hidden, case.raises)


def results_of(obj, case: Case) -> tuple | None:
    """The results of `obj` on a case as detached float64 tensors, or None if it failed."""
    outcome = run_case(obj, case)
    if outcome.results is None or not all(isinstance(r, torch.Tensor) for r in outcome.results):
        return None
    return tuple(r.detach().double() for r in outcome.results)


def _seeded_results(obj, case: Case, seed: int) -> tuple | None:
    torch.manual_seed(seed)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return results_of(obj, case)


def _differs(a: tuple | None, b: tuple | None) -> bool:
    if a is None or b is None:
        return a is not b
    return len(a) != len(b) or any(x.shape != y.shape or not torch.allclose(x, y, atol=1e-6, rtol=1e-6,
                                                                            equal_nan=True)
                                   for x, y in zip(a, b))


def build_cases() -> list[Case]:
    """All cases with expected results and known mistakes filled in."""
    ready = [e for e in EXERCISES if notebook_path(e).exists()]  # notebooks not yet written are skipped
    cases = [c for c in all_cases() if c.exercise in ready]
    wrong = {(e, m): mistaken(e, m) for e in ready for m in EDITS[e]}
    for case in cases:
        if case.raises:
            continue
        exact = in_float64(case)
        expected = results_of(reference(case.exercise), exact)
        if expected is None:
            raise RuntimeError(f"The reference solution fails on {case.exercise} / {case.name}.")
        case.expected = expected
        for (exercise, mistake), obj in wrong.items():
            if exercise != case.exercise:
                continue
            got = _seeded_results(obj, case, 0)  # in the case's own dtype, as a student would run it
            if got is not None and _differs(got, _seeded_results(obj, case, 1)):
                continue  # depends on random initial weights: no student could reproduce it
            if got is not None and _differs(got, expected):
                case.mistakes[mistake] = got
        # A result that two mistakes share cannot tell them apart: name neither on this case.
        ambiguous = {m for m, got in case.mistakes.items()
                     if any(n != m and not _differs(got, other) for n, other in case.mistakes.items())}
        for mistake in ambiguous:
            del case.mistakes[mistake]
    return cases


def main() -> None:
    cases = build_cases()
    save_cases(cases)
    counts = {name: sum(c.exercise == name for c in cases) for name in EXERCISES}
    print(f"Wrote {CASES_FILE} ({CASES_FILE.stat().st_size // 1024} KiB): {counts}")


if __name__ == "__main__":
    main()
