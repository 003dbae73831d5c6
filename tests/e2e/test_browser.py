"""The notebooks of every edition in a real browser: JupyterLab on loopback, driven by headless Chromium.

For each source notebook the test runs all cells, checks that no cell has an error output,
moves every slider with the keyboard and checks that its readout text and its drawing change.
It also looks at the JupyterLab a student gets (`make lab`, Binder): no instructor panels, no news
pop-up, nbgrader's Validate button and assignment list kept; and the Chinese link /course/zh-CN
opening the Chinese start page in a Chinese JupyterLab. Screenshots go to build/screenshots/.
The course is served from a copy, so nothing the browser does touches the working tree.
"""

from __future__ import annotations

import shutil
import time
import urllib.error
import urllib.request

import pytest

from attention_course.model.manifest import load
from browser import SHOTS, TOKEN, browser_page, jupyterlab
from conftest import COPY_IGNORE, REPO

pytestmark = pytest.mark.slow
COURSE = load()
NOTEBOOKS = [(e, nb) for e in COURSE.editions for nb in COURSE.notebooks]

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


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab") / "course"
    for name in (COURSE.source, COURSE.release):
        shutil.copytree(REPO / name, root / name, ignore=COPY_IGNORE)
    return root


@pytest.fixture(scope="module")
def student_lab(served):
    with jupyterlab(served) as url:
        yield url


@pytest.fixture(scope="module")
def page():
    with browser_page() as page:
        yield page


def _open(page, url: str) -> None:
    page.goto(url)
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
        "&& window.jupyterapp.shell.currentWidget.sessionContext",
        timeout=120_000,
    )
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session "
        "&& window.jupyterapp.shell.currentWidget.sessionContext.kernelDisplayStatus === 'idle'",
        timeout=120_000,
    )


def _wait_until_idle(page, timeout: float = 240) -> None:
    page.wait_for_timeout(500)
    deadline = time.time() + timeout
    while page.evaluate(BUSY_JS):
        if time.time() > deadline:
            raise AssertionError(f"the notebook was still running after {timeout:.0f} s")
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


@pytest.mark.parametrize("edition,notebook", NOTEBOOKS, ids=[f"{e.name}-{nb}" for e, nb in NOTEBOOKS])
def test_notebook_runs_and_its_sliders_work_in_the_browser(edition, notebook, student_lab, page):
    shot = f"{edition.name}_{notebook[:2]}"
    _open(page, f"{student_lab}/lab/tree/{COURSE.source}/{edition.assignment}/{notebook}.ipynb?reset")
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
            lab.screenshot(path=str(SHOTS / f"{shot}_lab{i}_slider{j}_before.png"))
            after = _move(page, handle, "ArrowRight", lab, before)
            if after == before:  # the handle may sit at the end of its range: go the other way
                after = _move(page, handle, "ArrowLeft", lab, before)
            assert after[0] != before[0], f"{notebook} lab {i}: the readout did not change"
            assert after[1] != before[1], f"{notebook} lab {i}: the drawing did not change"
            assert "Implement" not in after[0] and "raised" not in after[0], after[0]
            lab.screenshot(path=str(SHOTS / f"{shot}_lab{i}_slider{j}_after.png"))
    page.screenshot(path=str(SHOTS / f"{shot}_page.png"))
    if notebook.startswith(("01", "02", "03", "05")):
        assert labs.count() >= 1, f"{notebook} should have a slider lab"
    if edition.language.startswith("zh"):
        text = page.inner_text(".jp-Notebook")
        assert sum("\u4e00" <= ch <= "\u9fff" for ch in text) > 100, "the Chinese notebook shows little Chinese"


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def test_a_students_jupyterlab_has_no_instructor_tools_and_no_news_popup(student_lab, page):
    _open(page, f"{student_lab}/lab/tree/{COURSE.release}/attention/01_scaling_problem.ipynb?reset")
    page.wait_for_timeout(3000)
    page.screenshot(path=str(SHOTS / "student_lab.png"))
    assert _status(f"{student_lab}/formgrader?token={TOKEN}") == 404
    plugins = page.evaluate("() => [...window.jupyterapp.listPlugins()]")
    activated = page.evaluate(
        "() => window.jupyterapp.listPlugins().filter(p => window.jupyterapp.isPluginActivated(p))"
    )
    for hidden in (
        "@jupyter/nbgrader:formgrader",
        "@jupyter/nbgrader:create-assignment",
        "@jupyter/nbgrader:course-list",
        "@jupyterlab/apputils-extension:announcements",
    ):
        assert hidden not in activated, f"{hidden} is active in the students' JupyterLab"
    for kept in ("@jupyter/nbgrader:validate-assignment", "@jupyter/nbgrader:assignment-list"):
        assert kept in plugins and kept in activated, f"{kept} should be there for students"
    assert page.locator("text=Would you like to get notified").count() == 0
    assert page.locator(".jp-Notebook").count() == 1


def test_the_chinese_link_opens_the_chinese_start_page_in_a_chinese_jupyterlab(served, page):
    with jupyterlab(served) as url:
        _open(page, f"{url}/course/zh-CN")
        page.wait_for_timeout(2000)
        assert page.url.endswith("/attention_zh/00_start_here.ipynb"), page.url
        menus = page.inner_text("#jp-top-panel") if page.locator("#jp-top-panel").count() else page.inner_text("body")
        page.screenshot(path=str(SHOTS / "zh-CN_lab_start_page.png"))
        assert "文件" in menus and "编辑" in menus, menus[:200]
