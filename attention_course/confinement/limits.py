"""Time and memory limits on processes that run student code, enforced from outside, on psutil.

`watch` waits for a process while summing the memory of the processes below it (their
proportional set size, so that forked processes sharing pages are not counted many times); over
the cap or after the time limit, the whole tree is killed (the trusted grader's backstop on a
sandbox run). Polling works with any allocator and needs no cgroups.
The confinement's supervisor lists, measures and kills its tree with the same functions.
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


def below(pid: int) -> list[psutil.Process]:
    """Every process below `pid` (not `pid` itself); [] when it is gone."""
    try:
        return _tree(psutil.Process(pid))[1:]
    except psutil.Error:
        return []


def kill(processes: list[psutil.Process]) -> None:
    """SIGKILL each of them that is still the process it was (psutil checks for a reused pid)."""
    for process in processes:
        try:
            process.kill()
        except psutil.Error:
            pass


def kill_tree(pid: int) -> None:
    """Kill a process (the leader of its own session or group) and everything it started.

    The tree is listed before anything dies: a killed parent's children move to another parent
    and are no longer found below it (a child in a session of its own escaped that way). Each
    listed process is stopped, so that none starts another meanwhile, the tree is listed once
    more, and then the group and every listed process are killed."""
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        root = None
    found: dict[int, psutil.Process] = {}
    for _ in range(2):
        for process in _tree(root) if root is not None else []:
            found.setdefault(process.pid, process)
        for process in found.values():
            try:
                process.suspend()
            except psutil.Error:
                pass
    try:
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    kill(list(found.values()))


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


def measure(tree: list[psutil.Process], cap: int) -> list[tuple[int, psutil.Process]]:
    """The size of each process of a tree: resident sizes, cheap to read and never below the
    proportional ones; only when those together pass `cap`, the proportional sizes (a walk of
    every mapping, costly for processes that hold torch), so that forked processes sharing pages
    are not charged for them many times."""
    sizes = _sizes(tree, _resident)
    return sizes if sum(s for s, _ in sizes) <= cap else _sizes(tree, _size)


def tree_memory(tree: list[psutil.Process], cap: int) -> int:
    """The memory of a tree of processes, as `measure` counts it."""
    return sum(size for size, _ in measure(tree, cap))


class Stop(str):
    """Why `watch` stopped a process: an English sentence that also carries its kind and limit."""

    def __new__(cls, kind: str, limit: float):
        size = f"{limit:.1f} GiB" if limit >= 1 else f"{limit * 1024:.0f} MiB"
        text = (
            f"it used more than {size} of memory and was stopped"
            if kind == "memory"
            else f"it ran longer than {limit:.0f} s (an endless loop or a long sleep?) and was stopped"
        )
        stop = super().__new__(cls, text)
        stop.kind, stop.limit = kind, limit
        return stop

    def __reduce__(self):  # pickled (to a Dask scheduler) as what it was made from
        return Stop, (self.kind, self.limit)


def watch(proc: subprocess.Popen, memory: int, seconds: float) -> str:
    """Wait for `proc`; return why it was stopped ('' if it was not; else a `Stop`).

    When the processes below `proc` use more than `memory` together, or after `seconds`, the
    whole tree is killed.
    """
    start = time.monotonic()
    reason = ""
    try:
        root = psutil.Process(proc.pid)
    except psutil.NoSuchProcess:  # already waited for: nothing left to watch
        proc.wait()
        return reason
    tree: list[psutil.Process] = []
    refreshed = -TREE_REFRESH
    while proc.poll() is None:
        # Listing the tree reads every process of the machine: do it now and then, and read
        # only the known processes' sizes in between (cheap), so watching costs almost nothing.
        if time.monotonic() - refreshed >= TREE_REFRESH:
            tree, refreshed = _tree(root)[1:], time.monotonic()
        sizes = measure(tree, memory)
        if sum(s for s, _ in sizes) > memory:
            reason = Stop("memory", memory / 1024**3)
            kill_tree(proc.pid)
        if time.monotonic() - start > seconds:
            kill_tree(proc.pid)
            proc.wait()
            return Stop("timeout", seconds)
        time.sleep(POLL_SECONDS)
    return reason
