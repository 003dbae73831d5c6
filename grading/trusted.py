"""The trusted verdict on one submitted notebook.

The grader never runs student code in its own process. For each notebook it generates fresh test
cases from a grading seed, computes the expected results with the reference solutions, sends
only the inputs to a sandbox process (`grading.sandbox`) limited in time and memory, and judges
the plain numbers that come back with the same staged checks the students see. A sandbox that
dies, hangs or takes too much memory gives 0 for what it was running, with the reason.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import REPO, SOURCE
from .cases import all_cases
from .fixtures import in_float64, results_of
from .limits import Limits, watch
from .reference import define, reference

from helpers.casefile import save_cases  # noqa: E402
from helpers.checks import judge  # noqa: E402
from helpers.exercises import EXERCISES, Case, Outcome  # noqa: E402
from helpers.notebook_code import cell_source, course_cell_sources, forbidden_uses, is_test_cell, notebook_statements, read_notebook  # noqa: E402

QUICK_CHECK = "quick_check_answer"


@dataclass(frozen=True)
class TestCell:
    """A graded test cell of the source: what it checks and what it is worth."""
    notebook: str
    grade_id: str
    target: str       # an exercise of the contract, or QUICK_CHECK
    points: float


@dataclass
class Verdict:
    """The trusted result of one test cell."""
    cell: TestCell
    score: float
    reason: str       # empty when full marks


@functools.lru_cache(maxsize=None)
def test_cells(notebook: str) -> tuple[TestCell, ...]:
    """The graded test cells of a source notebook, in order."""
    cells = []
    for cell in read_notebook(SOURCE / f"{notebook}.ipynb")["cells"]:
        if cell.get("cell_type") == "code" and is_test_cell(cell):
            meta = cell["metadata"]["nbgrader"]
            match = re.search(r"check_\w+\((\w+)", cell_source(cell))
            if not match:
                raise LookupError(f"Test cell {meta['grade_id']} of {notebook} names no exercise.")
            cells.append(TestCell(notebook, meta["grade_id"], match.group(1), float(meta["points"])))
    return tuple(cells)


def target_cell(target: str) -> tuple[str, str]:
    """(notebook, grade_id) of the test cell that grades an exercise or the quick check."""
    for path in sorted(SOURCE.glob("0*.ipynb")):
        for cell in test_cells(path.stem):
            if cell.target == target:
                return path.stem, cell.grade_id
    raise LookupError(f"No test cell grades {target}.")


def graded_notebooks() -> list[str]:
    """The source notebooks with graded cells, by name."""
    return [p.stem for p in sorted(SOURCE.glob("0*.ipynb")) if test_cells(p.stem)]


@functools.lru_cache(maxsize=None)
def quick_check_answer() -> str:
    """The right answer of the multiple-choice cell, read from the source."""
    for cell in read_notebook(SOURCE / "01_scaling_problem.ipynb")["cells"]:
        if QUICK_CHECK in cell_source(cell) and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            source = "\n".join(line for line in cell_source(cell).splitlines() if "###" not in line)
            return define(source, QUICK_CHECK)
    raise LookupError("no quick check answer in the source")


@functools.lru_cache(maxsize=None)
def grading_cases(seed: int) -> tuple[Case, ...]:
    """Fresh cases from `seed`, visible and hidden shapes alike, with reference results."""
    cases = all_cases(seed)
    for case in cases:
        if not case.raises:
            case.expected = results_of(reference(case.exercise), in_float64(case))
    return tuple(cases)


def _normalise_answer(value) -> str:
    return str(value).strip().upper().strip("()\"'. ")


# ----------------------------------------------------------------------------- the sandbox

class SandboxFailed(Exception):
    """The sandbox did not finish: the message says why, in words for the student."""


def _explain_exit(proc: subprocess.Popen) -> str:
    if proc.returncode < 0:
        return f"the Python process running it died ({signal.Signals(-proc.returncode).name})"
    if proc.returncode != 0:
        return f"the Python process running it exited with code {proc.returncode} (os._exit or a crash)"
    return ""


@dataclass
class Unit:
    """One notebook to judge in a sandbox: its file, its source, and the cases of its exercises."""
    notebook: str
    path: Path
    targets: list[str]
    cases: list[Case]

    @property
    def values(self) -> list[str]:
        return [t for t in self.targets if t == QUICK_CHECK]

    def only(self, target: str) -> "Unit":
        return Unit(self.notebook, self.path, [target], [c for c in self.cases if c.exercise == target])


def run_sandbox(units: list[Unit], limits: Limits) -> list[dict]:
    """Run the notebooks' definitions on their cases in one limited process; one report per unit."""
    work = Path(tempfile.mkdtemp(prefix="sandbox-"))
    try:
        cases, request = [], []
        for unit in units:
            request.append({"notebook": str(unit.path.resolve()), "source": str(SOURCE / f"{unit.notebook}.ipynb"),
                            "values": unit.values, "first": len(cases), "count": len(unit.cases)})
            cases += unit.cases
        save_cases(cases, work / "inputs.npz")
        (work / "request.json").write_text(json.dumps({"units": request, "cpu_seconds": int(limits.seconds) + 5}))
        # The process starts in an empty folder: what the student's code can find around it
        # (the released case file, say) holds other inputs than these.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JPY", "JUPYTER"))}
        env.update(PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
        proc = subprocess.Popen([sys.executable, "-m", "grading.sandbox", str(work)], cwd=work, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        problem = watch(proc, limits.memory, limits.seconds, started=(work / "started").exists)
        proc.wait()
        problem = problem or _explain_exit(proc)
        if problem:
            log = work / "student_output.txt"
            last = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
            raise SandboxFailed(problem + (f"; its last words: {last[0][:200]}" if last else ""))
        if not (work / "outputs.npz").exists():
            raise SandboxFailed("the Python process running it stopped before reporting")
        with np.load(work / "outputs.npz", allow_pickle=False) as data:
            report = json.loads(str(data["report"]))
            arrays = {k: torch.from_numpy(np.array(data[k])) for k in data.files if k != "report"}
        return [{**report["units"][n], "arrays": arrays,
                 "cases": report["cases"][r["first"]:r["first"] + r["count"]]} for n, r in enumerate(request)]
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ----------------------------------------------------------------------------- judging

def _outcome(case: Case, entry: dict, arrays: dict) -> Outcome:
    outcome = Outcome(error=tuple(entry["error"]) if entry["error"] else None, problem=entry["problem"],
                      mistake=entry["mistake"], changed_inputs=entry["changed_inputs"])
    if entry["results"] is not None:
        results = []
        for key, dtype in zip(entry["results"], entry.get("dtypes", [])):
            if key in arrays:
                results.append(arrays[key].to(getattr(torch, dtype.replace("torch.", ""))))
            else:
                results.append(_NotATensor(key))
        outcome.results = tuple(results)
    return outcome


class _NotATensor:
    """Stands for a returned value that was not a tensor (only its type name came back)."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self):
        return self.type_name


def judge_exercise(exercise: str, cases: list[Case], report: dict) -> str:
    """The first failure message for an exercise, or '' when every case passes."""
    for case, entry in zip(cases, report["cases"]):
        if not entry["defined"]:
            return f"`{exercise}` is not defined in this notebook."
        if entry["forbidden"]:
            return (f"`{exercise}` used a built-in this exercise forbids ({entry['forbidden'][0]}); "
                    f"it earns no marks here.")
        message = judge(case, _outcome(case, entry, report["arrays"]))
        if message:
            return message
    return ""


def static_forbidden(notebook_path: Path, exercise: str, source: Path) -> list[str]:
    """Forbidden built-ins named anywhere in the student's definitions."""
    names = EXERCISES[exercise].forbidden
    if not names:
        return []
    course = course_cell_sources(read_notebook(source))
    source = "\n".join(notebook_statements(read_notebook(notebook_path), course))
    return forbidden_uses(source, names, own_name=exercise)


def _verdicts(unit: Unit, cells: tuple[TestCell, ...], reports: dict[str, dict], reasons: dict[str, str]) -> list[Verdict]:
    verdicts = []
    for cell in cells:
        target = cell.target
        if target in reasons:
            verdicts.append(Verdict(cell, 0.0, reasons[target]))
            continue
        report = reports[target]
        if target == QUICK_CHECK:
            given = report["values"].get(QUICK_CHECK)
            right = given is not None and _normalise_answer(given) == _normalise_answer(quick_check_answer())
            reason = ("" if right else "No answer: quick_check_answer is not set." if given is None
                      else f"The answer {given!r} is not the right one.")
            verdicts.append(Verdict(cell, cell.points if right else 0.0, reason))
            continue
        found = static_forbidden(unit.path, target, SOURCE / f"{unit.notebook}.ipynb")
        if found:
            verdicts.append(Verdict(cell, 0.0, f"`{target}` uses {found[0]}, which this exercise forbids."))
            continue
        pairs = [(c, e) for c, e in zip(report["unit_cases"], report["cases"]) if c.exercise == target]
        message = judge_exercise(target, [c for c, _ in pairs], {"cases": [e for _, e in pairs],
                                                                 "arrays": report["arrays"]})
        verdicts.append(Verdict(cell, 0.0 if message else cell.points, message))
    return verdicts


def grade_submission(paths: dict[str, Path], seed: int, limits: Limits | None = None) -> dict[str, list[Verdict]]:
    """The trusted verdict on every test cell of a student's notebooks (by source notebook name).

    All notebooks run in one sandbox process; if it breaks, each notebook runs alone, and in a
    notebook that still breaks, each exercise alone: what broke scores 0 with the reason, the
    rest is judged normally.
    """
    limits = limits or Limits()
    verdicts: dict[str, list[Verdict]] = {}
    units = []
    for notebook, path in paths.items():
        cells = test_cells(notebook)
        if not cells:
            continue
        try:
            read_notebook(path)
        except (OSError, ValueError) as exc:
            verdicts[notebook] = [Verdict(c, 0.0, f"The notebook could not be read ({exc}).") for c in cells]
            continue
        targets = [c.target for c in cells]
        units.append(Unit(notebook, path, targets, [c for c in grading_cases(seed) if c.exercise in targets]))

    def attach(unit: Unit, report: dict, reports: dict) -> None:
        report["unit_cases"] = unit.cases
        for target in unit.targets:
            reports[target] = report

    try:
        done = list(zip(units, run_sandbox(units, limits))) if units else []
    except SandboxFailed:
        done = []
        for unit in units:
            try:
                done.append((unit, run_sandbox([unit], limits)[0]))
            except SandboxFailed as failed:
                reports, reasons = {}, {}
                for target in unit.targets:  # exercise by exercise, so one cannot cost another
                    try:
                        attach(unit.only(target), run_sandbox([unit.only(target)], limits)[0], reports)
                    except SandboxFailed as alone:
                        reasons[target] = f"While running `{target}`, {alone if len(unit.targets) > 1 else failed}."
                verdicts[unit.notebook] = _verdicts(unit, test_cells(unit.notebook), reports, reasons)
    for unit, report in done:
        reports: dict[str, dict] = {}
        attach(unit, report, reports)
        verdicts[unit.notebook] = _verdicts(unit, test_cells(unit.notebook), reports, {})
    return verdicts


def grade_notebook(notebook_path: Path, seed: int, limits: Limits | None = None,
                   notebook: str | None = None) -> list[Verdict]:
    """The trusted verdict on every test cell of one submitted notebook (named like its source)."""
    name = notebook or notebook_path.stem
    return grade_submission({name: notebook_path}, seed, limits).get(name, [])
