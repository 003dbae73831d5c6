"""The seccomp filter of a confined program, built with libseccomp (through pyseccomp).

`program(sandbox, uid0)` returns the filter as a BPF program for this machine's architecture
(bytes: an array of `struct sock_filter`), built by the supervisor, outside the sandbox; the inner
stage of `attention_course.confinement.confine`, which has only the standard library, installs those bytes with
prctl(PR_SET_SECCOMP) right before exec. libseccomp knows the syscall numbers of every
architecture and checks the audit architecture (a call of another ABI, such as x32 on x86_64,
kills the process).

`sandbox`: the filter of the `landlock` and `bwrap` layers. socket() fails with EACCES for every
domain but AF_UNIX (AF_NETLINK with EOPNOTSUPP: libzmq, and so ipykernel, aborts on any other
error from getifaddrs); clone() with a namespace flag, unshare/setns, ptrace and the other calls of
DENIED fail with EPERM; clone3 fails with ENOSYS (glibc falls back to clone, which the filter can
inspect). `uid0`: for a child that still runs as uid 0, which owns every root-owned file while
Landlock does not cover metadata: the calls of UID0_IGNORED return 0 and change nothing
(shutil.copy, IPython's first start keep working), those of UID0_DENIED fail with EPERM.
"""

from __future__ import annotations

import errno
import tempfile

DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "mount",
    "umount2",
    "pivot_root",
    "unshare",
    "setns",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
)
UID0_IGNORED = ("chmod", "fchmod", "fchmodat", "fchmodat2", "utime", "utimes", "futimesat", "utimensat")
UID0_DENIED = (
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "setxattrat",
    "removexattrat",
    "keyctl",
    "add_key",
    "request_key",
)
# Calls newer than the libseccomp of some distributions (2.5 knows neither): their numbers are the
# same on every architecture (asm-generic, 424 and up).
NEWER = {"fchmodat2": 452, "setxattrat": 463, "removexattrat": 466}
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
CLONE_NAMESPACES = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
AF_UNIX, AF_NETLINK = 1, 16


class Unsupported(Exception):
    """libseccomp is missing or refuses the filter."""


def _number(seccomp, name: str) -> int | None:
    """The call's number on this architecture; None where the architecture has no such call
    (aarch64 has no chmod, only fchmodat)."""
    number = seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)
    if number >= 0:
        return number
    return NEWER.get(name)


def rules(sandbox: bool = True, uid0: bool = False) -> list[tuple[int, str, tuple]]:
    """The filter as data: (errno the call fails with, call, conditions), a condition being
    (argument index, operator name, value[, mask]); errno 0 makes the call return 0 and do
    nothing. Every call not listed is allowed."""
    out: list[tuple[int, str, tuple]] = []
    if sandbox:
        # Every domain but AF_UNIX, in disjoint rules (libseccomp takes one condition per argument
        # in a rule, so the domains between AF_UNIX and AF_NETLINK are one rule each).
        out += [(errno.EACCES, "socket", ((0, "LT", AF_UNIX),))]
        out += [(errno.EACCES, "socket", ((0, "EQ", domain),)) for domain in range(AF_UNIX + 1, AF_NETLINK)]
        out += [
            (errno.EOPNOTSUPP, "socket", ((0, "EQ", AF_NETLINK),)),
            (errno.EACCES, "socket", ((0, "GT", AF_NETLINK),)),
            (errno.ENOSYS, "clone3", ()),
        ]
        out += [(errno.EPERM, "clone", ((0, "MASKED_EQ", flag, flag),)) for flag in CLONE_NAMESPACES]
        out += [(errno.EPERM, name, ()) for name in DENIED]
    if uid0:
        out += [(0, name, ()) for name in UID0_IGNORED]
        out += [(errno.EPERM, name, ()) for name in UID0_DENIED if not (sandbox and name in DENIED)]
    return out


def program(sandbox: bool = True, uid0: bool = False) -> bytes:
    """The BPF program of `rules(sandbox, uid0)` for this machine, as libseccomp compiles it."""
    try:
        import pyseccomp as seccomp

        syscall_filter = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    except (ImportError, OSError, RuntimeError) as exc:
        raise Unsupported(f"libseccomp is not available ({exc}); apt-get install libseccomp2") from exc
    for code, name, conditions in rules(sandbox, uid0):
        number = _number(seccomp, name)
        if number is None:
            continue
        args = [seccomp.Arg(index, getattr(seccomp, op), *values) for index, op, *values in conditions]
        try:
            syscall_filter.add_rule(seccomp.ERRNO(code), number, *args)
        except (OSError, RuntimeError, ValueError) as exc:
            raise Unsupported(f"libseccomp refused the rule for {name} ({exc})") from exc
    with tempfile.TemporaryFile() as handle:
        syscall_filter.export_bpf(handle)
        handle.seek(0)
        return handle.read()
