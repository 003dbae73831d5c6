"""The course on a Dask worker (attention_course/grading/course_copies.py), without a cluster: the
worker plugin unpacks a course bundle once per digest into a folder of its own, with the gradebook
it is given, unpacks again what went missing, refuses a gradebook outside the course folder and
removes its folders when the worker closes."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from attention_course.grading import workspace
from attention_course.grading.cluster import course_bundle, course_digest
from attention_course.grading.course_copies import PLUGIN, CourseCopies
from attention_course.model.manifest import load
from conftest import REPO


@pytest.fixture(autouse=True)
def _temporary_folders_in_tmp_path(tmp_path, monkeypatch):
    """The plugin's folders (workspace.new_base, in the system's temporary folder) under tmp_path."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _course(folder: Path, config: str = ""):
    """A small course: the repository's nbgrader_config.py (plus `config`), its manifest and one source file."""
    folder.mkdir(parents=True)
    (folder / "nbgrader_config.py").write_text((REPO / "nbgrader_config.py").read_text() + config)
    shutil.copy(REPO / "course.toml", folder / "course.toml")
    (folder / "source" / "attention").mkdir(parents=True)
    (folder / "source" / "attention" / "notes.txt").write_text("first")
    return load(folder)


def _shipped(course):
    bundle = course_bundle(course)
    return bundle, course_digest(bundle)


def test_the_course_is_unpacked_into_a_folder_of_the_workers_own_with_the_gradebook_it_is_given(tmp_path):
    original = _course(tmp_path / "course")
    bundle, digest = _shipped(original)
    plugin = CourseCopies()
    course = plugin.course(bundle, b"the gradebook as the run started", digest)
    assert plugin.name == PLUGIN
    assert course.root.name == "course" and course.root != original.root
    assert course.root.parent.parent == tmp_path / "system-tmp"
    assert course.root.parent.name.startswith(f"{workspace.PREFIX}{os.getpid()}-")
    assert (course.root / "source" / "attention" / "notes.txt").read_text() == "first"
    assert (course.root / "gradebook.db").read_bytes() == b"the gradebook as the run started"
    assert course.items == original.items and course.editions == original.editions
    assert plugin.roots == {digest: course.root}


def test_the_next_student_of_the_same_course_finds_it_unpacked(tmp_path):
    bundle, digest = _shipped(_course(tmp_path / "course"))
    plugin = CourseCopies()
    first = plugin.course(bundle, b"gradebook", digest)
    (first.root / "written-by-the-first-student").write_text("x")
    again = plugin.course(bundle, b"another gradebook", digest)
    assert again.root == first.root
    assert (again.root / "written-by-the-first-student").exists(), "unpacked once, not again"
    assert (again.root / "gradebook.db").read_bytes() == b"gradebook"
    assert len(list((tmp_path / "system-tmp").iterdir())) == 1


def test_a_changed_course_is_a_new_digest_and_gets_a_folder_of_its_own(tmp_path):
    course = _course(tmp_path / "course")
    old_bundle, old_digest = _shipped(course)
    (course.root / "source" / "attention" / "notes.txt").write_text("second")
    new_bundle, new_digest = _shipped(course)
    assert new_digest != old_digest
    plugin = CourseCopies()
    old = plugin.course(old_bundle, b"", old_digest)
    new = plugin.course(new_bundle, b"", new_digest)
    assert old.root != new.root and set(plugin.roots) == {old_digest, new_digest}
    assert (old.root / "source" / "attention" / "notes.txt").read_text() == "first"
    assert (new.root / "source" / "attention" / "notes.txt").read_text() == "second"


def test_a_copy_removed_meanwhile_is_unpacked_again(tmp_path):
    bundle, digest = _shipped(_course(tmp_path / "course"))
    plugin = CourseCopies()
    first = plugin.course(bundle, b"gradebook", digest)
    shutil.rmtree(first.root.parent)
    again = plugin.course(bundle, b"gradebook", digest)
    assert (again.root / "source" / "attention" / "notes.txt").read_text() == "first"
    assert (again.root / "gradebook.db").read_bytes() == b"gradebook"
    assert plugin.roots[digest] == again.root


def test_teardown_removes_every_copy_and_forgets_it(tmp_path):
    course = _course(tmp_path / "course")
    plugin = CourseCopies()
    roots = []
    for text in ("first", "second"):
        (course.root / "source" / "attention" / "notes.txt").write_text(text)
        bundle, digest = _shipped(course)
        roots.append(plugin.course(bundle, b"", digest).root)
    plugin.teardown()
    assert plugin.roots == {}
    assert not any(root.parent.exists() for root in roots)
    assert list((tmp_path / "system-tmp").iterdir()) == []
    plugin.teardown()  # a second close finds nothing to remove
    assert (course.root / "source" / "attention" / "notes.txt").read_text() == "second", "the course itself stays"


def test_a_gradebook_outside_the_course_folder_is_refused_and_not_written(tmp_path):
    elsewhere = tmp_path / "shared" / "gradebook.db"
    course = _course(tmp_path / "course", f'\nc.CourseDirectory.db_url = "sqlite:///{elsewhere}"\n')
    bundle, digest = _shipped(course)
    plugin = CourseCopies()
    with pytest.raises(RuntimeError, match="must be inside the course folder"):
        plugin.course(bundle, b"gradebook", digest)
    assert not elsewhere.exists() and plugin.roots == {}


def test_each_worker_thread_keeps_one_warm_nbgrader_process_and_teardown_ends_them():
    import threading

    plugin = CourseCopies()
    mine = plugin.zygote()
    assert plugin.zygote() is mine, "one per thread, kept between tasks"
    other = []
    thread = threading.Thread(target=lambda: other.append(plugin.zygote()))
    thread.start()
    thread.join()
    assert other[0] is not mine
    closed = []
    for zygote in (mine, other[0]):
        zygote.close = lambda z=zygote: closed.append(z)
    plugin.teardown()
    assert closed == [mine, other[0]] and plugin.zygotes == {}
