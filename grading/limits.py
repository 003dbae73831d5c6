"""Time and memory limits on processes that run student code, enforced from outside.

`watch` waits for a process while summing the resident memory of its whole tree; a process of
the tree that pushes the total over the cap is killed (for nbgrader: the kernel, so nbgrader
reports a dead kernel and goes on), and the whole tree is killed after the time limit.
Polling the resident memory works with any allocator and does not need cgroups.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Callable

import psutil

DEFAULT_MEMORY = 2 * 1024 ** 3
DEFAULT_SECONDS = 60


@dataclass
class Limits:
    """What student code may use: bytes of memory (default 2 GiB) and seconds per run."""
    memory: int = int(float(os.environ.get("GRADING_MEMORY_GIB", 2)) * 1024 ** 3)
    seconds: float = float(os.environ.get("GRADING_SECONDS", DEFAULT_SECONDS))


def _tree(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return []


def kill_tree(pid: int) -> None:
    """Kill a process and everything it started."""
    try:
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        for p in _tree(psutil.Process(pid)):
            p.kill()
    except psutil.Error:
        pass


POLL_SECONDS = 0.05   # how often the sizes of the watched processes are read
TREE_REFRESH = 0.5    # how often the list of processes in the tree is renewed
STARTUP_SECONDS = 300  # importing torch on a busy machine is slow, and is not the student's time


def watch(proc: subprocess.Popen, memory: int, seconds: float, kill_whole_tree: bool = True,
          started: Callable[[], bool] | None = None) -> str:
    """Wait for `proc`; return why it was stopped ('' if it was not).

    Over `memory`, the largest process of the tree is killed (all of it with `kill_whole_tree`);
    over `seconds`, everything is. With `started`, the seconds count from the moment it first
    returns True (the student's code begins), and start-up has its own generous limit.
    """
    start = time.monotonic()
    clock_started = started is None
    reason = ""
    root = psutil.Process(proc.pid)
    tree: list[psutil.Process] = []
    refreshed = -TREE_REFRESH
    while proc.poll() is None:
        # Listing the tree reads every process of the machine: do it now and then, and read
        # only the known processes' sizes in between (cheap), so watching costs almost nothing.
        if time.monotonic() - refreshed >= TREE_REFRESH:
            tree, refreshed = _tree(root), time.monotonic()
        sizes = []
        for p in tree:
            try:
                sizes.append((p.memory_info().rss, p))
            except psutil.Error:
                continue
        if sum(s for s, _ in sizes) > memory:
            reason = f"it used more than {memory / 1024 ** 3:.1f} GiB of memory and was stopped"
            if kill_whole_tree:
                kill_tree(proc.pid)
            else:
                max(sizes, key=lambda item: item[0])[1].kill()
        if not clock_started and started():
            clock_started, start = True, time.monotonic()
        if time.monotonic() - start > (seconds if clock_started else STARTUP_SECONDS):
            kill_tree(proc.pid)
            proc.wait()
            return f"it ran longer than {seconds:.0f} s (an endless loop or a long sleep?) and was stopped"
        time.sleep(POLL_SECONDS)
    return reason
