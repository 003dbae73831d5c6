"""`make student-folder`: what students get, and nothing else.

    python -m attention_course.authoring.student_folder build/student

Writes a folder ready to push as the students' repository (or to serve through nbgitpuller or
Binder): the released notebooks of every edition, the helpers package they import
(`course_helpers/`, with the visible checks' cases only), `binder/` (the students' packages), a
student README in each language, a Makefile with `make lab`, the students' requirements (which
install `course_helpers/`) and the license. No source notebook, no solution, no
hidden test, no grading code, no expected result of a hidden case. `scan()` proves it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from attention_course.model.manifest import Course, load

STUDENT_MAKEFILE = """\
# The course, for students: `make lab` sets up .venv (first time only) and opens JupyterLab.
#   make lab EDITION=zh-CN   opens the Chinese edition, with JupyterLab in Chinese
VENV   ?= .venv
PY     := $(VENV)/bin/python
PYTHON ?= python3
EDITION ?= en
LAB_ARGS ?=
LAB_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: lab
$(VENV)/.installed: requirements.txt
\ttest -x $(PY) || $(PYTHON) -m venv $(VENV)
\t$(PY) -m pip install -r requirements.txt
\ttouch $@

lab: $(VENV)/.installed
\t$(PY) -m helpers.lab $(EDITION) $(LAB_ROOT) $(LAB_ARGS)
"""


def _readme(course: Course, language: str) -> str | None:
    """The students' README of a language: the course README's title and its students' section
    (between its student markers); None when the course has no README in that language."""
    name = "README.md" if language == "en" else f"README.{language}.md"
    if not (course.root / name).exists():
        return None
    text = (course.root / name).read_text(encoding="utf-8")
    match = re.search(r"<!-- students -->(.*?)<!-- /students -->", text, re.S)
    if not match:
        raise SystemExit(f"{name} has no <!-- students --> ... <!-- /students --> section")
    title = text.splitlines()[0].split(":")[0].split("：")[0]  # the title without its subtitle
    return f"{title}\n\n{match.group(1).strip()}\n"


def write(course: Course, dest: Path) -> Path:
    """Write the student folder to `dest` (replacing it)."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for edition in course.editions:
        shutil.copytree(
            course.release_dir(edition.name),
            dest / course.release / edition.assignment,
            ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "*.pyc"),
        )
    # The helpers package, which the students' requirements install (./course_helpers).
    shutil.copytree(
        course.root / "course_helpers",
        dest / "course_helpers",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build"),
    )
    shutil.copytree(course.root / "binder", dest / "binder", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(course.root / "binder" / "requirements.txt", dest / "requirements.txt")
    shutil.copy(course.root / "LICENSE", dest / "LICENSE")
    (dest / "Makefile").write_text(STUDENT_MAKEFILE, encoding="utf-8")
    for edition in course.editions:
        readme = _readme(course, edition.language)
        if readme is not None:  # an edition without a README of its own: its students read English
            name = "README.md" if edition.language == "en" else f"README.{edition.language}.md"
            (dest / name).write_text(readme, encoding="utf-8")
    return dest


def _is_case_file(path: Path) -> bool:
    """A case file (helpers.casefile) has an index; trained weights (helpers.training) have none."""
    import numpy as np

    with np.load(path, allow_pickle=False) as stored:
        return "index" in stored.files


def scan(course: Course, folder: Path) -> list[str]:
    """What in `folder` a student must not get: solution text, hidden tests, grading code, the
    manifest, or expected results of hidden cases. Empty when the folder is clean."""
    from attention_course.model.reference import solution_lines
    from helpers.casefile import load_cases

    problems = []
    solutions = {
        item.name: [line for line in solution_lines(course, item) if len(line) > 12] for item in course.exercises()
    }
    answers = {f'{i.variable} = "{i.answer}"' for i in course.questions()}
    answers |= {line for i in course.numeric_questions() for line in solution_lines(course, i)}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_dir():
            if path.name in ("attention_course", "source", "tests"):
                problems.append(f"{rel}/: not for students")
            continue
        if path.name in ("course.toml", "nbgrader_config.py", "gradebook.db") or rel == "pyproject.toml":
            problems.append(f"{rel}: not for students")  # (course_helpers/pyproject.toml is the helpers')
        if path.suffix == ".npz":
            if _is_case_file(path) and any(case.hidden for case in load_cases(path)):
                problems.append(f"{rel}: holds hidden cases")
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        markers = ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True") if path.suffix == ".ipynb" else ()
        for marker in (*markers, "import attention_course", "from attention_course"):
            if marker in text:
                problems.append(f"{rel}: contains {marker!r}")
        for name, lines in solutions.items():  # two thirds of a solution's lines is a solution
            found = [line for line in lines if line in text]
            if lines and len(found) * 3 >= 2 * len(lines):
                problems.append(f"{rel}: contains the solution of {name} ({found[0]!r}, ...)")
        problems += [f"{rel}: contains the answer {a!r}" for a in answers if a in text]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    course = load(Path.cwd())  # the course this command runs in (a copy of it, in the tests)
    folder = write(course, args.dest)
    problems = scan(course, folder)
    for problem in problems:
        print(f"  {problem}")
    print(f"Wrote {folder}: {'CLEAN' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
