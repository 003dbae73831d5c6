"""A student's submission as `make grade` sees it: which folders are submissions (a link is
refused whole, never followed), their files copied as they are (near-named notebooks reported),
those files as data for a digest or a Dask worker, and what grading one student gave back."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from attention_course.model.manifest import Course

from . import as_data, near_names
from .coursedir import paths
from .intake import Unreadable, copy_file, link_below


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


def copy_submission(course: Course, sub: Submission, dest: Path, take_renamed: bool = False) -> None:
    """The files of a submission, as they are, into `dest` (the grading folder's
    submitted/<student>/<assignment>): regular files only, read without following a link and
    never waiting on a special file; nbgrader's exporter (attention_course.grading.intake) judges each notebook.
    The submission itself is never touched."""
    source = paths(course.root).of("submitted", sub.student, sub.assignment)
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.iterdir()):
        mode = path.lstat().st_mode
        if path.suffix == ".ipynb" and stat.S_ISLNK(mode):
            (dest / path.name).symlink_to(os.readlink(path))  # the exporter refuses it, unfollowed
        elif path.suffix == ".ipynb" and not stat.S_ISREG(mode):
            os.mkfifo(dest / path.name)  # a special file: the exporter refuses it, without waiting
        elif stat.S_ISREG(mode):
            try:
                copy_file(path, dest / path.name)  # an oversized notebook stays so, for the exporter to refuse
            except Unreadable:
                continue  # replaced or removed meanwhile
    names = [path.name for path in dest.iterdir()]
    for notebook in course.graded_notebooks():
        if (dest / f"{notebook}.ipynb").exists() or (source / f"{notebook}.ipynb").exists():
            continue
        found = near_names.near(notebook, names)
        if found is None:
            sub.problems.append(f"{notebook}.ipynb was not submitted")
        elif take_renamed and (dest / found).is_file() and not (dest / found).is_symlink():
            shutil.copyfile(dest / found, dest / f"{notebook}.ipynb")
            sub.problems.append(f"{notebook}.ipynb was handed in as {found}; graded under its release name")
        else:
            sub.problems.append(
                f"{notebook}.ipynb was not submitted; found {found}: rename it (or grade it with --take-renamed)"
            )


def submission_files(course: Course, sub: Submission) -> as_data.Folder:
    """A submission's files as data (what `copy_submission` would copy), for its digest and a Dask worker."""
    if sub.refused:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        copy_submission(course, Submission(sub.student, sub.assignment), Path(tmp) / "s")
        return as_data.pack(Path(tmp) / "s")
