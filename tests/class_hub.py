"""A JupyterHub for one class on this machine, as hub/jupyterhub_config.py configures it.

`class_hub(tmp)` creates the OS accounts (two students, an instructor and the grader account
formgrader runs as; homes mode 0700, passwords set with chpasswd), copies the course into the
grader's home, makes an exchange folder (mode 1777) and starts `jupyterhub` as root with the
course's configuration, on free loopback ports; it yields a `Hub` and stops everything after.

On these machines the course's Python lives under /root (mode 0700), which the students' servers
must run from: the hub is started in a private mount namespace (`unshare --mount`) where /root is
an empty tmpfs of mode 0755 holding only the Python installation, bound in read-only. Nothing of
the machine's own mounts changes. A real class installs its Python where every account can read
it (docs/jupyterhub.md).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from browser import free_port, wait_for_server
from conftest import REPO, VENV_BIN, copy_course, give_to, venv_env

COURSE_ID = "attention-course"
STUDENTS = ("atnann", "atnben")
INSTRUCTOR = "atnteach"
GRADER = "atngrader"


def password(user: str) -> str:
    return f"pw-{user}-attention"


@dataclass
class Hub:
    url: str
    course: Path
    exchange: Path
    log: Path
    accounts: dict[str, pwd.struct_passwd] = field(default_factory=dict)

    def home(self, user: str) -> Path:
        return Path(self.accounts[user].pw_dir)


def _account(name: str) -> pwd.struct_passwd:
    """The account `name`, created if missing, with an empty home of mode 0700 and a known password."""
    try:
        account = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "-K", "HOME_MODE=0700", "--shell", "/bin/sh", name], check=True)
        account = pwd.getpwnam(name)
    subprocess.run(["chpasswd"], input=f"{name}:{password(name)}\n", text=True, check=True)
    home = Path(account.pw_dir)
    home.mkdir(exist_ok=True)
    for entry in home.iterdir():  # what an earlier run left
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    os.chown(home, account.pw_uid, account.pw_gid)
    home.chmod(0o700)
    return account


def _hidden_ancestor(path: Path) -> Path | None:
    """The highest folder above `path` that other accounts may not enter, if any."""
    for ancestor in reversed(path.parents):
        if ancestor != Path("/") and not ancestor.stat().st_mode & stat.S_IXOTH:
            return ancestor
    return None


def _namespace_script(state: Path, command: list[str]) -> str:
    """A shell script that makes the course's Python reachable by every account, then runs `command`."""
    lines = ["set -e"]
    wanted = {Path(p).resolve() for p in (sys.base_prefix, sys.prefix, REPO)}
    reveal = sorted(p for p in wanted if not any(other in p.parents for other in wanted))
    by_ancestor: dict[Path, list[Path]] = {}
    for path in reveal:
        ancestor = _hidden_ancestor(path)
        if ancestor is not None:
            by_ancestor.setdefault(ancestor, []).append(path)
    for n, (ancestor, paths) in enumerate(by_ancestor.items()):
        keep = [(path, state / f"reveal-{n}-{i}") for i, path in enumerate(paths)]
        for path, aside in keep:
            lines += [
                f"mkdir -p {shlex.quote(str(aside))}",
                f"mount --bind {shlex.quote(str(path))} {shlex.quote(str(aside))}",
            ]
        lines.append(f"mount -t tmpfs -o mode=0755 tmpfs {shlex.quote(str(ancestor))}")
        for path, aside in keep:
            lines += [
                f"mkdir -p {shlex.quote(str(path))}",
                f"mount --bind {shlex.quote(str(aside))} {shlex.quote(str(path))}",
                f"mount -o remount,bind,ro {shlex.quote(str(path))}",
            ]
    lines.append("exec " + shlex.join(command))
    return "\n".join(lines)


def _stop(proc: subprocess.Popen, users) -> None:
    """SIGTERM the hub (it stops the servers and the service it started), then end what is left."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    for user in users:
        subprocess.run(["pkill", "-KILL", "-u", user], check=False)


@contextlib.contextmanager
def class_hub(tmp: Path):
    """The hub of hub/jupyterhub_config.py with two students, an instructor and a grader account."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("useradd"):
        message = "the hub test needs root (OS accounts, PAM, the spawner's setuid) and unshare"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    names = (*STUDENTS, INSTRUCTOR, GRADER)
    accounts = {name: _account(name) for name in names}
    # Folders every account can reach: not under pytest's tmp (mode 0700).
    shared = Path(tempfile.mkdtemp(prefix="attention-hub-", dir="/tmp"))
    shared.chmod(0o755)
    exchange = shared / "exchange"
    exchange.mkdir()
    exchange.chmod(0o1777)
    state = Path(tmp) / "hub-state"
    state.mkdir()
    course = copy_course(Path(accounts[GRADER].pw_dir) / COURSE_ID)
    give_to(course, accounts[GRADER])
    port = free_port()
    env = venv_env(
        {
            "ATTENTION_HUB_URL": f"http://127.0.0.1:{port}",
            "ATTENTION_HUB_API_PORT": str(free_port()),
            "ATTENTION_PROXY_API_PORT": str(free_port()),
            "ATTENTION_SERVICE_PORT": str(free_port()),
            "ATTENTION_COURSE_ID": COURSE_ID,
            "ATTENTION_COURSE_ROOT": str(course),
            "ATTENTION_EXCHANGE": str(exchange),
            "ATTENTION_GRADER": GRADER,
            "ATTENTION_INSTRUCTORS": INSTRUCTOR,
            "ATTENTION_STUDENTS": ",".join(STUDENTS),
            "ATTENTION_HUB_STATE": str(state),
        }
    )
    command = [str(VENV_BIN / "jupyterhub"), "-f", str(REPO / "hub" / "jupyterhub_config.py")]
    log = Path(tmp) / "jupyterhub.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", _namespace_script(state, command)],
            cwd=state,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for_server(f"{url}/hub/health", proc, log, "JupyterHub")
        yield Hub(url=url, course=course, exchange=exchange, log=log, accounts=accounts)
    finally:
        _stop(proc, names)
        shutil.rmtree(shared, ignore_errors=True)
