"""Getting out of the confinement, tried through `make grade` under each layer the machine offers.

In a throw-away copy of the course, with a canary planted in `source/` and in another student's
folder, a secret in the grader's own environment and a TCP listener on loopback, `make grade`
grades the escapers and faulty students of `tests/attacks.py` next to an honest control student,
once confined by Landlock alone and once by bubblewrap alone, both at once. Every attempt must gain nothing:
its exercise scores 0, no attempt reports success, the control student keeps full marks, the
course's files hash the same before and after, the canary and the secret appear in no output, no
process of the class is left, and the listener sees no connection. Under CI=true a layer this
machine cannot offer is a failure, not a skip.
"""

from __future__ import annotations

import concurrent.futures
import csv
import hashlib
import os
import secrets
import socket
import threading
from pathlib import Path

import psutil
import pytest

import attacks
from attention_course.confinement import confine
from attention_course.model.manifest import load
from classroom import submission, write_submission
from conftest import GRADING_SEED, REPO, copy_course, describe, run

pytestmark = pytest.mark.slow
GRADING_OUTPUTS = ("autograded", "feedback", "build", "gradebook.db", "grades.csv", "grades_by_cell.csv")


def _hashes(root: Path) -> dict[str, str]:
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and rel.parts[0] not in GRADING_OUTPUTS and "__pycache__" not in rel.parts:
            found[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


class Listener:
    """A TCP listener on loopback that counts connections."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port, self.connections = self.sock.getsockname()[1], 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()


LAYERS = ["landlock", "bwrap"]


def _grade_under(layer: str, folder: Path) -> dict:
    """The attacks and a control student, graded with only `layer` confining them."""
    token = f"canary-{secrets.token_hex(8)}"
    listener = Listener()
    course_root = copy_course(folder / "course")
    course = load(course_root)
    (course_root / "source" / "CANARY.txt").write_text(token)
    control = write_submission(course_root, "control", submission(course, {}, course.graded_notebooks()), "attention")
    (control / "notes.txt").write_text(token)
    marker = f"leftover-{secrets.token_hex(8)}"
    paths = {
        "course": str(course_root),
        "source_canary": str(course_root / "source" / "CANARY.txt"),
        "other_canary": str(control / "notes.txt"),
        "marker": marker,
        "port": listener.port,
        "grader_pid": os.getpid(),  # outside every layer: the test that runs the grading
        "instructor": str(course.source_notebook("02_scaled_dot_product_attention")),
        "instructor_04": str(course.source_notebook("04_concat_heads")),
    }
    students = attacks.escapes(course, paths)
    for student in students:
        write_submission(course_root, student.name, student.build(course), "attention")
    before = _hashes(course_root)
    args = f"--seed {GRADING_SEED} --seconds 10 --cell-timeout 15 --layers {layer}"
    proc = run(
        ["make", "grade", f"VENV={REPO / '.venv'}", "JOBS=2", f"GRADE_ARGS={args}"],
        cwd=course_root,
        timeout=1800,
        env={"ATTENTION_TEST_SECRET": token},
    )
    with open(course_root / "grades_by_cell.csv") as handle:
        cells = {(r["student"], r["cell"]): r for r in csv.DictReader(handle)}
    return {
        "course": course,
        "root": course_root,
        "proc": proc,
        "cells": cells,
        "students": students,
        "token": token,
        "marker": marker,
        "listener": listener,
        "before": before,
        "layer": layer,
    }


@pytest.fixture(scope="module")
def _every_layer(tmp_path_factory) -> dict:
    """Each layer this machine has, graded at the same time (two classes of attacks on two cores:
    the confinement must hold on a busy machine too); a layer it lacks, with why."""
    why_not = {layer: confine.probe().get(layer) for layer in LAYERS}
    folders = {layer: tmp_path_factory.mktemp(f"attacks-{layer}") for layer in LAYERS}
    with concurrent.futures.ThreadPoolExecutor(len(LAYERS)) as pool:
        futures = {layer: pool.submit(_grade_under, layer, folders[layer]) for layer in LAYERS if not why_not[layer]}
        return {layer: futures[layer].result() if layer in futures else why_not[layer] for layer in LAYERS}


@pytest.fixture(scope="module", params=LAYERS)
def graded(request, _every_layer):
    result = _every_layer[request.param]
    if isinstance(result, str):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{request.param} is not available on this CI machine: {result}")
        pytest.skip(f"{request.param} is not available here: {result}")
    return result


def _row(graded, student, item):
    return graded["cells"][(student, graded["course"].item(item).test_cell)]


def test_grading_ran_confined_by_the_layer_asked_for(graded):
    proc = graded["proc"]
    assert proc.returncode == 0, describe(proc)
    assert f"{graded['layer']} on" in proc.stdout
    summary = (graded["root"] / "autograded" / "control" / "attention" / "01_scaling_problem.ipynb").read_text()
    assert f"confinement: {graded['layer']}" in summary
    with open(graded["root"] / "grades.csv") as handle:
        totals = [r for r in csv.DictReader(handle) if r["notebook"] == "TOTAL"]
    assert totals and all(r["confinement"] == graded["layer"] for r in totals), totals


def test_every_attempt_scores_zero(graded):
    for student in graded["students"]:
        for item, (_kind, name) in student.expected.items():
            row = _row(graded, student.name, item)
            assert float(row["score"]) == 0, f"{student.name}/{name} earned {row['score']}"


def _printed(path: Path) -> list[str]:
    """The lines a notebook's cells printed."""
    import json

    lines = []
    for cell in json.loads(path.read_text())["cells"]:
        for output in cell.get("outputs", []):
            text = output.get("text", "")
            lines += ("".join(text) if isinstance(text, list) else text).splitlines()
    return lines


def test_no_attempt_reports_success(graded):
    for student in graded["students"]:
        for notebook in (graded["root"] / "autograded" / student.name / "attention").glob("*.ipynb"):
            escaped = [line for line in _printed(notebook) if "ESCAPED" in line]
            assert not escaped, f"{student.name}/{notebook.name}: {escaped}"


def test_the_attempts_really_ran(graded):
    """The escape lines are in the autograded notebooks: the attempts ran and were stopped."""
    lines = _printed(graded["root"] / "autograded" / "escaper" / "attention" / "01_scaling_problem.ipynb")
    assert sum(line.startswith("ESCAPE ") and "stopped" in line for line in lines) >= 20, lines


def test_the_sandbox_inbox_is_stopped_by_the_layer(graded):
    """The attempts on the grader's inbox fail for the layer's reason: Landlock refuses the
    permission (the inbox is there to see), bubblewrap does not mount it. An inbox the attempts
    miss for a wrong path would fail with FileNotFoundError under Landlock too."""
    why = {"landlock": "PermissionError", "bwrap": "FileNotFoundError"}[graded["layer"]]
    lines = _printed(graded["root"] / "autograded" / "escaper" / "attention" / "01_scaling_problem.ipynb")
    inbox = [line for line in lines if line.startswith("ESCAPE ") and "the sandbox" in line]
    assert len(inbox) == 3 and all(line.endswith(f"stopped ({why})") for line in inbox), inbox


def test_the_control_student_keeps_full_marks(graded):
    own = {k: r for k, r in graded["cells"].items() if k[0] == "control"}
    assert len(own) == len(graded["course"].items)
    assert all(r["score"] == r["max_score"] for r in own.values()), own


def test_course_files_are_byte_identical(graded):
    assert _hashes(graded["root"]) == graded["before"]
    assert not (graded["root"] / "PWNED.txt").exists()


def test_the_canary_and_the_grader_secret_appear_in_no_output(graded):
    token, root = graded["token"], graded["root"]
    assert token not in graded["proc"].stdout + graded["proc"].stderr
    for name in ("grades.csv", "grades_by_cell.csv"):
        assert token not in (root / name).read_text()
    for student in graded["students"]:
        for folder in ("autograded", "feedback"):
            for path in (root / folder / student.name).rglob("*"):
                if path.is_file() and path.suffix in (".ipynb", ".html"):
                    assert token not in path.read_text(errors="replace"), path


def test_no_process_of_the_class_is_left(graded):
    left = []
    for proc in psutil.process_iter(["cmdline"]):
        if graded["marker"] in " ".join(proc.info["cmdline"] or []):
            left.append(proc.pid)
    assert left == []
    assert not list(Path("/tmp").glob(f"escaped-{graded['marker']}"))


def test_the_network_was_cut(graded):
    assert graded["listener"].connections == 0


@pytest.mark.parametrize(
    "item", ["scaled_scores", "scaled_dot_product_attention", "split_heads", "concat_heads", "to_torch_mha"]
)
def test_a_fault_scores_zero_with_its_reason_in_the_feedback(graded, item):
    student = next(s for s in graded["students"] if s.name == "faulty")
    row = _row(graded, "faulty", item)
    word = student.reasons[item]
    assert float(row["score"]) == 0 and word in row["reason"], row
    notebook = graded["course"].item(item).notebook
    assert word in (graded["root"] / "feedback" / "faulty" / "attention" / f"{notebook}.html").read_text()


def test_what_a_fault_did_not_break_keeps_its_marks(graded):
    broken = {
        graded["course"].item(i).test_cell for i in next(s for s in graded["students"] if s.name == "faulty").expected
    }
    kept = {k[1]: r for k, r in graded["cells"].items() if k[0] == "faulty" and k[1] not in broken}
    assert kept and all(r["score"] == r["max_score"] for r in kept.values()), kept


def test_nothing_is_left_for_manual_grading(graded):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded['root'] / 'gradebook.db'}") as gradebook:
        for sub in gradebook.assignment_submissions("attention"):
            assert not sub.needs_manual_grade, sub.student.id
