"""Kernels forked from one warm, confined process per student (`Grading.warm_kernels`).

`WarmStarter` runs `warm_program.py` under the confinement supervisor with the student's kernel
policy, once per workspace (again if it died), and asks it for each notebook's kernel.
`WarmKernel` stands for that kernel where jupyter_client's provisioner and nbgrader's executor
expect a `subprocess.Popen`: `poll`, `wait`, `send_signal`, `kill`, `terminate`. Every request
goes to the starter, the kernel's parent inside the confinement; SIGUSR1 (the supervisor's "kill
the tree at once") ends the kernel and everything it left. The same supervisor, layers, account
and limits hold as for a kernel of its own; what the student's code does cannot reach the grader
beyond what a kernel's could.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from attention_course.confinement import confine
from attention_course.confinement.preflight import chown_tree

PROGRAM = Path(__file__).with_name("warm_program.py")
PRELOAD = (
    "torch",
    "numpy",
    "ipykernel.kernelapp",
    "matplotlib.pyplot",  # its backend is set again in each kernel, from the kernel's environment
)  # what every kernel imports
ANSWER_SECONDS = 60.0  # a starter that does not answer a request in this time is stopped


class StarterGone(RuntimeError):
    """The warm starter ended (a limit, a student's code killed it) or does not answer."""


class WarmStarter:
    """One student's warm starter: started when the first kernel is asked for."""

    def __init__(self, policy: confine.Policy, policy_path: str, preload: tuple[str, ...] = PRELOAD):
        self.policy, self.policy_path, self.preload = policy, policy_path, tuple(preload)
        self.proc: subprocess.Popen | None = None
        self.lock = threading.Lock()  # one request at a time
        self.answers: list[dict] = []
        self.exited: dict[int, int] = {}
        self.arrived = threading.Condition()

    # -- the process ----------------------------------------------------------------------------
    def _alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _start(self) -> None:
        program = [sys.executable, "-c", PROGRAM.read_text(encoding="utf-8"), json.dumps(self.preload)]
        self.proc = subprocess.Popen(
            confine.command(self.policy, program, self.policy_path),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        self.answers, self.exited = [], {}
        threading.Thread(target=self._read, args=(self.proc,), daemon=True, name="warm-starter").start()
        self._answer("ready")

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            with self.arrived:
                if "exited" in message:
                    self.exited[message["exited"]] = message["status"]
                else:
                    self.answers.append(message)
                self.arrived.notify_all()
        with self.arrived:
            self.arrived.notify_all()

    def _answer(self, kind: str) -> dict:
        deadline = time.monotonic() + ANSWER_SECONDS
        with self.arrived:
            while True:
                for message in self.answers:
                    if kind in message:
                        self.answers.remove(message)
                        return message
                if not self._alive() or time.monotonic() > deadline:
                    raise StarterGone(f"the warm kernel starter ended or did not answer ({self.reason()})")
                self.arrived.wait(0.2)

    def _ask(self, request: dict, kind: str) -> dict:
        if not self._alive():
            raise StarterGone(f"the warm kernel starter has ended ({self.reason()})")
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as exc:
            raise StarterGone(f"the warm kernel starter cannot be reached ({exc})") from None
        return self._answer(kind)

    def reason(self) -> str:
        status = confine.read_status(self.policy_path) or {}
        return status.get("reason") or status.get("outcome") or "no status"

    # -- kernels --------------------------------------------------------------------------------
    def start(self, argv: list[str], env: dict[str, str], cwd: str) -> WarmKernel:
        """A kernel forked from the starter (started, or started again, if it is not running)."""
        with self.lock:
            if not self._alive():
                self._start()
            elif self.policy.uid is not None and self.policy.chown_write:
                # what the grader wrote since (the kernel's connection file) goes to the student's
                # account, as a kernel's own supervisor gives it when it starts
                for folder in self.policy.write:
                    chown_tree(folder, self.policy.uid, self.policy.gid)
            pid = self._ask({"start": {"argv": list(argv), "env": dict(env), "cwd": str(cwd)}}, "started")["started"]
            return WarmKernel(self, pid)

    def signal(self, pid: int, signum: int) -> None:
        with self.lock:
            if self._alive():
                self._ask({"signal": [pid, int(signum)]}, "signalled")

    def end(self, pid: int) -> None:
        """Kill the kernel and everything below the starter."""
        with self.lock:
            if self._alive():
                try:
                    self._ask({"end": pid}, "ended")
                except StarterGone:
                    self.close()

    def status_of(self, pid: int) -> int | None:
        """The kernel's exit code, or None while it runs (-9 once the starter itself is gone)."""
        with self.arrived:
            if pid in self.exited:
                return self.exited[pid]
        return None if self._alive() else -signal.SIGKILL

    def close(self) -> None:
        """End the starter and everything below it (its supervisor kills the confined tree)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(confine.GRACE_SECONDS + 5)  # at the end of its input it kills its tree and exits
        except subprocess.TimeoutExpired:
            confine.stop(proc)
        proc.stdout.close()
        Path(self.policy_path).unlink(missing_ok=True)
        Path(confine.status_path(self.policy_path)).unlink(missing_ok=True)


class WarmKernel:
    """A forked kernel, where a `subprocess.Popen` is expected."""

    stdin = stdout = stderr = None

    def __init__(self, starter: WarmStarter, pid: int):
        self.starter, self.pid = starter, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.starter.status_of(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout)
            time.sleep(0.05)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is not None:
            return
        if signum == signal.SIGUSR1:  # the supervisor's "kill the tree at once"
            self.starter.end(self.pid)
        else:
            self.starter.signal(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGUSR1)
