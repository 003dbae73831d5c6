"""What students wrote, shown as inert HTML in formgrader and in the feedback pages.

Formgrader renders an autograded notebook with nbconvert's `HTMLExporter` (template `formgrade`)
inside the teacher's Jupyter server, and `nbgrader generate_feedback` renders it with the same
exporter (template `feedback`). A student's markdown and the outputs their code displayed while
it was graded would otherwise reach that page as they are: a `<script>` or an `onerror=` there
runs with the teacher's session. nbgrader_config.py plugs three pieces of this module into the
exporter through nbconvert's own extension points:

- `SanitizeStudentHTML` (`HTMLExporter.preprocessors`) cleans every output before the template
  sees it: text/html through `clean`; image/svg+xml kept only as nbconvert shows it by default,
  base64 in an `<img>` (a browser runs no script and loads nothing for an SVG shown as an image);
  application/javascript and every other type the page could execute dropped; a widget view
  shown as a line saying so, the notebook's widget state dropped; output metadata that would put
  an iframe or a file of the student's choosing in the page removed; raw cells cleaned; a grade
  id that is not a plain name escaped (the formgrade template writes it into attributes as is).
- `SanitizedMarkdown` (`HTMLExporter.filters["markdown2html"]`) renders markdown exactly as
  nbconvert does (attachments, anchors, math left for MathJax) and cleans the HTML it gives: the
  nbgrader templates render markdown cells, text/markdown outputs and comments with this filter
  and no other cleaning.
- `clean` (`HTMLExporter.filters["clean_html"]`) replaces nbconvert's bleach filter, which
  `HTMLExporter.sanitize_html = True` applies to outputs, raw cells and nbconvert's own markdown
  block: bleach's short list of tags turns a table header or an image into visible tag text.
  `sanitize_html` is kept on for what it does besides: no application/javascript `<script>`,
  no widget views or widget state in the page.

`clean` keeps headings, lists, tables, code, images (http(s), relative, or a `data:image/...`
URI) and links to http(s), mailto or a place in the page; it removes every script, event handler,
iframe, object, form, `<style>` and `javascript:` (or other) URL, relative links (formgrader serves
the submission's own files on the teacher's origin), and keeps only plain-looking inline styles.
Ids are prefixed with `user-content-` (and in-page links with them), so a student's element
cannot stand in for one of formgrader's own.
"""

from __future__ import annotations

import copy
import html
import re

import jinja2
import nh3
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool
from traitlets.config import LoggingConfigurable

ID_PREFIX = "user-content-"

TAGS = (set(nh3.ALLOWED_TAGS) | {"tfoot"}) - {"map", "area"}
ATTRIBUTES = copy.deepcopy({k: v for k, v in nh3.ALLOWED_ATTRIBUTES.items() if k in TAGS})
ATTRIBUTES["*"] = {"class", "id", "title", "lang", "dir", "style", "align"}
ATTRIBUTES["a"] = {"href", "hreflang", "title"}
ATTRIBUTES["img"] = {"src", "alt", "width", "height", "title"}
for cell_tag in ("td", "th"):
    ATTRIBUTES[cell_tag] = ATTRIBUTES.get(cell_tag, set()) | {"colspan", "rowspan", "scope"}
# What the page shows of an inline style: how text and boxes look, never where they sit.
STYLE_PROPERTIES = {
    "color",
    "background-color",
    "font-weight",
    "font-style",
    "font-size",
    "font-family",
    "text-align",
    "text-decoration",
    "vertical-align",
    "white-space",
    "border",
    "border-collapse",
    "border-color",
    "border-style",
    "border-width",
    "border-top",
    "border-bottom",
    "border-left",
    "border-right",
    "padding",
    "padding-top",
    "padding-bottom",
    "padding-left",
    "padding-right",
    "margin",
    "margin-top",
    "margin-bottom",
    "margin-left",
    "margin-right",
    "width",
    "height",
    "max-width",
    "min-width",
}
LINK_SCHEMES = ("http:", "https:", "mailto:")
IMAGE_DATA = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml)[;,]", re.IGNORECASE)
SCHEME = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.-]*):")
# Output types the page shows as escaped text or as an image; text/html and text/markdown are
# cleaned (here and by `SanitizedMarkdown`), image/svg+xml is checked; the rest is dropped.
SAFE_OUTPUT_TYPES = {"text/plain", "text/latex", "image/png", "image/jpeg", "image/gif"}
PLAIN_NAME = re.compile(r"^[\w.-]*$")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _attribute(element: str, attribute: str, value: str) -> str | None:
    """Keep a URL only where it cannot run or load anything active (nh3's attribute filter)."""
    if attribute == "href":
        if value.startswith("#"):
            return value if value.startswith("#" + ID_PREFIX) else "#" + ID_PREFIX + value[1:]
        # A relative link would open a file of the submission, which formgrader serves on the
        # teacher's own origin: only absolute web and mail links are kept.
        return value if value.strip().lower().startswith(LINK_SCHEMES) else None
    if attribute == "src":
        scheme = SCHEME.match(value)
        if scheme is None:  # a relative image: an image never runs script
            return value
        name = scheme.group(1).lower()
        if name in ("http", "https") or (name == "data" and IMAGE_DATA.match(value.strip())):
            return value
        return None
    return value


_CLEANER = nh3.Cleaner(
    tags=TAGS,
    clean_content_tags={"script", "style"},
    attributes=ATTRIBUTES,
    attribute_filter=_attribute,
    url_schemes={"http", "https", "mailto", "data"},
    filter_style_properties=STYLE_PROPERTIES,
    id_prefix=ID_PREFIX,
)


def clean(fragment) -> str:
    """`fragment` (HTML, str or bytes) with nothing left that a browser would run."""
    text = fragment.decode("utf-8", "replace") if isinstance(fragment, bytes) else str(fragment)
    return _CLEANER.clean(text)


class SanitizedMarkdown(LoggingConfigurable):
    """nbconvert's markdown2html filter with its HTML cleaned.

    Registered by name in `HTMLExporter.filters`, nbconvert constructs it with the exporter as its
    parent; like the exporter's own filter it takes the template's context (the cell's attachments).
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        jinja2.pass_context(self)  # jinja calls self(context, source), as it calls nbconvert's filter

    def __call__(self, context, source) -> str:
        render = getattr(self.parent, "markdown2html", None)
        rendered = render(context, source) if render is not None else markdown2html_mistune(source)
        return clean(rendered)


class SanitizeStudentHTML(Preprocessor):
    """Every output of the notebook as the page may show it (see the module's docstring)."""

    enabled = Bool(True, help="On unless turned off: it is listed only where it should run.").tag(config=True)

    def preprocess(self, nb, resources):
        nb.metadata.pop("widgets", None)  # widget state: rendered by a widget manager, unchecked
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        grading = cell.metadata.get("nbgrader")
        if isinstance(grading, dict) and isinstance(grading.get("grade_id"), str):
            if not PLAIN_NAME.match(grading["grade_id"]):
                grading["grade_id"] = html.escape(grading["grade_id"], quote=True)
        if cell.cell_type == "raw":
            cell.source = clean(cell.source)
        elif cell.cell_type == "code":
            for output in cell.get("outputs", []):
                self._clean_output(output)
        return cell, resources

    def _inlines_svg(self) -> bool:
        return bool(getattr(self.parent, "skip_svg_encoding", False))

    def _clean_output(self, output) -> None:
        if output.get("output_type") not in ("display_data", "execute_result"):
            return  # stream and error text is escaped by the template
        output.pop("svg_filename", None)  # a file to show in place of the SVG, named by the notebook
        metadata = output.get("metadata", {})
        metadata.pop("filenames", None)
        if isinstance(metadata.get("text/html"), dict):
            metadata["text/html"].pop("isolated", None)  # nbconvert would put the HTML in an iframe
        data = output.get("data", {})
        if WIDGET_VIEW in data:  # a live widget: its text/plain stand-in is its Python repr
            data.clear()
            data["text/plain"] = "[interactive widget: not shown]"
            return
        removed = []
        for mime in list(data):
            value = data[mime]
            if mime in SAFE_OUTPUT_TYPES:
                continue
            if mime == "text/html":
                data[mime] = clean("".join(value) if isinstance(value, list) else value)
            elif mime == "text/markdown":
                continue  # rendered by SanitizedMarkdown, which cleans the HTML it makes
            elif mime == "image/svg+xml" and not self._inlines_svg():
                continue  # shown as <img src="data:image/svg+xml;base64,...">: inert
            else:
                removed.append(mime)
                del data[mime]
        if removed and not data:
            data["text/plain"] = f"[not shown: {', '.join(removed)} output]"
        if removed:
            self.log.info("Not shown in the page: %s output", ", ".join(removed))
