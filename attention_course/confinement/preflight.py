"""Before a confined program starts: the supervisor checks that every requested layer can be
applied here and resolves what the inner stage needs (the uid, the process limit, the seccomp
programs), and gives the write directories to the program's account.
"""

from __future__ import annotations

import os
import stat

from . import accounts, bubblewrap, linux
from .policy import LAYERS, SANDBOX_USER, Policy, Unavailable


def sandbox_user(create: bool = True) -> tuple[int, int]:
    """uid and gid of SANDBOX_USER (the account of a policy without its own uid), created (as a
    system user) when missing. Grading gives each student an account of its own instead
    (accounts.py)."""
    import pwd

    try:
        if not create:
            entry = pwd.getpwnam(SANDBOX_USER)
            return entry.pw_uid, entry.pw_gid
        return accounts.account(SANDBOX_USER)
    except KeyError:
        raise Unavailable("user", f"no user {SANDBOX_USER}") from None
    except accounts.NoAccount as e:
        raise Unavailable("user", str(e)) from e


def chown_tree(root: str, uid: int, gid: int) -> None:
    """Give the write directories to the sandbox user. The walk goes by directory fds opened with
    O_NOFOLLOW, so a symlink swapped in by a concurrent sandbox of the same uid is never followed;
    it stays on one filesystem and never chowns a file with several hard links."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    top = os.open(root, flags)
    dev = os.fstat(top).st_dev
    stack = [top]
    try:
        while stack:
            fd = stack.pop()
            try:
                st = os.fstat(fd)
                if st.st_uid != uid or st.st_gid != gid:
                    os.fchown(fd, uid, gid)
                for e in os.scandir(fd):
                    try:
                        est = os.stat(e.name, dir_fd=fd, follow_symlinks=False)
                        if est.st_dev != dev or stat.S_ISLNK(est.st_mode):
                            continue
                        if stat.S_ISDIR(est.st_mode):
                            stack.append(os.open(e.name, flags, dir_fd=fd))
                        elif est.st_uid != uid or est.st_gid != gid:
                            _chown_if_single(e.name, fd, dev, uid, gid)
                    except OSError:
                        continue
            finally:
                os.close(fd)
    finally:
        for fd in stack:
            os.close(fd)


def _chown_if_single(name: str, parent: int, dev: int, uid: int, gid: int) -> None:
    """Chown the entry `name` of the directory fd `parent` if it is, when chowned, a file of `dev`
    with one link. The inode is pinned by an O_PATH descriptor and checked through it, so a
    concurrent sandbox cannot swap in a hard link to another file between the check and the chown."""
    pinned = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        st = os.fstat(pinned)
        if st.st_nlink == 1 and st.st_dev == dev and not stat.S_ISLNK(st.st_mode):
            os.chown(f"/proc/self/fd/{pinned}", uid, gid)  # the pinned inode itself
    finally:
        os.close(pinned)


def _uid_tasks(uid: int) -> int:
    """Threads of every process whose real uid is `uid` (what RLIMIT_NPROC counts)."""
    import psutil

    n = 0
    for process in psutil.process_iter(["uids", "num_threads"]):
        uids, threads = process.info["uids"], process.info["num_threads"]
        if uids is not None and uids.real == uid:
            n += threads or 0
    return n


def seccomp_programs(layers) -> dict[str, str]:
    """The filters the inner stage may need, as hex (it picks by the uid it ends up with): "0" for a
    child that is not uid 0, "1" for one that is. Built by libseccomp (attention_course/confinement/seccomp_filter.py,
    imported only when a filter is needed)."""
    sandbox = "landlock" in layers or "bwrap" in layers
    from . import seccomp_filter as module

    try:
        programs = {"1": module.program(sandbox, uid0=True).hex()}
        if sandbox:
            programs["0"] = module.program(sandbox, uid0=False).hex()
    except module.Unsupported as e:
        raise Unavailable("landlock" if sandbox else "caps", f"seccomp: {e}") from e
    return programs


def preflight(policy: Policy) -> dict:
    """Check that every requested layer can be applied; resolve what the inner stage needs."""
    for layer in policy.layers:
        if layer not in LAYERS:
            raise Unavailable(str(layer), f"unknown layer (known: {', '.join(LAYERS)})")
    if not policy.cwd or not os.path.isabs(policy.cwd):
        raise Unavailable("policy", f"cwd must be an absolute path, not {policy.cwd!r}")
    for w in policy.write:
        if not os.path.isabs(w) or not os.path.isdir(w):
            raise Unavailable("policy", f"write directory {w} does not exist")
    if not os.path.isdir(policy.cwd):
        raise Unavailable("policy", f"cwd {policy.cwd} does not exist")
    if "landlock" in policy.layers:
        reason = linux.landlock_reason(linux.landlock_abi())
        if reason:
            raise Unavailable("landlock", reason)
    if "bwrap" in policy.layers and bubblewrap.missing():
        raise Unavailable("bwrap", bubblewrap.missing())
    uid = gid = None
    if "user" in policy.layers:
        if os.geteuid() != 0:
            raise Unavailable("user", "only when grading runs as root")
        if policy.uid is not None:
            uid = policy.uid
            gid = policy.gid if policy.gid is not None else policy.uid
        else:
            uid, gid = sandbox_user()
        if uid <= 0 or gid <= 0:
            raise Unavailable("user", f"uid {uid} / gid {gid} is not an unprivileged user")
    # RLIMIT_NPROC counts the tasks of a uid in a user namespace. Each program gets a count of its
    # own: a leased uid of its own (`user`; accounts.py), bubblewrap's user namespace, or one the
    # inner stage makes (`userns`). Only where none is possible does it share the uid's count.
    nproc = shared = None
    userns = False
    if uid is not None:
        nproc = policy.max_processes
    elif os.getuid() != 0:
        nproc = policy.max_processes
        userns = "bwrap" not in policy.layers
        shared = _uid_tasks(os.getuid()) + policy.max_processes
    seccomp = seccomp_programs(policy.layers) if policy.layers else {}
    return {"uid": uid, "gid": gid, "nproc": nproc, "nproc_shared": shared, "userns": userns, "seccomp": seccomp}
