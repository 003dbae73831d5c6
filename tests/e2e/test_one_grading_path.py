"""One grading path: `make grade`, plain `nbgrader autograde` and formgrader's autograde button
grade the same hostile class to the same gradebook, cell by cell.

The class submits `03_split_heads`: "control" (right), "tidy" (a duplicated grade cell and a
deleted answer cell, which plain nbgrader used to fail on), "linked" (the notebook is a link to
the instructor's solutions), "hog" (a
scratch cell that takes more memory than the kernel may have: the confinement's own cap stops
it), "flood" (a scratch cell that prints 20 MB and displays 30 MB of HTML: what nbgrader keeps and
the feedback page stay small). Each way grades its own copy of the course with the same settings and seed; formgrader's
button is pressed through a running server's own API, and that server's process must be left as
it was: no children, no kernels, nothing of the grader's. nbgrader's API is also run in this
process, as formgrader runs it, to see that grading changes nothing of the process that runs it
(dumpable, child subreaper, environment) and leaves no zmq context or thread behind.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import gc
import json
import os
import threading
import urllib.request
from pathlib import Path

import nbformat
import psutil
import pytest

from attention_course.model.manifest import load
from browser import TOKEN, jupyterlab
from classroom import submission, write_submission
from conftest import REPO, copy_course, describe, run

pytestmark = pytest.mark.slow
NOTEBOOK = "03_split_heads"
STUDENTS = ("control", "tidy", "linked", "hog", "flood")
SETTINGS = """
# tests/e2e/test_one_grading_path.py: the same settings whichever way grading starts
c.Grading.seed = 4242
c.Grading.seconds = 20
c.Grading.cell_timeout = 20
c.Grading.student_seconds = 300
"""
PR_GET_DUMPABLE, PR_GET_CHILD_SUBREAPER = 3, 37


def write_class(root: Path) -> None:
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(SETTINGS)
    course = load(root)
    right = submission(course, {}, [NOTEBOOK])
    for student in STUDENTS:
        write_submission(root, student, right, "attention")
    folder = root / "submitted"
    path = folder / "tidy" / "attention" / f"{NOTEBOOK}.ipynb"
    nb = nbformat.read(path, as_version=4)
    test_cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_split_view")
    nb.cells.append(nbformat.from_dict(json.loads(json.dumps(test_cell))))
    answer = course.item("split_heads").answer_cell
    right_source = next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == answer)
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != answer]
    nb.cells.insert(0, nbformat.v4.new_code_cell(right_source))  # the answer, in a cell of its own
    path.write_text(json.dumps(nb))
    linked = folder / "linked" / "attention" / f"{NOTEBOOK}.ipynb"
    linked.unlink()
    linked.symlink_to(root / "source" / "attention" / f"{NOTEBOOK}.ipynb")
    hog = folder / "hog" / "attention" / f"{NOTEBOOK}.ipynb"
    nb = nbformat.read(hog, as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell("hoard = bytearray(3 * 2**30)  # more than the kernel may have"))
    hog.write_text(json.dumps(nb))
    flood = folder / "flood" / "attention" / f"{NOTEBOOK}.ipynb"
    nb = nbformat.read(flood, as_version=4)
    nb.cells.insert(
        1,
        nbformat.v4.new_code_cell(
            "from IPython.display import HTML, display\n"
            "for i in range(200):\n    print('x' * 100000)\n"
            "for i in range(10):\n    display(HTML('<b>' + 'y' * 3 * 2**20 + '</b>'))"
        ),
    )
    flood.write_text(json.dumps(nb))


def gradebook_cells(root: Path) -> dict:
    """(student, grade cell) -> (automatic score, automatic comment of its answer cell)."""
    from nbgrader.api import Gradebook

    course = load(root)
    found = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for student in STUDENTS:
            notebook = gb.find_submission_notebook(NOTEBOOK, "attention", student)
            comments = {c.name: c.auto_comment for c in notebook.comments}
            for grade in notebook.grades:
                item = next(i for i in course.items_in(NOTEBOOK) if i.test_cell == grade.name)
                found[(student, grade.name)] = (grade.auto_score, grade.needs_manual_grade, comments[item.answer_cell])
    return found


@pytest.fixture(scope="module")
def three_ways(tmp_path_factory):
    """The three ways at the same time, each on its own copy of the course (and so, beside the
    others' load, each on a busy machine)."""
    courses = {}
    for way in ("make grade", "nbgrader autograde", "formgrader"):
        root = copy_course(tmp_path_factory.mktemp(way.replace(" ", "_")) / "course")
        write_class(root)
        courses[way] = root
    server = {}

    def make_grade():
        proc = run(["make", "grade", f"VENV={REPO / '.venv'}"], cwd=courses["make grade"], timeout=1800)
        assert f"Graded {len(STUDENTS)} and kept 0 of {len(STUDENTS)}" in proc.stdout, describe(proc)

    def nbgrader_autograde():
        root = courses["nbgrader autograde"]
        run(["nbgrader", "generate_assignment", "attention", "--force"], cwd=root, check=True)
        proc = run(["nbgrader", "autograde", "attention"], cwd=root, timeout=1800)
        assert proc.returncode == 0, describe(proc)

    def formgrader():
        root = courses["formgrader"]
        run(["nbgrader", "generate_assignment", "attention", "--force"], cwd=root, check=True)
        with jupyterlab(root, teacher=True) as url:
            port = int(url.rsplit(":", 1)[1])
            pid = next(p.pid for p in psutil.process_iter(["cmdline"]) if f"--port={port}" in (p.info["cmdline"] or []))
            before = psutil.Process(pid)
            for student in STUDENTS:
                request = urllib.request.Request(
                    f"{url}/formgrader/api/submission/attention/{student}/autograde",
                    method="POST",
                    data=b"",
                    headers={"Authorization": f"token {TOKEN}"},
                )
                with urllib.request.urlopen(request, timeout=900) as response:
                    server[student] = json.loads(response.read())
            server["children after"] = [p.cmdline() for p in before.children(recursive=True)]

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        for future in [pool.submit(way) for way in (make_grade, nbgrader_autograde, formgrader)]:
            future.result()
    return courses, server


def test_the_button_grades_every_student(three_ways):
    _, server = three_ways
    for student in STUDENTS:
        assert server[student]["success"], (student, server[student].get("error"), server[student].get("log"))


def test_three_ways_give_one_gradebook(three_ways):
    courses, _ = three_ways
    tables = {way: gradebook_cells(root) for way, root in courses.items()}
    assert tables["nbgrader autograde"] == tables["make grade"]
    assert tables["formgrader"] == tables["make grade"]


def test_the_class_is_graded_as_it_should_be(three_ways):
    cells = gradebook_cells(three_ways[0]["make grade"])
    assert all(score > 0 and not manual for (s, _), (score, manual, _) in cells.items() if s in ("control", "tidy"))
    for student, why in (("linked", "is a link"),):
        rows = [v for (s, _), v in cells.items() if s == student]
        assert rows and all(score == 0 and why in (comment or "") for score, _, comment in rows), rows


def test_what_a_flood_leaves_is_bounded(three_ways):
    for root in three_ways[0].values():
        graded = root / "autograded" / "flood" / "attention" / f"{NOTEBOOK}.ipynb"
        assert graded.stat().st_size < 17 * 2**20, graded.stat().st_size
    feedback = three_ways[0]["make grade"] / "feedback" / "flood" / "attention" / f"{NOTEBOOK}.html"
    assert feedback.stat().st_size < 20 * 2**20


def test_the_servers_process_is_left_as_it_was(three_ways):
    _, server = three_ways
    assert server["children after"] == [], server["children after"]


def test_grading_in_process_changes_nothing_of_the_process(tmp_path):
    """As formgrader does: nbgrader's API in this very process."""
    import zmq
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    root = copy_course(tmp_path / "course")
    course = load(root)
    write_submission(root, "control", submission(course, {}, [NOTEBOOK]), "attention")
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(SETTINGS)
    run(["nbgrader", "generate_assignment", "attention", "--force"], cwd=root, check=True)
    libc = ctypes.CDLL(None)

    def state():
        subreaper = ctypes.c_int()
        libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(subreaper), 0, 0, 0)
        return libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), subreaper.value, dict(os.environ)

    before, threads = state(), set(threading.enumerate())
    cwd = os.getcwd()
    os.chdir(root)
    try:
        config = Config()
        config.merge(PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config())
        api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
        result = api.autograde("attention", "control", force=True)
    finally:
        os.chdir(cwd)
    assert result["success"], result.get("log")
    assert state() == before
    gc.collect()
    contexts = [o for o in gc.get_objects() if isinstance(o, zmq.Context) and not o.closed]
    assert not [c for c in contexts if c is not zmq.Context._instance], contexts
    left = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
    # at most the idle worker of the trusted grader's pool, which the next grading run ends
    assert len(left) <= 1 and all(t.name.startswith("trusted") for t in left), left
