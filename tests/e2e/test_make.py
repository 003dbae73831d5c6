"""The Makefile: a fresh clone gets its .venv from `make lab` / `make test`, and `make lab` serves
JupyterLab on the course's first notebook."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, describe, run, venv_env

pytestmark = pytest.mark.slow

START = "notebooks/attention/00_start_here.ipynb"
# `jupyter lab <file>` serves the file's folder (jupyter_server: root_dir defaults to the parent
# of file_to_run), so the first notebook is at the top of the server's tree.
SERVED = "00_start_here.ipynb"


@pytest.mark.parametrize("target", ["lab", "test"])
def test_fresh_clone_creates_venv(target, tmp_path):
    """With no venv yet (VENV pointed at an empty place), make would create and install it."""
    venv = tmp_path / "venv"
    proc = run(["make", "-n", target, f"VENV={venv}"], cwd=REPO, timeout=60)
    assert proc.returncode == 0, describe(proc)
    out = proc.stdout
    assert "-m venv" in out and str(venv) in out, describe(proc)
    assert f"{venv}/bin/python -m pip install -r requirements.txt" in out, describe(proc)
    assert not venv.exists(), "make -n created the venv"


def test_make_lab_opens_a_students_jupyterlab_on_the_editions_start_page():
    """Every edition of course.toml, none named in the Makefile: the launcher reads them."""
    from attention_course.model.manifest import load

    for edition in load().editions:
        proc = run(["make", "-n", "lab", f"EDITION={edition.name}"], cwd=REPO, timeout=60)
        assert proc.returncode == 0, describe(proc)
        assert f"-m helpers.lab {edition.name}" in proc.stdout, describe(proc)
        proc = run([REPO / ".venv" / "bin" / "python", "-m", "helpers.lab", edition.name, "--print"], cwd=REPO)
        assert proc.returncode == 0, describe(proc)
        start = f"notebooks/{edition.assignment}/00_start_here.ipynb"
        assert start in proc.stdout and "binder/jupyter" in proc.stdout and "JUPYTER_CONFIG_PATH=" in proc.stdout
        assert (REPO / start).is_file()
        if edition.lab_locale != "en":
            config = proc.stdout.split("JUPYTER_CONFIG_PATH=")[1].split()[0].split(os.pathsep)[-1]
            overrides = Path(config) / "labconfig" / "default_setting_overrides.json"
            assert edition.lab_locale in overrides.read_text(), overrides
    proc = run([REPO / ".venv" / "bin" / "python", "-m", "helpers.lab", "xx", "--print"], cwd=REPO)
    assert proc.returncode == 2 and "No edition is called 'xx'" in proc.stderr, describe(proc)


def test_the_editable_install_of_the_grading_tools_comes_with_the_venv(tmp_path):
    proc = run(["make", "-n", "test", f"VENV={tmp_path / 'venv'}"], cwd=REPO, timeout=60)
    assert "pip install --no-deps --no-build-isolation -e ." in proc.stdout, describe(proc)


def test_requirements_change_reinstalls():
    """A newer requirements.txt makes the next make re-run pip install."""
    proc = run(["make", "-n", "-W", "requirements.txt", "test"], cwd=REPO, timeout=60)
    assert proc.returncode == 0, describe(proc)
    assert "-m pip install -r requirements.txt" in proc.stdout, describe(proc)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return None


def test_make_lab_serves_first_notebook(tmp_path):
    assert (REPO / START).is_file(), f"{START} is missing: run make release"
    port = free_port()
    log = tmp_path / "lab.log"
    lab_args = (
        f"--no-browser --port={port} --ServerApp.port_retries=0 --IdentityProvider.token=test --ServerApp.ip=127.0.0.1"
    )
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["make", "lab", f"LAB_ARGS={lab_args}"],
            cwd=REPO,
            env=venv_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        page = f"http://127.0.0.1:{port}/lab/tree/{SERVED}?token=test"
        status, deadline = None, time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            status = http_status(page)
            if status == 200:
                break
            time.sleep(0.5)
        assert status == 200, f"{page} answered {status}; make lab exited {proc.poll()}\n" + log.read_text()
        api = f"http://127.0.0.1:{port}/api/contents/{SERVED}?token=test"
        assert http_status(api) == 200, log.read_text()
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """End make and JupyterLab (its own process group) and wait for them."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)
        except ProcessLookupError:
            pass
    # Anything the group left behind.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_the_longest_first_order_names_only_test_files_that_exist():
    from conftest import LONGEST_FIRST

    found = {path.name for path in (REPO / "tests").rglob("test_*.py")}
    missing = [name for name in LONGEST_FIRST if name not in found]
    assert not missing, f"tests/conftest.py LONGEST_FIRST names files that do not exist: {missing}"
