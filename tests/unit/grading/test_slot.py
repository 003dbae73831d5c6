"""A slot: the private course folder where one student is graded (no kernel: its folder, its
configuration and where nbgrader will write)."""

from __future__ import annotations

import dataclasses
import shutil
import threading
from pathlib import Path

from attention_course.grading.coursedir import CoursePaths
from attention_course.grading.slot import Slot, student_bound
from attention_course.grading.submission import Submission, place_submission, submission_files
from attention_course.model.manifest import load

REPO = Path(__file__).resolve().parents[3]
OVERRIDES = {"Grading": {"student_seconds": 900.0, "seconds": 30.0}}


def _course(tmp_path: Path):
    root = tmp_path / "course"
    root.mkdir()
    shutil.copy(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    for name in ("source", "notebooks"):
        (root / name).mkdir()
    (root / "gradebook.db").write_bytes(b"")
    return dataclasses.replace(load(REPO), root=root)


def test_on_this_machine_nbgrader_writes_the_graded_notebooks_and_feedback_into_the_course(tmp_path):
    course = _course(tmp_path)
    slot = Slot(course, tmp_path / "slot", OVERRIDES, threading.Lock())
    home = CoursePaths(course.root)
    for step in ("autograded", "feedback"):
        assert slot.paths.of(step, "ada", "attention") == home.of(step, "ada", "attention")
    assert slot.paths.of("submitted", "ada", "attention") == tmp_path / "slot" / "submitted" / "ada" / "attention"
    assert (tmp_path / "slot" / "gradebook.db").exists(), "nbgrader grades into the slot's copy of the gradebook"


def test_on_a_dask_worker_everything_stays_in_the_slot(tmp_path):
    course = _course(tmp_path)
    slot = Slot(course, tmp_path / "slot", OVERRIDES, threading.Lock(), in_place=False)
    for step in ("submitted", "autograded", "feedback"):
        assert tmp_path / "slot" in slot.paths.of(step, "ada", "attention").parents
    assert slot.zygote is None, "no warm nbgrader process given: a fresh one for each student"


def test_a_slot_forks_its_students_nbgrader_processes_from_the_warm_one_it_is_given(tmp_path, monkeypatch):
    import attention_course.grading.slot as slot_module

    course = _course(tmp_path)
    warm = object()
    seen = []
    monkeypatch.setattr(slot_module, "nbgrader", lambda *args: seen.append(args[-1]) or None)
    slot = Slot(course, tmp_path / "slot", OVERRIDES, threading.Lock(), zygote=warm)
    try:
        slot.run(Submission("ada", "attention"), {})
    except Exception:
        pass  # only the call matters here
    assert seen == [warm]


def test_a_submission_is_read_once_and_written_once_into_the_slot(tmp_path):
    course = _course(tmp_path)
    folder = CoursePaths(course.root).of("submitted", "ada", "attention")
    folder.mkdir(parents=True)
    first, second, *_ = course.graded_notebooks()
    (folder / f"{first}.ipynb").write_text("{}")
    (folder / f"{second} (1).ipynb").write_text("{}")  # a near name
    sub = Submission("ada", "attention")
    files = submission_files(course, sub)
    assert set(files) == {f"{first}.ipynb", f"{second} (1).ipynb"}
    dest = tmp_path / "slot" / "submitted" / "ada" / "attention"
    place_submission(course, sub, files, dest, take_renamed=True)
    assert (dest / f"{second}.ipynb").read_text() == "{}"
    assert any("handed in as" in p for p in sub.problems)
    assert sorted(p.name for p in folder.iterdir()) == [f"{first}.ipynb", f"{second} (1).ipynb"], "untouched"


def test_a_students_bound_covers_their_cells_one_output_wait_and_a_margin():
    assert student_bound(900.0, 30.0) > 900.0 + 30.0
    assert student_bound(100.0, 1.0) == 100.0 + 30.0 + 50.0
