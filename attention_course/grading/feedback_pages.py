"""Feedback pages in the submission's language, through nbgrader's own feedback template.

`FeedbackExporter` is the HTML exporter of `nbgrader generate_feedback` (`GenerateFeedback.exporter_class`
in nbgrader_config.py), whichever way feedback is made: `make grade`, formgrader, the command line.
Its template, `templates/course_feedback.html.j2`, extends nbgrader's `feedback` template and
writes its labels (Score, Test cell, Comments...) through the `label` filter; each notebook is
rendered in its edition's language, read from the course manifest by the notebook's assignment.
The grading summary and the check messages in the page are already in that language.
"""

from __future__ import annotations

from pathlib import Path

from nbconvert.exporters import HTMLExporter

from helpers.i18n import N_, _, using

from . import late
from .coursedir import course_of

TEMPLATES = Path(__file__).with_name("templates")

LABELS = (
    N_("Score:"),
    N_("Test cell"),
    N_("Coding free-response"),
    N_("Written response"),
    N_("Task"),
    N_("Comment"),
    N_("Comments:"),
    N_("Late submission penalty"),
    N_("Extension:"),
    N_("Student's answer"),
    N_("Student's task"),
    N_("Grade cell:"),
    N_("(Top)"),
)


def label(text: str) -> str:
    """One of nbgrader's labels in the language being rendered (`LABELS` lists them)."""
    if text not in LABELS:
        raise KeyError(f"{text!r} is not a feedback label (attention_course/grading/feedback_pages.py: LABELS)")
    return _(text)


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback page, its labels in the language of the notebook's edition."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.template_paths = [*self.template_paths, str(TEMPLATES)]  # after nbgrader's, which it extends
        self.template_file = "course_feedback.html.j2"

    def default_filters(self):
        yield from super().default_filters()
        yield ("label", label)

    def language(self, assignment: str | None) -> str:
        """The language of `assignment`'s edition in the course being graded (English otherwise)."""
        coursedir = getattr(self.parent, "coursedir", None)
        if coursedir is None or assignment is None:
            return "en"
        return course_of(coursedir).language(assignment)

    def extension(self, ids: dict) -> str:
        """The student's extension of this assignment (attention_course/grading/late.py), or ''."""
        coursedir = getattr(self.parent, "coursedir", None)
        if coursedir is None or not ids.get("student"):
            return ""
        found = late.read(course_of(coursedir).root).get((ids["student"], ids.get("assignment")))
        return found.describe() if found else ""

    def from_notebook_node(self, nb, resources=None, **kw):
        resources = dict(resources or {})
        language = self.language(resources.get("nbgrader", {}).get("assignment"))
        resources["feedback_language"] = language  # not "language": nbconvert sets that one
        resources["extension"] = self.extension(resources.get("nbgrader", {}))
        with using(language):
            return super().from_notebook_node(nb, resources, **kw)
