"""A student's submission as `make grade` sees it: which folders are submissions (a link is
refused whole, never followed), their files read once as data (for the digest, and for the one
copy a grading folder gets, here or on a Dask worker; near-named notebooks reported), and what
grading one student gave back."""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from attention_course.model.manifest import Course

from . import as_data, near_names
from .coursedir import paths
from .intake import Unreadable, link_below, read_prefix


@dataclass
class Submission:
    """One student's submission of one assignment, and what was wrong with its files."""

    student: str
    assignment: str
    problems: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)  # why it could not be graded (fully)
    graded: bool = False
    refused: str = ""  # the whole submission is refused (a link, not a folder): graded 0, why
    kept: dict | None = None  # graded by an earlier run with the same files, course and settings (its journal line)


@dataclass
class Graded:
    """What grading one student gave, as plain data (a Dask worker sends it back; one writer merges it)."""

    sub: Submission
    left: list[str]  # the submitted graded notebooks nbgrader did not finish: graded 0
    rows: dict | None = None  # the student's gradebook rows (gradebook.student_rows)
    # from a Dask worker (`shipped`), the graded notebooks and the feedback as data; graded on this
    # machine, nbgrader wrote them into the course's folders itself
    shipped: bool = False
    autograded: as_data.Folder = field(default_factory=dict)
    feedback: as_data.Folder = field(default_factory=dict)


def find_submissions(course: Course, only: list[str]) -> list[Submission]:
    """Every submission folder of an edition's assignment; a student folder or submission that is
    a link (or not a folder) is refused as a whole, never followed."""
    found = []
    top = paths(course.root).top("submitted")
    for edition in course.editions:
        for folder in sorted(top.glob(f"*/{edition.assignment}")):
            student = folder.parent.name
            if only and student not in only:
                continue
            sub = Submission(student, edition.assignment)
            link = link_below(folder / "x.ipynb", top)
            if link is not None:
                sub.refused = (
                    f"{link.relative_to(top)} is a link or not a folder; links are never followed, "
                    "so the submission was graded 0"
                )
                sub.problems.append(sub.refused)
            found.append(sub)
    return found


def submission_files(course: Course, sub: Submission) -> as_data.Folder:
    """A submission's files as data, read once (its digest, and what its grading folder gets):
    regular files, read without following a link (an oversized notebook stays oversized, for the
    exporter to refuse); a notebook that is a link stays a link, never followed, and one that is
    a special file is recorded as one, never opened (nbgrader's exporter refuses both). The
    submission itself is never touched."""
    if sub.refused:
        return {}
    source = paths(course.root).of("submitted", sub.student, sub.assignment)
    files: as_data.Folder = {}
    for path in sorted(source.iterdir()):
        mode = path.lstat().st_mode
        if path.suffix == ".ipynb" and stat.S_ISLNK(mode):
            files[path.name] = ("link", os.readlink(path))
        elif path.suffix == ".ipynb" and not stat.S_ISREG(mode):
            files[path.name] = ("special", "")
        elif stat.S_ISREG(mode):
            try:
                files[path.name] = ("file", read_prefix(path))
            except Unreadable:
                continue  # replaced or removed meanwhile
    return files


def place_submission(
    course: Course, sub: Submission, files: as_data.Folder, dest: Path, take_renamed: bool = False
) -> None:
    """A submission's files (`submission_files`) into `dest`, the grading folder's
    submitted/<student>/<assignment>, and what is missing reported: a graded notebook handed in
    under a near name is named (or, with `take_renamed`, graded under its release name)."""
    shutil.rmtree(dest, ignore_errors=True)
    as_data.unpack(files, dest)
    for notebook in course.graded_notebooks():
        if f"{notebook}.ipynb" in files:
            continue
        found = near_names.near(notebook, list(files))
        if found is None:
            sub.problems.append(f"{notebook}.ipynb was not submitted")
        elif take_renamed and files[found][0] == "file":
            shutil.copyfile(dest / found, dest / f"{notebook}.ipynb")
            sub.problems.append(f"{notebook}.ipynb was handed in as {found}; graded under its release name")
        else:
            sub.problems.append(
                f"{notebook}.ipynb was not submitted; found {found}: rename it (or grade it with --take-renamed)"
            )
