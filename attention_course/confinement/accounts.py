"""One unprivileged account per student being graded, leased for as long as that student's code runs.

Why: the kernel counts RLIMIT_NPROC (the confinement's `max_processes`) over every task of a uid
on the whole machine, threads included. With one sandbox account for everyone, every kernel and
sandbox of every student, slot, grading run and Dask worker on the machine shared one budget of
64 tasks, and right answers scored 0 when six students were graded at once (a thread that could
not start killed the sandbox's driver). A uid of its own makes the limit the student's alone.

How: accounts ``attention-sandbox-0``, ``-1``, ... (system users, created with useradd the first
time a slot needs one, so every tool that looks a uid up finds a name). A lease is an exclusive
``flock`` on ``LOCKS/<n>``: whoever holds it owns the account; the kernel drops it when the holder
exits, however it exits, so a killed grader never keeps one. Taking a lease first kills whatever
still runs under that account (what a killed grader left). Needs root, like the ``user`` layer.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import pwd
import signal
import subprocess
import time
from pathlib import Path

PREFIX = "attention-sandbox-"
LOCKS = Path("/run/attention-course/accounts")
MOST = 512  # accounts at most (students graded at once on one machine)


class NoAccount(Exception):
    """No account could be leased (not root, useradd missing or failing, every account in use)."""


@dataclasses.dataclass
class Lease:
    """An account held by this process until `release` (or its exit)."""

    name: str
    uid: int
    gid: int
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = -1


def lease(locks: Path = LOCKS, most: int = MOST, prefix: str = PREFIX) -> Lease:
    """The first account nobody holds, created when missing, with nothing left running under it.
    `locks` and `prefix` go together: another lock folder with the same accounts would let two
    holders share (and sweep) one account."""
    if os.geteuid() != 0:
        raise NoAccount("per-student accounts need root")
    locks.mkdir(parents=True, exist_ok=True)
    os.chmod(locks, 0o700)
    for n in range(most):
        fd = os.open(locks / str(n), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            uid, gid = account(f"{prefix}{n}")
            sweep(uid)
        except BaseException:
            os.close(fd)
            raise
        return Lease(f"{prefix}{n}", uid, gid, fd)
    raise NoAccount(f"all {most} grading accounts are in use")


def account(name: str) -> tuple[int, int]:
    """uid and gid of the system user `name`, created when missing."""
    for attempt in range(50):
        try:
            entry = pwd.getpwnam(name)
            return entry.pw_uid, entry.pw_gid
        except KeyError:
            pass
        useradd = next((p for p in ("/usr/sbin/useradd", "/sbin/useradd") if os.path.exists(p)), None)
        if useradd is None:
            raise NoAccount("useradd not found (apt-get install passwd)")
        done = subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode == 9 and attempt >= 3:  # "exists", again and again, yet not found by name
            raise NoAccount(f"useradd says {name} exists, but it cannot be looked up: {done.stderr.strip()}")
        if done.returncode == 9:
            time.sleep(0.1)
        if done.returncode not in (0, 9):  # 9: created meanwhile by another grader
            if attempt == 49:
                raise NoAccount(f"useradd {name} failed: {done.stderr.strip()}")
            time.sleep(0.1)  # /etc/passwd locked by a concurrent useradd
    raise NoAccount(f"cannot create {name}")


def sweep(uid: int) -> int:
    """Kill every process whose real uid is `uid`; how many there were."""
    import psutil

    left = [p for p in psutil.process_iter(["uids"]) if p.info["uids"] is not None and p.info["uids"].real == uid]
    for process in left:
        try:
            process.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    psutil.wait_procs(left, timeout=5)
    return len(left)
