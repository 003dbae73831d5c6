"""Run an untrusted program (a student's Jupyter kernel, a grading sandbox) confined, in layers.

    python -I attention_course/confinement/confine.py run --policy POLICY.json -- ARGV...
    python -I attention_course/confinement/confine.py probe            # which layers work on this machine, as JSON

The process started this way is the *supervisor*: trusted code with the grader's rights. It checks
that every requested layer can be applied (else it exits with ``EXIT_UNAVAILABLE`` = 97 and one
line ``confine: LAYER: reason`` on stderr, and the program never runs), starts the child, applies
the layers to it and only then execs the untrusted argv. It stays as the child's parent: it is
non-dumpable, a child subreaper (orphans come back to it), forwards SIGINT/SIGTERM/SIGHUP to the
confined main process, watches the number of processes, their memory (``memory_bytes``: resident
sizes every 0.1 s, proportional sizes once those pass the cap: a watch that needs no cgroup
delegation) and the size of the ``write`` directories
(``EXIT_LIMIT`` = 98 and a ``confine: limit: ...`` line when one is exceeded), kills every process
left when the main process ends, and exits with the child's exit status (128+N for signal N).
SIGUSR1 to the supervisor kills the confined tree at once (``run`` uses it on a timeout). When the
supervisor's own parent dies (a grader killed), it acts as on SIGTERM: nothing outlives the grader.
When it ends, the supervisor writes what happened as one JSON object beside the policy file
(``status_path``; ``read_status`` reads it): the outcome (exited, unavailable, limit, exec), the
layer, the reason and the exit code. The grader decides from that file, which the confined
program cannot write, never from its stderr or its exit code.

Always, whatever the layers: RLIMIT_FSIZE / RLIMIT_NOFILE / RLIMIT_CORE=0 (and RLIMIT_NPROC where
the kernel applies it), a new session, PR_SET_PDEATHSIG=SIGKILL, PR_SET_NO_NEW_PRIVS, and, when
the child would still run as uid 0, an empty capability bounding set, no permitted/effective/
inheritable/ambient capabilities and locked securebits (NOROOT, KEEP_CAPS and AMBIENT_RAISE off).
A uid-0 child (root supervisor, any layer but not ``user``) also gets a small seccomp filter:
it owns every root-owned file and Landlock does not cover metadata, so chmod and utime calls are
ignored (they return 0 and change nothing), chown/xattr changes and the keyring syscalls fail
with EPERM (``user`` avoids the uid-0 child altogether).

Layers (``Policy.layers``, any subset of ``LAYERS``, stacked):

``landlock``
    A Landlock ruleset (`attention_course/confinement/linux.py`) applied right before exec: every filesystem
    right the running ABI knows is handled; read+execute on ``policy.read`` and the system paths
    (/usr, /lib*, /bin, /sbin, a few /etc files, /proc, /sys), all rights on ``policy.write``,
    read/write on /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom; TCP bind/connect
    handled with no rule (ABI >= 4); abstract unix sockets and signals scoped to the sandbox
    (ABI >= 6). Plus a seccomp-BPF filter (audit arch checked, x32 refused): socket() fails with
    EACCES for every domain but AF_UNIX (AF_NETLINK with EOPNOTSUPP: libzmq, and so ipykernel,
    aborts on any other error from getifaddrs; its IOPub pipe for forked subprocesses then just
    fails to bind on 127.0.0.1, so output of multiprocessing children is lost); io_uring,
    ptrace, process_vm_readv/writev, bpf, perf_event_open, userfaultfd, keyctl/add_key/
    request_key, kexec, (f)init_module/delete_module, mount/umount2/pivot_root and the new mount
    API, unshare/setns and clone() with namespace flags fail with EPERM; clone3 fails with
    ENOSYS (glibc falls back to clone).
    Needs: Linux >= 5.13 with landlock in the LSM list (filesystem), >= 6.7 for the TCP rules,
    >= 6.12 for signal and abstract-socket scoping. Outside it: the process tree and /proc stay
    the host's (processes can be listed, cmdlines read); before Landlock ABI 9 it cannot stop
    connect() to a pathname unix socket of the host that the uid may write (e.g. a root-owned
    daemon socket when the child is uid 0 without the ``user`` layer); before ABI 6 a uid-0
    child could signal other uid-0 processes; /dev/shm is not writable (no POSIX semaphores).

``bwrap``
    The child runs through bubblewrap: new pid, net, ipc, uts and cgroup namespaces (plus a user
    namespace when the supervisor is not root), ``--die-with-parent``, ``--new-session``, a fresh
    read-only root made of ``--ro-bind`` mounts of the system paths and ``policy.read``,
    ``--bind`` mounts of ``policy.write`` (same paths inside and out, so unix socket and file
    paths mean the same on both sides), a new /proc for the pid namespace, a minimal read-only
    /dev, ``--clearenv`` + ``policy.env``. The pid namespace guarantees that every process left
    dies with the sandbox, even when the supervisor itself is SIGKILLed. The inner stage
    (rlimits, uid drop, Landlock, seccomp, capability drop, exec) is this file, run by the base
    interpreter inside the sandbox from a sealed memfd (``python -I -S /proc/self/fd/N``): the
    student cannot read it as a file, and the fd is closed before exec. Needs: /usr/bin/bwrap
    (apt-get install bubblewrap); unprivileged user namespaces unless the supervisor is root
    (Debian: kernel.unprivileged_userns_clone; Ubuntu 24.04 restricts them through AppArmor,
    kernel.apparmor_restrict_unprivileged_userns). /proc/sys, /proc/sysrq-trigger and the like
    are covered read-only (bwrap leaves /proc/sys writable, and a uid-0 child could write
    kernel.core_pattern). bwrap itself (the sandbox's pid 1) runs with an empty environment, and
    the seccomp sandbox filter of ``landlock`` is applied with this layer too (no sockets but unix
    ones, even on the sandbox's own loopback). Outside it: without ``user`` a root supervisor's
    child stays uid 0 (without capabilities) inside.

``user``
    When the supervisor runs as root, the program runs as the unprivileged system user
    ``attention-sandbox`` (created with useradd when missing; or ``policy.uid``/``gid``); the
    ``write`` directories are chowned to it first, and RLIMIT_NPROC becomes a hard bound (it
    counts every task of that uid, so sandboxes that run at the same time share it unless they get
    their own uid). Needs: root. Outside it: the user must be able to reach the interpreter; on
    this project's machines /root is mode 0700 and the venv's Python lives under /root, so
    ``user`` works only together with ``bwrap`` (which recreates the path); alone it does not
    stop two sandboxes of the same uid from signalling or ptracing each other (``landlock`` or
    ``bwrap`` do).

``[]`` (no layer) is unconfined: only the rlimits, the session and the subreaper sweep.

The module uses only the standard library and ctypes, and also runs as a plain file; the seccomp
filters come from ``seccomp_filter.py`` beside it (libseccomp, through pyseccomp), built by the
supervisor and handed to the inner stage as BPF bytes, which it installs with prctl. ``probe()``
proves each layer by really running ``python -c "import sys"`` confined.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import functools
import importlib
import importlib.util
import io
import json
import os
import select
import signal
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

LAYERS = ("bwrap", "landlock", "user")
EXIT_UNAVAILABLE = 97
EXIT_LIMIT = 98
SANDBOX_USER = "attention-sandbox"
BWRAP = "/usr/bin/bwrap"
SCRIPT = os.path.abspath(__file__)


def _beside(name: str):
    """The course module `name` that sits beside this file, however this file runs: imported as
    part of the package, as a script (the supervisor), or as the inner stage from the archive
    that holds both (`_inner_archive`), where the archive is on sys.path."""
    path = os.path.join(os.path.dirname(SCRIPT), f"{name}.py")
    if not os.path.exists(path):
        return importlib.import_module(name)
    if f"_attention_{name}" in sys.modules:
        return sys.modules[f"_attention_{name}"]
    spec = importlib.util.spec_from_file_location(f"_attention_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


if __package__:
    from . import linux
else:
    linux = _beside("linux")

# What Python and the usual libraries (torch, numpy, matplotlib, ipykernel, zmq) read from the
# system, besides the interpreter's own prefixes. /proc, /sys and /dev are handled separately.
SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin")
SYSTEM_ETC = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/fonts",
    "/etc/mime.types",
)
PROC_COVER = ("sys", "sysrq-trigger", "irq", "bus", "fs", "driver", "acpi", "scsi", "tty", "asound", "sysvipc")
DEV_NODES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
GRACE_SECONDS = 3.0  # after SIGTERM/SIGHUP is forwarded, before the tree is killed
TICK = 0.1  # process-count watch interval
DU_EVERY = 0.5  # scratch-size watch interval
MEMORY_EVERY = 0.1  # memory watch interval
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclasses.dataclass
class Policy:
    read: list[str]
    write: list[str]
    cwd: str
    env: dict[str, str]
    layers: list[str]
    max_processes: int = 64
    max_file_bytes: int = 256 * 2**20
    scratch_bytes: int = 1024 * 2**20
    max_open_files: int = 1024
    memory_bytes: int | None = None  # the whole tree's memory (resident, shared pages shared out)
    uid: int | None = None
    gid: int | None = None
    chown_write: bool = True  # with "user": give the write directories to the user first

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Policy:
        data = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown policy fields: {sorted(unknown)}")
        return cls(**data)


class Unavailable(Exception):
    """A requested layer cannot be applied: (layer, reason)."""

    def __init__(self, layer: str, reason: str):
        super().__init__(f"{layer}: {reason}")
        self.layer, self.reason = layer, reason


# ---------------------------------------------------------------------------------------------
# Low-level: capabilities (libc, prctl and Landlock are attention_course/confinement/linux.py's)
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# seccomp-BPF (the program comes from seccomp_filter.py, built by libseccomp outside)
# ---------------------------------------------------------------------------------------------
class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _seccomp_programs(layers) -> dict[str, str]:
    """The filters the inner stage may need, as hex (it picks by the uid it ends up with): "0" for a
    child that is not uid 0, "1" for one that is. Built by libseccomp (attention_course/confinement/seccomp_filter.py,
    loaded from beside this file, which also runs as a plain script)."""
    sandbox = "landlock" in layers or "bwrap" in layers
    module = _beside("seccomp_filter")
    try:
        programs = {"1": module.program(sandbox, uid0=True).hex()}
        if sandbox:
            programs["0"] = module.program(sandbox, uid0=False).hex()
    except module.Unsupported as e:
        raise Unavailable("landlock" if sandbox else "caps", f"seccomp: {e}") from e
    return programs


def seccomp_install(program: bytes, layer: str) -> None:
    """Install a BPF program (an array of struct sock_filter) on this thread, for good."""
    count = len(program) // ctypes.sizeof(_SockFilter)
    filters = (_SockFilter * count).from_buffer_copy(program)
    fprog = _SockFprog(count, filters)
    try:
        linux.prctl(linux.PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog))
    except OSError as e:
        raise Unavailable(layer, f"seccomp filter refused ({e.strerror})") from e


# ---------------------------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------------------------
def _python_prefixes(python: str) -> list[str]:
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    else:
        code = (
            "import sys; print(sys.prefix); print(sys.base_prefix);print(sys.exec_prefix); print(sys.base_exec_prefix)"
        )
        out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=True)
        prefixes = out.stdout.split("\n")[:4]
    prefixes.append(os.path.dirname(os.path.dirname(os.path.realpath(python))))
    return prefixes


def _covered(path: str, roots) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def default_read_paths(python: str = sys.executable) -> list[str]:
    """The system paths and the Python prefixes (venv and base) needed to run ``python``."""
    out: list[str] = []
    for p in list(SYSTEM_DIRS) + list(SYSTEM_ETC) + _python_prefixes(python):
        if p and os.path.lexists(p) and p not in out:
            out.append(p)
    return out


def _system_read() -> list[str]:
    return [p for p in SYSTEM_DIRS + SYSTEM_ETC if os.path.lexists(p)]


def _dedupe(paths) -> list[str]:
    out = []
    for p in paths:
        p = os.path.abspath(p)
        if p not in out:
            out.append(p)
    return out


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


# ---------------------------------------------------------------------------------------------
# Inner stage: runs in the child (forked supervisor, or the base interpreter inside bwrap)
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# Supervisor
# ---------------------------------------------------------------------------------------------
_FAILURES: list[tuple[str, str, int]] = []  # (layer, reason, exit code), for the status file


def _fail(layer: str, reason: str, code: int = EXIT_UNAVAILABLE) -> int:
    """Say why on stderr (for a person reading a log) and keep it for the status file."""
    sys.stderr.write(f"confine: {layer}: {reason}\n")
    sys.stderr.flush()
    _FAILURES.append((layer, reason, code))
    return code


def status_path(policy_path: str) -> str:
    """Where the supervisor started with `run --policy policy_path` writes its status."""
    return f"{policy_path}.status.json"


def _outcome(code: int) -> dict:
    """The supervisor's status: what happened ("exited", "unavailable": a layer could not be
    applied and the program never ran, "limit": a limit was exceeded and the tree killed, "exec":
    the program could not be started, "usage"), with the layer, the reason and the exit code."""
    for layer, reason, failed in reversed(_FAILURES):
        if failed == code:
            kind = {EXIT_UNAVAILABLE: "unavailable", EXIT_LIMIT: "limit", 2: "usage"}.get(code, "exec")
            return {"outcome": kind, "layer": layer, "reason": reason, "exit": code}
    return {"outcome": "exited", "layer": "", "reason": "", "exit": code}


def _write_status(path: str, code: int) -> None:
    temporary = f"{path}.{os.getpid()}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(_outcome(code)))
    os.replace(temporary, path)


def read_status(policy_path: str) -> dict | None:
    """The status the supervisor of `policy_path` wrote when it ended (see `_outcome`), or None
    when it wrote none (it was killed, or has not ended)."""
    try:
        with open(status_path(policy_path)) as handle:
            status = json.load(handle)
    except (OSError, ValueError):
        return None
    return status if isinstance(status, dict) and "outcome" in status else None


def sandbox_user(create: bool = True) -> tuple[int, int]:
    """uid and gid of SANDBOX_USER (the account of a policy without its own uid), created (as a
    system user) when missing. Grading gives each student an account of its own instead
    (accounts.py)."""
    accounts = importlib.import_module(".accounts", __package__) if __package__ else _beside("accounts")
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


def _chown_tree(root: str, uid: int, gid: int) -> None:
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
                        elif est.st_nlink == 1 and (est.st_uid != uid or est.st_gid != gid):
                            os.chown(e.name, uid, gid, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        continue
            finally:
                os.close(fd)
    finally:
        for fd in stack:
            os.close(fd)


def _du(paths: list[str]) -> int:
    seen = set()
    total = 0
    stack = list(paths)
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
                if stat.S_ISDIR(st.st_mode):
                    stack.append(e.path)
    return total


@functools.cache
def _limits():
    """attention_course/confinement/limits.py, which lists, measures and kills process trees with psutil: the
    supervisor's (the inner stage, which runs without site-packages, never needs it)."""
    return importlib.import_module(".limits", __package__) if __package__ else _beside("limits")


def _uid_tasks(uid: int) -> int:
    """Threads of every process whose real uid is `uid` (what RLIMIT_NPROC counts)."""
    import psutil

    n = 0
    for process in psutil.process_iter(["uids", "num_threads"]):
        uids, threads = process.info["uids"], process.info["num_threads"]
        if uids is not None and uids.real == uid:
            n += threads or 0
    return n


def _preflight(policy: Policy) -> dict:
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
    if "bwrap" in policy.layers and not os.access(bwrap_path(), os.X_OK):
        raise Unavailable("bwrap", f"bubblewrap: {BWRAP} not found (apt-get install bubblewrap)")
    uid = gid = None
    if "user" in policy.layers:
        if os.geteuid() != 0:
            raise Unavailable("user", "only when grading runs as root")
        if policy.uid is not None:
            uid = policy.uid
            gid = policy.gid if policy.gid is not None else policy.uid
        else:
            uid, gid = sandbox_user()
        if uid == 0 or gid == 0:
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
    seccomp = _seccomp_programs(policy.layers) if policy.layers else {}
    return {"uid": uid, "gid": gid, "nproc": nproc, "nproc_shared": shared, "userns": userns, "seccomp": seccomp}


def bwrap_path() -> str:
    if os.path.exists(BWRAP):
        return BWRAP
    import shutil

    return shutil.which("bwrap") or BWRAP


@dataclasses.dataclass(frozen=True)
class Host:
    """What the bubblewrap command line depends on outside the policy: facts of this machine."""

    bwrap: str  # the bubblewrap executable
    root: bool  # the supervisor runs as uid 0 (no user namespace; capabilities dropped instead)
    system: dict[str, str]  # SYSTEM_DIRS present: path -> target of a top-level link, "" for a folder
    existing: frozenset[str]  # the paths to mount read-only that exist
    base_prefix: str  # the base interpreter's prefix (it runs the inner stage inside)

    @classmethod
    def here(cls, policy: Policy) -> Host:
        system = {}
        for p in SYSTEM_DIRS:
            if os.path.islink(p) and os.path.dirname(p) == "/":
                system[p] = os.readlink(p)
            elif os.path.isdir(p):
                system[p] = ""
        existing = frozenset(p for p in _bwrap_reads(policy, sys.base_prefix) if os.path.exists(p))
        return cls(bwrap_path(), os.geteuid() == 0, system, existing, sys.base_prefix)


def _bwrap_reads(policy: Policy, base_prefix: str) -> list[str]:
    return _dedupe(list(SYSTEM_DIRS + SYSTEM_ETC) + list(policy.read) + [base_prefix])


def bwrap_argv(policy: Policy, info_fd: int, user: bool, host: Host) -> list[str]:
    """The bubblewrap command line (without the program) for `policy` on `host`: a pure function."""
    args = [host.bwrap]
    if not host.root:
        args += ["--unshare-user", "--disable-userns"]
    args += [
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ]
    # A uid-0 child (no user layer) could otherwise write /proc/sys (core_pattern!) and friends.
    for sub in PROC_COVER:
        args += ["--ro-bind-try", f"/proc/{sub}", f"/proc/{sub}"]
    mounted: set[str] = set()
    for p, target in host.system.items():
        args += ["--symlink", target, p] if target else ["--ro-bind", p, p]
        mounted.add(p)
    args += ["--ro-bind", "/sys", "/sys"]
    reads = _bwrap_reads(policy, host.base_prefix)
    binds = [("--ro-bind-try", p) for p in reads if p not in mounted and p in host.existing]
    binds += [("--bind", w) for w in _dedupe(policy.write)]
    binds.sort(key=lambda b: b[1].count("/"))  # parents before children; writes win ties
    made: set[str] = set()
    for option, path in binds:
        # bwrap would create missing parents with mode 0700: make them 0755 so that the sandbox
        # user can reach what is mounted below (e.g. /root/.pyenv/...).
        parents = []
        parent = os.path.dirname(path)
        while parent != "/" and parent not in made and not _covered(parent, mounted):
            parents.append(parent)
            parent = os.path.dirname(parent)
        for parent in reversed(parents):
            args += ["--perms", "0755", "--dir", parent]
            made.add(parent)
        args += [option, path, path]
        mounted.add(path)
    args += ["--remount-ro", "/", "--remount-ro", "/dev", "--chdir", policy.cwd, "--clearenv"]
    for k, v in policy.env.items():
        args += ["--setenv", k, v]
    args += ["--info-fd", str(info_fd)]
    if host.root:
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETPCAP"]
        if user:
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return args


def _inner_archive() -> bytes:
    """What the inner stage runs from inside bubblewrap, where no file of the course is mounted:
    a zip archive of this file and attention_course/confinement/linux.py, run by Python as `/proc/self/fd/N`."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, text in (
            ("__main__.py", "import sys\n\nimport confine\n\nsys.exit(confine.main())\n"),
            ("confine.py", Path(SCRIPT).read_text(encoding="utf-8")),
            ("linux.py", Path(SCRIPT).with_name("linux.py").read_text(encoding="utf-8")),
        ):
            archive.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), text)
    return buffer.getvalue()


def _memfd_source() -> int:
    fd = os.memfd_create("confine-inner", os.MFD_ALLOW_SEALING)
    os.write(fd, _inner_archive())
    import fcntl

    seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _ns_child(init_pid: int, inner_pid: int) -> int | None:
    """The outside pid of the process whose pid is ``inner_pid`` in init_pid's pid namespace."""
    try:
        with open(f"/proc/{init_pid}/task/{init_pid}/children") as f:
            kids = [int(x) for x in f.read().split()]
    except OSError:  # no CONFIG_PROC_CHILDREN
        import psutil

        try:
            kids = [child.pid for child in psutil.Process(init_pid).children()]
        except psutil.Error:
            kids = []
    for kid in kids:
        try:
            with open(f"/proc/{kid}/status") as f:
                for line in f:
                    if line.startswith("NSpid:") and int(line.split()[-1]) == inner_pid:
                        return kid
        except (OSError, ValueError):
            continue
    return None


class Supervisor:
    def __init__(self, policy: Policy, argv: list[str]):
        self.policy, self.argv = policy, argv
        self.main_pid: int | None = None  # the process we wait for (fork child or bwrap)
        self.target_pid: int | None = None  # the confined main process, for signals
        self.target_fd: int | None = None
        self.pending: list[int] = []
        self.term_deadline: float | None = None
        self.kill_now = False
        self.exit_status: int | None = None
        self.messages: list[str] = []
        self.started = False
        self.info: dict = {}
        self.bwrap_err = b""
        self.limit: str | None = None
        self.inner_pid: int | None = None

    # -- signals --------------------------------------------------------------------------------
    def _on_signal(self, sig, frame):
        if sig == signal.SIGUSR1:
            self.kill_now = True
            return
        if sig in (signal.SIGTERM, signal.SIGHUP) and self.term_deadline is None:
            self.term_deadline = time.monotonic() + GRACE_SECONDS
        if self.target_fd is None:
            self.pending.append(sig)
        else:
            self._forward(sig)

    def _forward(self, sig):
        try:
            signal.pidfd_send_signal(self.target_fd, sig)
        except OSError:
            pass

    def _set_target(self, pid: int):
        try:
            self.target_fd = os.pidfd_open(pid)
        except OSError:
            return
        self.target_pid = pid
        for sig in self.pending:
            self._forward(sig)
        self.pending.clear()

    # -- the tree -------------------------------------------------------------------------------
    def _reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.main_pid and self.exit_status is None:
                code = os.waitstatus_to_exitcode(status)
                self.exit_status = code if code >= 0 else 128 - code

    def descendants(self) -> list:
        """Every process below the supervisor (psutil processes)."""
        return _limits().below(os.getpid())

    def kill_tree(self):
        if self.info.get("child-pid"):
            try:
                # bwrap's pid 1: its death takes the whole pid namespace with it
                os.kill(self.info["child-pid"], signal.SIGKILL)
            except OSError:
                pass
        for _ in range(100000):
            kids = self.descendants()
            _limits().kill(kids)
            alive = self._reap()
            if not kids and not alive:
                return
            time.sleep(0.002)

    # -- start ----------------------------------------------------------------------------------
    def run(self) -> int:
        policy = self.policy
        self.parent = os.getppid()  # when it goes (a grader killed), the confined tree goes too
        try:
            linux.not_dumpable()
            linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        except OSError as e:
            return _fail("setup", f"prctl failed ({e.strerror})")
        try:
            resolved = _preflight(policy)
            if resolved["uid"] is not None and policy.chown_write:
                for w in policy.write:
                    _chown_tree(w, resolved["uid"], resolved["gid"])
        except Unavailable as e:
            return _fail(e.layer, e.reason)
        except OSError as e:
            return _fail("setup", str(e))
        cfg = {
            "argv": self.argv,
            "env": dict(policy.env),
            "cwd": policy.cwd,
            "layers": list(policy.layers),
            "write": _dedupe(policy.write),
            "ll_read": _dedupe(_system_read() + list(policy.read) + ["/proc", "/sys"]),
            "max_file_bytes": policy.max_file_bytes,
            "max_open_files": policy.max_open_files,
            "nproc": resolved["nproc"],
            "nproc_shared": resolved["nproc_shared"],
            "userns": resolved["userns"],
            "uid": resolved["uid"],
            "gid": resolved["gid"],
            "seccomp": resolved["seccomp"],
        }
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *a: None)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
            signal.signal(sig, self._on_signal)
        status_r, status_w = os.pipe()
        fds = {"status": status_r, "wake": wake_r}
        if "bwrap" in policy.layers:
            try:
                self._start_bwrap(cfg, status_w, fds)
            except OSError as e:
                return _fail("bwrap", f"cannot start bubblewrap ({e})")
        else:
            self._start_fork(cfg, status_w, status_r, wake_r, wake_w)
        os.close(status_w)
        return self._loop(fds)

    def _start_fork(self, cfg, status_w, status_r, wake_r, wake_w):
        cfg = dict(cfg, status_fd=status_w, in_bwrap=False, ppid=os.getpid())
        pid = os.fork()
        if pid == 0:
            try:
                signal.set_wakeup_fd(-1)
                for fd in (status_r, wake_r, wake_w):
                    os.close(fd)
            except BaseException:
                pass
            inner_stage(cfg)
            os._exit(EXIT_UNAVAILABLE)
        self.main_pid = pid
        self._set_target(pid)

    def _start_bwrap(self, cfg, status_w, fds):
        info_r, info_w = os.pipe()
        err_r, err_w = os.pipe()
        src = _memfd_source()
        stderr_copy = os.dup(2)
        cfg = dict(cfg, status_fd=status_w, stderr_fd=stderr_copy, in_bwrap=True, ppid=1)
        base_python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
        argv = bwrap_argv(self.policy, info_w, "user" in cfg["layers"], Host.here(self.policy))
        argv += ["--", base_python, "-I", "-S", f"/proc/self/fd/{src}", "--inner", json.dumps(cfg)]
        try:
            # bwrap itself is the sandbox's pid 1, whose /proc/1/environ the program can read: it
            # gets no environment of the grader's (the program's own comes from --setenv).
            proc = subprocess.Popen(
                argv,
                pass_fds=(info_w, status_w, src, stderr_copy),
                stderr=err_w,
                process_group=0,
                close_fds=True,
                env={"PATH": "/usr/bin:/bin"},
            )
        finally:
            for fd in (info_w, err_w, src, stderr_copy):
                os.close(fd)
        self.main_pid = proc.pid
        proc.returncode = 0  # the supervisor reaps it itself; keep Popen.__del__ quiet
        fds["info"] = info_r
        fds["err"] = err_r

    # -- main loop ------------------------------------------------------------------------------
    def _loop(self, fds: dict) -> int:
        policy = self.policy
        buffers = {k: b"" for k in fds}
        next_du = time.monotonic() + DU_EVERY
        next_count = next_memory = 0.0
        extra = 2 if "bwrap" in policy.layers else 0  # bwrap's monitor and its pid 1
        while self.exit_status is None:
            self._reap()
            if self.exit_status is not None:
                break
            if self.kill_now:
                self.kill_tree()
                self.exit_status = 128 + signal.SIGKILL
                break
            now = time.monotonic()
            if self.term_deadline is None and os.getppid() != self.parent:
                self._on_signal(signal.SIGTERM, None)  # orphaned: as if told to stop
            if self.term_deadline is not None and now > self.term_deadline:
                self.kill_tree()
                self.exit_status = 128 + signal.SIGTERM
                break
            if now >= next_count:
                next_count = now + TICK / 2
                count = len(self.descendants()) - extra
                if count > policy.max_processes:
                    self.limit = f"{count} processes > max_processes {policy.max_processes}; stopped"
                    self.kill_tree()
                    break
            if policy.memory_bytes and now >= next_memory:
                next_memory = now + MEMORY_EVERY
                used = _limits().tree_memory(self.descendants(), policy.memory_bytes)
                if used > policy.memory_bytes:
                    self.limit = (
                        f"memory: {used // 2**20} MiB > memory_bytes {policy.memory_bytes // 2**20} MiB; stopped"
                    )
                    self.kill_tree()
                    break
            if now >= next_du and policy.write:
                t0 = time.monotonic()
                used = _du(policy.write)
                next_du = time.monotonic() + max(DU_EVERY, 10 * (time.monotonic() - t0))
                if used > policy.scratch_bytes:
                    self.limit = (
                        f"the write directories hold {used} bytes > scratch_bytes {policy.scratch_bytes}; stopped"
                    )
                    self.kill_tree()
                    break
            readable = [fd for fd in fds.values() if fd is not None]
            try:
                ready, _, _ = select.select(readable, [], [], TICK)
            except InterruptedError:
                continue
            for name, fd in list(fds.items()):
                if fd is None or fd not in ready:
                    continue
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if name == "wake":
                    continue
                if not data:
                    os.close(fd)
                    fds[name] = None
                    data = b"\n" if name == "status" else b""
                    if name != "status":
                        self._take(name, buffers[name], final=True)
                        continue
                buffers[name] = self._take(name, buffers[name] + data)
        # The main process is gone (or the tree is being stopped): nothing may stay.
        for name, fd in fds.items():
            if fd is not None and name in ("status", "err", "info"):
                try:
                    os.set_blocking(fd, False)
                    buffers[name] = self._take(name, buffers[name] + os.read(fd, 65536))
                except OSError:
                    pass
        self.kill_tree()
        for name in ("status", "err"):
            if buffers.get(name):
                self._take(name, buffers[name] + b"\n", final=True)
        return self._result()

    def _take(self, name: str, data: bytes, final: bool = False) -> bytes:
        if name == "status":
            *lines, rest = data.split(b"\n")
            for line in lines:
                if line:
                    self._message(line.decode(errors="replace"))
            return rest
        if name == "info":
            try:
                self.info = json.loads(data.decode())
                self._find_target()
                return b""
            except ValueError:
                return data
        if name == "err":
            if self.started:
                os.write(2, data)  # bwrap's own late messages
                return b""
            self.bwrap_err += data
            return b""
        return b""

    def _message(self, line: str):
        kind, _, text = line.partition(" ")
        if kind == "S":
            self.started = True
            self.inner_pid = int(text)
            if self.bwrap_err.strip():
                os.write(2, self.bwrap_err)
                self.bwrap_err = b""
            self._find_target()
        else:
            self.messages.append(line)

    def _find_target(self):
        if self.target_fd is not None or "bwrap" not in self.policy.layers:
            return
        if not self.started or not self.info.get("child-pid"):
            return
        for _ in range(200):
            pid = _ns_child(self.info["child-pid"], self.inner_pid)
            if pid:
                self._set_target(pid)
                return
            time.sleep(0.005)

    def _result(self) -> int:
        for line in self.messages:
            kind, _, text = line.partition(" ")
            if kind == "E":
                layer, _, reason = text.partition("\t")
                return _fail(layer, reason)
        if self.limit:
            return _fail("limit", self.limit, EXIT_LIMIT)
        if "bwrap" in self.policy.layers and not self.started:
            text = self.bwrap_err.decode(errors="replace")
            lines = [ln for ln in text.splitlines() if ln.strip()]
            reason = lines[-1] if lines else f"bubblewrap exited with status {self.exit_status}"
            return _fail("bwrap", _explain_bwrap(reason))
        for line in self.messages:
            kind, _, text = line.partition(" ")
            if kind == "X":
                code, _, reason = text.partition("\t")
                return _fail("exec", reason, int(code))
        return self.exit_status if self.exit_status is not None else 128 + signal.SIGKILL


def _explain_bwrap(message: str) -> str:
    """bwrap's error, with the usual cause when unprivileged user namespaces are off."""

    def read(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            return None

    low = message.lower()
    if os.geteuid() != 0 and (
        "namespace" in low or "uid map" in low or "permission" in low or "operation not permitted" in low
    ):
        if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
            return (
                "unprivileged user namespaces are disabled (Ubuntu 24.04 restricts them "
                "through AppArmor: kernel.apparmor_restrict_unprivileged_userns=1; set it "
                f"to 0 or give bwrap an AppArmor profile with 'userns,'): {message}"
            )
        if read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
            return f"unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0): {message}"
        if read("/proc/sys/user/max_user_namespaces") == "0":
            return f"user namespaces are disabled (user.max_user_namespaces=0): {message}"
    return message


def supervise(policy: Policy, argv: list[str]) -> int:
    if not argv:
        return _fail("policy", "no program to run")
    return Supervisor(policy, argv).run()


# ---------------------------------------------------------------------------------------------
# API for the grader and the tests
# ---------------------------------------------------------------------------------------------


def write_policy(policy: Policy, policy_path: str) -> None:
    """Write a policy file (mode 0600)."""
    fd = os.open(policy_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(policy.to_json())


def command(policy: Policy, argv: list[str], policy_path: str) -> list[str]:
    """Write the policy to policy_path (mode 0600); the argv that runs ``argv`` confined."""
    write_policy(policy, policy_path)
    return [sys.executable, "-I", SCRIPT, "run", "--policy", os.path.abspath(policy_path), "--", *argv]


def run(policy: Policy, argv: list[str], timeout: float | None = None, **popen_kwargs) -> subprocess.CompletedProcess:
    """Run ``argv`` confined and capture stdout/stderr (text); the result's ``status`` is the
    supervisor's (``read_status``). On a timeout the confined tree is killed (SIGUSR1 to the
    supervisor) and subprocess.TimeoutExpired is raised."""
    with tempfile.TemporaryDirectory(prefix="confine-") as d:
        policy_path = os.path.join(d, "policy.json")
        cmd = command(policy, argv, policy_path)
        popen_kwargs.setdefault("stdin", subprocess.DEVNULL)
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen_kwargs) as proc:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGUSR1)
                try:
                    out, err = proc.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    out, err = proc.communicate()
                raise subprocess.TimeoutExpired(cmd, timeout, out, err) from None
        result = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        result.status = read_status(policy_path)
        return result


_PROBE_CACHE: dict = {}


def _try(python: str, layers: list[str]) -> str | None:
    with tempfile.TemporaryDirectory(prefix="confine-probe-") as d:
        os.chmod(d, 0o755)
        policy = Policy(
            read=default_read_paths(python), write=[d], cwd=d, env={"PATH": "/usr/bin:/bin", "HOME": d}, layers=layers
        )
        try:
            r = run(policy, [python, "-c", "import sys"], timeout=120)
        except subprocess.TimeoutExpired:
            return f"{'+'.join(layers)}: python -c 'import sys' timed out confined"
        if r.returncode == 0:
            return None
        status = getattr(r, "status", None) or {}
        if status.get("reason"):
            return f"{status['layer']}: {status['reason']}"
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        return (lines[-1] if lines else "") or f"{'+'.join(layers)}: exit status {r.returncode}"


def probe(python: str = sys.executable, layers=LAYERS) -> dict[str, str | None]:
    """For each layer: None when it works here (proved by running ``python -c "import sys"``
    confined with only that layer), else one sentence why not. When "user" works only together
    with bwrap (the interpreter lives under a directory the sandbox user cannot search), "user"
    is None and the extra key "user without bwrap" says why it does not work alone."""
    key = (python, tuple(layers))
    if key in _PROBE_CACHE:
        return dict(_PROBE_CACHE[key])
    result: dict[str, str | None] = {}
    for layer in layers:
        if layer == "landlock":
            result[layer] = linux.landlock_reason(linux.landlock_abi()) or _try(python, ["landlock"])
        elif layer == "bwrap":
            if not os.access(bwrap_path(), os.X_OK):
                result[layer] = f"bubblewrap: {BWRAP} not found (apt-get install bubblewrap)"
            else:
                result[layer] = _try(python, ["bwrap"])
        elif layer == "user":
            if os.geteuid() != 0:
                result[layer] = "user: only when grading runs as root"
                continue
            alone = _try(python, ["user"])
            if alone is None:
                result[layer] = None
                continue
            with_bwrap = _try(python, ["bwrap", "user"]) if os.access(bwrap_path(), os.X_OK) else "no bwrap"
            if with_bwrap is None:
                result[layer] = None
                result["user without bwrap"] = f"user: works here only together with bwrap ({alone})"
            else:
                result[layer] = alone
        else:
            result[layer] = f"{layer}: unknown layer"
    _PROBE_CACHE[key] = result
    return dict(result)


def usable(layers, python: str = sys.executable) -> str | None:
    """None when this set of layers works here, else why not (uses the cached probe)."""
    found = probe(python)
    for layer in layers:
        if layer not in found:
            return f"{layer}: unknown layer"
        if found[layer]:
            return found[layer]
    if "user" in layers and "bwrap" not in layers and found.get("user without bwrap"):
        return found["user without bwrap"]
    return None


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--inner"]:
        inner_stage(json.loads(args[1]))
        return EXIT_UNAVAILABLE
    if args[:1] == ["probe"]:
        python = args[args.index("--python") + 1] if "--python" in args else sys.executable
        print(json.dumps(probe(python), indent=1))
        return 0
    if args[:1] == ["run"] and "--" in args:
        sep = args.index("--")
        opts, program = args[1:sep], args[sep + 1 :]
        if len(opts) != 2 or opts[0] != "--policy":
            return _fail("usage", "confine.py run --policy POLICY.json -- ARGV...", 2)
        try:
            with open(opts[1]) as f:
                policy = Policy.from_json(f.read())
        except (OSError, ValueError, TypeError) as e:
            code = _fail("policy", f"cannot read {opts[1]}: {e}")
        else:
            code = supervise(policy, program)
        if opts[1]:
            _write_status(status_path(opts[1]), code)
        return code
    sys.stderr.write("usage: confine.py run --policy POLICY.json -- ARGV... | confine.py probe\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
