"""The inner stage: the last trusted code in a confined program's process. It applies every
requested layer to itself (rlimits, its own user namespace or a leased uid, Landlock, the
capability drop, seccomp) and then execs the program; it never returns.

It runs in the supervisor's forked child, or, under bubblewrap, as the base interpreter inside
the sandbox (``python -I -S``, no site-packages) from an archive of this file, policy.py and
linux.py (bubblewrap.py builds it). So it imports nothing but the standard library and those two.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import stat
import sys

from . import linux
from .policy import DEV_NODES, EXIT_UNAVAILABLE, Unavailable

SECCOMP_MODE_FILTER = 2
# NOROOT + locked, NO_SETUID_FIXUP off + locked, KEEP_CAPS off + locked,
# NO_CAP_AMBIENT_RAISE + locked
SECUREBITS = 0x01 | 0x02 | 0x08 | 0x20 | 0x40 | 0x80


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _status_fields() -> dict[str, str]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def drop_privileges(uid: int | None, gid: int | None) -> None:
    """Securebits, empty bounding set, optional switch to uid/gid, no capabilities left.

    Raises Unavailable("caps" or "user", ...) when the result is not what it must be."""
    if os.geteuid() == 0:
        try:
            linux.prctl(linux.PR_SET_SECUREBITS, SECUREBITS)
        except OSError as e:
            raise Unavailable("caps", f"cannot lock securebits as uid 0 ({e.strerror})") from e
        try:
            with open("/proc/sys/kernel/cap_last_cap") as f:
                last = int(f.read())
        except OSError:
            last = 63
        for cap in range(last + 1):
            try:
                linux.prctl(linux.PR_CAPBSET_DROP, cap)
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise Unavailable(
                        "caps", f"cannot drop capability {cap} from the bounding set ({e.strerror})"
                    ) from e
    if uid is not None:
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        except OSError as e:
            raise Unavailable("user", f"cannot switch to uid {uid} gid {gid} ({e.strerror})") from e
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
            raise Unavailable("user", f"the switch to uid {uid} did not take")
    try:
        linux.prctl(linux.PR_CAP_AMBIENT, linux.PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    if linux.libc().capset(ctypes.byref(header), data) != 0:
        raise Unavailable("caps", f"capset failed ({os.strerror(ctypes.get_errno())})")
    fields = _status_fields()
    for key in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        if int(fields.get(key, "0"), 16):
            raise Unavailable("caps", f"{key} is {fields[key]} after the drop")
    if os.geteuid() == 0 or os.getuid() == 0:
        if int(fields.get("CapBnd", "0"), 16):
            raise Unavailable("caps", "the bounding set is not empty for a uid-0 child")
        if linux.libc().prctl(linux.PR_GET_SECUREBITS, 0, 0, 0, 0) & 0x01 == 0:
            raise Unavailable("caps", "securebits NOROOT is not set for a uid-0 child")


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_install(program: bytes, layer: str) -> None:
    """Install a BPF program (an array of struct sock_filter) on this thread, for good."""
    count = len(program) // ctypes.sizeof(_SockFilter)
    filters = (_SockFilter * count).from_buffer_copy(program)
    fprog = _SockFprog(count, filters)
    try:
        linux.prctl(linux.PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog))
    except OSError as e:
        raise Unavailable(layer, f"seccomp filter refused ({e.strerror})") from e


def _unreachable_dir(path: str, uid: int, gid: int) -> str | None:
    """The first directory on the way to ``path`` that ``uid`` cannot search, if any."""
    parts = os.path.realpath(path).split("/")[1:-1]
    cur = "/"
    for part in [""] + parts:
        cur = os.path.join(cur, part) if part else cur
        try:
            st = os.stat(cur)
        except OSError:
            return None
        if st.st_uid == uid:
            ok = st.st_mode & stat.S_IXUSR
        elif st.st_gid == gid:
            ok = st.st_mode & stat.S_IXGRP
        else:
            ok = st.st_mode & stat.S_IXOTH
        if not ok:
            return f"{cur} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _send(fd: int, kind: str, text: str = "") -> None:
    try:
        os.write(fd, f"{kind} {text}".replace("\n", " ").encode()[:3000] + b"\n")
    except OSError:
        pass


def _which(name: str, env: dict[str, str]) -> str | None:
    if "/" in name:
        return name
    for d in env.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(d or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def inner_stage(cfg: dict) -> None:
    """Apply every requested layer to this process, then exec cfg['argv']. Never returns."""
    status = cfg["status_fd"]
    try:
        _inner(cfg, status)
    except Unavailable as e:
        _send(status, "E", f"{e.layer}\t{e.reason}")
        os._exit(EXIT_UNAVAILABLE)
    except BaseException as e:
        _send(status, "E", f"setup\t{type(e).__name__}: {e}")
        os._exit(EXIT_UNAVAILABLE)


def _inner(cfg: dict, status: int) -> None:
    layers = cfg["layers"]
    if cfg.get("stderr_fd") is not None:
        os.dup2(cfg["stderr_fd"], 2)
    _send(status, "S", str(os.getpid()))
    if not cfg["in_bwrap"]:
        os.setsid()
    os.chdir(cfg["cwd"])
    resource = __import__("resource")
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["max_file_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (cfg["max_open_files"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    nproc = cfg.get("nproc")
    if cfg.get("userns"):  # before the limit: a new namespace's parent count is bounded by it
        try:
            linux.own_user_namespace()
        except OSError:
            nproc = cfg.get("nproc_shared")  # no namespaces here: the uid's count, shared
    if nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc,) * 2)
    ruleset = None
    if "landlock" in layers:
        # Opened before the uid switch: the sandbox user may not be able to reach every path.
        try:
            ruleset = linux.landlock_ruleset(cfg["ll_read"], cfg["write"], list(DEV_NODES))
        except linux.LandlockError as e:
            raise Unavailable("landlock", str(e)) from e
    uid = cfg.get("uid") if "user" in layers else None
    drop_privileges(uid, cfg.get("gid"))
    if "user" in layers and (os.getuid() == 0 or os.geteuid() == 0):
        raise Unavailable("user", "the program would still run as uid 0")
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid switch, which clears it
    if cfg.get("ppid") and os.getppid() != cfg["ppid"]:
        os._exit(EXIT_UNAVAILABLE)  # the supervisor is gone already
    if ruleset is not None:
        try:
            linux.landlock_enforce(ruleset)
        except linux.LandlockError as e:
            raise Unavailable("landlock", str(e)) from e
    keep = {status}
    for fd in sorted(int(x) for x in os.listdir("/proc/self/fd")):
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    os.set_inheritable(status, False)
    for sig in (
        signal.SIGINT,
        signal.SIGTERM,
        signal.SIGHUP,
        signal.SIGPIPE,
        signal.SIGXFSZ,
        signal.SIGCHLD,
        signal.SIGQUIT,
        signal.SIGUSR1,
        signal.SIGUSR2,
    ):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    env = cfg["env"]
    argv = cfg["argv"]
    path = _which(argv[0], env)
    uid0 = bool(layers) and (os.getuid() == 0 or os.geteuid() == 0)
    if "landlock" in layers or "bwrap" in layers or uid0:
        # The sandbox filter (no sockets but unix ones, no ptrace, io_uring, namespaces...) goes
        # with either layer: bwrap's own network namespace would still offer a loopback.
        seccomp_install(bytes.fromhex(cfg["seccomp"][str(int(uid0))]), "landlock" if "landlock" in layers else "caps")
    if path is None:
        _send(status, "X", f"127\t{argv[0]}: command not found")
        os._exit(127)
    try:
        os.execve(path, argv, env)
    except OSError as e:
        hint = ""
        if e.errno == errno.EACCES and "user" in layers and not cfg["in_bwrap"]:
            where = _unreachable_dir(path, os.getuid(), os.getgid())
            hint = f" (the sandbox user cannot search {where}; combine user with bwrap)" if where else ""
        code = 127 if e.errno == errno.ENOENT else 126
        _send(status, "X", f"{code}\t{path}: {e.strerror}{hint}")
        os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """``--inner CONFIG``: run the inner stage with CONFIG (JSON, from the supervisor)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 2 and args[0] == "--inner":
        inner_stage(json.loads(args[1]))
        return EXIT_UNAVAILABLE
    sys.stderr.write("usage: the inner stage of confine.py: --inner CONFIG\n")
    return 2
