"""A class with the mess of a real one, graded by `make grade` with JOBS=1, JOBS=2 and on a local Dask cluster.

Ten students submit `03_split_heads` (the stall this guards against came after the third or
fourth student of one run): two right answers, two wrong ones, "looper" (an endless loop),
"unlucky" (a fault injected into the trusted grader on its answer), "stuck" (the grader's own
nbgrader process hangs on this student, the way a zmq context left to the garbage collector hung
it: `term()` waiting for a socket nobody closes), and three whose files are bad: JSON nested
deeper than Python's recursion limit, a link to the instructor's solutions, and a student folder
that is a link to another student's (the other kinds of bad file are in test_intake.py), and two
whose kernel stops answering, in a cell before a right answer: "flooder" prints 20 MiB in one
message (zmq drops it, and the output stops arriving), "stubborn" (in the Chinese edition) loops
with a bare `except:` that swallows the interrupt at the cell's time limit. Every
student must get a row: the right ones full marks, every other one 0 where it broke, with the
reason; nobody waits on another; the three runs, graded at the same time, give the same tables to
the byte; the submissions are unchanged and nothing is left in the system's temporary folder. The bound: each student's
nbgrader process gets `--student-seconds 30` plus the trusted grader's bound on one looping
exercise (`--seconds 5`: 25 s; slot.student_bound), 55 s; the run as a whole is held to its test
timeout.
"""

from __future__ import annotations

import concurrent.futures
import csv
import hashlib
import json
import os
import tempfile
from pathlib import Path

import pytest

from attention_course.grading.slot import student_bound
from attention_course.model.manifest import load
from classroom import submission, write_submission, wrong_answer
from conftest import grade_class

pytestmark = pytest.mark.slow
NOTEBOOK = "03_split_heads"
STUDENT_SECONDS = 30
DASK = "dask"  # JOBS=2 on a local Dask cluster of two worker processes (SCHEDULER=local)
RUNS = [1, 2, DASK]
TRUSTED_SECONDS = 5  # the trusted grader's limit on one exercise (the looper's)
RIGHT = ["right1", "right2"]
BAD_FILES = {"deep": "nests more than", "linked": "is a link", "borrowed": "is a link"}
# A cell before the exercise whose kernel stops answering, and what the autograded notebook says.
SILENT = {
    "flooder": ("print('x' * (20 * 2**20))", "en", "The kernel's output stopped arriving"),
    "stubborn": (
        "import time\nwhile True:\n    try:\n        time.sleep(0.5)\n    except:\n        pass",
        "zh-CN",
        "被中断后仍在运行",
    ),
}

INJECTED = """
# Injected by tests/e2e/test_class_grading.py into the grader's own process:
# - on "stuck", garbage collection meets a zmq context whose socket is still open (term() waits
#   for ever), inside the trusted grades step;
# - on "unlucky", the trusted grader fails to judge split_heads.
import gc as _gc
import threading as _threading
import zmq as _zmq
import attention_course.grading.plugins.trusted_grades as _plugins
import attention_course.grading.trusted as _trusted

_save = _plugins.TrustedGrades.preprocess


def _hang(self, nb, resources):
    if resources["nbgrader"]["student"] == "stuck":
        context = _zmq.Context()
        socket = context.socket(_zmq.PUSH)
        socket.linger = -1
        socket.connect("ipc:///nonexistent/attention-test")
        socket.send(b"x", flags=_zmq.DONTWAIT)
        box = [context, socket]
        box.append(box)
        del context, socket, box
        _gc.collect()
    return _save(self, nb, resources)


_plugins.TrustedGrades.preprocess = _hang
_grade, _judge, _who = _trusted._grade_student, _trusted.judge_exercise, _threading.local()


def _remember(course, paths, *args):
    _who.name = next(iter(paths.values())).parent.parent.name if paths else ""
    return _grade(course, paths, *args)


def _faulty(course, item, cases, report, arrays):
    if getattr(_who, "name", "") == "unlucky" and item.name == "split_heads":
        raise KeyError(("split_heads", "a sentence the grader does not have"))
    return _judge(course, item, cases, report, arrays)


_trusted._grade_student, _trusted.judge_exercise = _remember, _faulty
"""


def write_class(root: Path) -> None:
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(INJECTED)
    course = load(root)
    right = submission(course, {}, [NOTEBOOK])
    for student in [*RIGHT, "unlucky", "stuck"]:
        write_submission(root, student, right, "attention")
    for student, mistake in (("wrong_a", "bare_view"), ("wrong_b", "no_transpose")):
        answer = wrong_answer(course, "split_heads", mistake)
        write_submission(root, student, submission(course, {"split_heads": answer}), "attention")
    looping = "def split_heads(x, num_heads):\n    while True:\n        pass\n"
    write_submission(root, "looper", submission(course, {"split_heads": looping}), "attention")
    for student in BAD_FILES:
        write_submission(root, student, right, "attention")
    for student, (code, edition, _) in SILENT.items():
        notebook = submission(course, {}, [NOTEBOOK], edition)
        notebook[NOTEBOOK]["cells"].insert(
            1, {"cell_type": "code", "metadata": {}, "outputs": [], "source": code, "execution_count": None}
        )
        write_submission(root, student, notebook, course.edition(edition).assignment)
    folder = root / "submitted"
    (folder / "deep" / "attention" / f"{NOTEBOOK}.ipynb").write_text(
        '{"nbformat": 4, "cells": [], "metadata": {"x": ' + "[" * 100000 + "]" * 100000 + "}}"
    )
    linked = folder / "linked" / "attention" / f"{NOTEBOOK}.ipynb"
    linked.unlink()
    linked.symlink_to(root / "source" / "attention" / f"{NOTEBOOK}.ipynb")
    borrowed = folder / "borrowed"
    for path in sorted(borrowed.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    borrowed.rmdir()
    borrowed.symlink_to(folder / "right1", target_is_directory=True)


def rows(cells: dict, student: str) -> list[dict]:
    """A student's rows of grades_by_cell.csv for the notebook the class submitted."""
    return [r for (s, _), r in cells.items() if s == student and r["notebook"] == NOTEBOOK]


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): (os.readlink(p) if p.is_symlink() else hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.rglob("*"))
        if p.is_symlink() or p.is_file()
    }


def _leftovers() -> set[Path]:
    """Workspace folders in the system's temporary folder whose grading process is gone."""
    found = set()
    for folder in Path(tempfile.gettempdir()).glob("attention-grading-*"):
        pid = folder.name.removeprefix("attention-grading-").split("-", 1)[0]
        if not pid.isdigit():
            continue  # not this grader's (an older one's, without its pid)
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            found.add(folder)
    return found


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The three runs at once, on purpose: five students graded side by side on two cores, beside
    whatever the other test worker runs. Their tables must still agree to the byte (a verdict may
    not depend on how many are graded at once or how busy the machine is); how much faster
    JOBS=2 is than JOBS=1 is `make bench`'s to measure, on a quiet machine."""
    results = {}
    folders = {jobs: tmp_path_factory.mktemp(f"class{jobs}") for jobs in RUNS}
    before = _leftovers()

    def one(jobs):
        course, cells, output = grade_class(
            folders[jobs],
            write_class,
            jobs=2 if jobs == DASK else jobs,
            scheduler="local" if jobs == DASK else "",
            args=f"--student-seconds {STUDENT_SECONDS} --seconds {TRUSTED_SECONDS} --cell-timeout 10",
            expect_ok=False,
            before_grading=lambda root: results.setdefault(("digests", jobs), _digests(root / "submitted")),
        )
        results[jobs] = (course, cells, output)

    with concurrent.futures.ThreadPoolExecutor(len(RUNS)) as pool:
        for future in [pool.submit(one, jobs) for jobs in RUNS]:
            future.result()
    results["left behind"] = _leftovers() - before
    return results


@pytest.mark.parametrize("jobs", RUNS)
def test_every_student_has_a_row_and_the_right_ones_full_marks(runs, jobs):
    course, cells, output, *_ = runs[jobs]
    students = {s for s, _ in cells}
    assert students == {*RIGHT, "unlucky", "stuck", "wrong_a", "wrong_b", "looper", *BAD_FILES, *SILENT}, output
    for student in [*RIGHT, *SILENT]:
        assert all(r["score"] == r["max_score"] for r in rows(cells, student)), (student, output)


@pytest.mark.parametrize("jobs", RUNS)
def test_a_stuck_grader_costs_only_its_student_with_the_reason(runs, jobs):
    course, cells, output = runs[jobs]
    stuck = rows(cells, "stuck")
    assert stuck and all(r["score"] == "0" and "grading was stopped" in r["reason"] for r in stuck), stuck
    assert f"longer than {student_bound(STUDENT_SECONDS, TRUSTED_SECONDS):.0f} s" in stuck[0]["reason"]
    assert "stuck (attention): graded" in output


@pytest.mark.parametrize("jobs", RUNS)
def test_a_kernel_that_stops_answering_stops_its_notebook_with_the_reason(runs, jobs):
    """The cell says why, in the submission's language; the later cells say they were not run; the
    trusted verdict still gives the right answer its marks (the test above)."""
    course = runs[jobs][0]
    for student, (_, edition, why) in SILENT.items():
        assignment = load(course).edition(edition).assignment
        cells = json.loads((course / "autograded" / student / assignment / f"{NOTEBOOK}.ipynb").read_text())["cells"]
        silent = next(c for c in cells if "".join(c["source"]) == SILENT[student][0])
        assert any(why in "".join(o.get("traceback", [])) for o in silent["outputs"]), silent["outputs"]
        later = [
            c for c in cells[cells.index(silent) + 1 :] if c["cell_type"] == "code" and "".join(c["source"]).strip()
        ]
        assert later and all(c["outputs"][0]["name"] == "stderr" for c in later), later


@pytest.mark.parametrize("jobs", RUNS)
def test_each_bad_file_costs_its_own_student_with_the_reason(runs, jobs):
    course, cells, output, *_ = runs[jobs]
    for student, why in BAD_FILES.items():
        bad = rows(cells, student)
        assert bad and all(r["score"] == "0" and why in r["reason"] for r in bad), (student, bad)


@pytest.mark.parametrize("jobs", RUNS)
def test_wrong_looping_and_unlucky_answers_lose_only_their_cells(runs, jobs):
    course, cells, output, *_ = runs[jobs]
    for student in ("wrong_a", "wrong_b", "looper"):
        row = cells[(student, "test_split_heads")]
        assert float(row["score"]) < float(row["max_score"]), (student, output)
    unlucky = cells[("unlucky", "test_split_heads")]
    assert unlucky["score"] == "0" and "could not judge" in unlucky["reason"]
    assert cells[("unlucky", "test_split_view")]["score"] == cells[("unlucky", "test_split_view")]["max_score"]
    assert "Could not grade fully: " in output and "unlucky (attention)" in output


@pytest.mark.parametrize("table", ["grades.csv", "grades_by_cell.csv"])
@pytest.mark.parametrize("parallel", [2, DASK])
def test_two_jobs_and_dask_give_exactly_the_grades_of_one(runs, table, parallel):
    assert (runs[parallel][0] / table).read_text() == (runs[1][0] / table).read_text()
    with open(runs[1][0] / "grades.csv") as handle:
        totals = {r["student"]: float(r["score"]) for r in csv.DictReader(handle) if r["notebook"] == "TOTAL"}
    assert len(set(totals.values())) > 2, totals  # different students, different scores


def test_dask_grades_on_two_workers_and_merges_as_results_arrive(runs):
    course, _, output, *_ = runs[DASK]
    assert "Dask: 2 worker(s)" in output, output
    journal = [json.loads(line) for line in (course / "build" / "grading" / "journal.jsonl").read_text().splitlines()]
    graded = [line["student"] for line in journal if line.get("digest")]
    assert len(graded) == len(set(graded)), journal  # each student merged once
    assert journal[0].get("start") and journal[-1].get("end"), journal


def test_two_jobs_grade_in_two_places(runs):
    assert sorted(p.name for p in (runs[2][0] / "build" / "grading" / "slots").iterdir()) == ["slot0", "slot1"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_each_slot_forks_its_students_nbgrader_processes_from_one_warm_one(runs, jobs):
    """Even the student whose nbgrader process hung and was killed left its slot's warm process
    able to fork the next one: no student of this machine's runs was started afresh."""
    for slot in (runs[jobs][0] / "build" / "grading" / "slots").iterdir():
        logs = slot / "build" / "grading"
        assert (logs / "nbgrader-zygote.log").exists(), slot
        assert "started afresh" not in (logs / "nbgrader-grade-group.log").read_text(), slot


@pytest.mark.parametrize("jobs", RUNS)
def test_submissions_are_unchanged_and_nothing_is_left_behind(runs, jobs):
    course = runs[jobs][0]
    assert _digests(course / "submitted") == runs[("digests", jobs)]
    assert not runs["left behind"], runs["left behind"]
