"""The seccomp filter, built by libseccomp, installed in a forked child of this test (any Linux
laptop with libseccomp: no root, no bubblewrap, no Landlock), and the calls it must refuse, allow
or neutralise tried for real."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import signal
import socket
import tempfile

import pytest

from attention_course.confinement import linux, seccomp_filter
from attention_course.confinement.inner import seccomp_install
from conftest import in_child


def _in_filtered_child(program: bytes, attempts) -> dict:
    """Run `attempts()` (a dict of results) in a forked child under `program`: what it returned,
    or {"signal": N} when the filter killed it."""

    def filtered():
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        seccomp_install(program, "landlock")
        return attempts()

    return in_child(filtered)


def _errno_of(call) -> int:
    try:
        result = call()
        if isinstance(result, socket.socket):
            result.close()
        return 0
    except OSError as exc:
        return exc.errno


def _libc_errno(result: int) -> int:
    return ctypes.get_errno() if result < 0 else 0


def test_the_rules_refuse_every_listed_call_and_name_no_call_twice():
    rules = seccomp_filter.rules(sandbox=True, uid0=True)
    calls = [(name, conditions) for _, name, conditions in rules]
    assert len(calls) == len(set(calls))
    refused = {name for code, name, conditions in rules if code and not conditions}
    assert set(seccomp_filter.DENIED) | {"clone3"} <= refused
    assert {name for code, name, _ in rules if code == 0} == set(seccomp_filter.UID0_IGNORED)
    assert seccomp_filter.rules(sandbox=False, uid0=False) == []


def test_the_program_is_bpf_for_this_machine():
    program = seccomp_filter.program()
    assert program and len(program) % 8 == 0
    assert seccomp_filter.program() == program  # the same bytes every time


def test_the_sandbox_filter_allows_unix_sockets_and_fork_and_refuses_the_rest():
    libc = ctypes.CDLL(None, use_errno=True)

    def attempts():
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        forked = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        return {
            "unix": _errno_of(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
            "inet": _errno_of(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
            "inet6": _errno_of(lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)),
            "packet": _errno_of(lambda: socket.socket(17, socket.SOCK_RAW)),  # AF_PACKET
            "netlink": _errno_of(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)),
            "unshare": _libc_errno(libc.unshare(0x40000000)),  # CLONE_NEWNET
            "ptrace": _libc_errno(libc.ptrace(16, os.getppid(), 0, 0)),  # PTRACE_ATTACH
            "fork": forked,
        }

    got = _in_filtered_child(seccomp_filter.program(sandbox=True), attempts)
    assert got == {
        "unix": 0,
        "inet": errno.EACCES,
        "inet6": errno.EACCES,
        "packet": errno.EACCES,
        "netlink": errno.EOPNOTSUPP,
        "unshare": errno.EPERM,
        "ptrace": errno.EPERM,
        "fork": 7,
    }


def test_without_the_filter_the_same_calls_succeed():
    """The attempts above can fail only because of the filter: here, unfiltered, they work."""
    for family in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6):
        socket.socket(family, socket.SOCK_STREAM).close()


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x32 is an ABI of x86_64 only")
def test_a_call_of_another_abi_kills_the_process():
    libc = ctypes.CDLL(None, use_errno=True)
    x32_getpid = 0x40000000 + 39
    got = _in_filtered_child(seccomp_filter.program(sandbox=True), lambda: {"x32": libc.syscall(x32_getpid)})
    assert got == {"signal": signal.SIGSYS}


def test_for_a_uid0_child_chmod_does_nothing_and_chown_fails():
    with tempfile.NamedTemporaryFile() as handle:
        os.chmod(handle.name, 0o600)

        def attempts():
            os.chmod(handle.name, 0o777)
            return {
                "mode": os.stat(handle.name).st_mode & 0o777,
                "chown": _errno_of(lambda: os.chown(handle.name, os.getuid(), os.getgid())),
            }

        got = _in_filtered_child(seccomp_filter.program(sandbox=False, uid0=True), attempts)
    assert got == {"mode": 0o600, "chown": errno.EPERM}
