"""What a confined program may do: the `Policy` (paths, environment, layers, limits), the names
of the layers and exit codes, and the system paths every program needs to start.

Standard library only: the inner stage imports this file inside bubblewrap, where no
site-packages is mounted (bubblewrap.py packs it into the inner stage's archive).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

LAYERS = ("bwrap", "landlock", "user")
EXIT_UNAVAILABLE = 97  # a requested layer cannot be applied; the program never ran
EXIT_LIMIT = 98  # a limit was exceeded and the confined tree killed
SANDBOX_USER = "attention-sandbox"
BWRAP = "/usr/bin/bwrap"

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


@dataclasses.dataclass
class Policy:
    """What one confined program may read and write, its environment, layers and limits; the
    supervisor reads it as JSON from a file only the grader can write."""

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


def covered(path: str, roots) -> bool:
    """Whether `path` is one of `roots` or lies below one."""
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def default_read_paths(python: str = sys.executable) -> list[str]:
    """The system paths and the Python prefixes (venv and base) needed to run ``python``."""
    out: list[str] = []
    for p in list(SYSTEM_DIRS) + list(SYSTEM_ETC) + _python_prefixes(python):
        if p and os.path.lexists(p) and p not in out:
            out.append(p)
    return out


def system_read() -> list[str]:
    """The system paths of this machine that every program reads."""
    return [p for p in SYSTEM_DIRS + SYSTEM_ETC if os.path.lexists(p)]


def dedupe(paths) -> list[str]:
    """`paths` made absolute, each once, in their first order."""
    out = []
    for p in paths:
        p = os.path.abspath(p)
        if p not in out:
            out.append(p)
    return out
