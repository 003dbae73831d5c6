"""The one writer of a grading run (attention_course/grading/merge.py), on small gradebooks and
folders (no grading run, no `nbgrader export` process): a graded student's rows into the course
gradebook; the graded notebooks and feedback only when a Dask worker shipped them (on this machine
nbgrader wrote them into the course itself); a row of 0 with the reason for what was not finished;
nothing at all for a student whose confinement failed; and the run record the grade tables are
written from."""

from __future__ import annotations

import datetime
import functools
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from small_gradebook import DUE, A, gradebook, submit, url
from traitlets.config import Configurable
from traitlets.utils.importstring import import_item

from attention_course.grading import merge as merging
from attention_course.grading.coursedir import paths
from attention_course.grading.gradebook import student_rows
from attention_course.grading.merge import merge, write_tables
from attention_course.grading.nbgrader_process import Ended
from attention_course.grading.submission import Graded, Submission
from attention_course.model.manifest import load
from conftest import REPO

pytestmark = pytest.mark.filterwarnings("ignore::Warning:nbgrader.api")  # SQLAlchemy's autoflush notes

NB1, NB2 = "01_scaling_problem", "02_scaled_dot_product_attention"
TESTS = {NB1: "test_raw_scores", NB2: "test_scaled_dot_product_attention"}
ANSWERS = {NB1: "raw_scores", NB2: "scaled_dot_product_attention"}
FULL = {"test_raw_scores": 2.0, "test_scaled_dot_product_attention": 4.0}


@pytest.fixture(scope="module")
def _empty(tmp_path_factory) -> bytes:
    """A course gradebook of ada and bo with nothing submitted (built once)."""
    return gradebook(tmp_path_factory.mktemp("merge") / "gradebook.db").read_bytes()


@pytest.fixture
def course(tmp_path, _empty):
    """A course folder (the repository's configuration and manifest) with an empty gradebook of ada and bo."""
    root = tmp_path / "course"
    root.mkdir()
    for name in ("nbgrader_config.py", "course.toml"):
        shutil.copy(REPO / name, root / name)
    (root / "gradebook.db").write_bytes(_empty)
    return load(root)


@functools.cache
def _slot_rows(student: str, scores: tuple, comments: tuple) -> str:
    with tempfile.TemporaryDirectory() as folder:
        slot = gradebook(Path(folder) / "slot.db")
        submit(slot, student, dict(scores), DUE - datetime.timedelta(hours=1), comments=dict(comments))
        return json.dumps(student_rows(slot, A, student))


def _rows(student: str, scores: dict, comments: dict | None = None) -> dict:
    """A student's rows as a slot's gradebook gives them back (`gradebook.student_rows`), plain data."""
    return json.loads(_slot_rows(student, tuple(sorted(scores.items())), tuple(sorted((comments or {}).items()))))


def _grade(course, student: str, notebook: str) -> tuple[float, str]:
    """(score, automatic comment of the answer cell) of a student's notebook in the course gradebook."""
    with Gradebook(url(paths(course.root).gradebook)) as gb:
        grade = gb.find_grade(TESTS[notebook], notebook, A, student)
        return grade.score, gb.find_comment(ANSWERS[notebook], notebook, A, student).auto_comment


def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def _written_by_nbgrader(course, student: str) -> dict[str, Path]:
    """The graded notebook and feedback page nbgrader itself wrote into the course (on this machine)."""
    where = paths(course.root)
    folders = {step: where.of(step, student, A) for step in ("autograded", "feedback")}
    for step, folder in folders.items():
        folder.mkdir(parents=True)
        (folder / f"{NB1}.{'ipynb' if step == 'autograded' else 'html'}").write_text(f"{step} by nbgrader")
    return folders


def test_on_this_machine_the_rows_are_merged_and_nbgraders_own_files_are_left_as_they_are(course):
    folders = _written_by_nbgrader(course, "ada")
    before = {step: _files(folder) for step, folder in folders.items()}
    sub = Submission("ada", A)
    rows = _rows("ada", {"test_raw_scores": 2.0}, comments={"scaled_dot_product_attention": "wrong axis"})
    graded = Graded(sub, [], rows=rows, autograded={"stray.ipynb": ("file", b"x")})
    assert graded.shipped is False, "graded here unless a worker says otherwise"
    merge(course, graded)
    assert _grade(course, "ada", NB1) == (2.0, "")
    assert _grade(course, "ada", NB2) == (0.0, "wrong axis")
    assert {step: _files(folder) for step, folder in folders.items()} == before
    assert sub.graded


def test_from_a_dask_worker_the_shipped_notebooks_and_feedback_replace_the_students_folders(course):
    folders = _written_by_nbgrader(course, "ada")  # an earlier run's
    others = _written_by_nbgrader(course, "bo")
    sub = Submission("ada", A)
    shipped = {f"{NB1}.ipynb": ("file", b"graded on a worker"), "sub/extra.txt": ("file", b"kept")}
    graded = Graded(sub, [], rows=_rows("ada", FULL), shipped=True, autograded=shipped, feedback={})
    merge(course, graded)
    assert _files(folders["autograded"]) == {f"{NB1}.ipynb": "graded on a worker", "sub/extra.txt": "kept"}
    assert not folders["feedback"].exists(), "no feedback came back: none is left from the earlier run"
    assert _files(others["autograded"]) == {f"{NB1}.ipynb": "autograded by nbgrader"}, "bo's stay"
    assert _grade(course, "ada", NB2) == (4.0, "")
    assert sub.graded


def test_what_nbgrader_did_not_finish_is_zero_with_the_faults_as_the_reason(course):
    with Gradebook(url(paths(course.root).gradebook)) as gb:  # a teacher's manual grade from before
        gb.add_submission(A, "ada", timestamp=DUE)
        gb.find_grade(TESTS[NB1], NB1, A, "ada").manual_score = 1.5
        gb.db.commit()
    sub = Submission("ada", A, faults=["02 ran out of time", "the kernel died"])
    merge(course, Graded(sub, [NB2], rows=_rows("ada", FULL)))
    assert _grade(course, "ada", NB2) == (0.0, "02 ran out of time; the kernel died")
    assert _grade(course, "ada", NB1) == (1.5, ""), "the finished notebook keeps its grade (the teacher's)"
    with Gradebook(url(paths(course.root).gradebook)) as gb:
        assert not gb.find_submission(A, "ada").needs_manual_grade, "a zero is decided, not waiting"
    assert sub.graded


def test_a_notebook_left_without_a_stated_fault_says_it_could_not_be_graded(course):
    sub = Submission("bo", A)
    merge(course, Graded(sub, [NB1], rows=_rows("bo", FULL)))
    assert _grade(course, "bo", NB1) == (0.0, "it could not be graded")
    assert _grade(course, "bo", NB2) == (4.0, "")


def test_a_refused_submission_gets_zero_everywhere_with_why_it_was_refused(course):
    folders = _written_by_nbgrader(course, "ada")
    before = {step: _files(folder) for step, folder in folders.items()}
    sub = Submission("ada", A, faults=["not this one"], refused="ada/attention is a link; graded 0")
    merge(course, Graded(sub, course.graded_notebooks()))  # graded notebooks the gradebook lacks are skipped
    for notebook in (NB1, NB2):
        assert _grade(course, "ada", notebook) == (0.0, "ada/attention is a link; graded 0")
    assert {step: _files(folder) for step, folder in folders.items()} == before
    assert sub.graded


def test_a_student_whose_confinement_failed_is_not_merged_at_all(course):
    folders = _written_by_nbgrader(course, "ada")
    sub = Submission("ada", A, faults=["confinement: the worker on h1 cannot apply bwrap (no userns); not graded"])
    graded = Graded(sub, [NB1], rows=_rows("ada", FULL), shipped=True, autograded={}, feedback={})
    merge(course, graded)
    with Gradebook(url(paths(course.root).gradebook)) as gb, pytest.raises(MissingEntry):
        gb.find_submission(A, "ada")
    assert all(folder.exists() for folder in folders.values())
    assert not sub.graded


# ------------------------------------------------------------------ the run record and the tables


class _App(Configurable):
    def __init__(self, root: Path):
        super().__init__()
        self.coursedir = CourseDirectory(root=str(root))


@pytest.fixture
def exports(monkeypatch):
    """`nbgrader export` run here, in this process, from the command line write_tables gives it:
    each call's (args, the run record as it was then)."""
    calls = []

    def export_here(args: list[str], cwd: Path, course: Path, *rest) -> Ended:
        assert args[0] == "export-tables" and len(args) == 2, args
        for argv in json.loads(args[1]):
            options = dict(arg.removeprefix("--").split("=", 1) for arg in argv)
            record = Path(options[f"{options['exporter'].rsplit('.', 1)[1]}.run_record"])
            calls.append((argv, cwd, course, json.loads(record.read_text(encoding="utf-8"))))
            exporter = import_item(options.pop("exporter"))
            plugin = exporter(parent=_App(course), to=options.pop("to"))
            plugin.run_record = options.pop(f"{exporter.__name__}.run_record")
            assert not options, options
            with Gradebook(url(paths(course).gradebook)) as gb:
                plugin.export(gb)
        return Ended(args, 0, "", "")

    monkeypatch.setattr(merging, "nbgrader", export_here)
    return calls


def test_the_tables_carry_this_runs_seed_and_layers_or_those_of_the_run_that_graded_a_kept_student(course, exports):
    merge(course, Graded(Submission("ada", A), [], rows=_rows("ada", FULL)))
    merge(course, Graded(Submission("bo", A), [], rows=_rows("bo", {"test_raw_scores": 2.0})))
    fresh = Submission("ada", A, problems=["02 handed in as 02 (1)"], faults=["the kernel died"])
    kept = Submission("bo", A, kept={"seed": 5, "confinement": "landlock", "problems": "from before"})
    write_tables(course, [fresh, kept], lambda sub: {"ada": 42}[sub.student], ["bwrap", "landlock"])
    record = course.root / "build" / "grading" / "run.json"
    assert [call[0][0] for call in exports] == [
        "--exporter=attention_course.grading.export.NotebookGrades",
        "--exporter=attention_course.grading.export.CellGrades",
    ]
    assert all(call[1] == call[2] == course.root for call in exports)
    assert exports[0][3] == [
        {
            "student": "ada",
            "assignment": A,
            "seed": 42,
            "confinement": "bwrap+landlock",
            "problems": "02 handed in as 02 (1); the kernel died",
        },
        {"student": "bo", "assignment": A, "seed": 5, "confinement": "landlock", "problems": "from before"},
    ]
    assert json.loads(record.read_text()) == exports[0][3]
    totals = [line.split(",") for line in (course.root / "grades.csv").read_text().splitlines() if ",TOTAL," in line]
    assert [row[:5] + row[7:9] for row in totals] == [
        ["ada", A, "TOTAL", "6", "6", "42", "bwrap+landlock"],
        ["bo", A, "TOTAL", "2", "6", "5", "landlock"],
    ]
    assert (course.root / "grades_by_cell.csv").read_text().count("\n") == 5


def test_a_run_without_confinement_is_recorded_as_none(course, exports):
    write_tables(course, [Submission("ada", A)], lambda sub: 7, [])
    assert exports[0][3] == [{"student": "ada", "assignment": A, "seed": 7, "confinement": "none", "problems": ""}]


def test_a_failed_export_stops_the_run_with_nbgraders_error(course, monkeypatch):
    calls = []

    def failing(args, cwd, course_root, *rest) -> Ended:
        calls.append(args)
        return Ended(args, 1, "", "[ExportApp | ERROR] no such column: grade.score\nTraceback (most recent call last)")

    monkeypatch.setattr(merging, "nbgrader", failing)
    with pytest.raises(SystemExit) as stopped:
        write_tables(course, [Submission("ada", A)], lambda sub: 7, ["bwrap"])
    assert "nbgrader export (grades.csv, grades_by_cell.csv) failed" in str(stopped.value)
    assert "no such column: grade.score" in str(stopped.value)
    assert len(calls) == 1, "the second table is not attempted"
