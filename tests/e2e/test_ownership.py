"""Grading as root leaves the grader's files owned by the grader (attention_course/grading/ownership.py)."""

from __future__ import annotations

import os

import pytest

from attention_course.grading import ownership

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root can own files of another account")
GRADER = (4321, 4322)


def test_what_root_wrote_goes_to_the_course_folders_owner(tmp_path):
    course = tmp_path / "course"
    (course / "feedback" / "alice" / "attention").mkdir(parents=True)
    (course / "feedback" / "alice" / "attention" / "01.html").write_text("x")
    (course / "gradebook.db").write_text("")
    (course / "source").mkdir()  # not grading's to touch
    (course / "feedback" / "link").symlink_to("/etc/passwd")
    os.chown(course, *GRADER)
    changed = ownership.give_back(course)
    assert changed == 6  # gradebook, feedback, alice, attention, the page, the link (itself)
    for path in ["gradebook.db", "feedback", "feedback/alice/attention/01.html"]:
        assert (os.stat(course / path).st_uid, os.stat(course / path).st_gid) == GRADER, path
    assert os.lstat(course / "feedback" / "link").st_uid == GRADER[0]
    assert os.stat("/etc/passwd").st_uid == 0  # the link was not followed
    assert os.stat(course / "source").st_uid == 0


def test_a_course_folder_of_roots_own_is_left_alone(tmp_path):
    (tmp_path / "grades.csv").write_text("")
    assert ownership.give_back(tmp_path) == 0
    assert os.stat(tmp_path / "grades.csv").st_uid == 0
