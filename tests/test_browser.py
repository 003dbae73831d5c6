"""The source notebooks in a real browser: JupyterLab on loopback, driven by headless Chromium.

For each source notebook the test runs all cells, checks that no cell has an error output,
moves every slider with the keyboard and checks that its readout text and its drawing change.
Screenshots go to build/screenshots/ for people to look at. The notebooks are served from a
copy, so nothing the browser does touches the working tree. With CI=true a browser that cannot
be started is a failure, not a skip.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import COPY_IGNORE, REPO, venv_env

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
SHOTS = REPO / "build" / "screenshots"
NOTEBOOKS = sorted(p.name for p in (REPO / "source" / "attention").glob("0*.ipynb"))
TOKEN = "browser-test"

ERRORS_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const found = [];
  for (const cell of panel.content.model.cells) {
    if (cell.type !== 'code') continue;
    for (let i = 0; i < cell.outputs.length; i++) {
      const out = cell.outputs.get(i).toJSON();
      if (out.output_type === 'error') found.push(out.ename + ': ' + out.evalue);
    }
  }
  return found;
}"""

BUSY_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.sessionContext || !panel.sessionContext.session) return true;
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-InputPrompt')].map(p => p.textContent);
  return panel.sessionContext.kernelDisplayStatus !== 'idle' || prompts.some(t => t.includes('*'));
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _browser_or_fail(playwright):
    """Launch Debian's Chromium; without it, skip locally and fail under CI."""
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        return playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                          args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
    except Exception as exc:  # noqa: BLE001 - report any launch failure the same way
        if os.environ.get("CI") == "true":
            pytest.fail(f"Chromium would not start: {exc}")
        pytest.skip(f"Chromium would not start: {exc}")


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """A JupyterLab server on loopback serving a copy of source/attention."""
    root = tmp_path_factory.mktemp("lab") / "attention"
    shutil.copytree(REPO / "source" / "attention", root, ignore=COPY_IGNORE)
    port = _free_port()
    log = open(root.parent / "lab.log", "w")
    proc = subprocess.Popen(
        [str(Path(venv_env()["VIRTUAL_ENV"]) / "bin" / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", f"--ServerApp.token={TOKEN}", "--ServerApp.password=", f"--ServerApp.root_dir={root}",
         "--LabApp.expose_app_in_browser=True", "--ServerApp.disable_check_xsrf=True", "--allow-root",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=venv_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
            break
        except OSError:
            if time.time() > deadline or proc.poll() is not None:
                os.killpg(proc.pid, signal.SIGKILL)
                pytest.fail("JupyterLab did not start:\n" + (root.parent / "lab.log").read_text())
            time.sleep(0.5)
    yield url
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        chromium = _browser_or_fail(playwright)
        yield chromium
        chromium.close()


def _wait_until_idle(page, timeout: float = 240) -> None:
    page.wait_for_timeout(500)
    deadline = time.time() + timeout
    while page.evaluate(BUSY_JS):
        if time.time() > deadline:
            raise AssertionError("the notebook was still running after %d s" % timeout)
        page.wait_for_timeout(250)


def _state(widget) -> tuple[str, str]:
    """A lab's readout text and the address of its current drawing."""
    readout = widget.locator(".widget-html-content").first.inner_text()
    image = widget.locator("img").first.get_attribute("src") if widget.locator("img").count() else ""
    return readout, image or ""


def _move(page, handle, key: str, widget, before, timeout: float = 30) -> tuple[str, str]:
    handle.focus()
    handle.press(key)
    deadline = time.time() + timeout
    while time.time() < deadline:
        page.wait_for_timeout(200)
        after = _state(widget)
        if after[0] != before[0] and after[1] != before[1]:
            return after
    return _state(widget)


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_runs_and_its_sliders_work_in_the_browser(notebook, lab_server, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{lab_server}/lab/tree/{notebook}?token={TOKEN}&reset")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
                               "&& window.jupyterapp.shell.currentWidget.sessionContext", timeout=120_000)
        page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext.session "
                               "&& window.jupyterapp.shell.currentWidget.sessionContext.kernelDisplayStatus === 'idle'",
                               timeout=120_000)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        _wait_until_idle(page)
        assert page.evaluate(ERRORS_JS) == [], f"{notebook}: cells with errors"

        labs = page.locator(".jp-OutputArea-output .widget-vbox:has(.widget-slider)")
        for i in range(labs.count()):
            lab = labs.nth(i)
            lab.scroll_into_view_if_needed()
            for j in range(lab.locator(".noUi-handle").count()):
                handle = lab.locator(".noUi-handle").nth(j)
                before = _state(lab)
                lab.screenshot(path=str(SHOTS / f"{notebook[:2]}_lab{i}_slider{j}_before.png"))
                after = _move(page, handle, "ArrowRight", lab, before)
                if after == before:  # the handle may sit at the end of its range: go the other way
                    after = _move(page, handle, "ArrowLeft", lab, before)
                assert after[0] != before[0], f"{notebook} lab {i}: the readout did not change"
                assert after[1] != before[1], f"{notebook} lab {i}: the drawing did not change"
                assert "Implement" not in after[0] and "raised" not in after[0], after[0]
                lab.screenshot(path=str(SHOTS / f"{notebook[:2]}_lab{i}_slider{j}_after.png"))
        page.screenshot(path=str(SHOTS / f"{notebook[:2]}_page.png"))
        if notebook.startswith(("01", "02", "03", "05")):
            assert labs.count() >= 1, f"{notebook} should have a slider lab"
    finally:
        page.close()
