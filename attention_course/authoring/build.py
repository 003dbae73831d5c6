"""Build what the released checks read from the manifest and the source solutions.

    python -m attention_course.authoring.build   # rewrite helpers/data/course.json and check_cases.npz

`course.json` is the student view of the manifest (no solutions). `check_cases.npz` holds the
visible cases of every exercise with their expected results (the reference solutions run in
float64) and, where a known mistake gives a result of its own, that wrong result, so the checks
can name the mistake. Hidden cases are not stored: the grader draws its own.
"""

from __future__ import annotations

import warnings

import torch

from attention_course.model.cases import all_cases
from attention_course.model.expected import expected_results, results_of
from attention_course.model.manifest import Course, load, write_student_view
from attention_course.model.reference import mistaken
from helpers.casefile import save_cases
from helpers.exercises import Case


def _seeded_results(obj, case: Case, spec: dict, seed: int) -> tuple | None:
    torch.manual_seed(seed)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return results_of(obj, case, spec)


def _differs(a: tuple | None, b: tuple | None) -> bool:
    if a is None or b is None:
        return a is not b
    return len(a) != len(b) or any(
        x.shape != y.shape
        or (x.dtype == torch.bool) != (y.dtype == torch.bool)
        or not torch.allclose(x.double(), y.double(), atol=1e-6, rtol=1e-6, equal_nan=True)
        for x, y in zip(a, b)
    )


def check_cases(course: Course) -> list[Case]:
    """The visible cases with expected results and the results of known mistakes filled in."""
    views = {i["name"]: i for i in course.student_view()["items"]}
    cases = [c for c in all_cases(course) if not c.hidden]
    wrong = {(item.name, m): mistaken(course, item, m) for item in course.exercises() for m in item.mistakes}
    for case in cases:
        if case.raises:
            continue
        spec = views[case.exercise]
        case.expected = expected_results(course, case, spec)
        for (exercise, mistake), obj in wrong.items():
            if exercise != case.exercise:
                continue
            got = _seeded_results(obj, case, spec, 0)  # in the case's own dtype, as a student would run it
            if got is not None and _differs(got, _seeded_results(obj, case, spec, 1)):
                continue  # depends on random initial weights: no student could reproduce it
            if got is not None and _differs(got, case.expected):
                case.mistakes[mistake] = got
        # A result that two mistakes share cannot tell them apart: name neither on this case.
        ambiguous = {
            m
            for m, got in case.mistakes.items()
            if any(n != m and not _differs(got, other) for n, other in case.mistakes.items())
        }
        for mistake in ambiguous:
            del case.mistakes[mistake]
    return cases


def build(course: Course | None = None) -> None:
    """Write course.json and check_cases.npz into the helpers' data folder."""
    course = course or load()
    helpers = course.data_dir
    write_student_view(course, helpers / "course.json")
    from helpers import course as student_course

    student_course.install(course.student_view())
    try:
        cases = check_cases(course)
    finally:
        student_course.install(None)
    save_cases(cases, helpers / "check_cases.npz")
    counts = {item.name: sum(c.exercise == item.name for c in cases) for item in course.exercises()}
    print(f"Wrote {helpers / 'course.json'} and {helpers / 'check_cases.npz'}: visible cases {counts}")


if __name__ == "__main__":
    from pathlib import Path

    build(load(Path.cwd()))
