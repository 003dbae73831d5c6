"""The trusted verdict hands over each notebook as soon as it is judged, and reads nothing the
student's kernel can change.

nbgrader waits for a notebook's verdict before it moves on, so a verdict held back until the
whole sandbox run is over would make an endless loop in a later notebook cost its time limit
twice (once in the sandbox, once again in nbgrader's cell). Here a student's `split_heads`
(notebook 03) loops: notebook 02's verdict must come while the loop still runs, 03's must say
the loop was stopped, notebooks not submitted are handed over before the sandbox starts, and
what is handed over must be what the run returns.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from attention_course.confinement.probe import choose_layers
from attention_course.grading import workspace as workspaces
from attention_course.grading.settings import Grading
from attention_course.grading.trusted import grade_student
from attention_course.model.manifest import load
from classroom import right_answer, submission, write_submission

pytestmark = pytest.mark.slow
NOTEBOOKS = ["02_scaled_dot_product_attention", "03_split_heads"]
LIMIT = 6.0
LOOP = "def split_heads(x, num_heads):\n    while True:\n        pass\n"


def grade(course, student: str, answer: str, seconds: float = 30.0, tamper=None, publish=None):
    """The trusted verdict on a submission of NOTEBOOKS with `answer` as its split_heads, in a
    fresh workspace; `tamper(workspace)` plays the student's kernel, which got there first."""
    assignment = course.editions[0].assignment
    folder = write_submission(course.root, student, submission(course, {"split_heads": answer}, NOTEBOOKS), assignment)
    settings = Grading(seconds=seconds, layers=["auto"])
    layers, _ = choose_layers(settings.layers)
    base = workspaces.new_base()
    workspace = workspaces.Workspace(student, assignment, base)
    workspace.fill(folder)
    if tamper:
        tamper(workspace)
    try:
        paths = {name: folder / f"{name}.ipynb" for name in NOTEBOOKS}
        return grade_student(course, paths, 1, settings, layers, workspace, "en", publish)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def split_heads_verdict(result):
    (split,) = [v for v in result["03_split_heads"] if v.cell.item == "split_heads"]
    return split


def test_each_notebook_is_handed_over_when_judged(course_copy):
    course = load(course_copy)
    handed: list[tuple[str, float, list]] = []
    start = time.monotonic()
    result = grade(
        course,
        "looping",
        LOOP,
        seconds=LIMIT,
        publish=lambda notebook, verdicts: handed.append((notebook, time.monotonic() - start, verdicts)),
    )
    when = {name: at for name, at, _ in handed}
    assert sorted(when) == course.graded_notebooks(), "every graded notebook is handed over once"
    unsubmitted = [name for name in when if name not in NOTEBOOKS]
    assert [name for name, _, _ in handed] == unsubmitted + NOTEBOOKS, "the unsubmitted first, at once"
    assert when["03_split_heads"] - when["02_scaled_dot_product_attention"] > LIMIT - 1, when
    assert {name: verdicts for name, _, verdicts in handed} == result
    assert all(v.score == v.cell.points for v in result["02_scaled_dot_product_attention"])
    split = split_heads_verdict(result)
    assert split.score == 0 and "split_heads" in split.reason and f"{LIMIT:.0f} s" in split.reason, split


# Appended to the workspace's helpers/notebook_code.py by a "kernel" that got there first: every
# notebook's definitions end with the right split_heads, whatever the notebook says.
HIJACK = """
_run_statements = run_statements
def run_statements(statements, namespace=None):
    return _run_statements(list(statements) + [{right!r}], namespace)
"""


def test_the_sandbox_ignores_helpers_the_kernel_rewrote(course_copy):
    """The student's kernel shares the workspace and runs while the sandbox does: helpers it
    rewrites there must not be what the sandbox imports (a wrong split_heads stays wrong)."""
    course = load(course_copy)
    wrong = "def split_heads(x, num_heads):\n    return x.reshape(x.shape[0], num_heads, x.shape[1], -1)\n"

    def hijack(workspace):
        with open(workspace.folder / "helpers" / "notebook_code.py", "a") as module:
            module.write(HIJACK.format(right=right_answer(course, "split_heads")))

    result = grade(course, "hijacker", wrong, tamper=hijack)
    split = split_heads_verdict(result)
    assert split.score == 0, f"the sandbox ran helpers the student's kernel wrote: {split}"
    assert all(v.score == v.cell.points for v in result["02_scaled_dot_product_attention"])


def test_the_sandbox_ignores_a_matplotlibrc_in_the_workspace(course_copy):
    """The driver imports matplotlib before it forks; a `matplotlibrc` the kernel left in the
    workspace must not set what the children inherit (this answer is right only if it does)."""
    course = load(course_copy)
    answer = right_answer(course, "split_heads") + (
        "\n_right = split_heads\n"
        "def split_heads(x, num_heads):\n"
        "    import matplotlib\n"
        "    return _right(x, num_heads) if matplotlib.rcParams['lines.linewidth'] == 7.5 else x\n"
    )

    def style(workspace):
        for place in (workspace.folder, Path(workspace.env()["MPLCONFIGDIR"])):
            (place / "matplotlibrc").write_text("lines.linewidth: 7.5\n")

    split = split_heads_verdict(grade(course, "styler", answer, tamper=style))
    assert split.score == 0, f"the sandbox's matplotlib read the workspace's settings: {split}"
