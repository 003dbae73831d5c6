"""A hostile submission in a real formgrader and in its feedback page, opened in headless Chromium.

In a private copy of the course, `mallory` hands in notebook 03 (right answers) with two cells of
her own: a markdown cell with `<img src=x onerror=...>` and a code cell that displays a
`<script>`, a javascript output and a script inside an SVG while it is graded, plus a plot and a
table. Real `nbgrader autograde` grades it (only that notebook) and `nbgrader generate_feedback`
writes its page. Then:

- formgrader (JupyterLab with nbgrader's server extension, started in the course folder, token
  auth) shows the submission, and none of the student's code runs in the teacher's page: the
  title is formgrader's, no request goes to /api/terminals or anywhere the student named, while
  formgrader's own scripts still load the grades into the form;
- the feedback page runs nothing of hers either, and keeps the plot and the tables.

Each injected piece, had it run, would set the page's title and POST to /api/terminals (what a
script on the teacher's origin would use to open a shell). The autograded notebook is checked to
hold the script output first, so the pages are tested on a submission that really carries it.
"""

from __future__ import annotations

import shutil

import nbformat
import pytest

from browser import SHOTS, browser_page, jupyterlab
from conftest import copy_course, describe, run

pytestmark = pytest.mark.slow

STUDENT, ASSIGNMENT, NOTEBOOK = "mallory", "attention", "03_split_heads"
TERMINALS = "fetch('/api/terminals', {method: 'POST'})"
MARKDOWN = f"""## My notes

<img src=x onerror="document.title='pwned'; {TERMINALS}">

| head | value |
|------|-------|
| mine | 7     |
"""
CODE = f"""from IPython.display import HTML, SVG, Javascript, display
import matplotlib.pyplot as plt

display(HTML("<script>document.title='pwned2'; {TERMINALS}</script>"
             "<table><tr><th>shown</th></tr><tr><td>42</td></tr></table>"))
display(Javascript("document.title='pwned3'; {TERMINALS}"))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
            '<script>document.title="pwned4"</script><rect width="10" height="10"/></svg>'))
plt.plot([1, 3, 2])
plt.show()
"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The course copy with mallory's notebook 03 autograded and its feedback written."""
    root = copy_course(tmp_path_factory.mktemp("html_safety") / "course")
    run(["nbgrader", "generate_assignment", ASSIGNMENT, "--force"], cwd=root, check=True)
    submitted = root / "submitted" / STUDENT / ASSIGNMENT
    shutil.copytree(root / "notebooks" / ASSIGNMENT, submitted)
    nb = nbformat.read(root / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell(MARKDOWN))
    nb.cells.append(nbformat.v4.new_code_cell(CODE))
    nbformat.write(nb, submitted / f"{NOTEBOOK}.ipynb")
    (submitted / "evil.html").write_text(f"<script>document.title='pwned5'; {TERMINALS}</script>")
    (submitted / "evil.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')
    only = ["--student", STUDENT, "--notebook", NOTEBOOK, "--force"]
    proc = run(["nbgrader", "autograde", ASSIGNMENT, *only], cwd=root, timeout=1200)
    assert proc.returncode == 0, describe(proc)
    graded_nb = nbformat.read(root / "autograded" / STUDENT / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    outputs = [o for c in graded_nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    shown = [o.get("data", {}) for o in outputs]
    assert any("pwned2" in d.get("text/html", "") for d in shown), "the script output is not in the graded notebook"
    assert any("image/png" in d for d in shown), "the plot is not in the graded notebook"
    proc = run(["nbgrader", "generate_feedback", ASSIGNMENT, *only], cwd=root, timeout=600)
    assert proc.returncode == 0, describe(proc)
    return root


def _watch(page) -> list[str]:
    """Every request the page makes from now on, as "METHOD url"."""
    seen: list[str] = []
    page.on("request", lambda request: seen.append(f"{request.method} {request.url}"))
    return seen


def _nothing_of_hers_ran(page, seen: list[str], title: str) -> None:
    page.wait_for_timeout(2000)  # an image's error, a script: all long done by then
    terminals = [r for r in seen if "/api/terminals" in r]
    assert not terminals, f"the student's script reached the server: {terminals}"
    assert page.title() == title, f"the student's script changed the title to {page.title()!r}"


def test_formgraders_page_of_the_submission_runs_none_of_the_students_html(graded):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission_notebook(NOTEBOOK, ASSIGNMENT, STUDENT).id
    with jupyterlab(graded, teacher=True) as url, browser_page() as page:
        page.goto(f"{url}/login?next=%2Fformgrader")  # the teacher's session: a cookie, as in real use
        seen = _watch(page)
        with page.expect_response(lambda r: "/formgrader/api/grades" in r.url, timeout=60_000) as grades:
            page.goto(f"{url}/formgrader/submissions/{submission}/")
        assert grades.value.ok, "formgrader's own script did not load the grades"
        _nothing_of_hers_ran(page, seen, NOTEBOOK)
        page.screenshot(path=str(SHOTS / "formgrader_hostile_submission.png"), full_page=True)
        # formgrader's page still works: its scripts put the autograded scores in the score boxes
        page.wait_for_function("() => [...document.querySelectorAll('input.score')].some(i => i.placeholder)")
        assert page.locator("td", has_text="42").count() == 1 and page.locator("th", has_text="head").count() == 1
        assert page.locator("img[src^='data:image/png']").count() >= 1
        # formgrader serves a submission's other files raw on the teacher's origin: a page or an
        # image of hers that could run script is never copied to where it would be served
        for name in ("evil.html", "evil.svg"):
            assert not (graded / "autograded" / STUDENT / ASSIGNMENT / name).exists()
            assert page.request.get(f"{url}/formgrader/submissions/{submission}/{name}").status == 404


def test_the_feedback_page_runs_nothing_and_keeps_the_plot_and_the_tables(graded):
    feedback = graded / "feedback" / STUDENT / ASSIGNMENT / f"{NOTEBOOK}.html"
    with browser_page() as page:
        seen = _watch(page)
        page.goto(feedback.as_uri())
        _nothing_of_hers_ran(page, seen, NOTEBOOK)
        page.screenshot(path=str(SHOTS / "feedback_hostile_submission.png"), full_page=True)
        plots = page.locator("img[src^='data:image/png']")
        assert plots.count() >= 1
        widths = [plots.nth(i).evaluate("img => img.naturalWidth") for i in range(plots.count())]
        assert all(w > 0 for w in widths), f"a plot does not decode: widths {widths}"
        assert page.locator("td", has_text="42").count() == 1 and page.locator("td", has_text="mine").count() == 1
        assert "Grading summary" in page.inner_text("body")
