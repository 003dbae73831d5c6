"""Course paths come from nbgrader's CourseDirectory, as nbgrader_config.py sets them."""

from __future__ import annotations

from attention_course.grading.coursedir import CoursePaths
from conftest import REPO


def test_the_course_folders_are_nbgraders():
    where = CoursePaths(REPO)
    assert where.top("submitted") == REPO / "submitted" and where.gradebook == REPO / "gradebook.db"
    assert where.of("feedback", "alice", "attention") == REPO / "feedback" / "alice" / "attention"


def test_a_course_that_renames_its_folders_is_followed(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text(
        "import os\nc = get_config()\n"
        "c.CourseDirectory.submitted_directory = 'handins'\n"
        "c.CourseDirectory.db_url = 'sqlite:///' + os.path.join(os.path.dirname(__file__), 'marks.db')\n"
    )
    where = CoursePaths(tmp_path)
    assert where.of("submitted", "bob", "attention") == tmp_path / "handins" / "bob" / "attention"
    assert where.gradebook == tmp_path / "marks.db"
