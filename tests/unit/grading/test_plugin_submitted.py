"""`plugins.submitted.SubmittedNotebookExporter`, Autograde's exporter, without nbgrader: a good submission
is read as it is; a link (the file or the student's folder), an oversized or a malformed notebook is never
parsed further, and the released notebook (or, with no release, an empty one) stands in for it, with the
reason in its metadata. The exporter is built under a parent that has a `coursedir` (an nbgrader
CourseDirectory on a tmp folder holding a copy of one released notebook), as Autograde is. Also `run.run_of`,
which finds the Run the exporter keeps (a stand-in object here: a real Run probes confinement).
"""

from __future__ import annotations

import json
import logging
import shutil

import nbformat
import pytest
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets.config import Config, Configurable

from attention_course.grading.intake import MAX_BYTES, MAX_DEPTH
from attention_course.grading.plugins.run import run_of
from attention_course.grading.plugins.submitted import SubmittedNotebookExporter
from conftest import REPO

ASSIGNMENT = "attention"
NOTEBOOK = "01_scaling_problem"
RELEASED = REPO / "notebooks" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
STUB = "raise NotImplementedError()"


def _exporter(root) -> SubmittedNotebookExporter:
    """The exporter under a parent with an nbgrader CourseDirectory on `root` (as Autograde has)."""
    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.release_directory = "notebooks"
    config.CourseDirectory.submitted_directory = "submitted"
    parent = Configurable(config=config)
    parent.coursedir = CourseDirectory(config=config)
    return SubmittedNotebookExporter(parent=parent)


@pytest.fixture
def course(tmp_path):
    """A course folder with the released 01 notebook and an empty submission folder for ada."""
    release = tmp_path / "notebooks" / ASSIGNMENT
    release.mkdir(parents=True)
    shutil.copy(RELEASED, release / RELEASED.name)
    (tmp_path / "submitted" / "ada" / ASSIGNMENT).mkdir(parents=True)
    return tmp_path


def _submitted(course, student: str = "ada"):
    return course / "submitted" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"


def _answered() -> nbformat.NotebookNode:
    """The release with the raw_scores exercise answered."""
    nb = nbformat.read(RELEASED, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "raw_scores":
            cell.source = "def raw_scores(q, k):\n    return q @ k.transpose(-2, -1)"
    return nb


def _export(course, path, student: str = "ada", resources=None):
    """What the exporter makes of `path` (the notebook and the resources), as Autograde calls it."""
    resources = resources if resources is not None else {}
    resources["nbgrader"] = {"student": student, "assignment": ASSIGNMENT, "notebook": NOTEBOOK}
    output, resources = _exporter(course).from_filename(str(path), resources)
    return nbformat.reads(output, as_version=4), resources


def _source_of(nb, grade_id: str) -> str:
    return next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_a_good_submission_is_read_as_the_student_wrote_it(course):
    path = _submitted(course)
    nbformat.write(_answered(), path)
    nb, resources = _export(course, path)
    assert "attention_unreadable" not in nb.metadata
    assert _source_of(nb, "raw_scores").endswith("return q @ k.transpose(-2, -1)")
    assert resources["metadata"]["name"] == NOTEBOOK and resources["metadata"]["path"] == str(path.parent)


def test_resources_without_metadata_or_with_empty_metadata_get_the_notebooks_name(course):
    path = _submitted(course)
    nbformat.write(_answered(), path)
    for given in ({}, {"metadata": ""}):
        _nb, resources = _export(course, path, resources=given)
        assert resources["metadata"]["name"] == NOTEBOOK


def test_a_linked_notebook_is_not_followed_and_the_release_stands_in_with_the_reason(course, tmp_path_factory):
    solutions = tmp_path_factory.mktemp("elsewhere") / "solutions.ipynb"
    nbformat.write(_answered(), solutions)
    _submitted(course).symlink_to(solutions)
    nb, _resources = _export(course, _submitted(course))
    reason = nb.metadata["attention_unreadable"]
    assert reason.startswith(f"{NOTEBOOK}.ipynb could not be graded: ") and "link" in reason
    assert reason.endswith("It was graded 0.")
    assert _source_of(nb, "raw_scores").endswith(STUB)  # the release, unanswered
    assert [c.source for c in nb.cells] == [c.source for c in nbformat.read(RELEASED, as_version=4).cells]


def test_a_student_folder_that_is_a_link_is_refused_as_a_whole(course, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / ASSIGNMENT).mkdir()
    nbformat.write(_answered(), elsewhere / ASSIGNMENT / f"{NOTEBOOK}.ipynb")
    (course / "submitted" / "mallory").symlink_to(elsewhere, target_is_directory=True)
    nb, _resources = _export(course, _submitted(course, "mallory"), student="mallory")
    reason = nb.metadata["attention_unreadable"]
    assert reason.startswith("mallory could not be graded: ") and "link" in reason  # the folder, named
    assert _source_of(nb, "raw_scores").endswith(STUB)


def test_an_oversized_notebook_is_replaced_by_the_release(course):
    with open(_submitted(course), "wb") as handle:
        handle.truncate(MAX_BYTES + 10)  # sparse: nothing of it is parsed
    nb, _resources = _export(course, _submitted(course))
    assert "MiB" in nb.metadata["attention_unreadable"]
    assert _source_of(nb, "raw_scores").endswith(STUB)


@pytest.mark.parametrize(
    "data, why",
    [
        (b'{"cells": [', "not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        (json.dumps({"nbformat": 3, "cells": [], "metadata": {}}).encode(), "format 4"),
        (
            json.dumps(
                {"nbformat": 4, "nbformat_minor": 5, "cells": [], "metadata": {"x": json.loads("[" * 40 + "]" * 40)}}
            ).encode(),
            f"more than {MAX_DEPTH} levels",
        ),
    ],
)
def test_a_malformed_notebook_is_replaced_by_the_release_with_its_reason(course, data, why):
    _submitted(course).write_bytes(data)
    nb, _resources = _export(course, _submitted(course))
    assert why in nb.metadata["attention_unreadable"]
    assert _source_of(nb, "test_raw_scores") == 'check("raw_scores", raw_scores)'


def test_with_no_release_an_empty_notebook_stands_in(course):
    (course / "notebooks" / ASSIGNMENT / RELEASED.name).unlink()
    _submitted(course).write_bytes(b"not a notebook")
    nb, _resources = _export(course, _submitted(course))
    assert nb.cells == [] and "not valid JSON" in nb.metadata["attention_unreadable"]


def test_a_refused_submission_is_logged_with_the_student(course, caplog):
    _submitted(course).write_bytes(b"[]")
    with caplog.at_level(logging.WARNING):
        _export(course, _submitted(course))
    assert any("ada/" in r.getMessage() and "could not be graded" in r.getMessage() for r in caplog.records)


class _Plugin(NbGraderPreprocessor):
    pass


def test_run_of_finds_the_run_the_exporter_keeps_and_refuses_another_parent(tmp_path):
    exporter = _exporter(tmp_path)
    kept = object()  # a stand-in: a real Run probes the machine's confinement and makes folders
    exporter.grading_run = kept
    assert run_of(_Plugin(parent=exporter)) is kept
    with pytest.raises(RuntimeError, match="SubmittedNotebookExporter"):
        run_of(_Plugin(parent=Configurable()))
