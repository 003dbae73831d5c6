"""The real nbgrader round trip: release, submit, autograde, read the gradebook.

Two students submit in a private copy of the course: ``blank`` hands in the release unchanged and
must score 0 on every autograded test; ``solutions`` hands in the source notebooks (with the
solutions; nbgrader restores the test cells itself) and must get full marks with nothing left for
manual grading. Autograde runs once for the module. ``nbgrader validate`` is not used: it exits 0
even when a notebook fails.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from conftest import VENV_BIN, copy_course, describe, run

ASSIGNMENT = "attention"
STUDENTS = ("blank", "solutions")

# Which executable the ``python3`` kernel really runs, as jupyter_client resolves it.
KERNEL_PROBE = r"""
import sys
from jupyter_client.kernelspec import KernelSpecManager
argv = KernelSpecManager().get_kernel_spec("python3").argv
exe = argv[0]
if exe in {"python", "python%i" % sys.version_info[0], "python%i.%i" % sys.version_info[:2]}:
    exe = sys.executable  # jupyter_client launches a bare "python" with its own interpreter
print(exe)
"""


def kernel_python(env: dict[str, str] | None, cwd: Path) -> str:
    proc = run([VENV_BIN / "python", "-c", KERNEL_PROBE], cwd=cwd, env=env, check=True)
    return proc.stdout.strip().splitlines()[-1]


def in_venv(exe: str) -> bool:
    return Path(exe).parent == VENV_BIN or Path(exe).is_relative_to(sys.prefix)


def kernel_env(tmp: Path) -> dict[str, str]:
    """Environment in which the kernel ``python3`` is the venv's python.

    Normally it already is (the venv ships the ipykernel spec). If another ``python3`` spec comes
    first on this machine, a spec pointing at the venv is installed under ``tmp`` and put first
    on JUPYTER_PATH.
    """
    env: dict[str, str] = {}
    if in_venv(kernel_python(env, tmp)):
        return env
    prefix = tmp / "kernel"
    run([VENV_BIN / "python", "-m", "ipykernel", "install", "--prefix", prefix, "--name",
         "python3"], cwd=tmp, check=True)
    env["JUPYTER_PATH"] = str(prefix / "share" / "jupyter")
    exe = kernel_python(env, tmp)
    assert in_venv(exe), f"kernel python3 runs {exe}, not the venv's python ({sys.prefix})"
    return env


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Autograde both students once; yield (gradebook url, course copy)."""
    work = tmp_path_factory.mktemp("autograde")
    course = copy_course(work / "course")
    env = kernel_env(work)

    def nbgrader(*args, timeout=600):
        return run(["nbgrader", *args], cwd=course, env=env, timeout=timeout, check=True)

    nbgrader("generate_assignment", ASSIGNMENT, "--force")
    release = course / "notebooks" / ASSIGNMENT
    source = course / "source" / ASSIGNMENT
    assert sorted(release.glob("*.ipynb")), "the release has no notebooks"

    # One `nbgrader db student import` for all students (each nbgrader command costs seconds).
    roster = work / "students.csv"
    roster.write_text("id,first_name,last_name,email\n"
                      + "".join(f"{student},{student},test,\n" for student in STUDENTS))
    nbgrader("db", "student", "import", roster)
    for student in STUDENTS:
        submission = course / "submitted" / student / ASSIGNMENT
        # A student hands in the whole folder they were given ...
        shutil.copytree(release, submission)
        if student == "solutions":
            # ... with their answers: here the instructor's solutions.
            for nb in source.glob("*.ipynb"):
                shutil.copy2(nb, submission / nb.name)

    proc = nbgrader("autograde", ASSIGNMENT, "--force", timeout=1500)
    for student in STUDENTS:
        for nb in release.glob("*.ipynb"):
            graded_nb = course / "autograded" / student / ASSIGNMENT / nb.name
            assert graded_nb.is_file(), f"{graded_nb} was not written\n{describe(proc)}"
    yield "sqlite:///" + str(course / "gradebook.db"), course


def grades_of(url: str, student: str):
    """Grades of one student's submission, read from the gradebook.

    Returns ([(notebook, cell name, is autograded test, score, max_score, needs_manual_grade)],
    whether the submission as a whole needs manual grading). An autograded test is a grade cell
    that is not also an answer (solution) cell.
    """
    from nbgrader.api import Gradebook

    rows = []
    with Gradebook(url) as gb:
        submission = gb.find_submission(ASSIGNMENT, student)
        needs_manual = bool(submission.needs_manual_grade)
        for nb in submission.notebooks:
            answers = {cell.name for cell in nb.notebook.solution_cells}
            for grade in nb.grades:
                rows.append((nb.name, grade.name, grade.name not in answers, grade.score,
                             grade.max_score, grade.needs_manual_grade))
    return rows, needs_manual


def test_blank_release_scores_zero(graded):
    url, _ = graded
    rows, _ = grades_of(url, "blank")
    tests = [row for row in rows if row[2]]
    assert any(row[4] > 0 for row in tests), "the assignment has no autograded test with points"
    scored = [f"{nb}:{name} scored {score}/{max_score}"
              for nb, name, _, score, max_score, _ in tests if score != 0]
    assert not scored, "the blank release earns marks:\n" + "\n".join(scored)


def test_solutions_score_full_marks(graded):
    url, _ = graded
    rows, needs_manual = grades_of(url, "solutions")
    assert rows, "no graded cells"
    manual = [f"{nb}:{name}" for nb, name, *_, manual_cell in rows if manual_cell]
    assert not manual and not needs_manual, (
        "left for manual grading:\n" + "\n".join(manual or ["(the submission)"]))
    lost = [f"{nb}:{name} scored {score}/{max_score}"
            for nb, name, _, score, max_score, _ in rows if score != max_score]
    assert not lost, "the solutions lose marks:\n" + "\n".join(lost)
