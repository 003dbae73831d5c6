"""Grade a class: `make grade` (or `python -m grading.grade`).

For every submission `submitted/<student>/<assignment>/` of each edition's assignment:
1. the submission is checked and tidied in a private copy (an invalid notebook is reported and
   left out, a duplicated grade cell loses its duplicate metadata; `timestamp.txt` and the other
   files of `nbgrader collect` come along), never touching the submission itself;
2. the real `nbgrader autograde` grades it, with the course's plugins (`grading.nbgrader_plugins`:
   confined kernels and the trusted verdict), in one private course folder per job (`--jobs N`
   grades N groups of students at a time);
3. one writer merges every graded student into the course's `gradebook.db` (`grading.gradebook`),
   copies `autograded/<student>/`, and `nbgrader generate_feedback` writes the feedback;
4. `grades.csv` and `grades_by_cell.csv` are written from the course gradebook, with the seed.
Settings come from the `Grading` section of nbgrader_config.py (`grading.settings`), overridden
by the command line. A student who could not be graded (confinement, a grader fault) is named and
makes the exit status non-zero; everyone else is still graded and written.
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

from helpers.cells import cell_source, grade_id, read_notebook

from . import confine
from . import gradebook as records
from . import settings as grading_settings
from .feedback_pages import localize
from .limits import watch
from .manifest import Course, load
from .nbgrader_cli import fast_start
from .settings import FAULTS
from .workspace import choose_layers

NBGRADER_OWN_MEMORY = 2**30
STUDENT_SECONDS = 900


@dataclass
class Submission:
    """One student's submission of one assignment, and what was wrong with its files."""

    student: str
    assignment: str
    problems: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)  # why it could not be graded
    graded: bool = False


def nbgrader(
    args: list[str], cwd: Path, course: Path, memory: int | None = None, timeout: float = STUDENT_SECONDS
) -> subprocess.CompletedProcess:
    """Run nbgrader (started by grading/nbgrader_cli.py) in a course folder; a process of its tree
    over the memory cap is killed (the student's kernel), the rest goes on. Its log is kept in
    `build/grading/nbgrader-<command>.log` of that folder."""
    cli = Path(__file__).with_name("nbgrader_cli.py")
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=str(course),
        ATTENTION_GRADER_PROCESS="1",
    )
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, str(cli), *args],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        stopped = watch(proc, memory, timeout, kill_whole_tree=False) if memory else ""
        proc.wait()
        out.seek(0)
        err.seek(0)
        stderr = err.read() + (f"\nERROR: {stopped}" if stopped else "")
        stdout = out.read()
        log = cwd / "build" / "grading" / f"nbgrader-{args[0]}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"$ nbgrader {' '.join(args)}\n{stdout}{stderr}\n")
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def tidy_notebook(path: Path, dest: Path, release: Path | None = None) -> list[str]:
    """Copy a submitted notebook, fixing what would stop nbgrader; returns what was wrong with it.

    A duplicated grade cell loses its duplicate's metadata; an answer cell the student deleted
    comes back from the `release` notebook as its empty stub (nbgrader fails on a test cell
    whose answer cell is gone), so it is graded as not answered."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(notebook.get("cells"), list):
            raise ValueError("it has no list of cells")
    except (ValueError, UnicodeDecodeError) as exc:
        return [f"{path.name} is not a valid notebook ({str(exc)[:120]}); it was graded 0"]
    notes, seen = [], set()
    for cell in notebook["cells"]:
        gid = grade_id(cell) if isinstance(cell, dict) else None
        if gid is None:
            continue
        if gid in seen:  # a duplicated grade cell would abort nbgrader for everyone
            del cell["metadata"]["nbgrader"]
            notes.append(f"{path.name}: a copy of cell {gid!r} was ignored")
        seen.add(gid)
        cell["source"] = cell_source(cell)
    if release is not None and release.exists():
        notes += _restore_answer_cells(notebook, read_notebook(release), path.name)
    notebook.setdefault("metadata", {})["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.setdefault("nbformat", 4)
    notebook.setdefault("nbformat_minor", 5)
    dest.write_text(json.dumps(notebook), encoding="utf-8")
    return notes


def _restore_answer_cells(notebook: dict, release: dict, name: str) -> list[str]:
    from helpers.cells import is_answer_cell

    present = {grade_id(c) for c in notebook["cells"] if isinstance(c, dict)}
    notes = []
    for index, cell in enumerate(release["cells"]):
        gid = grade_id(cell)
        if gid and is_answer_cell(cell) and gid not in present:
            after = next((grade_id(c) for c in reversed(release["cells"][:index]) if grade_id(c) in present), None)
            at = next((i + 1 for i, c in enumerate(notebook["cells"]) if after and grade_id(c) == after), 0)
            notebook["cells"].insert(at, json.loads(json.dumps(cell)))
            present.add(gid)
            notes.append(f"{name}: answer cell {gid!r} was missing; it was graded as not answered")
    return notes


def tidy_submission(course: Course, sub: Submission, dest: Path) -> None:
    """The files of a submission, tidied, in `dest` (a group folder's submitted/<student>/<assignment>)."""
    source = course.root / "submitted" / sub.student / sub.assignment
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.iterdir()):
        if path.suffix == ".ipynb":
            sub.problems += tidy_notebook(
                path, dest / path.name, course.root / course.release / sub.assignment / path.name
            )
        elif path.is_file():  # timestamp.txt, submission_secret.txt, ... from nbgrader collect
            shutil.copy2(path, dest / path.name)
    for notebook in course.graded_notebooks():
        if not (source / f"{notebook}.ipynb").exists():
            sub.problems.append(f"{notebook}.ipynb was not submitted")


def ensure_assignment(course: Course, assignment: str) -> None:
    """The course gradebook knows the assignment, its notebooks and cells (as `make release` leaves
    it); if not, nbgrader generates the assignment into a throw-away release folder."""
    from nbgrader.api import Gradebook, MissingEntry

    db = course.root / "gradebook.db"
    if db.exists():
        with Gradebook(f"sqlite:///{db}") as gb:
            try:
                if gb.find_assignment(assignment).notebooks:
                    return
            except MissingEntry:
                pass
    with tempfile.TemporaryDirectory() as tmp:
        proc = nbgrader(
            ["generate_assignment", assignment, "--force", f"--CourseDirectory.release_directory={tmp}"],
            course.root,
            course.root,
        )
        if proc.returncode != 0:
            raise SystemExit(f"nbgrader generate_assignment {assignment} failed:\n{proc.stderr[-3000:]}")


def grade_group(course: Course, subs: list[Submission], folder: Path, overrides: dict, memory: int) -> None:
    """Autograde some submissions, and write their feedback, in a private course folder with a copy
    of the course gradebook (which carries the teachers' manual grades into the feedback)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy(course.root / "nbgrader_config.py", folder / "nbgrader_config.py")
    (folder / course.source).symlink_to(course.root / course.source, target_is_directory=True)
    shutil.copy(course.root / "gradebook.db", folder / "gradebook.db")
    for sub in subs:
        tidy_submission(course, sub, folder / "submitted" / sub.student / sub.assignment)
    for assignment in sorted({s.assignment for s in subs}):
        mine = [s.student for s in subs if s.assignment == assignment]
        nbgrader(
            ["grade-group", assignment, *mine, "--", json.dumps(overrides)],
            folder,
            course.root,
            memory,
            timeout=STUDENT_SECONDS * len(mine),
        )
    faults = folder / FAULTS
    for line in faults.read_text().splitlines() if faults.exists() else []:
        record = json.loads(line)
        for sub in subs:
            if (sub.student, sub.assignment) == (record["student"], record["assignment"]):
                sub.faults.append(f"{record['kind']} fault in {record['notebook']}: {record['text']}")
    for sub in subs:  # a notebook nbgrader did not finish (its process was stopped) gets one more go
        if any(f.startswith("confinement") for f in sub.faults):
            continue
        for notebook in unfinished(course, folder, sub):
            again = nbgrader(
                [
                    "autograde",
                    sub.assignment,
                    "--force",
                    "--student",
                    sub.student,
                    "--notebook",
                    notebook,
                    *[f"--Grading.{k}={v}" for k, v in overrides["Grading"].items() if k != "layers"],
                    *[f"--Grading.layers={layer}" for layer in overrides["Grading"]["layers"]],
                ],
                folder,
                course.root,
                memory,
            )
            if notebook in unfinished(course, folder, sub):
                sub.faults.append(f"nbgrader could not grade {notebook}.ipynb ({_last_error(again)})")


def unfinished(course: Course, folder: Path, sub: Submission) -> list[str]:
    """Submitted graded notebooks whose autograded copy lacks the trusted grading summary."""
    left = []
    for notebook in course.graded_notebooks():
        if not (folder / "submitted" / sub.student / sub.assignment / f"{notebook}.ipynb").exists():
            continue
        graded = folder / "autograded" / sub.student / sub.assignment / f"{notebook}.ipynb"
        if not graded.exists() or '"grading_summary": true' not in graded.read_text(encoding="utf-8"):
            left.append(notebook)
    return left


def _last_error(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in (proc.stderr + proc.stdout).splitlines() if "ERROR" in line or "Error" in line]
    return (lines[-1] if lines else (proc.stderr.strip().splitlines() or ["no output"])[-1])[:300]


def merge(course: Course, subs: list[Submission], folder: Path) -> None:
    """One writer: the graded students into the course gradebook, their autograded folders home."""
    for sub in subs:
        autograded = folder / "autograded" / sub.student / sub.assignment
        confinement = [f for f in sub.faults if f.startswith("confinement")]
        if confinement or not autograded.exists():
            if not sub.faults:
                sub.faults.append("nbgrader wrote no autograded copy")
            continue
        records.merge_student(folder / "gradebook.db", course.root / "gradebook.db", sub.assignment, sub.student)
        for name in ("autograded", "feedback"):
            source, dest = (
                folder / name / sub.student / sub.assignment,
                course.root / name / sub.student / sub.assignment,
            )
            shutil.rmtree(dest, ignore_errors=True)
            if source.exists():
                shutil.copytree(source, dest)
        for page in (course.root / "feedback" / sub.student / sub.assignment).glob("*.html"):
            localize(page, course.edition(sub.assignment).language)
        sub.graded = True


def write_tables(course: Course, subs: list[Submission], seed: int, layers: list[str]) -> None:
    """grades.csv (a row per notebook and a total per student and assignment) and
    grades_by_cell.csv, from the course gradebook: the same numbers `nbgrader export` gives. The
    seed and the confinement layers are those of this run, for the students it graded (a student
    graded earlier keeps them in their feedback's grading summary)."""
    from nbgrader.api import Gradebook

    problems = {(s.student, s.assignment): "; ".join(s.problems + s.faults) for s in subs}
    this_run = {(s.student, s.assignment) for s in subs}
    confinement = "+".join(layers) or "none"
    db = course.root / "gradebook.db"
    with open(course.root / "grades.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "student",
                "assignment",
                "notebook",
                "score",
                "max_score",
                "late_penalty",
                "problems",
                "seed",
                "confinement",
            ]
        )
        for edition in course.editions:
            rows = records.grades(db, edition.assignment)
            for student in sorted({r.student for r in rows}):
                own = sorted((r for r in rows if r.student == student), key=lambda r: r.notebook)
                for r in own:
                    writer.writerow(
                        [
                            student,
                            r.assignment,
                            r.notebook,
                            f"{r.score - r.late_penalty:g}",
                            f"{r.max_score:g}",
                            f"{r.late_penalty:g}",
                            "",
                            *((seed, confinement) if (student, r.assignment) in this_run else ("", "")),
                        ]
                    )
                writer.writerow(
                    [
                        student,
                        edition.assignment,
                        "TOTAL",
                        f"{sum(r.score - r.late_penalty for r in own):g}",
                        f"{sum(r.max_score for r in own):g}",
                        f"{sum(r.late_penalty for r in own):g}",
                        problems.get((student, edition.assignment), ""),
                        *((seed, confinement) if (student, edition.assignment) in this_run else ("", "")),
                    ]
                )
    with open(course.root / "grades_by_cell.csv", "w", newline="") as handle, Gradebook(f"sqlite:///{db}") as gb:
        writer = csv.writer(handle)
        writer.writerow(["student", "assignment", "notebook", "cell", "score", "max_score", "reason"])
        for edition in course.editions:
            for submission in sorted(gb.assignment_submissions(edition.assignment), key=lambda s: s.student.id):
                for notebook in sorted(submission.notebooks, key=lambda n: n.name):
                    comments = {c.name: c.auto_comment or "" for c in notebook.comments}
                    for grade in sorted(notebook.grades, key=lambda g: g.name):
                        item = next((i for i in course.items_in(notebook.name) if i.test_cell == grade.name), None)
                        reason = comments.get(item.answer_cell, "") if item else ""
                        writer.writerow(
                            [
                                submission.student.id,
                                edition.assignment,
                                notebook.name,
                                grade.name,
                                f"{grade.score:g}",
                                f"{grade.max_score:g}",
                                "" if reason == "No response." and grade.score == grade.max_score else reason,
                            ]
                        )


def find_submissions(course: Course, only: list[str]) -> list[Submission]:
    found = []
    for edition in course.editions:
        for folder in sorted((course.root / "submitted").glob(f"*/{edition.assignment}")):
            if folder.is_dir() and (not only or folder.parent.name in only):
                found.append(Submission(folder.parent.name, edition.assignment))
    return found


def share_cores(jobs: int) -> None:
    """Give each of the `jobs` students graded at a time its share of the cores for PyTorch's and
    OpenMP's threads (unless the teacher set OMP_NUM_THREADS): kernels that each start a thread
    per core fight over the cores, and OpenMP's threads spin while they wait."""
    if "OMP_NUM_THREADS" in os.environ:
        return
    threads = str(max(1, len(os.sched_getaffinity(0)) // jobs))
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = threads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--course", type=Path, default=Path.cwd(), help="the course root (default: here)")
    parser.add_argument("--student", action="append", default=[], help="grade only this student (repeatable)")
    parser.add_argument("--jobs", type=int, help="students graded at a time")
    parser.add_argument("--seed", type=int, help="seed of the trusted cases (default: the config's, else random)")
    parser.add_argument("--memory-gib", type=float, dest="memory_gib")
    parser.add_argument("--seconds", type=float, help="time limit of one exercise's trusted run")
    parser.add_argument("--cell-timeout", type=int, dest="cell_timeout")
    parser.add_argument("--layers", help='confinement layers, comma-separated ("auto", bwrap, landlock, user)')
    parser.add_argument(
        "--unconfined",
        action="store_true",
        default=None,
        help="grade even when no confinement layer works (never the default)",
    )
    args = parser.parse_args(argv)
    fast_start()
    root = args.course.resolve()
    course = load(root)
    settings = grading_settings.load(
        root, {k: getattr(args, k) for k in ("jobs", "seed", "memory_gib", "seconds", "cell_timeout", "unconfined")}
    )
    if args.layers:
        settings.layers = [x.strip() for x in args.layers.split(",") if x.strip()]
    try:
        layers, probe = choose_layers(settings)
    except RuntimeError as exc:
        print(exc)
        return 2
    print(
        "Confinement: "
        + "; ".join(
            f"{k} {'on' if k in layers else 'off'}" + ("" if v is None or k in layers else f" ({v})")
            for k, v in probe.items()
            if k in confine.LAYERS
        )
    )
    if not layers:
        if not settings.unconfined:
            print(
                "No confinement layer works on this machine, so student code would run with your rights. "
                "Grading refused; pass --unconfined (make grade GRADE_ARGS=--unconfined) to grade anyway."
            )
            return 2
        print("WARNING: grading UNCONFINED: student code runs with your rights (--unconfined).")
    subs = find_submissions(course, args.student)
    if not subs:
        print(f"No submissions found in {root / 'submitted'}/<student>/<assignment>/.")
        return 1
    seed = settings.seed if settings.seed is not None else secrets.randbelow(2**31)
    start = time.monotonic()
    for assignment in sorted({s.assignment for s in subs}):
        ensure_assignment(course, assignment)
    overrides = {
        "Grading": {
            "seed": seed,
            "layers": layers or ["none"],
            "unconfined": bool(settings.unconfined),
            "memory_gib": settings.memory_gib,
            "seconds": settings.seconds,
            "cell_timeout": settings.cell_timeout,
        }
    }
    memory = int(2 * settings.memory_gib * 2**30) + NBGRADER_OWN_MEMORY
    jobs = max(1, min(settings.jobs, len(subs)))
    share_cores(jobs)
    groups = [subs[i::jobs] for i in range(jobs)]
    work = root / "build" / "grading" / "groups"
    folders = [work / f"group{i}" for i in range(jobs)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {
            pool.submit(grade_group, course, group, folder, overrides, memory): group
            for group, folder in zip(groups, folders)
        }
        for future in concurrent.futures.as_completed(futures):
            try:
                future.result()
            except Exception as exc:
                for sub in futures[future]:
                    sub.faults.append(f"grading failed: {exc!r}")
    for group, folder in zip(groups, folders):  # one writer
        merge(course, group, folder)
    write_tables(course, subs, seed, layers)
    failed = [s for s in subs if s.faults]
    for sub in subs:
        print(f"  {sub.student} ({sub.assignment}): {'graded' if sub.graded else 'NOT GRADED'}")
        for line in sub.problems + sub.faults:
            print(f"    {line}")
    print(
        f"Graded {sum(s.graded for s in subs)} of {len(subs)} submission(s) in {time.monotonic() - start:.0f} s "
        f"with seed {seed} (regrade with --seed {seed}); wrote gradebook.db, grades.csv, grades_by_cell.csv, "
        f"autograded/ and feedback/."
    )
    if failed:
        print("Could not grade fully: " + ", ".join(sorted({f"{s.student} ({s.assignment})" for s in failed})))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
