"""Unit tests of the small pieces of grading, without running nbgrader or any kernel.

The end-to-end behaviour (`make grade`, plain `nbgrader autograde`, formgrader, on real classes)
is tested in test_class_grading.py, test_one_grading_path.py, test_grader.py and test_attacks.py."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time

import nbformat
import pytest

from attention_course.grading.nbgrader_process import bounded
from attention_course.grading.plugins.tidy import tidy
from attention_course.grading.submission import Submission, find_submissions, place_submission, submission_files
from attention_course.model.manifest import load
from conftest import REPO


def _graded(grade_id: str, answer: bool = False):
    cell = nbformat.v4.new_code_cell("a = 1")
    cell.metadata["nbgrader"] = {"grade_id": grade_id, "grade": not answer, "solution": answer, "locked": False}
    if not answer:
        cell.metadata["nbgrader"]["points"] = 1
    return cell


def test_tidy_keeps_the_first_copy_of_a_duplicated_grade_cell_and_renews_cell_ids():
    nb = nbformat.v4.new_notebook(cells=[_graded("test_a"), _graded("test_a"), _graded("test_b")])
    nb.cells[1]["id"] = nb.cells[0]["id"]
    notes = tidy(nb, None, "03.ipynb")
    assert notes == ["03.ipynb: a copy of cell 'test_a' was ignored"]
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells] == ["test_a", None, "test_b"]
    assert len({c["id"] for c in nb.cells}) == 3


def test_tidy_puts_back_a_deleted_answer_cell_from_the_release_after_the_cell_before_it():
    release = nbformat.v4.new_notebook(
        cells=[_graded("intro", answer=True), _graded("answer", answer=True), _graded("test_answer")]
    )
    release.cells[1].source = "def f():\n    raise NotImplementedError()"
    nb = nbformat.v4.new_notebook(cells=[_graded("intro", answer=True), _graded("test_answer")])
    notes = tidy(nb, release, "02.ipynb")
    assert notes == ["02.ipynb: answer cell 'answer' was missing; it was graded as not answered"]
    assert [c.metadata["nbgrader"]["grade_id"] for c in nb.cells] == ["intro", "answer", "test_answer"]
    assert "NotImplementedError" in nb.cells[1].source


def test_tidy_says_why_a_stand_in_is_graded_0():
    nb = nbformat.v4.new_notebook(cells=[_graded("test_a")])
    nb.metadata["attention_unreadable"] = "02.ipynb could not be graded: it is a link. It was graded 0."
    assert tidy(nb, None, "02.ipynb") == [nb.metadata["attention_unreadable"]]
    assert "it is a link" in nb.cells[0].source


def test_bounded_stops_a_process_tree_at_its_time_bound():
    proc = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, time; subprocess.Popen(['sleep', '60']); time.sleep(60)"],
        start_new_session=True,
    )
    start = time.monotonic()
    assert "longer than 2 s" in bounded(proc, None, 2)
    assert time.monotonic() - start < 10 and proc.returncode is not None


def test_bounded_stops_a_process_over_its_own_memory_bound():
    proc = subprocess.Popen(
        [sys.executable, "-c", "x = bytearray(400 * 2**20); import time; time.sleep(60)"], start_new_session=True
    )
    assert "GiB" in bounded(proc, 200 * 2**20, 60)


def test_a_linked_student_folder_is_refused_whole_and_a_linked_notebook_stays_a_link(tmp_path):
    course = dataclasses.replace(load(REPO), root=tmp_path)
    top = tmp_path / "submitted"
    (tmp_path / "elsewhere" / "attention").mkdir(parents=True)
    (top / "honest" / "attention").mkdir(parents=True)
    (top / "mallory").symlink_to(tmp_path / "elsewhere")
    (top / "honest" / "attention" / "02_scaled_dot_product_attention.ipynb").symlink_to(REPO / "course.toml")
    os.mkfifo(top / "honest" / "attention" / "03_split_heads.ipynb")
    subs = {s.student: s for s in find_submissions(course, [])}
    assert "mallory is a link" in subs["mallory"].refused and not subs["honest"].refused
    dest = tmp_path / "copy"
    honest = Submission("honest", "attention")
    place_submission(course, honest, submission_files(course, honest), dest)
    assert (dest / "02_scaled_dot_product_attention.ipynb").is_symlink()
    assert not (dest / "03_split_heads.ipynb").is_file() and (dest / "03_split_heads.ipynb").exists()


def test_the_command_line_is_the_grading_settings(tmp_path):
    """One declaration: every `c.Grading` setting is an option of `make grade`, over the file's."""
    from attention_course.grading.grade import GradeApp
    from attention_course.grading.settings import Grading

    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.Grading.jobs = 3\nc.Grading.seconds = 7.0\n")
    app = GradeApp()
    app.parse_command_line(
        ["--course", str(tmp_path), "--seconds", "9", "--layers=bwrap,landlock", "--student", "a", "--student", "b"]
    )
    settings = app.settings()
    assert (settings.jobs, settings.seconds, settings.layers) == (3, 9.0, ["bwrap", "landlock"])
    assert app.student == ["a", "b"] and not settings.unconfined
    assert {alias.replace("-", "_") for alias in GradeApp.aliases} >= set(Grading.class_trait_names(config=True))
    app = GradeApp()
    app.parse_command_line(["--course", str(tmp_path), "--unconfined"])
    assert app.settings().unconfined
    # as with argparse, the last value of a setting given twice wins (make grade JOBS=... GRADE_ARGS=...)
    app = GradeApp()
    app.parse_command_line(["--course", str(tmp_path), "--seconds", "20", "--jobs=1", "--seconds=5", "--jobs", "2"])
    assert (app.settings().seconds, app.settings().jobs) == (5.0, 2)


def _release_and_copy():
    release = nbformat.v4.new_notebook(cells=[_graded("answer", answer=True), _graded("test_answer")])
    release.cells[1].metadata["nbgrader"]["locked"] = True
    return release, nbformat.from_dict(json.loads(json.dumps(release)))


TAMPERING = {
    "points raised": lambda nb: nb.cells[1].metadata["nbgrader"].update(points=100),
    "test cell no longer graded": lambda nb: nb.cells[1].metadata["nbgrader"].update(grade=False),
    "test cell unlocked": lambda nb: nb.cells[1].metadata["nbgrader"].update(locked=False),
    "answer cell made a grade cell": lambda nb: nb.cells[0].metadata["nbgrader"].update(grade=True, points=50),
    "test cell made markdown": lambda nb: nb.cells[1].update(cell_type="markdown"),
    "a grade cell added": lambda nb: nb.cells.append(
        nbformat.from_dict(
            {
                **_graded("bonus_points"),
                "metadata": {
                    "nbgrader": {**_graded("x").metadata["nbgrader"], "grade_id": "bonus_points", "points": 100}
                },
            }
        )
    ),
    "marks without an id": lambda nb: nb.cells.append(
        nbformat.from_dict({**_graded("y"), "metadata": {"nbgrader": {"grade": True, "points": 9}}})
    ),
}


@pytest.mark.parametrize("kind", sorted(TAMPERING))
def test_tidy_puts_back_the_release_s_grading_marks_whatever_was_changed(kind):
    release, nb = _release_and_copy()
    TAMPERING[kind](nb)
    notes = tidy(nb, release, "02.ipynb")
    assert len(notes) == 1 and notes[0].startswith("02.ipynb: "), notes
    graded = [c for c in nb.cells if "nbgrader" in c.metadata]
    assert [(c.cell_type, c.metadata["nbgrader"]) for c in graded] == [
        (c.cell_type, c.metadata["nbgrader"]) for c in release.cells
    ]
    assert str(notes[0].said()) == str(notes[0])  # English: said as written


def test_tidy_leaves_an_untouched_notebook_alone():
    release, nb = _release_and_copy()
    assert tidy(nb, release, "02.ipynb") == []


def test_an_nbgrader_process_takes_named_layers_without_probing_and_probes_only_for_auto(monkeypatch):
    from attention_course.confinement import probe
    from attention_course.confinement.probe import choose_layers

    probed = []
    found = {"bwrap": None, "landlock": "not here", "user": "not root"}
    monkeypatch.setattr(probe, "probe", lambda python: probed.append(python) or found)
    assert choose_layers(["bwrap", "user"], probed=False) == (["bwrap", "user"], {})
    assert probed == []  # the run probed once already; the supervisor refuses what it cannot apply
    assert choose_layers(["auto"], probed=False)[0] == ["bwrap"]
    assert len(probed) == 1


def test_each_students_kernels_get_their_share_of_the_cores_through_the_settings(monkeypatch, tmp_path):
    """`make grade` gives each student graded at a time its share of the cores as a setting
    (`Grading.threads`), which reaches the kernel's and the sandbox's environment; nothing is
    written into the grader's own environment. A teacher's OMP_NUM_THREADS is kept."""
    from attention_course.grading import slot
    from attention_course.grading.workspace import Workspace

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0))
    assert slot.cores_share(1) == cores and slot.cores_share(4 * cores) == 1
    assert "OMP_NUM_THREADS" not in os.environ
    workspace = Workspace("ada", "attention", tmp_path)
    try:
        assert workspace.env(3)["OMP_NUM_THREADS"] == workspace.env(3)["MKL_NUM_THREADS"] == "3"
        assert "OMP_NUM_THREADS" not in workspace.env(0)
        monkeypatch.setenv("OMP_NUM_THREADS", "5")  # the teacher's
        assert slot.cores_share(2) == 0 and workspace.env(0)["OMP_NUM_THREADS"] == "5"
    finally:
        workspace.remove()
