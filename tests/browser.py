"""JupyterLab and headless Chromium for the browser tests (Debian's Chromium, driven by Playwright).

`jupyterlab(root)` serves a folder on loopback as a student's JupyterLab (the course's student
settings, as `make lab` and Binder use them) or, with `teacher=True`, as the teacher's (with
formgrader). `browser_page()` opens a page in headless Chromium; without a browser the test is
skipped locally and fails under CI=true.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, venv_env

CHROMIUM = "/usr/bin/chromium"
TOKEN = "browser-test"
SHOTS = REPO / "build" / "screenshots"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_server(url: str, proc: subprocess.Popen, log: Path, name: str, seconds: float = 120) -> None:
    """Wait until `url` answers; fail with the end of `log` if `proc` dies or `seconds` pass first."""
    deadline = time.time() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            if time.time() > deadline or proc.poll() is not None:
                pytest.fail(f"{name} did not start ({url}):\n" + Path(log).read_text()[-6000:])
            time.sleep(0.5)


@contextlib.contextmanager
def jupyterlab(root: Path, teacher: bool = False, edition: str = "en"):
    """A JupyterLab server on loopback serving `root`; yields its URL."""
    port = free_port()
    env = venv_env()
    if not teacher:
        from helpers.lab import command

        _cmd, extra = command(edition, [], root=REPO)  # what `make lab EDITION=...` sets
        env.update(extra)  # binder/jupyter, the edition's locale, binder/ for the links /course/<edition>
    env["JUPYTERLAB_SETTINGS_DIR"] = str(Path(root).parent / f"lab-settings-{port}")
    log_path = Path(root).parent / f"lab-{port}.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [
                str(Path(env["VIRTUAL_ENV"]) / "bin" / "jupyter"),
                "lab",
                "--no-browser",
                "--ip=127.0.0.1",
                f"--port={port}",
                f"--ServerApp.token={TOKEN}",
                "--ServerApp.password=",
                f"--ServerApp.root_dir={root}",
                "--LabApp.expose_app_in_browser=True",
                "--ServerApp.disable_check_xsrf=True",
                "--allow-root",
            ],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(f"{url}/api/status?token={TOKEN}", proc, log_path, "JupyterLab")
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    try:
        # The token once, as a cookie, then plain URLs.
        urllib.request.urlopen(f"{url}/lab?token={TOKEN}", timeout=30)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@contextlib.contextmanager
def chromium():
    """Headless Chromium (Debian's), driven by Playwright; skipped locally and failed under CI=true
    where there is none."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with playwright_api.sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM,
                headless=True,
                args=[
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--no-first-run",
                    "--lang=en-US",
                ],
            )
        except Exception as exc:
            if os.environ.get("CI") == "true":
                pytest.fail(f"Chromium would not start: {exc}")
            pytest.skip(f"Chromium would not start: {exc}")
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def browser_page(viewport=(1400, 1000)):
    """A fresh page in headless Chromium, logged in to the test servers' token."""
    with chromium() as browser:
        context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        page = context.new_page()
        original_goto = page.goto

        def goto(address, **kwargs):  # every address of a test server carries the token
            if "127.0.0.1" in address and "token=" not in address:
                address += ("&" if "?" in address else "?") + f"token={TOKEN}"
            return original_goto(address, **kwargs)

        page.goto = goto
        yield page
