"""Build what the released checks read from the manifest and the source solutions.

    python -m attention_course.authoring.build   # rewrite helpers/data/course.json and check_cases.npz

`course.json` is the student view of the manifest (no solutions). `check_cases.npz` holds the
visible cases of every exercise with their expected results (the reference solutions run in
float64) and, where a known mistake gives a result of its own, that wrong result, so the checks
can name the mistake. Hidden cases are not stored: the grader draws its own.
"""

from __future__ import annotations

from attention_course.model.cases import all_cases
from attention_course.model.expected import expected_results, known_mistakes
from attention_course.model.manifest import Course, load, write_student_view
from helpers.casefile import save_cases
from helpers.exercises import Case


def check_cases(course: Course) -> list[Case]:
    """The visible cases with expected results and the results of known mistakes filled in."""
    views = {i["name"]: i for i in course.student_view()["items"]}
    cases = [c for c in all_cases(course) if not c.hidden]
    for case in cases:
        if not case.raises:
            case.expected = expected_results(course, case, views[case.exercise])
            case.mistakes.update(known_mistakes(course, case, views[case.exercise]))
    return cases


def build(course: Course | None = None) -> None:
    """Write course.json and check_cases.npz into the helpers' data folder."""
    course = course or load()
    helpers = course.data_dir
    write_student_view(course, helpers / "course.json")
    from helpers import course as student_course

    with student_course.viewing(course.student_view()):
        cases = check_cases(course)
    save_cases(cases, helpers / "check_cases.npz")
    counts = {item.name: sum(c.exercise == item.name for c in cases) for item in course.exercises()}
    print(f"Wrote {helpers / 'course.json'} and {helpers / 'check_cases.npz'}: visible cases {counts}")


if __name__ == "__main__":
    from pathlib import Path

    build(load(Path.cwd()))
