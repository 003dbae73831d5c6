"""Right answers keep full marks however many students are graded at once and however busy the machine.

One run of the whole situation a course machine meets (the issue that brought this test: six
students at once shared the sandbox account's 64-task limit and right answers scored 0):
- class A: eight students, `make grade JOBS=8` (well above this machine's cores), among them
  "shaken", whose first sandbox and first kernel are stopped from outside as they start (a
  SIGTERM that is not the student's): both must be started again, the kernel's notebook run in
  full, and the marks kept; and "doomed", whose sandbox is stopped from outside
  every time: after the retries its cells are a grading fault for the teacher (0, flagged for
  manual grading, named in the output, `make grade` exits non-zero, not journaled as graded),
  never a student's failure;
- class B, at the same time on the same machine: four students on a local Dask cluster of
  four workers;
- beside both, a burner on every core and one more.
Every other student of both classes submits the reference answers, and every one of their cells
gets full marks. Each student hands in two notebooks (a kernel and a sandbox each, as with all
nine: what the limit counted was students at once, not notebooks).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from attention_course.grading.sandbox_run import SANDBOX_ATTEMPTS
from attention_course.model.manifest import load
from classroom import submission, write_submission
from conftest import GRADING_SEED, REPO, copy_course, venv_env

pytestmark = pytest.mark.slow
NOTEBOOKS = ["01_scaling_problem", "05_output_projection"]
A = [f"right{n}" for n in range(6)] + ["shaken", "doomed"]
B = [f"other{n}" for n in range(4)]

# Appended to each class's nbgrader_config.py: the grader's own process stops the sandbox of
# "shaken" once and of "doomed" every time, from outside, right after starting it.
STOPPER = """
import signal as _signal
import subprocess as _subprocess

import jupyter_client.launcher as _launcher

_Popen, _stopped = _subprocess.Popen, set()


class _Stopping(_Popen):
    def __init__(self, args, *more, **options):
        super().__init__(args, *more, **options)
        text = " ".join(map(str, args)) if isinstance(args, (list, tuple)) else str(args)
        kind = "sandbox" if ".sandbox-policy.json" in text else "kernel" if "ipykernel" in text else ""
        if kind and ("/doomed-attention" in text and kind == "sandbox" or "/shaken-attention" in text):
            if ("/doomed-attention" in text) or kind not in _stopped:
                _stopped.add(kind)
                self.send_signal(_signal.SIGTERM)


_subprocess.Popen = _launcher.Popen = _Stopping
"""


def _class(root: Path, students: list[str]) -> Path:
    course = copy_course(root)
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(STOPPER)
    right = submission(load(course), {}, NOTEBOOKS)
    for student in students:
        write_submission(course, student, right, "attention")
    return course


def _grade(course: Path, jobs: int, scheduler: str = "") -> subprocess.Popen:
    args = f"--seed {GRADING_SEED} --seconds 20 --cell-timeout 60"
    return subprocess.Popen(
        ["make", "grade", f"VENV={REPO / '.venv'}", f"JOBS={jobs}", f"SCHEDULER={scheduler}", f"GRADE_ARGS={args}"],
        cwd=course,
        env=venv_env(),
        stdout=open(course.parent / f"{course.name}.log", "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    root = tmp_path_factory.mktemp("load")
    a, b = _class(root / "a", A), _class(root / "b", B)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range((os.cpu_count() or 1) + 1)]
    try:
        started = time.monotonic()
        runs = {a: _grade(a, jobs=len(A)), b: _grade(b, jobs=len(B), scheduler="local")}
        codes = {course: run.wait(1800) for course, run in runs.items()}
        seconds = time.monotonic() - started
    finally:
        for burner in burners:
            burner.kill()
    return {"a": a, "b": b, "codes": codes, "seconds": seconds}


def _cells(course: Path) -> dict[tuple[str, str], dict]:
    """The rows of grades_by_cell.csv of the notebooks handed in."""
    with open(course / "grades_by_cell.csv") as handle:
        return {(r["student"], r["cell"]): r for r in csv.DictReader(handle) if r["notebook"] in NOTEBOOKS}


def _log(course: Path) -> str:
    return (course.parent / f"{course.name}.log").read_text()


def test_every_right_answer_keeps_full_marks_with_both_classes_graded_at_once_on_a_burning_machine(busy):
    for course, students in ((busy["a"], A[:-1]), (busy["b"], B)):
        cells = _cells(course)
        graded = [r for (student, _), r in cells.items() if student in students]
        each = sum(len(load(course).items_in(notebook)) for notebook in NOTEBOOKS)
        assert len(graded) == len(students) * each, (len(graded), _log(course))
        wrong = [r for r in graded if r["score"] != r["max_score"]]
        assert not wrong, (wrong, _log(course))


def test_a_sandbox_and_a_kernel_stopped_once_from_outside_are_started_again(busy):
    a, b = busy["a"], busy["b"]
    assert busy["codes"][b] == 0, _log(b)
    faults = [line for line in _log(a).splitlines() if "fault" in line]
    assert faults and all(f"stopped {SANDBOX_ATTEMPTS} times" in line for line in faults), faults  # doomed's only
    shaken = [r for (student, _), r in _cells(a).items() if student == "shaken"]
    assert shaken and all(r["score"] == r["max_score"] for r in shaken), shaken
    for notebook in NOTEBOOKS:  # the kernel was started again: every cell ran
        graded = json.loads((a / "autograded" / "shaken" / "attention" / f"{notebook}.ipynb").read_text())
        errors = [o for c in graded["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors and "Not run" not in json.dumps(graded), (notebook, errors)


def test_a_sandbox_stopped_every_time_is_the_grader_s_fault_flagged_for_the_teacher(busy):
    b = busy["a"]
    output = _log(b)
    assert busy["codes"][b] != 0, output
    assert "doomed" in output and "grader fault" in output, output
    doomed = [r for (student, _), r in _cells(b).items() if student == "doomed"]
    exercises = [
        r for r in doomed if r["cell"] in ("test_raw_scores", "test_scaled_scores", "test_multi_head_attention")
    ]
    assert exercises and all(float(r["score"]) == 0 for r in exercises), doomed
    assert all(f"stopped {SANDBOX_ATTEMPTS} times" in r["reason"] for r in exercises), exercises
    with Gradebook(f"sqlite:///{b / 'gradebook.db'}") as gradebook:
        submission_ = gradebook.find_submission("attention", "doomed")
        flagged = {g.name for nb in submission_.notebooks for g in nb.grades if g.needs_manual_grade}
    assert {r["cell"] for r in exercises} <= flagged, flagged
    journal = [json.loads(line) for line in (b / "build" / "grading" / "journal.jsonl").read_text().splitlines()]
    assert not [line for line in journal if line.get("student") == "doomed" and line.get("digest")]
