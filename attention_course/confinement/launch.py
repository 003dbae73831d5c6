"""Starting a confined program from trusted code: the policy file, the supervisor's command
line, and `run`, which captures a confined program's output and the supervisor's status.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile

from .policy import Policy
from .status import read_status
from .supervisor import GRACE_SECONDS

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "confine.py")  # the supervisor's command line


def write_policy(policy: Policy, policy_path: str) -> None:
    """Write a policy file (mode 0600); a link at its path is refused, never followed."""
    fd = os.open(policy_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(policy.to_json())


def command(policy: Policy, argv: list[str], policy_path: str) -> list[str]:
    """Write the policy to policy_path (mode 0600); the argv that runs ``argv`` confined."""
    write_policy(policy, policy_path)
    return [sys.executable, "-I", SCRIPT, "run", "--policy", os.path.abspath(policy_path), "--", *argv]


def stop(proc, wait: float = GRACE_SECONDS + 5) -> None:
    """End a confined tree from outside: SIGUSR1 to its supervisor (which kills the whole tree at
    once), `wait` seconds for it to exit, then SIGKILL. `proc` is a `subprocess.Popen` of the
    supervisor, or anything with the same `poll`, `send_signal`, `wait` and `kill`."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGUSR1)
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run(policy: Policy, argv: list[str], timeout: float | None = None, **popen_kwargs) -> subprocess.CompletedProcess:
    """Run ``argv`` confined and capture stdout/stderr (text); the result's ``status`` is the
    supervisor's (``read_status``). On a timeout the confined tree is killed (SIGUSR1 to the
    supervisor) and subprocess.TimeoutExpired is raised."""
    with tempfile.TemporaryDirectory(prefix="confine-") as d:
        policy_path = os.path.join(d, "policy.json")
        cmd = command(policy, argv, policy_path)
        popen_kwargs.setdefault("stdin", subprocess.DEVNULL)
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen_kwargs) as proc:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGUSR1)
                try:
                    out, err = proc.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    out, err = proc.communicate()
                raise subprocess.TimeoutExpired(cmd, timeout, out, err) from None
        result = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        result.status = read_status(policy_path)
        return result
