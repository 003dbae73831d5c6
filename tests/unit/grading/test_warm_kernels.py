"""warm_kernels.py and warm_program.py without a kernel: a confined starter (no layer, nothing
preloaded) forks small Python programs in the kernel's place; what the provisioner and nbgrader's
executor ask of a kernel process (poll, wait, signals, the supervisor's kill) reaches the right
process, and nothing a "kernel" left behind outlives it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from attention_course.confinement import confine
from attention_course.grading.warm_kernels import StarterGone, WarmStarter

PROGRAM = """
import json, os, subprocess, sys, time
with open("started.txt", "a") as handle:
    seen = [os.getpid(), os.getsid(0) == os.getpid(), sys.argv[1:], os.environ.get("ONLY"), sorted(os.environ)]
    handle.write(json.dumps(seen) + "\\n")
if "exit" in sys.argv:
    sys.exit(3)
subprocess.Popen(["sleep", "300"], start_new_session=True)  # left behind on purpose
time.sleep(300)
"""


def _starter(tmp_path, program: str, preload: tuple[str, ...] = (), **env) -> WarmStarter:
    """A starter of `program` (as the module fake_kernel) in tmp_path, with no confinement layer."""
    (tmp_path / "fake_kernel.py").write_text(program)
    os.chmod(tmp_path, 0o755)
    policy = confine.Policy(
        read=confine.default_read_paths(sys.executable),
        write=[str(tmp_path)],
        cwd=str(tmp_path),
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env},
        layers=[],
    )
    return WarmStarter(policy, str(tmp_path / "warm.json"), preload=preload)


@pytest.fixture
def starter(tmp_path):
    warm = _starter(tmp_path, PROGRAM)
    yield warm
    warm.close()


def _kernel(warm, folder, *args):
    return warm.start([sys.executable, "-m", "fake_kernel", *args], {"PATH": "/usr/bin:/bin", "ONLY": "this"}, folder)


def _lines(folder, count: int) -> list[str]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        path = folder / "started.txt"
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.05)
    raise AssertionError(f"{count} programs did not start")


def _sleepers() -> list[str]:
    found = subprocess.run(["pgrep", "-f", "^sleep 300$"], capture_output=True, text=True).stdout.split()
    return found


def test_a_kernel_is_forked_in_its_own_session_with_its_arguments_and_only_its_environment(starter, tmp_path):
    kernel = _kernel(starter, tmp_path, "-f", "conn.json")
    (line,) = _lines(tmp_path, 1)
    pid, leader, args, only, names = json.loads(line)
    assert pid == kernel.pid and leader
    assert args == ["-f", "conn.json"] and only == "this" and names == ["ONLY", "PATH"]
    assert kernel.poll() is None


def test_what_the_starter_imported_is_frozen_for_its_kernels_garbage_collector(tmp_path):
    """A kernel's full collections would otherwise walk every object of PyTorch, ipykernel and
    matplotlib (a tenth of a second and more each, in every kernel), and write to the pages the
    kernels share with the starter."""
    program = "import gc, json\nopen('frozen.txt', 'w').write(json.dumps(gc.get_freeze_count()))\n"
    warm = _starter(tmp_path, program, preload=("email.parser",))
    try:
        assert _kernel(warm, tmp_path).wait(20) == 0
    finally:
        warm.close()
    assert json.loads((tmp_path / "frozen.txt").read_text()) > 1000


def test_the_supervisors_kill_ends_the_kernel_and_what_it_left_and_the_next_one_starts(starter, tmp_path):
    before = set(_sleepers())
    first = _kernel(starter, tmp_path)
    _lines(tmp_path, 1)
    time.sleep(0.5)
    assert set(_sleepers()) - before, "the program left a process of its own"
    first.send_signal(signal.SIGUSR1)
    assert first.wait(10) == -signal.SIGKILL
    assert not set(_sleepers()) - before, "what the kernel left outlived it"
    second = _kernel(starter, tmp_path)
    _lines(tmp_path, 2)
    assert second.pid != first.pid and second.poll() is None


def test_an_interrupt_reaches_the_kernel_and_its_exit_code_is_its_own(starter, tmp_path):
    kernel = _kernel(starter, tmp_path)
    _lines(tmp_path, 1)
    kernel.send_signal(signal.SIGTERM)
    assert kernel.wait(10) == -signal.SIGTERM
    ended = _kernel(starter, tmp_path, "exit")
    assert ended.wait(10) == 3
    with pytest.raises(subprocess.TimeoutExpired):
        _kernel(starter, tmp_path).wait(0.3)


def test_a_starter_that_was_killed_is_started_again_and_its_kernels_read_as_ended(starter, tmp_path):
    kernel = _kernel(starter, tmp_path)
    _lines(tmp_path, 1)
    starter.proc.send_signal(signal.SIGUSR1)  # its supervisor kills the whole confined tree
    starter.proc.wait(10)
    assert kernel.wait(10) == -signal.SIGKILL
    again = _kernel(starter, tmp_path)
    _lines(tmp_path, 2)
    assert again.poll() is None


def test_closing_ends_the_starter_and_everything_below_it(starter, tmp_path):
    before = set(_sleepers())
    _kernel(starter, tmp_path)
    _lines(tmp_path, 1)
    time.sleep(0.5)
    starter.close()
    assert not set(_sleepers()) - before
    assert not (tmp_path / "warm.json").exists()


def test_a_starter_that_cannot_start_says_so(tmp_path):
    policy = confine.Policy(
        read=[], write=[str(tmp_path)], cwd=str(tmp_path / "missing"), env={"PATH": "/usr/bin:/bin"}, layers=[]
    )
    warm = WarmStarter(policy, str(tmp_path / "warm.json"), preload=())
    with pytest.raises(StarterGone):
        warm.start([sys.executable, "-m", "fake_kernel"], {}, str(tmp_path))
    warm.close()


def test_the_starter_finds_every_process_below_one_from_proc():
    from attention_course.grading import warm_program

    shell = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(warm_program.below(shell.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        found = warm_program.below(shell.pid)
        assert len(found) == 2 and shell.pid not in found
        assert shell.pid in warm_program.below(os.getpid())
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()


def _readable_without_privileges(pid: int) -> bool:
    """Whether a process of the same uid and no capabilities may read `pid`'s environment (the
    kernel's ptrace access check: it fails for a process that is not dumpable)."""
    reader = subprocess.run(
        ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "cat", f"/proc/{pid}/environ"], capture_output=True
    )
    return reader.returncode == 0


def test_the_starter_is_closed_to_its_kernels_and_a_kernel_is_as_open_as_one_started_alone(starter, tmp_path):
    kernel = _kernel(starter, tmp_path)
    _lines(tmp_path, 1)
    with open(f"/proc/{kernel.pid}/stat", "rb") as handle:
        parent = int(handle.read().rsplit(b")", 1)[1].split()[1])
    assert parent != os.getpid() and parent != starter.proc.pid
    assert _readable_without_privileges(kernel.pid)
    assert not _readable_without_privileges(parent), "the warm starter can be read by a kernel of its account"


BACKEND = """
import json, sys
preloaded = "matplotlib" in sys.modules
import matplotlib
with open("started.txt", "a") as handle:
    handle.write(json.dumps([preloaded, matplotlib.rcParams._get("backend")]) + "\\n")
"""


@pytest.mark.parametrize(
    ("env", "backend"),
    [({}, "module://matplotlib_inline.backend_inline"), ({"MPLBACKEND": "svg"}, "svg")],
    ids=["as ipykernel asks", "as the environment says"],
)
def test_a_preloaded_matplotlib_draws_with_the_backend_of_the_kernels_own_environment(tmp_path, env, backend):
    warm = _starter(tmp_path, BACKEND, ("matplotlib.pyplot",), MPLCONFIGDIR=str(tmp_path), MPLBACKEND="agg")
    try:
        warm.start([sys.executable, "-m", "fake_kernel"], {"PATH": "/usr/bin:/bin", **env}, tmp_path).wait(60)
        (line,) = _lines(tmp_path, 1)
        assert json.loads(line) == [True, backend]
    finally:
        warm.close()
