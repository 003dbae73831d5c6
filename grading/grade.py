"""Grade a whole class: `make grade` (or `python -m grading.grade --jobs N`).

For every student folder `submitted/<student>/attention/`:
1. each notebook is checked and tidied in a private copy (invalid JSON is reported, duplicated
   grade cells lose their duplicate metadata), never touching the submission itself;
2. the real `nbgrader autograde` runs on those copies, in one private course folder per job
   (`--jobs N` grades N groups of students at a time); a student nbgrader cannot grade is then
   autograded notebook by notebook, so one broken notebook costs only itself and nobody else;
3. the trusted verdict (`grading.trusted`) decides every test cell's score, in separate
   limited processes, and is written into that student's gradebook and at the top of each
   autograded notebook;
4. `nbgrader generate_feedback` writes the feedback HTML (hidden tests cleared).
The results are gathered into `autograded/`, `feedback/` and `grades.csv` at the course root.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import REPO
from .limits import Limits, watch
from .nbgrader_cli import fast_start

fast_start()  # before anything imports nbgrader (see grading/nbgrader_cli.py)

from .trusted import Verdict, grade_submission, grading_cases, graded_notebooks, test_cells  # noqa: E402

ASSIGNMENT = "attention"
NBGRADER_TIMEOUT = int(os.environ.get("GRADING_NBGRADER_TIMEOUT", 900))  # per student
NBGRADER_OWN_MEMORY = 512 * 1024 ** 2  # nbgrader's own process, on top of the kernel's cap


@dataclass
class NotebookResult:
    """One student's result on one notebook."""
    student: str
    notebook: str
    score: float
    max_score: float
    problems: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)


def _nbgrader(args: list[str], cwd: Path, limits: Limits | None = None,
              timeout: float = NBGRADER_TIMEOUT) -> subprocess.CompletedProcess:
    """Run an nbgrader command; a kernel over the memory cap is killed, the rest goes on."""
    cli = Path(__file__).with_name("nbgrader_cli.py")  # nbgrader's own main, started faster
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    memory = (limits or Limits()).memory
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, str(cli), *args], cwd=cwd, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        # nbgrader itself stays small: the process that grows is the student's kernel.
        stopped = watch(proc, memory + NBGRADER_OWN_MEMORY, timeout, kill_whole_tree=False)
        proc.wait()
        out.seek(0)
        err.seek(0)
        stderr = err.read() + (f"\nERROR: the kernel: {stopped}" if stopped else "")
        return subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), stderr)


def _last_error(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in (proc.stderr + proc.stdout).splitlines() if "ERROR" in line or "Error" in line]
    return (lines[-1] if lines else (proc.stderr.strip().splitlines() or ["no output"])[-1])[:300]


def _course_root(path: Path, course: Path) -> None:
    """A private nbgrader course folder sharing the course's source."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy(course / "nbgrader_config.py", path / "nbgrader_config.py")
    if not (path / "source").exists():
        (path / "source").symlink_to(course / "source", target_is_directory=True)


def prepare_template(course: Path, work: Path) -> Path:
    """Generate the assignment once, for its gradebook (the grade cells and their points)."""
    root = work / "template"
    shutil.rmtree(root, ignore_errors=True)
    _course_root(root, course)
    proc = _nbgrader(["generate_assignment", ASSIGNMENT, "--force"], root)
    if proc.returncode != 0 or not (root / "gradebook.db").exists():
        raise SystemExit(f"nbgrader generate_assignment failed:\n{proc.stderr[-3000:]}")
    return root / "gradebook.db"


def tidy_notebook(path: Path, dest: Path) -> list[str]:
    """Copy a submitted notebook, fixing what would stop nbgrader; returns what was wrong with it."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(notebook.get("cells"), list):
            raise ValueError("it has no list of cells")
    except (ValueError, UnicodeDecodeError) as exc:
        return [f"{path.name} is not a valid notebook ({str(exc)[:120]}); it was graded 0"]
    notes, seen = [], set()
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader")
        if not isinstance(meta, dict) or "grade_id" not in meta:
            continue
        if meta["grade_id"] in seen:  # a duplicated grade cell would abort nbgrader for everyone
            del cell["metadata"]["nbgrader"]
            notes.append(f"{path.name}: a copy of cell {meta['grade_id']!r} was ignored")
        seen.add(meta["grade_id"])
    notebook.setdefault("metadata", {})["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                                         "language": "python"}
    notebook.setdefault("nbformat", 4)
    notebook.setdefault("nbformat_minor", 5)
    dest.write_text(json.dumps(notebook), encoding="utf-8")
    return notes


def _annotate(autograded: Path, verdicts: list[Verdict], problems: list[str]) -> None:
    """Put the trusted result at the top of an autograded notebook, for the feedback."""
    notebook = json.loads(autograded.read_text(encoding="utf-8"))
    lines = ["## Grading summary", ""]
    for v in verdicts:
        mark = "✓" if v.score == v.cell.points else "✗"
        lines.append(f"- {mark} **{v.cell.grade_id}**: {v.score:g} / {v.cell.points:g}"
                     + (f". {_one_line(v.reason)}" if v.reason else ""))
    lines += [f"- note: {p}" for p in problems]
    cell = {"cell_type": "markdown", "metadata": {}, "source": "\n".join(lines)}
    if notebook.get("nbformat_minor", 0) >= 5:
        cell["id"] = "grading-summary"
    notebook["cells"].insert(0, cell)
    autograded.write_text(json.dumps(notebook, indent=1), encoding="utf-8")


def _one_line(text: str) -> str:
    return " ".join(text.split())[:600]


def _write_gradebook(db: Path, student: str, results: list[NotebookResult]) -> None:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{db}") as gradebook:
        for result in results:
            for v in result.verdicts:
                try:
                    grade = gradebook.find_grade(v.cell.grade_id, result.notebook, ASSIGNMENT, student)
                except MissingEntry:
                    continue
                grade.auto_score = v.score
                grade.manual_score = None
                # nbgrader leaves a cell it could not execute (a dead kernel) flagged for manual
                # grading; the trusted verdict has decided it.
                grade.needs_manual_grade = False
            gradebook.db.commit()


def _fallback_feedback(dest: Path, result: NotebookResult) -> None:
    """Feedback for a notebook nbgrader could not grade: the reasons, as a small HTML page."""
    import html
    items = "".join(f"<li>{html.escape(p)}</li>" for p in result.problems)
    items += "".join(f"<li>{html.escape(v.cell.grade_id)}: {v.score:g} / {v.cell.points:g}. "
                     f"{html.escape(_one_line(v.reason))}</li>" for v in result.verdicts)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / f"{result.notebook}.html").write_text(
        f"<html><body><h1>{html.escape(result.notebook)}</h1><p>Score: {result.score:g} / "
        f"{result.max_score:g}</p><ul>{items}</ul></body></html>", encoding="utf-8")


def grade_group(students: list[str], group: str, course: Path, work: Path, template_db: Path, seed: int,
                limits: Limits, cell_timeout: int = 120) -> list[NotebookResult]:
    """Grade some students in one private course folder; never raises for their files.

    One `nbgrader autograde` run covers the group (nbgrader goes on past a student it cannot
    grade, and drops that student's output); such a student is then autograded notebook by
    notebook, so that one broken notebook costs only itself.
    """
    root = work / "groups" / group
    shutil.rmtree(root, ignore_errors=True)
    _course_root(root, course)
    shutil.copy(template_db, root / "gradebook.db")
    results: dict[tuple[str, str], NotebookResult] = {}
    for student in students:
        sub = root / "submitted" / student / ASSIGNMENT
        sub.mkdir(parents=True)
        submitted = course / "submitted" / student / ASSIGNMENT
        for notebook in graded_notebooks():  # an ungraded notebook (00_start_here) is not run
            cells = test_cells(notebook)
            result = results[(student, notebook)] = NotebookResult(student, notebook, 0.0, sum(c.points for c in cells))
            path = submitted / f"{notebook}.ipynb"
            if path.exists():
                result.problems += tidy_notebook(path, sub / path.name)
            else:
                result.problems.append(f"{notebook}.ipynb was not submitted")

    def tidied(student: str, notebook: str) -> Path:
        return root / "submitted" / student / ASSIGNMENT / f"{notebook}.ipynb"

    def autograded(student: str) -> Path:
        return root / "autograded" / student / ASSIGNMENT

    # nbgrader executes the notebooks while the trusted verdicts are computed alongside.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        trusted = {student: pool.submit(grade_submission, {nb: tidied(s, nb) for (s, nb) in results
                                                           if s == student and tidied(s, nb).exists()}, seed, limits)
                   for student in students}
        autograde = ["autograde", ASSIGNMENT, f"--Execute.timeout={cell_timeout}"]
        _nbgrader([*autograde, "--force"], root, limits, timeout=NBGRADER_TIMEOUT * len(students))
        for student in students:
            if autograded(student).exists():
                continue
            for (s, nb), result in results.items():  # one notebook at a time for this student
                if s != student or not tidied(s, nb).exists():
                    continue
                one = _nbgrader([*autograde, "--student", s, "--notebook", nb], root, limits)
                if one.returncode != 0 or not (autograded(s) / f"{nb}.ipynb").exists():
                    result.problems.append(f"nbgrader could not run {nb}.ipynb ({_last_error(one)})")
        for student, future in trusted.items():
            for nb, verdicts in future.result().items():
                results[(student, nb)].verdicts = verdicts

    for (student, nb), result in results.items():
        if not result.verdicts:
            submitted = course / "submitted" / student / ASSIGNMENT / f"{nb}.ipynb"
            reason = ("not graded" if tidied(student, nb).exists() else
                      "the notebook is not valid (see problems)" if submitted.exists() else "not submitted")
            result.verdicts = [Verdict(c, 0.0, reason) for c in test_cells(nb)]
        result.score = sum(v.score for v in result.verdicts)
    for student in students:
        _write_gradebook(root / "gradebook.db", student, [r for (s, _), r in results.items() if s == student])
    for (student, nb), result in results.items():
        if (autograded(student) / f"{nb}.ipynb").exists():
            _annotate(autograded(student) / f"{nb}.ipynb", result.verdicts, result.problems)
    if any(autograded(s).exists() for s in students):
        feedback = _nbgrader(["generate_feedback", ASSIGNMENT, "--force"], root)
        if feedback.returncode != 0:
            for result in results.values():
                result.problems.append(f"feedback could not be generated ({_last_error(feedback)})")
    for (student, nb), result in results.items():
        feedback_dir = root / "feedback" / student / ASSIGNMENT
        if test_cells(nb) and tidied(student, nb).exists() and not (feedback_dir / f"{nb}.html").exists():
            _fallback_feedback(feedback_dir, result)

    for student in students:
        for name in ("autograded", "feedback"):
            source, dest = root / name / student, course / name / student
            if source.exists():
                shutil.rmtree(dest, ignore_errors=True)
                shutil.copytree(source, dest)
    return [r for r in results.values() if r.max_score > 0]


def write_grades(rows: list[NotebookResult], path: Path) -> None:
    """grades.csv: one row per student and notebook, then one total row per student."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "notebook", "score", "max_score", "problems"])
        for student in sorted({r.student for r in rows}):
            own = [r for r in rows if r.student == student]
            for r in sorted(own, key=lambda r: r.notebook):
                writer.writerow([student, r.notebook, f"{r.score:g}", f"{r.max_score:g}", "; ".join(r.problems)])
            writer.writerow([student, "TOTAL", f"{sum(r.score for r in own):g}",
                             f"{sum(r.max_score for r in own):g}", ""])


def write_cells(rows: list[NotebookResult], path: Path) -> None:
    """grades_by_cell.csv: the trusted score of every test cell, with the reason when not full."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "notebook", "cell", "score", "max_score", "reason"])
        for r in sorted(rows, key=lambda r: (r.student, r.notebook)):
            for v in r.verdicts:
                writer.writerow([r.student, r.notebook, v.cell.grade_id, f"{v.score:g}", f"{v.cell.points:g}",
                                 _one_line(v.reason)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--course", type=Path, default=REPO, help="the course root (default: this repository)")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", 1) or 1),
                        help="students graded at a time")
    parser.add_argument("--seed", type=int, default=None, help="seed of the test cases (default: random)")
    parser.add_argument("--memory-gib", type=float, default=Limits().memory / 1024 ** 3,
                        help="memory cap of student code (kernels and trusted runs)")
    parser.add_argument("--seconds", type=float, default=Limits().seconds,
                        help="time limit of the trusted run of one notebook")
    parser.add_argument("--cell-timeout", type=int, default=120, help="nbgrader's time limit per cell")
    args = parser.parse_args(argv)
    course = args.course.resolve()
    students = sorted(p.name for p in (course / "submitted").glob("*") if (p / ASSIGNMENT).is_dir())
    if not students:
        print(f"No submissions found in {course / 'submitted'}/<student>/{ASSIGNMENT}/.")
        return 1
    seed = args.seed if args.seed is not None else secrets.randbelow(2 ** 31)
    limits = Limits(memory=int(args.memory_gib * 1024 ** 3), seconds=args.seconds)
    work = course / "build" / "grading"
    start = time.monotonic()
    grading_cases(seed)  # computed once, before the workers start
    template = prepare_template(course, work)
    rows: list[NotebookResult] = []
    jobs = max(1, min(args.jobs, len(students)))
    groups = [students[i::jobs] for i in range(jobs)]  # one nbgrader course folder per job
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(grade_group, group, f"group{i}", course, work, template, seed, limits,
                               args.cell_timeout): group for i, group in enumerate(groups)}
        for future in concurrent.futures.as_completed(futures):
            try:
                rows += future.result()
            except Exception as exc:  # noqa: BLE001 - a grading bug must not lose the other groups
                print(f"  grading {', '.join(futures[future])} failed: {exc!r}")
    for student in students:
        own = [r for r in rows if r.student == student]
        print(f"  {student}: {sum(r.score for r in own):g} / {sum(r.max_score for r in own):g}")
        for r in own:
            for problem in r.problems:
                print(f"    {problem}")
    write_grades(rows, course / "grades.csv")
    write_cells(rows, course / "grades_by_cell.csv")
    print(f"Graded {len(students)} student(s) in {time.monotonic() - start:.0f} s with seed {seed}; "
          f"wrote grades.csv, grades_by_cell.csv, autograded/ and feedback/.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
