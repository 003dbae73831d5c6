"""One nbgrader command in its own process (`nbgrader_cli.py`), bounded in time and in its own
memory, with its log kept beside the course folder it ran in; what it gives back (`Ended`) says
why it was stopped, if it was, and which line of its output says what went wrong."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from attention_course.confinement import linux
from attention_course.confinement.limits import kill_tree

from .nbgrader_zygote import Zygote, ZygoteGone

CLI = Path(__file__).with_name("nbgrader_cli.py")


@dataclass
class Ended:
    """How one nbgrader process ended."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    stopped: str = ""  # why it was stopped from outside ("" when it ended by itself)

    def last_error(self) -> str:
        """The line of its output that says what went wrong (the last error, else the last line)."""
        lines = [line for line in (self.stderr + self.stdout).splitlines() if "ERROR" in line or "Error" in line]
        return (lines[-1] if lines else (self.stderr.strip().splitlines() or ["no output"])[-1])[:300]


def nbgrader(
    args: list[str],
    cwd: Path,
    course: Path,
    memory: int | None = None,
    timeout: float | None = None,
    zygote: Zygote | None = None,
) -> Ended:
    """Run nbgrader (started by attention_course/grading/nbgrader_cli.py) in a course folder, within a time bound
    and with its own process's memory bounded (the kernels have their own bounds); past either it
    is stopped with everything below it, and `Ended.stopped` says why. Its log is kept in
    `build/grading/nbgrader-<command>.log` of that folder. With a `zygote`, the process is forked
    from that warm one (a fresh process if the zygote cannot fork)."""
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        # this course's grading plugins and helpers (a copy of the course grades with its own)
        PYTHONPATH=os.pathsep.join([str(course), str(course / "course_helpers")]),
    )
    linux.libc()  # loaded here, not in the child between fork and exec
    log = cwd / "build" / "grading" / f"nbgrader-{args[0]}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w+") as out, tempfile.NamedTemporaryFile("w+") as err:
        proc = None
        if zygote is not None:
            try:
                with open(log.with_name("nbgrader-zygote.log"), "a") as own:
                    proc = zygote.spawn(args, cwd, env, out.name, err.name, own)
            except ZygoteGone as exc:
                err.write(f"{exc}; started afresh\n")
                err.flush()
        if proc is None:
            proc = subprocess.Popen(
                [sys.executable, str(CLI), *args],
                cwd=cwd,
                env=env,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
                preexec_fn=linux.die_with_parent,
            )
        stopped = bounded(proc, memory, timeout)
        out.seek(0)
        err.seek(0)
        stderr, stdout = err.read(), out.read()
        with open(log, "a", encoding="utf-8") as handle:
            said = f"\nstopped: {stopped}" if stopped else ""
            handle.write(f"$ nbgrader {' '.join(args)}\n{stdout}{stderr}{said}\n")
        return Ended(proc.args, proc.returncode, stdout, stderr, stopped)


def bounded(proc: subprocess.Popen, memory: int | None, timeout: float | None) -> str:
    """Wait for `proc`; past `timeout` seconds, or once its own resident memory passes `memory`,
    kill it and everything below it. Returns why it was stopped ("" if it ended by itself)."""
    import psutil

    deadline = None if timeout is None else time.monotonic() + timeout
    why = ""
    while proc.poll() is None:
        if deadline is not None and time.monotonic() > deadline:
            why = f"it ran longer than {timeout:.0f} s"
        elif memory:
            try:
                rss = psutil.Process(proc.pid).memory_info().rss
            except psutil.Error:
                rss = 0
            if rss > memory:
                why = f"nbgrader's own process used {rss / 2**30:.1f} GiB, more than {memory / 2**30:.1f} GiB"
        if why:
            kill_tree(proc.pid)
            break
        try:
            proc.wait(0.5)
        except subprocess.TimeoutExpired:
            pass
    proc.wait()
    return why
