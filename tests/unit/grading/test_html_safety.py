"""Students' HTML in formgrader's and the feedback pages, rendered as nbgrader_config.py sets it up.

`attention_course.grading.html_safety` cleans what a student's markdown and outputs put in the page; these tests
render a hostile notebook with nbconvert's HTMLExporter and nbgrader's own templates (formgrade,
feedback), configured from the course's nbgrader_config.py (so they fail if the configuration
loses a piece), and check that nothing active is left while tables, plots, math and nbgrader's
own page chrome are kept. tests/e2e/test_html_safety_browser.py opens such pages in Chromium.
"""

from __future__ import annotations

import base64
import os
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from attention_course.grading.html_safety import SanitizeStudentHTML, clean
from conftest import REPO

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n not really a plot").decode()
EVIL_SVG = "<svg xmlns='http://www.w3.org/2000/svg'><script>alert('svg')</script><rect width='4'/></svg>"
MARKDOWN = """# A heading

Inline math $a<b$ and a display:

$$\\frac{QK^\\top}{\\sqrt{d_k}}$$

| head | value |
|------|-------|
| one  | 1     |

<img src=x onerror="document.title='pwned-md'">
<iframe src="https://example.com/"></iframe>
<a href="javascript:document.title='pwned-link'">a link</a>

A markdown link: [another](javascript:alert(1)), and ![an image](javascript:alert(1)).

<svg onload="alert(1)"></svg><details open ontoggle="alert(1)"><summary>s</summary></details>
<form action="/api/terminals" method="post"><button>go</button></form>
<object data="evil.swf"></object><embed src="evil.swf"><style>body { display: none }</style>

```python
x = a < b && c
```
"""
HOSTILE_HTML = (
    "<script>document.title='pwned-html'</script>"
    '<table><thead><tr><th>name</th></tr></thead><tbody><tr><td onclick="alert(1)">42</td></tr></tbody></table>'
    "<img src='data:text/html;base64,PHNjcmlwdD4=' onerror='alert(2)'>"
    "<a href='data:text/html,<script>alert(3)</script>'>data link</a>"
)
# What nbgrader's own pages run: their inline scripts and two handlers of formgrader's header.
CHROME_HANDLERS = {"toggle_name(true);", "toggle_name(false);"}


def active_parts(html: str) -> list[str]:
    """Whatever in the page could run a student's code: their scripts, event handlers, frames,
    plugins, forms, `javascript:` or HTML `data:` URLs."""
    from bs4 import BeautifulSoup

    from attention_course.grading.offline_math import mathjax_source  # the course's own MathJax

    found = []
    for tag in BeautifulSoup(html, "html.parser").find_all(True):
        if tag.name == "script" and tag.get_text() != mathjax_source() and re.search(r"pwned|alert\(", tag.get_text()):
            found.append(str(tag)[:80])
        if tag.name in ("iframe", "object", "embed", "form", "svg", "math", "base"):
            found.append(str(tag)[:80])
        for name, value in tag.attrs.items():
            value = " ".join(value) if isinstance(value, list) else str(value)
            if name.startswith("on") and value not in CHROME_HANDLERS:
                found.append(f"<{tag.name} {name}={value!r}>")
            if name in ("href", "src", "action", "formaction", "data") and re.match(
                r"\s*(javascript|vbscript|data:text)", value, re.IGNORECASE
            ):
                found.append(f"<{tag.name} {name}={value[:40]!r}>")
    return found


def hostile_notebook():
    nb = new_notebook()
    state = {"state": {"x": "<img src=x onerror=alert(9)>"}}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": state}
    nb.cells.append(new_markdown_cell(MARKDOWN))
    nb.cells.append(
        new_code_cell(
            "display(...)",
            outputs=[
                new_output("display_data", data={"text/html": HOSTILE_HTML, "text/plain": "<table>"}),
                new_output("display_data", data={"application/javascript": "document.title='pwned-js'"}),
                new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
                new_output("display_data", data={"image/svg+xml": EVIL_SVG}),
                new_output("display_data", data={"text/markdown": "**bold** <img src=y onerror=alert('pwned')>"}),
                new_output(
                    "display_data",
                    data={"text/html": "<b>isolated</b><script>alert('pwned-iso')</script>"},
                    metadata={"text/html": {"isolated": True}},
                ),
                new_output(
                    "display_data",
                    data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"}, "text/plain": "VBox(...)"},
                ),
                new_output("stream", name="stdout", text="<script>alert('pwned-stream')</script>"),
            ],
        )
    )
    nb.cells.append(new_raw_cell("<script>alert('pwned-raw')</script><p>raw</p>"))
    answer = new_code_cell("answer = 1")
    answer.metadata["nbgrader"] = {
        "solution": True,
        "grade": False,
        "locked": False,
        "grade_id": 'x"><img src=z onerror="alert(\'pwned-id\')">',
        "schema_version": 3,
    }
    nb.cells.append(answer)
    return nb


def course_config():
    """The course's nbgrader_config.py, as nbgrader and formgrader load it."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()


def render(template: str, nb=None, assignment: str = "attention") -> str:
    """The page nbgrader's `template` makes of `nb` with the course's HTMLExporter settings."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.server_extensions.formgrader import handlers

    config = course_config()
    config.CourseDirectory.root = str(REPO)
    if template == "feedback":  # the exporter and settings of the course's GenerateFeedback
        converter = GenerateFeedback(coursedir=CourseDirectory(config=config), config=config)
        exporter = converter.exporter_class(parent=converter, config=converter.config)
    else:  # ... and those of formgrader (FormgradeExtension.build_extra_config)
        config.HTMLExporter.template_name = "formgrade"
        if "extra_template_basedirs" not in config.HTMLExporter:  # nbgrader_config.py is loaded after it
            config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
        exporter = HTMLExporter(config=config)
    assert exporter.template_name == template
    resources = {
        "base_url": "/base",
        "assignment_id": "attention",
        "notebook_id": "03_split_heads",
        "submission_id": "abc",
        "index": 0,
        "total": 1,
        "student": "mallory",
        "notebook_path": "autograded/mallory/attention/03_split_heads.ipynb",
        "nbgrader": {
            "notebook": "03_split_heads",
            "assignment": assignment,
            "score": 1.0,
            "max_score": 4.0,
            "late_penalty": 0,
        },
    }
    html, _ = exporter.from_notebook_node(nb or hostile_notebook(), resources=resources)
    return html


@pytest.fixture(scope="module", params=["formgrade", "feedback"])
def page(request):
    return request.param, render(request.param)


def test_no_student_script_handler_iframe_or_javascript_link_reaches_the_page(page):
    template, html = page
    found = active_parts(html)
    assert not found, f"{template}: active content left in the page: {found}"
    assert "pwned-js" not in html and "pwned-raw" not in html and "alert(9)" not in html
    assert "application/vnd.jupyter.widget-state+json" not in html


def test_tables_plots_math_and_code_are_kept(page):
    template, html = page
    assert "<th>head</th>" in html and "<th>name</th>" in html and "<td>42</td>" in html, template
    assert f'src="data:image/png;base64,{PNG}"' in html
    assert "data:image/svg+xml;base64," in html  # the SVG as an image: inert, still shown
    assert "$$\\frac{QK^\\top}{\\sqrt{d_k}}$$" in html and "$a&lt;b$" in html
    assert "<strong>bold</strong>" in html and "<b>isolated</b>" in html
    assert "&amp;&amp;" in html and "&lt;script&gt;alert(" in html  # code and stream text, escaped
    assert "[interactive widget: not shown]" in html and "VBox(...)" not in html


def test_nbgraders_own_page_chrome_is_kept(page):
    template, html = page
    if template == "formgrade":
        assert '<script src="/base/formgrader/static/js/formgrade.js"></script>' in html
        assert 'onclick="toggle_name(true);"' in html and 'var submission_id = "abc";' in html
    else:
        assert "03_split_heads (Score: 1.0 / 4.0)" in html
    assert "MathJax" in html and "SafeHandler" in html  # the course's offline MathJax, with its safe extension
    assert "cdnjs" not in html


def test_in_page_links_follow_the_prefixed_ids(page):
    _, html = page
    assert 'id="user-content-A-heading"' in html and 'href="#user-content-A-heading"' in html


def test_formgrader_builds_its_exporter_from_the_course_config(monkeypatch):
    """Formgrader's exporter: HTMLExporter(config=...) of its extension, which loads the course
    root's nbgrader_config.py from the server's working folder."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension

    monkeypatch.chdir(REPO)
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", os.devnull)
    extension = FormgradeExtension()
    extension.root_dir = str(REPO)
    extension.initialize([])
    exporter = HTMLExporter(config=extension.config)  # as FormgradeExtension.init_tornado_settings
    assert exporter.template_name == "formgrade"
    assert any(isinstance(p, SanitizeStudentHTML) and p.enabled for p in exporter._preprocessors)
    assert exporter.sanitize_html and exporter.environment.filters["clean_html"] is clean


def test_clean_keeps_ordinary_html_and_is_idempotent():
    ordinary = (
        '<h2 id="t">T</h2><p><em>e</em> <code>x</code></p><ul><li>i</li></ul>'
        '<table><thead><tr><th colspan="2">h</th></tr></thead><tbody><tr><td style="color:red">1</td>'
        '<td>2</td></tr></tbody></table><img src="data:image/png;base64,AAAA" alt="plot" width="10">'
        '<a href="https://example.com/x">web</a> <a href="#t">up</a>'
    )
    once = clean(ordinary)
    assert clean(once) == once
    for kept in ("<h2", "<em>e</em>", "<code>x</code>", "<li>i</li>", 'colspan="2"', 'style="color:red"'):
        assert kept in once
    assert 'src="data:image/png;base64,AAAA"' in once and 'href="https://example.com/x"' in once
    assert 'id="user-content-t"' in once and 'href="#user-content-t"' in once


@pytest.mark.parametrize(
    "fragment",
    [
        '<a href="evil.html">a file of the submission, served on the teacher\'s origin</a>',
        '<a href=" JaVaScRiPt:alert(1)">x</a>',
        '<a href="vbscript:x">x</a>',
        '<img src="javascript:alert(1)">',
        '<div style="position:fixed;top:0;background-image:url(https://example.com/beacon)">x</div>',
        "<math><mtext><script>alert(1)</script></mtext></math>",
        '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
        '<base href="https://example.com/">',
        '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
        '<link rel="stylesheet" href="https://example.com/x.css">',
    ],
)
def test_clean_removes_what_could_act(fragment):
    cleaned = clean(fragment).lower()
    bad_parts = (
        'href="evil',
        "javascript",
        "vbscript",
        "position",
        "url(",
        "<script",
        "onerror",
        "<base",
        "<meta",
        "<link",
    )
    for bad in bad_parts:
        assert bad not in cleaned, (fragment, cleaned)


def test_an_svg_output_is_dropped_when_the_exporter_would_inline_it():
    from nbconvert.exporters import HTMLExporter

    config = course_config()
    config.HTMLExporter.skip_svg_encoding = True
    exporter = HTMLExporter(config=config)
    svg = new_output("display_data", data={"image/svg+xml": EVIL_SVG})
    nb = new_notebook(cells=[new_code_cell("x", outputs=[svg])])
    html, _ = exporter.from_notebook_node(nb)
    assert "alert('svg')" not in html and "<svg xmlns" not in html
    assert "[not shown: image/svg+xml output]" in html


def test_the_preprocessor_leaves_the_notebook_on_disk_alone(tmp_path):
    nb = hostile_notebook()
    path = tmp_path / "03_split_heads.ipynb"
    nbformat.write(nb, path)
    before = path.read_text()
    render("feedback", nbformat.read(path, as_version=4))
    assert path.read_text() == before


def test_the_feedback_labels_are_in_the_editions_language_on_a_cleaned_page():
    nb = hostile_notebook()
    grading = {"grade": True, "solution": False, "grade_id": "test_x", "points": 1, "score": 1}
    nb.cells.append(new_code_cell("assert True", metadata={"nbgrader": grading}))
    from attention_course.model.manifest import load

    chinese = next(e for e in load().editions if e.language == "zh-CN")
    nb.metadata["language"] = "zh-Hans-CN"  # as an edition's notebook says (nbconvert reads it too)
    text = render("feedback", nb, assignment=chinese.assignment)
    assert '<html lang="zh-CN">' in text and "Test cell" not in text and "Score:" not in text
    assert not active_parts(text) and "<th>head</th>" in text
    english = render("feedback", nb)
    assert '<html lang="en">' in english and "Test cell" in english and "Score:" in english


def test_the_courses_own_markdown_reads_the_same_after_cleaning():
    """Every markdown cell of the released notebooks: the text a reader (and MathJax) sees is
    nbconvert's, and its headings, tables, lists, code and images are all still there."""
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter

    from attention_course.grading.html_safety import SanitizedMarkdown
    from attention_course.model.manifest import load

    exporter = HTMLExporter()
    cleaned_markdown = SanitizedMarkdown(parent=exporter)
    course = load()
    checked = 0
    for edition in course.editions:
        for path in sorted(course.release_dir(edition.name).glob("*.ipynb")):
            for cell in nbformat.read(path, as_version=4).cells:
                if cell.cell_type != "markdown":
                    continue
                context = {"cell": cell, "resources": {}}
                before = BeautifulSoup(exporter.markdown2html(context, cell.source), "html.parser")
                after = BeautifulSoup(cleaned_markdown(context, cell.source), "html.parser")
                assert after.get_text() == before.get_text(), f"{path.name}: {cell.source[:80]!r}"
                for kind in ("h1", "h2", "h3", "table", "li", "code", "img", "strong", "em", "a"):
                    assert len(after.find_all(kind)) == len(before.find_all(kind)), (path.name, kind)
                checked += 1
    assert checked > 50
