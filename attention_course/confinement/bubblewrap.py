"""The bubblewrap layer from the supervisor's side: its command line (a pure function of the
policy and the machine), the archive the inner stage runs from inside the sandbox, finding the
confined process from outside the sandbox's pid namespace, and bubblewrap's errors explained.
"""

from __future__ import annotations

import dataclasses
import io
import os
import sys
import zipfile
from pathlib import Path

from .policy import BWRAP, PROC_COVER, SYSTEM_DIRS, SYSTEM_ETC, Policy, covered, dedupe

INNER_FILES = ("inner.py", "policy.py", "linux.py")  # the inner stage and what it imports


def bwrap_path() -> str:
    """The bubblewrap executable: Debian's, else the first on PATH."""
    if os.path.exists(BWRAP):
        return BWRAP
    import shutil

    return shutil.which("bwrap") or BWRAP


def missing() -> str:
    """Why bubblewrap cannot be run here ('' when it can)."""
    path = bwrap_path()
    return (
        ""
        if os.access(path, os.X_OK)
        else f"bubblewrap: no runnable bwrap at {path} or on PATH (apt-get install bubblewrap)"
    )


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
        existing = frozenset(p for p in bwrap_reads(policy, sys.base_prefix) if os.path.exists(p))
        return cls(bwrap_path(), os.geteuid() == 0, system, existing, sys.base_prefix)


def bwrap_reads(policy: Policy, base_prefix: str) -> list[str]:
    """What the sandbox mounts read-only: the system, the policy's reads, the base interpreter."""
    return dedupe(list(SYSTEM_DIRS + SYSTEM_ETC) + list(policy.read) + [base_prefix])


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
    reads = bwrap_reads(policy, host.base_prefix)
    binds = [("--ro-bind-try", p) for p in reads if p not in mounted and p in host.existing]
    binds += [("--bind", w) for w in dedupe(policy.write)]
    binds.sort(key=lambda b: b[1].count("/"))  # parents before children; writes win ties
    made: set[str] = set()
    for option, path in binds:
        # bwrap would create missing parents with mode 0700: make them 0755 so that the sandbox
        # user can reach what is mounted below (e.g. /root/.pyenv/...).
        parents = []
        parent = os.path.dirname(path)
        while parent != "/" and parent not in made and not covered(parent, mounted):
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


def inner_archive() -> bytes:
    """What the inner stage runs from inside bubblewrap, where no file of the course is mounted: a
    zip archive of inner.py, policy.py and linux.py in their package, run by Python as
    `/proc/self/fd/N`. Reproducible: no time stamps."""
    here = Path(__file__).parent
    files = [
        ("__main__.py", "import sys\n\nfrom attention_course.confinement import inner\n\nsys.exit(inner.main())\n"),
        ("attention_course/__init__.py", ""),
        ("attention_course/confinement/__init__.py", ""),
    ]
    files += [
        (f"attention_course/confinement/{name}", (here / name).read_text(encoding="utf-8")) for name in INNER_FILES
    ]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, text in files:
            archive.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), text)
    return buffer.getvalue()


def memfd_source() -> int:
    """A sealed memfd holding `inner_archive()`, for bubblewrap to pass into the sandbox."""
    fd = os.memfd_create("confine-inner", os.MFD_ALLOW_SEALING)
    os.write(fd, inner_archive())
    import fcntl

    seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def ns_child(init_pid: int, inner_pid: int) -> int | None:
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


def explain_bwrap(message: str) -> str:
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
