"""What grading as root gives back to the course folder's owner (attention_course/grading/ownership.py):
exactly what grading writes, only what root owns, links as links and never followed, nothing when
the grader is not root. (tests/e2e/test_ownership.py has the basic case and a course folder of root's.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attention_course.grading import ownership
from conftest import in_child

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root can own files of another account")
GRADER = (4321, 4322)
SOMEONE = (5555, 5556)


def _owner(path: Path) -> tuple[int, int]:
    info = os.lstat(path)
    return info.st_uid, info.st_gid


def _tree(root: Path, paths: list[str]) -> list[Path]:
    """Files (and their folders) below `root`; a name ending in / is a folder."""
    made = []
    for rel in paths:
        path = root / rel
        if rel.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(rel)
        made.append(path)
    return made


@pytest.fixture
def course(tmp_path) -> Path:
    """A course folder of the grader's own (when running as root)."""
    root = tmp_path / "course"
    root.mkdir()
    if os.geteuid() == 0:
        os.chown(root, *GRADER)
    return root


WRITTEN_BY_GRADING = [
    "gradebook.db",
    "gradebook.db-journal",
    "grades.csv",
    "grades_by_cell.csv",
    "seeds.toml",
    "autograded/ada/attention/01.ipynb",
    "feedback/ada/attention/01.html",
    "submitted/ada/attention/01.ipynb",
    "build/grading/run.json",
]
NOT_GRADINGS = ["course.toml", "extensions.csv", "source/attention/01.ipynb", "build/site/index.html", "notes.db"]


@as_root
def test_everything_grading_writes_and_nothing_else_goes_to_the_folders_owner(course):
    _tree(course, WRITTEN_BY_GRADING + NOT_GRADINGS)
    changed = ownership.give_back(str(course))
    given = {p for rel in WRITTEN_BY_GRADING for p in [course / rel, *(course / rel).parents] if course in p.parents}
    given -= {course / "build"}  # only build/grading is grading's
    assert changed == len(given) == 19
    for path in given:
        assert _owner(path) == GRADER, path
    for rel in [*NOT_GRADINGS, "build", "source"]:
        assert _owner(course / rel) == (0, 0), rel
    assert ownership.give_back(course) == 0, "a second pass finds nothing of root's"


@as_root
def test_what_another_account_owns_is_left_and_not_counted(course):
    page, grades = _tree(course, ["feedback/ada/attention/01.html", "grades.csv"])
    os.lchown(page, *SOMEONE)
    assert ownership.give_back(course) == 4  # feedback, ada, attention, grades.csv
    assert _owner(page) == SOMEONE and _owner(grades) == GRADER


@as_root
def test_a_link_in_place_of_a_folder_is_given_itself_and_never_followed(course, tmp_path):
    outside = _tree(tmp_path / "elsewhere", ["ada/attention/01.ipynb"])[0]
    (course / "autograded").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    _tree(course, ["feedback/"])
    (course / "feedback" / "ada").symlink_to(tmp_path / "elsewhere" / "ada", target_is_directory=True)
    assert ownership.give_back(course) == 3  # the two links and feedback/
    assert _owner(course / "autograded") == _owner(course / "feedback" / "ada") == GRADER
    for path in [tmp_path / "elsewhere", outside.parent, outside]:
        assert _owner(path) == (0, 0), path


@as_root
def test_the_caller_can_name_what_is_given_back(course):
    _tree(course, ["grades.csv", "grades_by_cell.csv", "extra/report.txt"])
    assert ownership.give_back(course, written=("grades.csv", "extra", "absent")) == 3
    assert _owner(course / "grades.csv") == _owner(course / "extra" / "report.txt") == GRADER
    assert _owner(course / "grades_by_cell.csv") == (0, 0)


def test_a_course_folder_that_is_not_there_or_not_a_folder_gives_nothing(tmp_path):
    assert ownership.give_back(tmp_path / "absent") == 0
    (tmp_path / "file").write_text("")
    assert ownership.give_back(tmp_path / "file") == 0


def test_a_grader_who_is_not_root_changes_nothing_and_does_not_fail(course):
    files = _tree(course, ["grades.csv", "feedback/ada/attention/01.html"])
    before = {path: _owner(path) for path in files}

    def as_the_grader() -> dict:
        if os.geteuid() == 0:
            os.setgid(GRADER[1])
            os.setuid(GRADER[0])
        return {"changed": ownership.give_back(course)}

    assert in_child(as_the_grader) == {"changed": 0}
    assert {path: _owner(path) for path in files} == before
