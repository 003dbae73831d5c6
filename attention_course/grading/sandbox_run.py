"""The trusted sandbox, run from the grader's side: the request (each notebook's statements and
exercises, the cases' inputs, the limits) put in the grader's inbox, the driver
(`attention_course.sandbox.driver`) started confined as the student's account, its reports read
back as they come, and how it ended: the confinement's status, the backstop's bound."""

from __future__ import annotations

import ast
import functools
import json
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import attention_course.sandbox.driver
from attention_course.confinement import confine
from attention_course.confinement.limits import kill_tree, watch
from attention_course.model.manifest import Course, write_student_view
from attention_course.sandbox.driver import WALL_FACTOR, read_frames
from helpers.casefile import save_cases
from helpers.cells import read_notebook
from helpers.exercises import Case
from helpers.notebook_code import course_cell_sources

from .settings import Grading
from .workspace import Workspace

SANDBOX = Path(attention_course.sandbox.driver.__file__)
STARTUP_SECONDS = 120  # starting Python and importing torch inside the sandbox, on a busy machine
# A sandbox whose driver stops (it never runs student code: a signal from outside, the grader's
# own error, a machine out of some resource) is run again for the notebooks it had not finished:
# three times in all, so a passing disturbance is ridden out and a lasting one is reported as
# the grader's fault (never as the student's) after about three sandbox start-ups.
SANDBOX_ATTEMPTS = 3


class ConfinementFailed(Exception):
    """The confinement could not be set up: the student is not graded (never unconfined)."""


class SandboxFailed(Exception):
    """The sandbox as a whole did not finish (each exercise's own failures are in its report)."""


@functools.lru_cache(maxsize=8)
def course_modules(course: Course, edition: str) -> tuple[str, ...]:
    """The modules the course's own cells import (the driver imports them once, before it forks,
    so that every notebook's definitions do not import matplotlib and the labs afresh)."""
    names: list[str] = []
    for notebook in course.graded_notebooks():
        for source in sorted(course_cell_sources(read_notebook(course.source_notebook(notebook, edition)))):
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            for node in tree.body:
                if isinstance(node, ast.Import):
                    names += [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return tuple(dict.fromkeys(names))


@dataclass
class Unit:
    """One notebook's exercises to run in the sandbox."""

    notebook: str
    statements: list[str]
    exercises: list[str]


def run_sandbox(
    units: list[Unit],
    cases: list[Case],
    workspace: Workspace,
    course: Course,
    settings: Grading,
    layers: list[str],
    edition: str = "en",
):
    """Run the units confined; yields (report, arrays) for each unit, in order, as soon as the
    sandbox has done it. Raises SandboxFailed (after the units that came back) or ConfinementFailed."""
    work, inbox = workspace.sandbox, workspace.inbox
    save_cases(cases, inbox / "inputs.npz")
    views = {i["name"]: i for i in course.student_view()["items"]}
    request = {
        "units": [{"notebook": u.notebook, "statements": u.statements, "exercises": u.exercises} for u in units],
        "specs": {name: views[name] for u in units for name in u.exercises},
        "memory": int(settings.memory_gib * 2**30),
        "seconds": settings.seconds,
        "preload": list(course_modules(course, edition)),
    }
    (inbox / "request.json").write_text(json.dumps(request))
    # the sandbox's helpers (the inbox's copy) read the course being graded, not the installed one
    write_student_view(course, inbox / "helpers" / "data" / "course.json")
    workspace.hand_over()
    policy_path = str(workspace.root.parent / f"{workspace.root.name}.sandbox-policy.json")
    program = [sys.executable, "-I", "-", str(inbox), str(work)]
    argv = confine.command(workspace.policy(settings, layers, sandbox=True), program, policy_path)
    exercises = sum(len(u.exercises) for u in units)
    problem: list[str] = []
    finished = False
    with open(work.parent / "sandbox-stderr", "wb") as err:  # the sandbox's log, for a person
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        # The driver limits each exercise; this is the backstop for the whole run.
        watcher = threading.Thread(
            target=lambda: problem.append(
                watch(
                    proc,
                    int(settings.memory_gib * 2**30) + 2**30,
                    STARTUP_SECONDS + exercises * (WALL_FACTOR * settings.seconds + 10),
                )
            ),
            daemon=True,
        )
        try:
            proc.stdin.write(SANDBOX.read_bytes())
            proc.stdin.close()
            watcher.start()
            for header, arrays in read_frames(proc.stdout):
                if header.get("done"):
                    finished = True
                    break
                yield header["report"], {k: torch.from_numpy(np.array(v)) for k, v in arrays.items()}
        finally:
            if not finished and proc.poll() is None:
                kill_tree(proc.pid)  # the caller stopped listening, or the channel broke
            if watcher.ident is not None:
                watcher.join()
            proc.wait()
            proc.stdout.close()
    status = confine.read_status(policy_path) or {"outcome": "killed", "reason": "", "exit": proc.returncode}
    Path(confine.status_path(policy_path)).unlink(missing_ok=True)
    if status["outcome"] in ("unavailable", "usage"):
        raise ConfinementFailed(f"confine: {status['layer']}: {status['reason']}")
    stop = problem[0] if problem else ""
    if stop or status["outcome"] != "exited" or status["exit"] != 0 or not finished:
        raise SandboxFailed(
            {"kind": stop.kind, "gib" if stop.kind == "memory" else "seconds": stop.limit}
            if stop
            else {"kind": "stopped", "detail": status["reason"] or _ended(status["exit"])}
        )


def _ended(code: int | None) -> str:
    """How a sandbox process ended, for a person: `ended by SIGINT` rather than exit -2 or 130."""
    number = -code if code is not None and code < 0 else code - 128 if code is not None and code > 128 else None
    try:
        return f"ended by {signal.Signals(number).name}" if number else f"exit {code}"
    except ValueError:
        return f"exit {code}"
