"""attention_course/confinement/launch.py: the policy file (its mode, its content, an old file
replaced), the supervisor's command line, and `run` on small programs under the supervisor with no
layer (`layers=[]`, a fraction of a second each): what it captures, the supervisor's status it
returns, a timeout that kills the confined tree, and the temporary policy it leaves nowhere.
What the layers stop is tests/e2e/test_confine.py's."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from attention_course.confinement import launch
from attention_course.confinement.policy import EXIT_UNAVAILABLE, Policy


def _policy(folder: Path, **overrides) -> Policy:
    fields = {
        "read": [],
        "write": [str(folder)],
        "cwd": str(folder),
        "env": {"PATH": "/usr/bin:/bin", "CONFINED_MARK": "policy"},
        "layers": [],
        "max_processes": 16,
    }
    return Policy(**(fields | overrides))


def _policy_path(result: subprocess.CompletedProcess) -> str:
    return result.args[result.args.index("--policy") + 1]


def test_the_policy_file_is_the_policy_and_only_its_owner_may_read_it(tmp_path):
    policy = _policy(tmp_path, memory_bytes=2**30, uid=4321)
    path = tmp_path / "policy.json"
    launch.write_policy(policy, str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert Policy.from_json(path.read_text()) == policy


def test_an_older_policy_file_is_replaced_whole_and_made_private(tmp_path):
    path = tmp_path / "policy.json"
    path.write_text("{" + " " * 100_000 + "}")
    path.chmod(0o644)
    policy = _policy(tmp_path)
    launch.write_policy(policy, str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert Policy.from_json(path.read_text()) == policy  # nothing of the longer old text is left


def test_the_command_runs_the_supervisor_isolated_on_the_absolute_policy_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    policy = _policy(tmp_path)
    argv = launch.command(policy, ["prog", "--flag", "--", "x y"], "policy.json")
    assert argv == [
        sys.executable,
        "-I",
        launch.SCRIPT,
        "run",
        "--policy",
        str(tmp_path / "policy.json"),
        "--",
        "prog",
        "--flag",
        "--",
        "x y",
    ]
    assert Policy.from_json((tmp_path / "policy.json").read_text()) == policy
    assert os.path.isfile(launch.SCRIPT) and os.path.basename(launch.SCRIPT) == "confine.py"


def test_run_captures_output_exit_code_and_the_supervisors_status(tmp_path, monkeypatch):
    script = "echo out; echo err >&2; pwd; echo $CONFINED_MARK; echo ${GRADER_ONLY:-unset}; cat; exit 3"
    monkeypatch.setenv("GRADER_ONLY", "secret")
    result = launch.run(_policy(tmp_path), ["sh", "-c", script], timeout=60)
    assert result.returncode == 3
    # in the policy's folder, with the policy's environment only, and nothing on stdin (cat ends at once)
    assert result.stdout == f"out\n{tmp_path}\npolicy\nunset\n"
    assert result.stderr == "err\n"
    assert result.status == {"outcome": "exited", "layer": "", "reason": "", "exit": 3}
    assert not os.path.exists(_policy_path(result))  # the temporary policy is gone


def test_a_program_that_cannot_start_is_an_exec_outcome(tmp_path):
    missing = str(tmp_path / "no-such-program")
    result = launch.run(_policy(tmp_path), [missing], timeout=60)
    assert result.returncode == 127
    assert result.status["outcome"] == "exec" and result.status["exit"] == 127
    assert missing in result.status["reason"]


def test_a_layer_that_cannot_be_applied_means_the_program_never_runs(tmp_path):
    marker = tmp_path / "ran"
    result = launch.run(_policy(tmp_path, layers=["chroot"]), ["touch", str(marker)], timeout=60)
    assert result.returncode == EXIT_UNAVAILABLE
    assert result.status["outcome"] == "unavailable" and result.status["layer"] == "chroot"
    assert "unknown layer" in result.status["reason"]
    assert not marker.exists()


def _running(token: str) -> list[psutil.Process]:
    """Processes (zombies aside) with `token` in their command line."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        if token in (process.info["cmdline"] or []) and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(process)
    return found


def test_a_timeout_kills_the_confined_tree_and_says_so(tmp_path):
    token = f"{uuid.uuid4().int % 10**6 + 10**6}.5"  # a sleep length no other process uses
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as caught:
        launch.run(_policy(tmp_path), ["sh", "-c", f"echo started; sleep {token} & sleep {token}"], timeout=2)
    assert time.monotonic() - started < 10
    assert caught.value.timeout == 2 and "--policy" in caught.value.cmd
    assert caught.value.output == "started\n"  # what it wrote before it was stopped
    deadline = time.monotonic() + 5
    while _running(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(token) == []


def test_stop_kills_the_confined_tree_through_its_supervisor(tmp_path):
    token = f"{uuid.uuid4().int % 10**6 + 10**6}.5"
    argv = ["sh", "-c", f"trap '' TERM; sleep {token} & sleep {token}"]
    proc = subprocess.Popen(launch.command(_policy(tmp_path), argv, str(tmp_path / "policy.json")))
    deadline = time.monotonic() + 10
    while len(_running(token)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_running(token)) == 2
    started = time.monotonic()
    launch.stop(proc)
    assert proc.returncode is not None and time.monotonic() - started < 5
    assert _running(token) == []
    launch.stop(proc)  # an ended process: nothing to do


def test_stop_kills_what_does_not_end_on_the_supervisors_signal():
    class Deaf:  # stands for a supervisor that does not answer SIGUSR1
        def __init__(self):
            self.calls, self.returncode = [], None

        def poll(self):
            return self.returncode

        def send_signal(self, signum):
            self.calls.append(("signal", signum))

        def wait(self, timeout=None):
            self.calls.append(("wait", timeout))
            if self.returncode is None and timeout is not None:
                raise subprocess.TimeoutExpired("deaf", timeout)
            return self.returncode

        def kill(self):
            self.calls.append(("kill", None))
            self.returncode = -9

    deaf = Deaf()
    launch.stop(deaf, wait=0.1)
    assert deaf.calls == [("signal", launch.signal.SIGUSR1), ("wait", 0.1), ("kill", None), ("wait", None)]


def test_a_link_where_the_policy_goes_is_refused_and_its_target_untouched(tmp_path):
    target = tmp_path / "teacher.txt"
    target.write_text("keep")
    (tmp_path / "policy.json").symlink_to(target)
    with pytest.raises(OSError):
        launch.write_policy(_policy(tmp_path), str(tmp_path / "policy.json"))
    assert target.read_text() == "keep"
