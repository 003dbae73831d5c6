"""attention_course/confinement/limits.py on real, short-lived processes (sleep, small Python children):
listing the processes below one, killing them, measuring a tree's memory (resident sizes under the
cap, proportional ones over it), the `Stop` sentences, and `watch` stopping a tree over its time or
memory. No root, bubblewrap or Landlock needed.

Every process handed to kill_tree or watch is started in a session of its own, as the grader starts
its sandboxes: kill_tree kills the whole process group of the pid it is given.
"""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from attention_course.confinement import limits

MiB = 2**20


def _gone(process: psutil.Process, within: float = 5.0) -> bool:
    """Whether `process` has ended (a zombie waiting for its reaper counts as ended) within `within` s."""
    deadline = time.monotonic() + within
    while True:
        try:
            if not process.is_running() or process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def _below(pid: int, count: int, name: str | None = None, within: float = 5.0) -> list[psutil.Process]:
    """limits.below(pid) once it lists `count` processes (running `name`, when given)."""
    deadline = time.monotonic() + within
    while True:
        found = limits.below(pid)
        try:
            named = [p for p in found if name is None or p.name() == name]
        except psutil.NoSuchProcess:
            named = []
        if len(named) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def _start(code: str, **popen) -> subprocess.Popen:
    """A Python child running `code`, in a session of its own, its stdout a pipe."""
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True, **popen
    )


@pytest.fixture
def sleepers():
    """A shell in its own session with two sleeping children; killed at the end whatever happens."""
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    yield proc
    if proc.poll() is None:
        limits.kill([*limits.below(proc.pid), psutil.Process(proc.pid)])
    proc.wait()


def test_below_lists_every_process_under_a_pid_but_not_the_pid_itself(sleepers):
    found = _below(sleepers.pid, 2, "sleep")
    assert len(found) == 2
    assert sleepers.pid not in {p.pid for p in found}
    assert all(p.name() == "sleep" and p.ppid() == sleepers.pid for p in found)


def test_below_a_pid_that_is_gone_is_nothing():
    done = subprocess.Popen(["true"])
    done.wait()
    assert limits.below(done.pid) == []


def test_kill_stops_each_process_given_and_passes_over_one_already_gone():
    first = subprocess.Popen(["sleep", "30"], start_new_session=True)
    second = subprocess.Popen(["sleep", "30"], start_new_session=True)
    early, late = psutil.Process(first.pid), psutil.Process(second.pid)
    early.kill()
    first.wait()
    limits.kill([early, late])  # `early` is gone (and reaped) already: no error, and `late` still goes
    assert second.wait(5) == -9


def test_kill_tree_stops_a_process_and_every_process_it_started(sleepers):
    children = _below(sleepers.pid, 2, "sleep")
    assert len(children) == 2
    limits.kill_tree(sleepers.pid)
    assert sleepers.wait(5) == -9
    assert all(_gone(child) for child in children)


ESCAPER = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen(['sleep', '30'], start_new_session=True)\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(30)\n"
)


def test_kill_tree_also_stops_a_child_in_a_session_of_its_own():
    """Listed before anything dies: once its parent is killed, such a child has another parent and
    is no longer found below the pid (before the fix it survived most trials)."""
    for _ in range(5):
        parent = _start(ESCAPER)
        child = psutil.Process(int(parent.stdout.readline()))
        limits.kill_tree(parent.pid)
        assert parent.wait(5) == -9
        assert _gone(child), "the child in its own session outlived kill_tree"
        parent.stdout.close()


def test_kill_tree_of_a_pid_that_does_not_exist_does_nothing():
    with open("/proc/sys/kernel/pid_max") as handle:
        never = int(handle.read()) + 1  # above the largest pid the kernel gives
    limits.kill_tree(never)


def test_the_stop_sentences_say_the_limit_and_carry_its_kind():
    memory = limits.Stop("memory", 2.0)
    assert isinstance(memory, str)
    assert memory == "it used more than 2.0 GiB of memory and was stopped"
    assert (memory.kind, memory.limit) == ("memory", 2.0)
    timeout = limits.Stop("timeout", 90.4)
    assert timeout == "it ran longer than 90 s (an endless loop or a long sleep?) and was stopped"
    assert (timeout.kind, timeout.limit) == ("timeout", 90.4)


SHARED = """
import os, sys, time
shared = b"x" * (48 * 2**20)  # written, so resident; the children share its pages
for _ in range(3):
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
print("ready", flush=True)
time.sleep(30)
"""


def test_pages_shared_by_forked_processes_are_counted_once_only_over_the_cap():
    proc = _start(SHARED)
    try:
        assert proc.stdout.readline() == "ready\n"
        tree = [psutil.Process(proc.pid), *_below(proc.pid, 3)]
        assert len(tree) == 4
        resident = sum(p.memory_info().rss for p in tree)
        assert resident > 4 * 48 * MiB  # each process is charged the whole shared block
        under = limits.measure(tree, cap=resident * 4)
        assert {p.pid for _, p in under} == {p.pid for p in tree}
        assert abs(sum(size for size, _ in under) - resident) < 8 * MiB  # resident sizes, as read
        over = limits.tree_memory(tree, cap=MiB)
        assert 48 * MiB < over < resident / 2  # proportional sizes: the block once, not four times
        assert limits.tree_memory(tree, cap=resident * 4) == pytest.approx(resident, abs=8 * MiB)
    finally:
        limits.kill_tree(proc.pid)
        proc.wait()
        proc.stdout.close()


def test_a_process_that_ends_in_time_and_memory_is_not_stopped():
    proc = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    started = time.monotonic()
    assert limits.watch(proc, memory=512 * MiB, seconds=20) == ""
    assert proc.returncode == 0
    assert time.monotonic() - started < 5


def test_a_tree_past_its_time_is_stopped_whole_and_told_so():
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30; wait"], start_new_session=True)
    children = _below(proc.pid, 2, "sleep")
    started = time.monotonic()
    reason = limits.watch(proc, memory=512 * MiB, seconds=0.5)
    assert 0.5 <= time.monotonic() - started < 4
    assert isinstance(reason, limits.Stop) and (reason.kind, reason.limit) == ("timeout", 0.5)
    assert "ran longer than" in reason
    assert proc.returncode == -9
    assert len(children) == 2 and all(_gone(child) for child in children)


GREEDY = """
import subprocess, sys
subprocess.run([sys.executable, "-c", "import time; block = b'x' * (160 * 2**20); time.sleep(30)"])
"""


def test_a_tree_over_its_memory_is_stopped_whole_and_told_so():
    proc = subprocess.Popen([sys.executable, "-c", GREEDY], start_new_session=True)
    started = time.monotonic()
    reason = limits.watch(proc, memory=96 * MiB, seconds=20)
    assert time.monotonic() - started < 10  # long before the 30 s sleep or the 20 s limit
    assert isinstance(reason, limits.Stop) and reason.kind == "memory"
    assert reason.limit == pytest.approx(96 / 1024)
    assert "memory" in reason and reason.startswith("it used more than")
    assert proc.returncode == -9
    assert limits.below(proc.pid) == []


def test_the_watched_process_itself_is_not_counted_only_what_it_started():
    code = "import time; block = b'x' * (128 * 2**20); time.sleep(0.5)"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    assert limits.watch(proc, memory=96 * MiB, seconds=20) == ""
    assert proc.returncode == 0


def test_a_stop_under_a_gib_says_mib_and_survives_pickling():
    import pickle

    small = limits.Stop("memory", 40 / 1024)
    assert "40 MiB" in small
    again = pickle.loads(pickle.dumps(small))
    assert again == small and (again.kind, again.limit) == ("memory", 40 / 1024)


def test_watching_a_process_already_waited_for_says_nothing_stopped_it():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert limits.watch(proc, memory=2**30, seconds=5) == ""
