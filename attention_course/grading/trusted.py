"""The trusted verdict on a student's submission.

Nothing the student's code does can change it. For each graded notebook the grader:
- reads a question's answer from its answer cell without running anything (a literal, or for a
  numeric question arithmetic on numbers) and judges a number within the manifest's tolerance;
- for exercises, takes the notebook's definitions with `ast`; when an exercise forbids
  built-ins, keeps only the statements the exercises need and holds them to the static policy
  (`helpers.policy`, the one the visible check runs), draws fresh cases from the grading seed,
  and sends only the inputs to the sandbox (`attention_course.sandbox.driver`), which runs confined
  (`attention_course.confinement.confine`) in the student's workspace, and runs those statements and no others;
- judges the numbers that come back with the same staged checks the students see, in its own
  process and in the submission's language.
A fault of the grader itself while judging one answer costs only that cell (0, with the reason)
and is reported as a fault, so the teacher hears of it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import torch

from attention_course.model.cases import all_cases
from attention_course.model.expected import expected_results, known_mistakes
from attention_course.model.manifest import Course, Item
from helpers import course as student_course
from helpers.cells import read_notebook
from helpers.checks import judge
from helpers.exercises import Case, Outcome
from helpers.i18n import _, using
from helpers.notebook_code import course_cell_sources, notebook_statements
from helpers.policy import check_exercise, refusal
from helpers.statements import needed_statements

from . import near_names
from .answers import assigned, choice_answer, judge_choice, judge_numeric
from .intake import Unreadable, read_submission
from .sandbox_run import SANDBOX_ATTEMPTS, SandboxFailed, Unit, run_sandbox
from .settings import Grading
from .workspace import Workspace


@dataclass(frozen=True)
class TestCell:
    """A graded test cell: the item it grades and what it is worth."""

    notebook: str
    grade_id: str
    item: str
    points: float


@dataclass
class Verdict:
    """The trusted result of one test cell."""

    cell: TestCell
    score: float
    reason: str  # empty when full marks
    fault: bool = False  # the grader itself failed on this cell


def test_cells(course: Course, notebook: str) -> list[TestCell]:
    """The graded test cells of a notebook, from the manifest."""
    return [TestCell(notebook, item.test_cell, item.name, item.points) for item in course.items_in(notebook)]


@functools.lru_cache(maxsize=8)
def grading_cases(course: Course, seed: int) -> tuple[Case, ...]:
    """Fresh cases from `seed`, visible and hidden kinds alike, with the reference results."""
    views = {i["name"]: i for i in course.student_view()["items"]}
    cases = all_cases(course, seed)
    for case in cases:
        if not case.raises:
            case.expected = expected_results(course, case, views[case.exercise])
    return tuple(cases)


# ----------------------------------------------------------------------------- exercises


def statements_of(
    course: Course, notebook: str, path: Path, forbidding: bool, edition: str = "en"
) -> tuple[list[str], list[str]]:
    """(the definitions the sandbox runs for a submitted notebook, every definition it makes).

    Test cells and top-level actions are left out, and the course's own cells contribute only
    their definitions. For a notebook whose exercises forbid the built-ins, the sandbox runs only
    what the notebook's exercises need (`helpers.statements.needed_statements`): exactly what the
    policy reads, so a scratch cell or a demo neither costs marks nor runs."""
    course_cells = course_cell_sources(read_notebook(course.source_notebook(notebook, edition)))
    submitted = read_submission(path).notebook
    student = notebook_statements(submitted, course_cells, which="student")
    ours = notebook_statements(submitted, course_cells, which="course")
    every = ours + student
    if forbidding:
        return needed_statements(every, [i.name for i in course.items_in(notebook) if not i.is_question]), every
    return every, every


def _outcome(index: int, entry: dict, arrays: dict) -> Outcome:
    outcome = Outcome(
        error=tuple(entry["error"]) if entry["error"] else None,
        problem=entry["problem"],
        mistake=entry["mistake"],
        changed_inputs=list(entry.get("changed_inputs", [])),
    )
    if entry["results"] is not None:
        results = []
        for key, dtype in zip(entry["results"], entry["dtypes"]):
            array = arrays.get(f"c{index}/{key}")
            results.append(
                _NotATensor(key)
                if array is None or dtype is None
                else array.to(getattr(torch, str(dtype).replace("torch.", "")))
            )
        outcome.results = tuple(results)
    return outcome


class _NotATensor:
    """Stands for a returned value that was not a tensor (only its type name came back)."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self):
        return self.type_name


def describe_failure(failed: dict) -> str:
    """Why the sandbox stopped an exercise, in the submission's language."""
    kind = failed.get("kind")
    if kind == "memory":
        return _("it used more than {gib:.1f} GiB of memory and was stopped").format(gib=failed["gib"])
    if kind == "timeout":
        return _("it ran longer than {seconds:.0f} s (an endless loop or a long sleep?) and was stopped").format(
            seconds=failed["seconds"]
        )
    if kind == "signal":
        return _("the Python process running it died ({signal})").format(signal=failed["signal"])
    if kind == "exit":
        return _("the Python process running it exited with code {code} (os._exit or a crash)").format(
            code=failed["code"]
        )
    return _("the sandbox stopped: {detail}").format(detail=failed.get("detail", ""))


def judge_exercise(course: Course, item: Item, cases: list[tuple[int, Case]], report: dict, arrays: dict) -> str:
    """The first failure message for an exercise, or '' when every case passes. A failed case's
    message names the catalogued mistake whose result the answer reproduces, as the visible
    checks do (the mistakes' results are computed only for a case that failed)."""
    ran = report["exercises"].get(item.name, {})
    if "failed" in ran:
        return _("While running `{name}`, {reason}.").format(name=item.name, reason=describe_failure(ran["failed"]))
    for index, case in cases:
        entry = report["cases"].get(str(index))
        if entry is None:
            return _("`{name}` was not run (the sandbox stopped before it).").format(name=item.name)
        if not entry["defined"]:
            return _("`{name}` is not defined in this notebook.").format(name=item.name)
        if entry.get("ops"):
            return _("`{name}` used a built-in this exercise forbids ({op}); it earns no marks here.").format(
                name=item.name, op=entry["ops"][0]
            )
        outcome = _outcome(index, entry, arrays)
        message = judge(case, outcome)
        if message and item.mistakes and not case.mistakes and not case.raises:
            views = {i["name"]: i for i in course.student_view()["items"]}
            case.mistakes.update(known_mistakes(course, case, views[item.name]))
            message = judge(case, outcome) if case.mistakes else message
        if message:
            return message
    return ""


# ----------------------------------------------------------------------------- a whole student


def grade_student(
    course: Course,
    paths: dict[str, Path],
    seed: int,
    settings: Grading,
    layers: list[str],
    workspace: Workspace,
    edition: str = "en",
    publish=None,
    submitted: Path | None = None,
) -> dict[str, list[Verdict]]:
    """The trusted verdict on every test cell of a student's notebooks (by notebook name), judged
    against the course's cells of the submission's edition and in its language.

    `publish(notebook, verdicts)` is called for each notebook as soon as its verdicts are known,
    so nbgrader can take a notebook's grades while the sandbox is still busy with later ones.
    Raises ConfinementFailed when the sandbox could not be confined (the caller reports the
    student and grades nothing for them)."""
    with student_course.viewing(course.student_view()), using(course.edition(edition).language):
        return _grade_student(course, paths, seed, settings, layers, workspace, edition, publish, submitted)


def _grade_student(
    course, paths, seed, settings, layers, workspace, edition="en", publish=None, submitted=None
) -> dict[str, list[Verdict]]:
    decided: dict[str, Verdict] = {}
    units: list[Unit] = []
    folder = next(iter(paths.values())).parent if paths else submitted
    for notebook in course.graded_notebooks():
        cells = {c.item: c for c in test_cells(course, notebook)}
        path = paths.get(notebook)
        notebook_json = None
        if path is not None:
            try:
                notebook_json = read_submission(path).notebook
            except Unreadable as bad:
                reason = bad.sentence()
                decided.update({name: Verdict(cell, 0.0, reason) for name, cell in cells.items()})
                continue
        if notebook_json is None:
            decided.update({name: Verdict(cell, 0.0, missing(notebook, folder)) for name, cell in cells.items()})
            continue
        forbidding = any(item.forbid_builtins for item in course.items_in(notebook))
        statements, every = statements_of(course, notebook, path, forbidding, edition)
        run = []
        for item in course.items_in(notebook):
            cell = cells[item.name]
            try:
                if item.is_question:
                    language = course.edition(edition).language
                    if item.is_numeric:
                        score, reason = judge_numeric(item, assigned(notebook_json, item), language)
                    else:
                        score, reason = judge_choice(item, choice_answer(notebook_json, item), language)
                    decided[item.name] = Verdict(cell, score, reason)
                    continue
                if item.forbid_builtins:
                    names = tuple(i.name for i in course.exercises())
                    found = check_exercise(every, item.name, course.forbidden, names)
                    if found:
                        decided[item.name] = Verdict(cell, 0.0, refusal(item.name, found))
                        continue
                run.append(item.name)
            except Exception as exc:
                decided[item.name] = _fault(cell, exc)
        if run:
            units.append(Unit(notebook, statements, run))

    def verdicts_of(notebook: str) -> list[Verdict]:
        return [decided[c.item] for c in test_cells(course, notebook) if c.item in decided]

    waiting = {u.notebook for u in units}
    for notebook in course.graded_notebooks():
        if publish and notebook not in waiting and verdicts_of(notebook):
            publish(notebook, verdicts_of(notebook))

    def judge_unit(unit: Unit, report: dict, arrays: dict, indexed: list, fault: str = "") -> None:
        for name in unit.exercises:
            item = course.item(name)
            cell = next(c for c in test_cells(course, unit.notebook) if c.item == name)
            if fault:
                decided[name] = Verdict(cell, 0.0, fault, fault=True)
                continue
            try:
                mine = [(i, c) for i, c in indexed if c.exercise == name]
                message = judge_exercise(course, item, mine, report, arrays)
                decided[name] = Verdict(cell, 0.0 if message else cell.points, message)
            except Exception as exc:
                decided[name] = _fault(cell, exc)
        if publish:
            publish(unit.notebook, verdicts_of(unit.notebook))

    left = list(units)
    for attempt in range(1, SANDBOX_ATTEMPTS + 1):
        if not left:
            break
        wanted = {name for u in left for name in u.exercises}
        indexed = list(enumerate(c for c in grading_cases(course, seed) if c.exercise in wanted))
        try:
            for report, arrays in run_sandbox(
                left, [c for _, c in indexed], workspace, course, settings, layers, edition
            ):
                if left:
                    judge_unit(left.pop(0), report, arrays, indexed)
        except SandboxFailed as failed:
            stop = failed.args[0]
            if stop["kind"] == "stopped" and attempt < SANDBOX_ATTEMPTS:
                continue  # not the student's doing (the driver never runs student code): again
            fault = (
                _(
                    "The grader could not run this answer: its sandbox stopped {times} times ({detail}) "
                    "outside the code it was testing. Your teacher has been told and will grade it by hand."
                ).format(times=attempt, detail=stop.get("detail", ""))
                if stop["kind"] == "stopped"
                else ""
            )
            report = {"cases": {}, "exercises": {n: {"failed": stop} for u in left for n in u.exercises}}
            for unit in left:
                judge_unit(unit, report, {}, indexed, fault)
            left = []
    notebooks = {v.cell.notebook for v in decided.values()}
    return {nb: verdicts_of(nb) for nb in course.graded_notebooks() if nb in notebooks}


def missing(notebook: str, folder: Path | None) -> str:
    """Why a graded notebook has no submission: not handed in, or handed in under a near name."""
    try:
        files = [path.name for path in folder.iterdir()] if folder is not None else []
    except OSError:
        files = []
    found = near_names.near(notebook, files)
    if found:
        return _("{notebook}.ipynb was not submitted; found {found}: rename it to {notebook}.ipynb.").format(
            notebook=notebook, found=found
        )
    return _("{notebook}.ipynb was not submitted.").format(notebook=notebook)


def _fault(cell: TestCell, exc: Exception) -> Verdict:
    return Verdict(
        cell,
        0.0,
        _("The grader could not judge this answer ({kind}: {text}); your teacher has been told.").format(
            kind=type(exc).__name__, text=str(exc)[:200]
        ),
        fault=True,
    )
