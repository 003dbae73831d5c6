"""Autograde's exporter: a submission read safely, or the release standing in for it."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbconvert.exporters.exporter import ResourcesDict

from ..intake import Unreadable, read_submission
from .run import basename_of, release_notebook


class SubmittedNotebookExporter(NotebookExporter):
    """nbgrader's notebook exporter, reading a submission safely (`attention_course.grading.intake`): a link, a
    special file, an oversized, non-UTF-8, too deeply nested or malformed notebook is never
    followed or parsed further; the released notebook, unanswered, stands in for it, with the
    reason in its metadata, so the student gets a row of 0 with the reason and nobody else is
    touched. It also keeps the conversion's grading run (`run.run_of`), which every extension
    point of the conversion shares."""

    grading_run = None  # made by the first extension point that asks (run.run_of)

    def from_filename(self, filename, resources=None, **kw):
        resources = resources if resources is not None else ResourcesDict()
        if "metadata" not in resources or resources["metadata"] == "":
            resources["metadata"] = ResourcesDict()
        path, basename = os.path.split(filename)
        resources["metadata"]["name"] = os.path.splitext(basename)[0]
        resources["metadata"]["path"] = path
        coursedir = getattr(self.parent, "coursedir", None)
        top = Path(coursedir.root) / coursedir.submitted_directory if coursedir is not None else None
        try:
            nb = read_submission(Path(filename), top).notebook
        except Unreadable as bad:
            nb = self._stand_in(resources, bad)
        return self.from_notebook_node(nb, resources, **kw)

    def _stand_in(self, resources, bad: Unreadable) -> nbformat.NotebookNode:
        ids = resources.get("nbgrader", {})
        release = release_notebook(self.parent.coursedir, ids.get("assignment", ""), resources["metadata"]["name"])
        nb = release if release is not None else nbformat.v4.new_notebook()
        nb.metadata["attention_unreadable"] = bad.sentence()
        self.log.warning("%s/%s: %s", ids.get("student"), basename_of(resources), bad.sentence())
        return nb
