"""Linux's own process controls, called through ctypes: prctl and Landlock.

Standard library only, importing nothing else of the course, because three kinds of process load
it: the grader and the confinement's supervisor and inner stage (`attention_course.confinement.confine`, which also runs
as a plain script), nbgrader's grading process (`attention_course/grading/nbgrader_cli.py`), and the trusted
sandbox, which may read no file of the grader and imports the copy put in its inbox.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import stat
import struct

_libc = None


def libc():
    """The C library, with errno kept (loaded once; load it before forking)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
        _libc.prctl.restype = ctypes.c_int
    return _libc


def _check(result, what):
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def syscall(nr, *args):
    """A raw system call; OSError on failure."""
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    return _check(libc().syscall(ctypes.c_long(nr), *conv), f"syscall {nr}")


def prctl(option, a2=0, a3=0, a4=0, a5=0):
    """prctl(2); OSError on failure."""
    args = [ctypes.c_ulong(a) if isinstance(a, int) else a for a in (a2, a3, a4, a5)]
    return _check(libc().prctl(ctypes.c_int(option), *args), f"prctl {option}")


PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_GET_SECUREBITS = 27
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4


CLONE_NEWUSER = 0x10000000


def own_user_namespace() -> None:
    """Move this process into a user namespace of its own, keeping its uid and gid (mapped to
    themselves). RLIMIT_NPROC is then counted over this namespace's tasks only, not over every
    task of the uid on the machine. OSError when the kernel refuses (no unprivileged namespaces)."""
    uid, gid = os.getuid(), os.getgid()
    _check(libc().unshare(ctypes.c_int(CLONE_NEWUSER)), "unshare(CLONE_NEWUSER)")
    # A process that is not dumpable (the supervisor's child, or after a uid change) cannot write
    # its own /proc files: dumpable for the three writes only (exec decides it again anyway).
    dumpable = prctl(PR_GET_DUMPABLE)
    prctl(PR_SET_DUMPABLE, 1)
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    finally:
        prctl(PR_SET_DUMPABLE, dumpable)


def die_with_parent() -> None:
    """Killed when the thread that started this process goes (Popen's preexec_fn: a Dask
    worker, or a slot's thread, that dies takes its children with it)."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def not_dumpable() -> None:
    """No process of the same uid may attach to this one, read its memory (/proc/PID/mem) or its
    file descriptors: what a trusted process does before it starts untrusted ones."""
    prctl(PR_SET_DUMPABLE, 0)


# ---------------------------------------------------------------------------------------------
# Landlock (the syscall numbers are the same on every architecture)
# ---------------------------------------------------------------------------------------------
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LL_EXECUTE, LL_WRITE_FILE, LL_READ_FILE, LL_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
LL_REFER, LL_TRUNCATE, LL_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
LL_FILE_RIGHTS = LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV
LL_NET_BIND_TCP, LL_NET_CONNECT_TCP = 1 << 0, 1 << 1
LL_SCOPE_ABSTRACT_UNIX_SOCKET, LL_SCOPE_SIGNAL = 1 << 0, 1 << 1
LANDLOCK_RULE_PATH_BENEATH = 1


class LandlockError(Exception):
    """Landlock cannot be applied as asked (the message says why)."""


def landlock_abi() -> int:
    """The Landlock ABI version of the running kernel; -ENOSYS/-EOPNOTSUPP as negative errno."""
    r = libc().syscall(
        ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET),
        None,
        ctypes.c_long(0),
        ctypes.c_long(LANDLOCK_CREATE_RULESET_VERSION),
    )
    return r if r >= 0 else -ctypes.get_errno()


def landlock_reason(abi: int) -> str | None:
    """None when Landlock works (abi > 0), else why not, for a person."""
    if abi > 0:
        return None
    if -abi == errno.EOPNOTSUPP:
        return "Landlock: built into this kernel but not enabled (add landlock to the lsm= kernel boot parameter)"
    return "Landlock: not supported by this kernel (needs Linux 5.13+)"


def handled_fs(abi: int) -> int:
    """Every filesystem right that ABI knows (all are handled: what no rule grants is denied)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= LL_REFER
    if abi >= 3:
        rights |= LL_TRUNCATE
    if abi >= 5:
        rights |= LL_IOCTL_DEV
    return rights


def _create(fs: int, net: int, scoped: int, abi: int) -> int:
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    attr = ctypes.create_string_buffer(struct.pack("<QQQ", fs, net, scoped)[:size], size)
    try:
        return syscall(SYS_LANDLOCK_CREATE_RULESET, attr, size, 0)
    except OSError as e:
        raise LandlockError(f"landlock_create_ruleset failed ({e.strerror})") from e


def landlock_ruleset(read: list[str], write: list[str], dev: list[str]) -> int:
    """A ruleset fd, not yet enforced: read and execute beneath `read`, every right beneath
    `write`, read and write on the `dev` nodes; TCP bind and connect denied (ABI >= 4); signals and
    abstract unix sockets scoped to the domain (ABI >= 6). Paths that do not exist are skipped."""
    abi = landlock_abi()
    if abi < 1:
        raise LandlockError(landlock_reason(abi))
    fs = handled_fs(abi)
    net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP if abi >= 4 else 0
    scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL if abi >= 6 else 0
    ruleset = _create(fs, net, scoped, abi)
    rules = [(p, (LL_EXECUTE | LL_READ_FILE | LL_READ_DIR) & fs) for p in read]
    rules += [(p, LL_READ_FILE | LL_WRITE_FILE | LL_TRUNCATE | LL_IOCTL_DEV) for p in dev]
    rules += [(p, fs) for p in write]
    for path, rights in rules:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                rights &= LL_FILE_RIGHTS
            rights &= fs
            if not rights:
                continue
            attr = ctypes.create_string_buffer(struct.pack("<Qi", rights, fd), 12)
            syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, attr, 0)
        except OSError as e:
            os.close(ruleset)
            raise LandlockError(f"landlock_add_rule {path} failed ({e.strerror})") from e
        finally:
            os.close(fd)
    return ruleset


def landlock_enforce(ruleset: int) -> None:
    """Restrict this thread (and what it execs or forks) to the ruleset, for good; closes it.
    Needs PR_SET_NO_NEW_PRIVS, or CAP_SYS_ADMIN."""
    try:
        syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0)
    except OSError as e:
        raise LandlockError(f"landlock_restrict_self failed ({e.strerror})") from e
    finally:
        os.close(ruleset)


def landlock_scope_self() -> bool:
    """Put this process in a Landlock domain of its own that handles no file or network right and
    only scopes signals and abstract unix sockets: it can no longer signal or connect to anything
    outside the domain. False when the kernel's ABI is below 6 (nothing done)."""
    abi = landlock_abi()
    if abi < 6:
        return False
    ruleset = _create(0, 0, LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL, abi)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    landlock_enforce(ruleset)
    return True
