"""The grader's side of the trusted sandbox (attention_course/grading/sandbox_run.py), without starting
it: the modules the sandbox preloads (`course_modules`), what `run_sandbox` puts in the inbox before
it starts anything (the request, the cases' inputs, the course's student view) and how an ended
sandbox process is described (`_ended`)."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from pathlib import Path

import nbformat
import pytest
import torch

from attention_course.grading.sandbox_run import Unit, _ended, course_modules, run_sandbox
from attention_course.grading.settings import Grading
from attention_course.grading.workspace import Workspace
from attention_course.model.manifest import load
from helpers.casefile import load_cases
from helpers.exercises import Case

COURSE = load()


def _cell(source: str, nbgrader: dict | None = None) -> dict:
    cell = nbformat.v4.new_code_cell(source)
    if nbgrader is not None:
        cell.metadata["nbgrader"] = nbgrader
    return cell


def _course_with(tmp_path: Path, cells: dict[str, list[dict]], edition: str = "en"):
    """The repository's manifest at a root of its own whose source notebooks hold `cells` (others empty)."""
    course = dataclasses.replace(COURSE, root=tmp_path / "course")
    for notebook in course.graded_notebooks():
        path = course.source_notebook(notebook, edition)
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nbformat.v4.new_notebook(cells=cells.get(notebook, [])), path)
    return course


# ------------------------------------------------------------------ what the sandbox preloads


def test_the_course_cells_top_level_imports_are_preloaded_once_each_in_course_order(tmp_path):
    first, second, *_ = COURSE.graded_notebooks()
    course = _course_with(
        tmp_path,
        {
            first: [
                _cell("import numpy as np\nimport os.path, json"),
                _cell("from helpers.demos import show, plot_weights"),
                _cell("def later():\n    import scipy  # only when called\n    return scipy"),
                _cell("from . import sibling\nfrom .. import cousin"),
                _cell("def broken(:\n    import pandas"),
            ],
            second: [_cell("import numpy as np\nimport torch.nn as nn")],
        },
    )
    assert course_modules(course, "en") == (
        "helpers.demos",
        "helpers.demos.show",
        "helpers.demos.plot_weights",
        "numpy",
        "os.path",
        "json",
        "torch.nn",
    )


def test_answer_and_test_cells_are_the_students_and_not_preloaded(tmp_path):
    first = COURSE.graded_notebooks()[0]
    answer = {"solution": True, "grade": False, "grade_id": "raw_scores", "locked": False}
    test = {"solution": False, "grade": True, "grade_id": "test_raw_scores", "points": 2, "locked": True}
    course = _course_with(
        tmp_path,
        {first: [_cell("import math"), _cell("import pandas", answer), _cell("import sklearn", test)]},
    )
    assert course_modules(course, "en") == ("math",)


def test_each_edition_preloads_what_its_own_notebooks_import(tmp_path):
    first = COURSE.graded_notebooks()[0]
    course = _course_with(tmp_path, {first: [_cell("import math")]})
    _course_with(tmp_path, {first: [_cell("import cmath")]}, edition="zh-CN")
    assert course_modules(course, "en") == ("math",)
    assert course_modules(course, "zh-CN") == ("cmath",)


def test_the_repositorys_course_preloads_torch_and_its_helpers_and_nothing_relative():
    found = course_modules(COURSE, "en")
    assert "torch" in found and "helpers.checks" in found
    assert len(set(found)) == len(found)
    assert all(name and not name.startswith(".") for name in found)


# ------------------------------------------------------------------ the request


class _Stopped(Exception):
    """Raised where the sandbox would be started: nothing is run."""


class _Unstarted(Workspace):
    """A real workspace whose confinement is never built, so the sandbox never starts."""

    def policy(self, settings, layers, sandbox=False):
        self.asked = (settings, list(layers), sandbox)
        raise _Stopped


GRADED = dataclasses.replace(COURSE, items=COURSE.items[:5])  # a course other than the installed helpers' own


@pytest.fixture
def prepared(tmp_path):
    """The inbox as `run_sandbox` leaves it just before it would start the sandbox (of GRADED)."""
    workspace = _Unstarted("ada", "attention", tmp_path / "base")
    (tmp_path / "submitted").mkdir()
    workspace.fill(tmp_path / "submitted")  # the helpers into the workspace and the inbox, as a slot does
    units = [
        Unit("01_scaling_problem", ["import torch", "D = 4"], ["raw_scores", "scaled_scores"]),
        Unit("02_scaled_dot_product_attention", [], ["scaled_dot_product_attention"]),
    ]
    q = torch.arange(6.0).reshape(2, 3)
    cases = [Case("raw_scores", "small", {"q": q, "k": q + 1}, expected=(q @ (q + 1).T,))]
    settings = Grading(memory_gib=1.5, seconds=7.0)
    umask = os.umask(0o077)  # a grader's strict umask: the sandbox's account could read nothing it writes
    try:
        with pytest.raises(_Stopped):
            next(run_sandbox(units, cases, workspace, GRADED, settings, ["bwrap", "landlock"]))
    finally:
        os.umask(umask)
    return workspace, units, cases, settings


def test_the_request_names_each_units_statements_and_exercises_with_their_specs_and_limits(prepared):
    workspace, units, _, _ = prepared
    request = json.loads((workspace.inbox / "request.json").read_text())
    assert request["units"] == [dataclasses.asdict(unit) for unit in units]
    views = {item["name"]: item for item in GRADED.student_view()["items"]}
    assert request["specs"] == {name: views[name] for unit in units for name in unit.exercises}
    assert request["memory"] == int(1.5 * 2**30) and request["seconds"] == 7.0
    assert request["preload"] == list(course_modules(GRADED, "en"))


def test_the_inbox_holds_the_cases_inputs_and_the_course_being_graded(prepared):
    workspace, _, cases, _ = prepared
    (back,) = load_cases(workspace.inbox / "inputs.npz")
    assert (back.exercise, back.name) == ("raw_scores", "small")
    assert torch.equal(back.tensors["q"], cases[0].tensors["q"]) and torch.equal(
        back.tensors["k"], cases[0].tensors["k"]
    )
    written = json.loads((workspace.inbox / "helpers" / "data" / "course.json").read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(GRADED.student_view())), "the course being graded, not the installed one"
    assert [item["name"] for item in written["items"]] == [item.name for item in COURSE.items[:5]]


def test_the_inbox_is_readable_by_the_sandbox_before_its_confinement_is_built(prepared):
    workspace, _, _, settings = prepared
    assert workspace.asked == (settings, ["bwrap", "landlock"], True), "the sandbox's confinement, not the kernel's"
    for path in [workspace.inbox, *workspace.inbox.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) == (0o755 if path.is_dir() else 0o644), path
    assert not (workspace.sandbox.parent / "sandbox-stderr").exists(), "nothing was started"


# ------------------------------------------------------------------ how a sandbox ended


@pytest.mark.parametrize(
    "code, said",
    [
        (-2, "ended by SIGINT"),
        (130, "ended by SIGINT"),
        (-9, "ended by SIGKILL"),
        (137, "ended by SIGKILL"),
        (0, "exit 0"),
        (1, "exit 1"),
        (128, "exit 128"),
        (None, "exit None"),
        (255, "exit 255"),  # 127 is no signal
    ],
)
def test_an_ended_sandbox_is_described_by_its_signal_or_its_exit_status(code, said):
    assert _ended(code) == said
