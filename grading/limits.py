"""Time and memory limits on processes that run student code, enforced from outside.

`watch` waits for a process while summing the memory of the processes below it (their
proportional set size, so that forked processes sharing pages are not counted many times); over
the cap, the largest of them is killed (for nbgrader: a student's kernel, so nbgrader reports a
dead kernel and goes on; never the watched process itself, unless `kill_whole_tree`), and the
whole tree is killed after the time limit. Polling works with any allocator and needs no cgroups.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil

POLL_SECONDS = 0.05  # how often the sizes of the watched processes are read
TREE_REFRESH = 0.5  # how often the list of processes in the tree is renewed


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


def _size(process: psutil.Process) -> int:
    """Proportional set size (shared pages divided among their sharers); RSS where unavailable."""
    try:
        return process.memory_full_info().pss
    except (psutil.AccessDenied, AttributeError):
        return process.memory_info().rss


def _resident(process: psutil.Process) -> int:
    return process.memory_info().rss


def _sizes(tree: list[psutil.Process], size) -> list[tuple[int, psutil.Process]]:
    sizes = []
    for p in tree:
        try:
            sizes.append((size(p), p))
        except psutil.Error:
            continue
    return sizes


class Stop(str):
    """Why `watch` stopped a process: an English sentence that also carries its kind and limit."""

    def __new__(cls, kind: str, limit: float):
        text = (
            f"it used more than {limit:.1f} GiB of memory and was stopped"
            if kind == "memory"
            else f"it ran longer than {limit:.0f} s (an endless loop or a long sleep?) and was stopped"
        )
        stop = super().__new__(cls, text)
        stop.kind, stop.limit = kind, limit
        return stop


def watch(proc: subprocess.Popen, memory: int, seconds: float, kill_whole_tree: bool = True) -> str:
    """Wait for `proc`; return why it was stopped ('' if it was not; else a `Stop`).

    When the processes below `proc` use more than `memory` together, the largest of them is killed
    (all of the tree with `kill_whole_tree`); after `seconds`, everything is.
    """
    start = time.monotonic()
    reason = ""
    root = psutil.Process(proc.pid)
    tree: list[psutil.Process] = []
    refreshed = -TREE_REFRESH
    while proc.poll() is None:
        # Listing the tree reads every process of the machine: do it now and then, and read
        # only the known processes' sizes in between (cheap), so watching costs almost nothing.
        if time.monotonic() - refreshed >= TREE_REFRESH:
            tree, refreshed = _tree(root)[1:], time.monotonic()
        # The resident size is cheap to read and never below the proportional one, so the
        # proportional sizes (a walk of every mapping, costly for processes that hold torch) are
        # read only when the resident sizes together pass the cap.
        sizes = _sizes(tree, _resident)
        if sum(s for s, _ in sizes) > memory:
            sizes = _sizes(tree, _size)
        if sum(s for s, _ in sizes) > memory:
            reason = Stop("memory", memory / 1024**3)
            if kill_whole_tree:
                kill_tree(proc.pid)
            else:
                victim = max(sizes, key=lambda item: item[0])[1]
                victim.kill()
                refreshed = -TREE_REFRESH
        if time.monotonic() - start > seconds:
            kill_tree(proc.pid)
            proc.wait()
            return Stop("timeout", seconds)
        time.sleep(POLL_SECONDS)
    return reason
