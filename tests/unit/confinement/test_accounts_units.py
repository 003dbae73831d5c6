"""attention_course/confinement/accounts.py without making or removing any account: a lease's lock
held until it is released (and released once), a lease refused without root or when every lock
is held (before any account is looked up or made), existing users looked up, and `sweep` on a
bare uid no account has. Leasing real accounts is tests/e2e/test_accounts.py's."""

from __future__ import annotations

import fcntl
import os
import pwd
import stat
import subprocess

import psutil
import pytest

from attention_course.confinement import accounts

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="leasing and sweeping another uid need root")


def _lock(path) -> int:
    """A descriptor of its own on `path`, exclusively flocked (BlockingIOError when held elsewhere)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise
    return fd


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _free_uid() -> int:
    """A uid with no account and no process: sweeping it can touch nothing but this test's processes."""
    used = {p.info["uids"].real for p in psutil.process_iter(["uids"]) if p.info["uids"] is not None}
    for uid in range(3_100_000, 3_200_000, 7):
        try:
            pwd.getpwuid(uid)
        except KeyError:
            if uid not in used:
                return uid
    pytest.skip("no free uid found")


def test_a_lease_holds_its_lock_until_released_and_a_second_release_closes_nothing(tmp_path):
    lease = accounts.Lease("attention-sandbox-0", 4321, 4321, _lock(tmp_path / "0"))
    with pytest.raises(BlockingIOError):
        _lock(tmp_path / "0")
    lease.release()
    assert lease.fd == -1
    other = _lock(tmp_path / "0")  # free again, and likely the very descriptor number the lease had
    lease.release()
    os.fstat(other)  # still open
    os.close(other)


@pytest.mark.skipif(ROOT, reason="checks the refusal a grader that is not root gets")
def test_without_root_no_account_is_leased_and_no_lock_folder_made(tmp_path):
    with pytest.raises(accounts.NoAccount, match="need root"):
        accounts.lease(tmp_path / "locks")
    assert not (tmp_path / "locks").exists()


@needs_root
def test_the_lock_folder_is_made_private_even_when_no_account_may_be_leased(tmp_path):
    locks = tmp_path / "run" / "accounts"
    with pytest.raises(accounts.NoAccount, match="all 0 grading accounts are in use"):
        accounts.lease(locks, most=0)
    assert stat.S_IMODE(locks.stat().st_mode) == 0o700
    locks.chmod(0o755)
    with pytest.raises(accounts.NoAccount):
        accounts.lease(locks, most=0)
    assert stat.S_IMODE(locks.stat().st_mode) == 0o700  # tightened again


@needs_root
def test_every_lock_held_elsewhere_refuses_a_lease_and_leaks_no_descriptor(tmp_path):
    held = [_lock(tmp_path / str(n)) for n in range(3)]
    before = _open_fds()
    with pytest.raises(accounts.NoAccount, match="all 3 grading accounts are in use"):
        accounts.lease(tmp_path, most=3)
    assert _open_fds() == before
    for fd in held:
        os.close(fd)


def test_an_existing_user_is_looked_up_not_made():
    me = pwd.getpwuid(os.getuid())
    assert accounts.account(me.pw_name) == (me.pw_uid, me.pw_gid)
    assert accounts.account("root") == (0, 0)


def test_sweeping_a_uid_nothing_runs_under_kills_nothing():
    control = subprocess.Popen(["sleep", "30"])
    try:
        assert accounts.sweep(_free_uid()) == 0
        assert control.poll() is None
    finally:
        control.kill()
        control.wait()


@needs_root
def test_a_sweep_kills_every_process_of_its_uid_and_nothing_else():
    uid = _free_uid()
    theirs = [subprocess.Popen(["sleep", "30"], user=uid, group=uid, start_new_session=True) for _ in range(2)]
    ours = subprocess.Popen(["sleep", "30"])
    try:
        assert all(psutil.Process(p.pid).uids().real == uid for p in theirs)
        assert accounts.sweep(uid) == 2
        for process in theirs:
            process.wait(5)  # reaped by the sweep already, or now
            assert not psutil.pid_exists(process.pid)
        assert ours.poll() is None
        assert accounts.sweep(uid) == 0
    finally:
        for process in [*theirs, ours]:
            process.kill()
            process.wait()


def test_an_account_useradd_calls_existing_but_nobody_finds_is_refused_in_a_few_tries(monkeypatch):
    calls = []

    def useradd(argv, **kwargs):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 9, "", f"useradd: user '{argv[-1]}' already exists")

    monkeypatch.setattr(accounts.subprocess, "run", useradd)
    monkeypatch.setattr(accounts.pwd, "getpwnam", lambda name: (_ for _ in ()).throw(KeyError(name)))
    monkeypatch.setattr(accounts.time, "sleep", lambda seconds: None)
    with pytest.raises(accounts.NoAccount, match="exists, but it cannot be looked up"):
        accounts.account("attention-sandbox-ghost")
    assert len(calls) == 4
