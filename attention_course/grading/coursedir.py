"""Where a course keeps its submissions, graded copies, feedback and gradebook: nbgrader's own
`CourseDirectory`, as the course's nbgrader_config.py sets it (never spelled out elsewhere)."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from attention_course.model.manifest import Course, load

CONFIG_FILE = "nbgrader_config.py"


class CoursePaths:
    """The folders of one course root (the course, or one of `make grade`'s private slots)."""

    def __init__(self, root: Path):
        config = Config()
        if (Path(root) / CONFIG_FILE).exists():
            config.merge(PyFileConfigLoader(CONFIG_FILE, path=str(root)).load_config())
        config.CourseDirectory.root = str(root)
        self.root = Path(root)
        self.dirs = CourseDirectory(config=config)

    def top(self, step: str) -> Path:
        """The folder of a step: "submitted", "autograded" or "feedback" (as configured)."""
        return self.root / getattr(self.dirs, f"{step}_directory")

    def of(self, step: str, student: str, assignment: str) -> Path:
        """A student's folder of an assignment in a step (nbgrader's own layout)."""
        return Path(self.dirs.format_path(getattr(self.dirs, f"{step}_directory"), student, assignment))

    @property
    def gradebook(self) -> Path:
        """The gradebook's file (the course's db_url is a sqlite URL)."""
        url = self.dirs.db_url or f"sqlite:///{self.root / 'gradebook.db'}"
        if not url.startswith("sqlite:///"):
            raise ValueError(f"the course's gradebook is not a sqlite file ({url}); make grade needs one")
        return Path(url.removeprefix("sqlite:///"))


def course_of(dirs: CourseDirectory) -> Course:
    """The course an nbgrader process works on: a grading course folder (one of `make grade`'s
    slots) links `source` to the course's, so the manifest sits beside the folder it resolves to."""
    return load((Path(dirs.root) / dirs.source_directory).resolve().parent)


@functools.cache
def paths(root: Path) -> CoursePaths:
    return CoursePaths(Path(root))


def report_paths(description: str, default_out: str, argv: list[str] | None = None) -> tuple[Path, Path]:
    """The command line of a class report (`--course`, `--out`): the course root and the folder to write."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--course", default=".", help="the course root (default: here)")
    parser.add_argument("--out", default=None, help=f"where to write (default: <course>/{default_out})")
    args = parser.parse_args(argv)
    root = Path(args.course).resolve()
    return root, (Path(args.out) if args.out else root / default_out)
