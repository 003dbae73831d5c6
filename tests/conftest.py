"""Shared fixtures of the course's test suite.

``REPO`` is the repository root (the nbgrader course root). ``course_copy`` gives a test its own
copy of the pieces nbgrader needs, so tests that release or grade never touch the working tree.
``run`` runs a command with the virtual environment's ``bin`` first on ``PATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The environment that runs pytest (``make test`` runs it from .venv): its jupyter, nbgrader, make
# targets and kernels are the ones under test.
VENV_BIN = Path(sys.prefix) / "bin"

# What a course copy contains: nbgrader's configuration, the manifest, the sources and releases,
# and what `make` needs. The grading code is the installed (editable) package.
COURSE_PIECES = (
    "nbgrader_config.py",
    "course.toml",
    "source",
    "notebooks",
    "course_helpers",
    "i18n",
    "Makefile",
    "requirements.txt",
    "pyproject.toml",
    "binder",
    "LICENSE",
    "README.md",
    "README.zh-CN.md",
)
COPY_IGNORE = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "*.db", "*.pyc", "*.egg-info")

DEFAULT_TIMEOUT = 600


# The longest files first, so that the two workers finish together: xdist hands out whole files
# in collection order (pytest.ini turns off its own reordering, which puts the files with the
# most tests first, however quick they are).
LONGEST_FIRST = (
    "test_class_grading.py",
    "test_grader.py",
    "test_attacks.py",
    "test_autograde.py",
    "test_binder.py",
    "test_exchange.py",
    "test_cluster.py",
    "test_load.py",
    "test_tampering.py",
    "test_browser.py",
    "test_jupyterhub.py",
    "test_one_grading_path.py",
    "test_warm_grading.py",
    "test_html_safety_browser.py",
    "test_stored_outputs.py",
    "test_recipe.py",
)


def pytest_collection_modifyitems(items):
    def rank(item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order within a file stays


def venv_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """os.environ with the venv's bin first on PATH (plus ``extra``)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(VENV_BIN), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = sys.prefix
    env.pop("PYTHONHOME", None)
    if extra:
        env.update(extra)
    return env


def run(
    cmd, cwd, timeout: float = DEFAULT_TIMEOUT, env: dict[str, str] | None = None, check: bool = False
) -> subprocess.CompletedProcess:
    """Run ``cmd`` in ``cwd`` with the venv first on PATH; output is captured as text.

    ``env`` adds to (or overrides) the environment. With ``check=True`` a non-zero exit fails the
    calling test with the command's output.
    """
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=str(cwd),
        env=venv_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if check and proc.returncode != 0:
        pytest.fail(describe(proc), pytrace=False)
    return proc


def describe(proc: subprocess.CompletedProcess) -> str:
    """The command, exit code and output of ``proc``, for an assertion message."""
    cmd = " ".join(str(c) for c in proc.args)
    return f"`{cmd}` exited {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"


def copy_course(dest: Path) -> Path:
    """Copy the course pieces nbgrader needs from REPO into ``dest``; return ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in COURSE_PIECES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=COPY_IGNORE)
        elif src.is_file():
            shutil.copy2(src, dest / name)
    return dest


def course_skeleton(dest: Path) -> Path:
    """A course folder that reads REPO: its config and manifest copied, source/ and notebooks/
    linked (for a test that builds its own gradebook and never writes the notebooks)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("nbgrader_config.py", "course.toml"):
        shutil.copy(REPO / name, dest / name)
    for name in ("source", "notebooks"):
        (dest / name).symlink_to(REPO / name, target_is_directory=True)
    return dest


def in_child(attempt) -> dict:
    """`attempt()` (a dict, as JSON) in a forked child of this test: what it returned,
    {"error": repr} when it raised, or {"signal": N} when something killed the child."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            os.write(write, json.dumps(attempt()).encode())
        except BaseException as exc:
            os.write(write, json.dumps({"error": repr(exc)}).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        data = handle.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return json.loads(data)


def give_to(path, account) -> None:
    """Make `account` (a pwd entry) the owner of `path` and everything below it, links included."""
    for base, dirs, files in os.walk(path):
        for name in [base, *(os.path.join(base, f) for f in dirs + files)]:
            os.lchown(name, account.pw_uid, account.pw_gid)


def as_student(account, exchange, course_id: str, argv: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    """Run `argv` as the student `account` in their home, with nbgrader pointed at `exchange` and
    `course_id`, confined (bubblewrap and the account) to that home and the exchange."""
    from attention_course.confinement import confine

    home = account.pw_dir
    os.makedirs(os.path.join(home, ".jupyter"), exist_ok=True)
    with open(os.path.join(home, ".jupyter", "nbgrader_config.py"), "w") as handle:  # hub/students/ does this
        handle.write(
            f"c = get_config()\nc.Exchange.root = {str(exchange)!r}\nc.CourseDirectory.course_id = {course_id!r}\n"
        )
    give_to(home, account)
    env = {
        "HOME": home,
        "USER": account.pw_name,
        "LOGNAME": account.pw_name,
        "LANG": "C.UTF-8",
        "PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin",
    }
    policy = confine.Policy(
        read=confine.default_read_paths(sys.executable),
        write=[home, str(exchange)],
        cwd=home,
        env=env,
        layers=["bwrap", "user"],
        uid=account.pw_uid,
        gid=account.pw_gid,
        chown_write=False,
        max_processes=256,
    )
    return confine.run(policy, argv, timeout=timeout)


@pytest.fixture
def course_copy(tmp_path: Path) -> Path:
    """A private copy of the course (nbgrader_config.py, source/, notebooks/) under tmp_path."""
    return copy_course(tmp_path / "course")


GRADING_SEED = 4242


def grade_class(
    dest: Path,
    write_students,
    jobs: int = 1,
    args: str = "",
    expect_ok: bool = True,
    before_grading=None,
    scheduler: str = "",
):
    """Copy the course to `dest`, let `write_students(course)` add submissions, (call
    `before_grading(course)`), run `make grade` (on Dask with `scheduler`: "local" or an address).

    Returns the course, the rows of grades_by_cell.csv keyed by (student, cell), and the output.
    """
    import csv

    course = copy_course(dest)
    write_students(course)
    if before_grading is not None:
        before_grading(course)
    grade_args = f"--seed {GRADING_SEED} --seconds 20 --cell-timeout 20 {args}".strip()
    proc = run(
        [
            "make",
            "grade",
            f"VENV={REPO / '.venv'}",
            f"JOBS={jobs}",
            f"SCHEDULER={scheduler}",
            f"GRADE_ARGS={grade_args}",
        ],
        cwd=course,
        timeout=2400,
    )
    if expect_ok:
        assert proc.returncode == 0, describe(proc)
    with open(course / "grades_by_cell.csv") as handle:
        cells = {(r["student"], r["cell"]): r for r in csv.DictReader(handle)}
    return course, cells, proc.stdout
