"""attention_course/confinement/accounts.py: one account per student graded at once, leased
exclusively (across processes), created when missing, swept of what a killed grader left."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from attention_course.confinement import accounts

LEASE = "from pathlib import Path; from attention_course.confinement import accounts"
# accounts of their own: a lease sweeps its account, and the grading's accounts may be running a
# student's kernel for a test on the other worker
PREFIX = "attention-leasetest-"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="accounts are leased only when grading as root")


def test_leases_are_exclusive_and_come_back_when_released(tmp_path):
    first, second = accounts.lease(tmp_path, prefix=PREFIX), accounts.lease(tmp_path, prefix=PREFIX)
    assert first.uid != second.uid and (first.name, second.name) == (f"{PREFIX}0", f"{PREFIX}1")
    assert 0 not in (first.uid, first.gid, second.uid, second.gid)
    first.release()
    again = accounts.lease(tmp_path, prefix=PREFIX)
    assert again.uid == first.uid  # the first free one
    again.release(), second.release()


def test_another_process_cannot_take_a_held_account(tmp_path):
    held = accounts.lease(tmp_path, prefix=PREFIX)
    code = f"{LEASE}; print(accounts.lease(Path({str(tmp_path)!r}), prefix={PREFIX!r}).uid)"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(other.stdout) != held.uid
    held.release()


def test_a_killed_holder_gives_its_account_back(tmp_path):
    lease = f"accounts.lease(Path({str(tmp_path)!r}), prefix={PREFIX!r})"
    code = f"{LEASE}; print({lease}.uid, flush=True); import os; os.kill(os.getpid(), 9)"
    dead = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    again = accounts.lease(tmp_path, prefix=PREFIX)
    assert again.uid == int(dead.stdout)
    again.release()


def test_taking_a_lease_kills_what_still_runs_under_the_account(tmp_path):
    probe = accounts.lease(tmp_path, prefix=PREFIX)
    uid = probe.uid
    probe.release()
    left = subprocess.Popen(["sleep", "60"], user=uid)
    assert psutil.Process(left.pid).uids().real == uid
    lease = accounts.lease(tmp_path, prefix=PREFIX)
    assert lease.uid == uid
    left.wait(5)  # reaped already by the sweep, or now
    assert not psutil.pid_exists(left.pid)
    lease.release()


def test_too_many_at_once_is_said_in_one_sentence(tmp_path):
    held = [accounts.lease(tmp_path, most=2, prefix=PREFIX) for _ in range(2)]
    with pytest.raises(accounts.NoAccount, match="all 2 grading accounts are in use"):
        accounts.lease(tmp_path, most=2, prefix=PREFIX)
    for lease in held:
        lease.release()
