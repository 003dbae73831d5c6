"""nbgrader processes forked from a warm one: each of `make grade`'s slots (and each thread of a
Dask worker) starts one process
(`nbgrader_cli.py zygote`) that imports nbgrader, nbconvert, PyTorch and the course's plugins
once, and forks it for each student it grades. Each student still gets a process of their own,
with its own session, bound, memory watch and output files; only the imports are shared.

The zygote is single-threaded and does one thing at a time: it reads a request (one JSON line:
the command line and the files for its output), forks, answers with the child's pid, waits for
the child and answers with its exit status. `Forked` stands for that child where
`nbgrader_process.bounded` expects a `subprocess.Popen` (`pid`, `poll`, `wait`, `returncode`).
The zygote dies with the thread that started it (PR_SET_PDEATHSIG), its children with it.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

from attention_course.confinement import linux

PRELOAD = (
    "torch",
    "nbgrader.apps.api",
    "nbgrader.coursedir",
    "traitlets.config.loader",
    "attention_course.grading.plugins.execute",
    "attention_course.grading.plugins.readable",
    "attention_course.grading.plugins.submitted",
    "attention_course.grading.plugins.tidy",
    "attention_course.grading.plugins.trusted_grades",
    "attention_course.grading.feedback_pages",
    "attention_course.grading.export",
)  # what a student's nbgrader process imports before it grades
ANSWER_SECONDS = 120.0  # a zygote that does not answer a request in this time is given up


class ZygoteGone(RuntimeError):
    """The zygote ended or does not answer."""


# ---------------------------------------------------------------------------------------------
# In the zygote (nbgrader_cli.py zygote)
# ---------------------------------------------------------------------------------------------
def serve(preload: tuple[str, ...] = PRELOAD) -> list[str]:
    """Import `preload`, then fork a child for each request. Returns only in a child: its
    command line, with its standard streams on the request's files. The zygote itself exits
    when its requests end (the slot closed them or died)."""
    import importlib

    linux.not_dumpable()  # as the nbgrader processes it forks: no process of its uid may reach into it
    requests, answers = os.dup(0), os.dup(1)  # private copies; 0 and 1 are not the protocol's
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    for name in preload:
        try:
            importlib.import_module(name)
        except ImportError:  # the child imports what it needs itself
            pass
    gc.collect()
    gc.freeze()  # the collector leaves what is imported alone: the children share its pages
    pending = b""
    while True:
        while b"\n" not in pending:
            chunk = os.read(requests, 65536)
            if not chunk:
                os._exit(0)
            pending += chunk
        line, pending = pending.split(b"\n", 1)
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        if threading.active_count() != 1:  # never fork a process with threads: answer "no"
            os.write(answers, b"0\n")
            continue
        pid = os.fork()
        if pid == 0:
            return _become_child(request, (requests, answers, devnull))
        os.write(answers, f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        os.write(answers, f"{os.waitstatus_to_exitcode(status)}\n".encode())


def _become_child(request: dict, private: tuple[int, ...]) -> list[str]:
    """In the forked child: what `subprocess.Popen(start_new_session=True)` with the slot's
    streams would have given it, and dying with the zygote."""
    os.setsid()
    linux.die_with_parent()
    if os.getppid() == 1:  # the zygote died before the line above
        os._exit(1)
    for stream, path in ((1, request["stdout"]), (2, request["stderr"])):
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(fd, stream)
        os.close(fd)
    for fd in private:
        os.close(fd)
    os.chdir(request["cwd"])
    return list(request["args"])


# ---------------------------------------------------------------------------------------------
# In make grade's slot
# ---------------------------------------------------------------------------------------------
class Forked:
    """One student's nbgrader process, a child of the zygote, as `subprocess.Popen` is used."""

    def __init__(self, zygote: Zygote, pid: int, args: list[str]):
        self.zygote, self.pid, self.args = zygote, pid, args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.exit_status(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self.zygote.exit_status(timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode


class Zygote:
    """The warm process of one slot (on a Dask worker, of one of the worker's threads): started
    on the first request (again for a new environment, or if it died), closed with `close`."""

    def __init__(self, script: str):
        self.script = script
        self.proc: subprocess.Popen | None = None
        self.key: tuple | None = None
        self.broken = ""  # why it could not fork: every later student gets a fresh process
        self.child: Forked | None = None  # one at a time: the zygote answers its child's status next
        self._pending = b""

    def spawn(self, args: list[str], cwd, env: dict, stdout: str, stderr: str, log) -> Forked:
        """A forked child running `nbgrader_cli.py *args` in the folder `cwd` with `env`, its
        output in the files `stdout` and `stderr`; the zygote's own output goes to `log` (an open
        file)."""
        if self.broken:
            raise ZygoteGone(self.broken)
        if self.child is not None and self.child.returncode is None:  # abandoned: give the zygote up
            self.close()
            self.broken = "the warm nbgrader process's last child was not waited for"
            raise ZygoteGone(self.broken)
        key = tuple(sorted(env.items()))
        if self.proc is None or self.proc.poll() is not None or key != self.key:
            self._start(cwd, env, log)
            self.key = key
        request = json.dumps({"args": args, "cwd": str(cwd), "stdout": stdout, "stderr": stderr}) + "\n"
        try:
            os.write(self.proc.stdin.fileno(), request.encode())
            pid = self._answer(ANSWER_SECONDS)
        except (OSError, ZygoteGone) as exc:
            pid, why = None, str(exc)
        else:
            why = "it has threads" if pid == 0 else "it did not answer"
        if pid is None or pid <= 0:
            self.close()
            self.broken = f"the warm nbgrader process did not fork ({why})"
            raise ZygoteGone(self.broken)
        self.child = Forked(self, pid, [sys.executable, self.script, *args])
        return self.child

    def exit_status(self, timeout: float | None) -> int | None:
        """The exit status of the child being waited for; None if it is not known within `timeout`."""
        try:
            return self._answer(timeout)
        except ZygoteGone:
            self.close()
            return -signal.SIGKILL  # the zygote died, and its child with it

    def _answer(self, timeout: float | None) -> int | None:
        fd = self.proc.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise ZygoteGone("it ended")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return int(line)

    def _start(self, cwd, env: dict, log) -> None:
        self.close()
        self.proc = subprocess.Popen(
            [sys.executable, self.script, "zygote"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
            preexec_fn=linux.die_with_parent,
        )
        self._pending = b""

    def close(self) -> None:
        """End the zygote (its requests end; killed if it does not go at once)."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
