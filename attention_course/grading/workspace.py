"""A student's private scratch folder while their submission is graded, and its confinement.

Everything that runs the student's code (nbgrader's kernels and the trusted sandbox) sees what
the student's own JupyterLab would: the Python environment, the system, and this folder, which
holds a copy of the student's notebooks and the released helpers. HOME, TMPDIR, IPYTHONDIR,
MPLCONFIGDIR and the Jupyter runtime folder (the kernel's sockets) all point inside it; nothing
else is writable, and the folder is deleted when the student is graded.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from attention_course.confinement import accounts, confine, linux

from .intake import Unreadable, read_bytes
from .settings import Grading

PREFIX = "attention-grading-"


def new_base() -> Path:
    """A new folder for workspaces, `attention-grading-<pid>-*` in the system's temporary folder
    (0711). Its owner removes it (a grading run, when it ends); one whose process was killed goes
    at the next `sweep`."""
    base = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    base.chmod(0o711)
    return base


def sweep() -> list[Path]:
    """Remove the workspace folders of grading processes that are gone (killed, crashed)."""
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        pid = folder.name.removeprefix(PREFIX).split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64] or "student"


def installed_helpers() -> Path:
    """The folder of the helpers package this Python imports (its one installed copy)."""
    import helpers

    return Path(helpers.__file__).parent


class Workspace:
    """One student's private folder for one assignment."""

    def __init__(self, student: str, assignment: str, base: Path, own_account: bool = False):
        self.student, self.assignment = student, assignment
        # With the `user` layer, an account of the student's own while they are graded
        # (attention_course.confinement.accounts): their process limit is theirs alone.
        self.account = accounts.lease() if own_account else None
        self.root = Path(base) / f"{_safe(student)}-{_safe(assignment)}"
        self.folder = self.root / assignment  # the notebooks and helpers, as in the student's JupyterLab
        self.runtime = self.root / "runtime"  # the kernel's connection file and sockets
        self.sandbox = self.root / "sandbox"  # the trusted sandbox's scratch (the student's output)
        # What the grader hands the sandbox (its request, the inputs, the helpers it imports):
        # beside the workspace, not in it, so the student's kernel, which runs at the same time,
        # can neither change nor see it; the sandbox may only read it.
        self.inbox = self.root.with_name(f"{self.root.name}.sandbox-in")
        for path in (self.folder, self.runtime, self.sandbox, *self._homes().values()):
            path.mkdir(parents=True, exist_ok=True)
        self.inbox.mkdir(mode=0o755, exist_ok=True)
        self.warm = None  # the WarmStarter its kernels are forked from (Grading.warm_kernels)
        self._seed_font_cache()

    def _homes(self) -> dict[str, Path]:
        return {
            "HOME": self.root / "home",
            "TMPDIR": self.root / "tmp",
            "IPYTHONDIR": self.root / "ipython",
            "MPLCONFIGDIR": self.root / "matplotlib",
        }

    def _seed_font_cache(self) -> None:
        """matplotlib would rebuild its font list in every fresh MPLCONFIGDIR (seconds with CJK fonts)."""
        cache = os.environ.get("MPLCONFIGDIR") or os.path.expanduser("~/.cache/matplotlib")
        for path in glob.glob(os.path.join(cache, "fontlist-*.json")):
            shutil.copy(path, self._homes()["MPLCONFIGDIR"])

    def fill(self, notebooks: Path) -> None:
        """Copy the student's notebooks (from `notebooks`) into the workspace, and the helpers
        package into it and into the inbox: the very files the grader imports (`installed_helpers`),
        so the kernel, the sandbox and the judge run one copy."""
        for path in Path(notebooks).glob("*.ipynb"):
            try:  # never through a link, never a special file (attention_course.grading.intake)
                (self.folder / path.name).write_bytes(read_bytes(path))
            except Unreadable:
                continue
        for folder in (self.folder, self.inbox):
            helpers = folder / "helpers"
            shutil.rmtree(helpers, ignore_errors=True)
            shutil.copytree(installed_helpers(), helpers, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        shutil.copy(linux.__file__, self.inbox / "linux.py")  # the sandbox's prctl and Landlock
        self.hand_over()

    def hand_over(self) -> None:
        """Make the inbox readable by the sandbox (its own user, when grading as root), whatever
        the grader's umask; nobody but the grader may write it."""
        for path in [self.inbox, *self.inbox.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)

    def env(self, threads: int = 0) -> dict[str, str]:
        """The whole environment of code running in this workspace: no PYTHONPATH, no grader secrets;
        `threads` for PyTorch and OpenMP (0: as this process's environment says)."""
        env = {k: str(v) for k, v in self._homes().items()}
        env.update(
            PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            JUPYTER_RUNTIME_DIR=str(self.runtime),
            JUPYTER_CONFIG_DIR=str(self.root / "home" / ".jupyter"),
            JUPYTER_DATA_DIR=str(self.root / "home" / ".local" / "share" / "jupyter"),
            NBGRADER_EXECUTION="autograde",
            LANG="C.UTF-8",
            PYTHONDONTWRITEBYTECODE="1",
            VIRTUAL_ENV=sys.prefix,
        )
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            if threads:
                env[name] = str(threads)
            elif name in os.environ:
                env[name] = os.environ[name]
        return env

    def policy(self, settings: Grading, layers: list[str], sandbox: bool = False) -> confine.Policy:
        """The confinement of the student's kernel, or (`sandbox`) of the trusted sandbox, which
        may also read the grader's inbox."""
        return confine.Policy(
            read=confine.default_read_paths(sys.executable) + ([str(self.inbox)] if sandbox else []),
            write=[str(self.root)],
            cwd=str(self.folder),
            env=self.env(settings.threads),
            layers=list(layers),
            max_processes=settings.max_processes,
            max_file_bytes=settings.max_file_mib * 2**20,
            scratch_bytes=settings.scratch_mib * 2**20,
            # the sandbox's driver caps each child at memory_gib itself; its own share is on top
            memory_bytes=int((settings.memory_gib + (1 if sandbox else 0)) * 2**30),
            uid=self.account.uid if self.account else None,
            gid=self.account.gid if self.account else None,
        )

    def remove(self) -> None:
        if self.warm is not None:
            self.warm.close()
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.inbox, ignore_errors=True)
        if self.account is not None:
            accounts.sweep(self.account.uid)  # nothing of this student's outlives the lease
            self.account.release()
