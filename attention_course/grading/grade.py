"""Grade a class: `make grade` (or `python -m attention_course.grading.grade`).

The grading itself is nbgrader's, with the course's plugins (nbgrader_config.py,
`attention_course.grading.plugins`), exactly as plain `nbgrader autograde` and formgrader's button run
it: safe reading of each notebook, tidying, confined kernels, the trusted verdict. This command
adds only the parallelism and the report:
1. every submission `submitted/<student>/<assignment>/` of each edition's assignment goes to one
   of `--jobs N` slots, each a private course folder with a copy of the course gradebook;
2. its files are copied there as they are (links stay links and are refused by the exporter,
   never followed; the submission itself is never touched), and one nbgrader process grades that
   one student and writes their feedback, within the student's bound (`Grading.student_seconds`
   for their cells, plus STUDENT_MARGIN) and a memory bound for nbgrader's own process; past
   either, the process and everything below it is stopped, and the student is graded 0 for what
   did not finish, with the reason;
3. one writer merges the student into the course's `gradebook.db` (`attention_course.grading.gradebook`) at once
   and copies `autograded/<student>/` and the feedback home; the slot takes the next student;
4. `grades.csv` and `grades_by_cell.csv` are written from the course gradebook, with the seed.
Settings come from the `Grading` section of nbgrader_config.py (`attention_course.grading.settings`), overridden
by the command line, whose options are those settings (`GradeApp`: `--jobs 2`, `--cell-timeout 30`,
`--layers bwrap,landlock`; `--help` lists them). A student who could not be graded fully
(confinement, a grader fault, a bound reached) is named and makes the exit status non-zero;
everyone else is still graded.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from traitlets import List, Unicode
from traitlets.config import Application

from attention_course.confinement import confine, linux
from attention_course.confinement.limits import kill_tree
from attention_course.model.manifest import Course, load
from attention_course.sandbox.driver import WALL_FACTOR

from . import as_data, near_names, ownership, seeds, workspace
from . import gradebook as records
from . import settings as grading_settings
from .coursedir import CoursePaths, paths
from .intake import Unreadable, copy_file, link_below
from .journal import Journal, key
from .kernel import IOPUB_WAIT
from .settings import FAULTS, PROBLEMS
from .workspace import choose_layers

NBGRADER_OWN_MEMORY = int(1.5 * 2**30)  # nbgrader's own process (the kernels are capped by their supervisor)
STUDENT_MARGIN = 60.0  # beyond a student's cells' bound: nbgrader's start, the trusted verdict's end, the feedback


def student_bound(student_seconds: float, seconds: float) -> float:
    """How long one student's nbgrader process may take: their cells' bound (which the cell that
    stops a notebook can overrun by one wait for its output, IOPUB_WAIT), and a margin of half that
    bound (at most STUDENT_MARGIN) or, if longer, the trusted grader's own bound on one looping
    exercise (WALL_FACTOR x `seconds` + 10 s), which runs beside the cells: 1030 s by default."""
    margin = max(min(STUDENT_MARGIN, student_seconds / 2), WALL_FACTOR * seconds + 10)
    return student_seconds + IOPUB_WAIT + margin


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


def nbgrader(
    args: list[str], cwd: Path, course: Path, memory: int | None = None, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """Run nbgrader (started by attention_course/grading/nbgrader_cli.py) in a course folder, within a time bound
    and with its own process's memory bounded (the kernels have their own bounds); past either it
    is stopped with everything below it, and `stderr` ends with the reason. Its log is kept in
    `build/grading/nbgrader-<command>.log` of that folder."""
    cli = Path(__file__).with_name("nbgrader_cli.py")
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        # this course's grading plugins and helpers (a copy of the course grades with its own)
        PYTHONPATH=os.pathsep.join([str(course), str(course / "course_helpers")]),
    )
    linux.libc()  # loaded here, not in the child between fork and exec
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
            preexec_fn=_die_with_parent,
        )
        stopped = bounded(proc, memory, timeout)
        out.seek(0)
        err.seek(0)
        stderr = err.read() + (f"\nSTOPPED: {stopped}" if stopped else "")
        stdout = out.read()
        log = cwd / "build" / "grading" / f"nbgrader-{args[0]}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"$ nbgrader {' '.join(args)}\n{stdout}{stderr}\n")
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def _die_with_parent() -> None:
    """In the child: killed when the thread that started it goes (a Dask worker that dies)."""
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)


def bounded(proc: subprocess.Popen, memory: int | None, timeout: float | None) -> str:
    """Wait for `proc`; past `timeout` seconds, or once its own resident memory passes `memory`,
    kill it and everything below it. Returns why it was stopped ("" if it ended by itself)."""
    import psutil

    deadline = None if timeout is None else time.monotonic() + timeout
    why = ""
    while proc.poll() is None:
        if deadline is not None and time.monotonic() > deadline:
            why = f"it ran longer than {timeout:.0f} s"
        elif memory:
            try:
                rss = psutil.Process(proc.pid).memory_info().rss
            except psutil.Error:
                rss = 0
            if rss > memory:
                why = f"nbgrader's own process used {rss / 2**30:.1f} GiB, more than {memory / 2**30:.1f} GiB"
        if why:
            kill_tree(proc.pid)
            break
        try:
            proc.wait(0.5)
        except subprocess.TimeoutExpired:
            pass
    proc.wait()
    return why


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


def ensure_assignment(course: Course, assignment: str) -> None:
    """The course gradebook knows the assignment, its notebooks and cells (as `make release` leaves
    it); if not, nbgrader generates the assignment into a throw-away release folder."""
    from nbgrader.api import Gradebook, MissingEntry

    db = paths(course.root).gradebook
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


class Slot:
    """One of the `--jobs` places where a student is graded: a private course folder (a copy of
    the course gradebook, which carries the teachers' manual grades into the feedback), where
    one nbgrader process per student autogrades and writes the feedback within the student's
    bound; then one writer (the lock) merges that student into the course, and the next one comes."""

    def __init__(self, course: Course, folder: Path, overrides: dict, lock: threading.Lock):
        self.course, self.folder, self.overrides, self.lock = course, folder, overrides, lock
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        shutil.copy(course.root / "nbgrader_config.py", folder / "nbgrader_config.py")
        for name in (course.source, course.release):
            (folder / name).symlink_to(course.root / name, target_is_directory=True)
        self.paths = CoursePaths(folder)
        with lock:
            shutil.copy(paths(course.root).gradebook, self.paths.gradebook)
        settings = overrides["Grading"]
        self.bound = student_bound(settings["student_seconds"], settings["seconds"])
        self.memory = NBGRADER_OWN_MEMORY

    def run(self, sub: Submission) -> Graded:
        """Grade one student here (nothing is merged into the course): what it gave, as data."""
        for step in ("submitted", "autograded", "feedback"):
            shutil.rmtree(self.paths.top(step) / sub.student, ignore_errors=True)
        for path in (self.folder / FAULTS, self.folder / PROBLEMS):
            path.unlink(missing_ok=True)
        if sub.refused:
            return Graded(sub, self.course.graded_notebooks())
        copy_submission(
            self.course,
            sub,
            self.paths.of("submitted", sub.student, sub.assignment),
            self.overrides["Grading"].get("take_renamed", False),
        )
        proc = nbgrader(
            ["grade-group", sub.assignment, sub.student, "--", json.dumps(self.overrides)],
            self.folder,
            self.course.root,
            self.memory,
            self.bound,
        )
        stopped = proc.stderr.rsplit("STOPPED: ", 1)[1].strip() if "STOPPED: " in proc.stderr else ""
        self._read_records(sub)
        left = unfinished(self.course, self.folder, sub)
        if left:
            why = f"grading was stopped: {stopped}" if stopped else f"nbgrader could not grade it ({_last_error(proc)})"
            sub.faults.append(f"{', '.join(n + '.ipynb' for n in left)}: {why}; graded 0")
        graded = Graded(sub, left)
        from nbgrader.api import MissingEntry

        autograded = self.paths.of("autograded", sub.student, sub.assignment)
        if autograded.exists():
            try:
                graded.rows = records.student_rows(self.paths.gradebook, sub.assignment, sub.student)
            except MissingEntry:
                return graded  # nbgrader wrote no submission: everything is in `left`
            graded.autograded = as_data.pack(autograded)
            graded.feedback = as_data.pack(self.paths.of("feedback", sub.student, sub.assignment))
        return graded

    def grade(self, sub: Submission, merged) -> None:
        """Grade one student here, then `merged(graded)` under the lock (the one writer)."""
        graded = self.run(sub)
        with self.lock:
            merged(graded)
        workspace.sweep()

    def _read_records(self, sub: Submission) -> None:
        for where, into in ((FAULTS, sub.faults), (PROBLEMS, sub.problems)):
            path = self.folder / where
            for line in path.read_text().splitlines() if path.exists() else []:
                record = json.loads(line)
                if record["kind"] == "problem":
                    into.append(record["text"])
                else:
                    into.append(f"{record['kind']} fault in {record['notebook']}: {record['text']}")


def unfinished(course: Course, folder: Path, sub: Submission) -> list[str]:
    """Submitted graded notebooks whose autograded copy lacks the trusted grading summary."""
    left, where = [], paths(folder)
    for notebook in course.graded_notebooks():
        if not os.path.lexists(where.of("submitted", sub.student, sub.assignment) / f"{notebook}.ipynb"):
            continue
        graded = where.of("autograded", sub.student, sub.assignment) / f"{notebook}.ipynb"
        if not graded.exists() or '"grading_summary": true' not in graded.read_text(encoding="utf-8"):
            left.append(notebook)
    return left


def _last_error(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in (proc.stderr + proc.stdout).splitlines() if "ERROR" in line or "Error" in line]
    return (lines[-1] if lines else (proc.stderr.strip().splitlines() or ["no output"])[-1])[:300]


def merge(course: Course, graded: Graded) -> None:
    """One writer: a graded student into the course gradebook, their autograded folder and
    feedback home; what nbgrader did not finish (or a refused submission) gets a row of 0 with
    the reason. A student whose confinement failed is not graded at all."""
    sub = graded.sub
    if any(f.startswith("confinement") for f in sub.faults):
        return
    home = paths(course.root)
    if graded.rows is not None:
        records.merge_rows(graded.rows, home.gradebook, sub.assignment, sub.student)
        for step, data in (("autograded", graded.autograded), ("feedback", graded.feedback)):
            dest = home.of(step, sub.student, sub.assignment)
            shutil.rmtree(dest, ignore_errors=True)
            if data:
                as_data.unpack(data, dest)
    if graded.left:
        reason = sub.refused or "; ".join(sub.faults) or "it could not be graded"
        records.zero_notebooks(course, home.gradebook, sub.assignment, sub.student, graded.left, reason)
    sub.graded = True


def write_tables(course: Course, subs: list[Submission], seed, layers: list[str]) -> None:
    """grades.csv and grades_by_cell.csv, written by the course's nbgrader export plugins
    (attention_course/grading/export.py) from the course gradebook. The seed and the confinement layers are those
    of this run for the students it graded, and those of the run that graded them for a student
    it kept (the journal's line); they reach the plugins in a run record beside the logs."""
    record = course.root / "build" / "grading" / "run.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    confinement = "+".join(layers) or "none"
    record.write_text(
        json.dumps(
            [
                {
                    "student": s.student,
                    "assignment": s.assignment,
                    "seed": s.kept["seed"] if s.kept else seed(s),
                    "confinement": s.kept["confinement"] if s.kept else confinement,
                    "problems": s.kept["problems"] if s.kept else "; ".join(s.problems + s.faults),
                }
                for s in subs
            ]
        ),
        encoding="utf-8",
    )
    for exporter, table in (("NotebookGrades", "grades.csv"), ("CellGrades", "grades_by_cell.csv")):
        proc = nbgrader(
            [
                "export",
                f"--exporter=attention_course.grading.export.{exporter}",
                f"--to={course.root / table}",
                f"--{exporter}.run_record={record}",
            ],
            course.root,
            course.root,
        )
        if proc.returncode != 0:
            raise SystemExit(f"nbgrader export ({exporter}) failed:\n{_last_error(proc)}")


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


def share_cores(jobs: int) -> None:
    """Give each of the `jobs` students graded at a time its share of the cores for PyTorch's and
    OpenMP's threads (unless the teacher set OMP_NUM_THREADS): kernels that each start a thread
    per core fight over the cores, and OpenMP's threads spin while they wait."""
    if "OMP_NUM_THREADS" in os.environ:
        return
    threads = str(max(1, len(os.sched_getaffinity(0)) // jobs))
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = threads


def submission_files(course: Course, sub: Submission) -> as_data.Folder:
    """A submission's files as data (what `copy_submission` would copy), for its digest and a Dask worker."""
    if sub.refused:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        copy_submission(course, Submission(sub.student, sub.assignment), Path(tmp) / "s")
        return as_data.pack(Path(tmp) / "s")


def grade_here(course: Course, subs: list[Submission], overrides: dict, jobs: int, merged) -> None:
    """Grade `subs` on this machine, `jobs` at a time (one Slot each, taking the next student as
    it frees up), calling `merged(graded)` under one lock as each student is done."""
    waiting: queue.SimpleQueue[Submission] = queue.SimpleQueue()
    for sub in subs:
        waiting.put(sub)
    lock = threading.Lock()
    work = course.root / "build" / "grading" / "slots"

    def slot(index: int) -> None:
        place = Slot(course, work / f"slot{index}", overrides, lock)
        while True:
            try:
                sub = waiting.get_nowait()
            except queue.Empty:
                return
            try:
                place.grade(sub, merged)
            except Exception as exc:  # the grader's own fault: this student only
                sub.faults.append(f"grading failed: {exc!r}")

    threads = [threading.Thread(target=slot, args=(i,), name=f"slot{i}") for i in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


DESCRIPTION = __doc__.splitlines()[0]


class GradeApp(Application):
    """`make grade`: its command line is the Grading settings themselves (one declaration)."""

    name = "make grade"
    description = DESCRIPTION
    course = Unicode(".", help="The course root (default: here).").tag(config=True)
    student = List(Unicode(), help="Grade only these students (repeatable: --student a --student b).").tag(config=True)
    # Every setting of `c.Grading` in nbgrader_config.py is also an option: --jobs 2, --cell-timeout 30, ...
    aliases = {
        "course": "GradeApp.course",
        "student": "GradeApp.student",
        **{
            name.replace("_", "-"): f"Grading.{name}"
            for name in grading_settings.Grading.class_trait_names(config=True)
        },
    }
    flags = {
        "regrade": ({"Grading": {"regrade": True}}, "grade again students already graded with the same files and seed"),
        "take-renamed": (
            {"Grading": {"take_renamed": True}},
            "grade a notebook handed in under a near name (02_x-Copy1.ipynb) as the release notebook",
        ),
        "unconfined": (
            {"Grading": {"unconfined": True}},
            "grade even when no confinement layer works (never the default)",
        ),
    }
    classes = [grading_settings.Grading]

    def parse_command_line(self, argv=None):
        """As traitlets parses it, except that a setting given twice takes its last value (as with
        argparse: `make grade JOBS=2 GRADE_ARGS="--jobs 1"` grades one at a time)."""
        return super().parse_command_line(last_wins(sys.argv[1:] if argv is None else list(argv)))

    def settings(self) -> grading_settings.Grading:
        """The course's nbgrader_config.py, with this command line on top."""
        return grading_settings.load(Path(self.course), command_line=self.cli_config)


def last_wins(argv: list[str]) -> list[str]:
    """`argv` without the earlier occurrences of a one-value option given more than once."""
    single = set()
    for alias, target in GradeApp.aliases.items():
        owner, trait = target.split(".")
        cls = GradeApp if owner == "GradeApp" else grading_settings.Grading
        if not isinstance(cls.class_traits()[trait], List):
            single.add(f"--{alias}")
    chunks: list[tuple[str | None, list[str]]] = []
    i = 0
    while i < len(argv):
        name, has_value, _ = argv[i].partition("=")
        if name in single:
            size = 1 if has_value else 2
            chunks.append((name, argv[i : i + size]))
            i += size
        else:
            chunks.append((None, [argv[i]]))
            i += 1
    last = {name: k for k, (name, _) in enumerate(chunks) if name}
    return [arg for k, (name, chunk) in enumerate(chunks) if name is None or last[name] == k for arg in chunk]


def main(argv: list[str] | None = None) -> int:
    app = GradeApp()
    app.parse_command_line(argv)
    try:
        return _grade(app)
    finally:  # graded as root: what grading wrote goes back to the course folder's owner
        ownership.give_back(Path(app.course).resolve())


def _grade(app: GradeApp) -> int:
    root = Path(app.course).resolve()
    course = load(root)
    settings = app.settings()
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
    subs = find_submissions(course, app.student)
    if not subs:
        print(f"No submissions found in {root / 'submitted'}/<student>/<assignment>/.")
        return 1
    journal = Journal(root)
    resumed = journal.unfinished_seed() if settings.seed is None else None
    seed = settings.seed if settings.seed is not None else resumed  # None: the course's kept seeds
    if resumed is not None:
        print(f"Taking up the last run, which did not finish, with its seed {seed}.")
    start = time.monotonic()
    for assignment in sorted({s.assignment for s in subs}):
        ensure_assignment(course, assignment)
    # Every edition's seed, drawn once before the course is bundled (a later first draw would change the bundle).
    everyone = sorted({e.assignment for e in course.editions} | {s.assignment for s in subs})
    # A run with its own seed (--seed N) keeps the course folder as it is: nothing is drawn or written.
    kept = seeds.ensure(root, everyone) if seed is None else {}
    kept_seeds = {a: v for a, v in kept.items() if a in {s.assignment for s in subs}}

    def seed_of(sub: Submission) -> int:
        return seed if seed is not None else kept_seeds[sub.assignment]

    overrides = {
        "Grading": {
            "seed": seed,
            "layers": layers or ["none"],
            "unconfined": bool(settings.unconfined),
            "memory_gib": settings.memory_gib,
            "seconds": settings.seconds,
            "cell_timeout": settings.cell_timeout,
            "student_seconds": settings.student_seconds,
            "take_renamed": bool(settings.take_renamed),
        }
    }
    from .cluster import course_bundle, course_digest, grade_class

    same = [course_digest(course_bundle(course)), json.dumps(overrides, sort_keys=True)]
    files, digests, todo = {}, {}, []
    for sub in subs:
        files[id(sub)] = submission_files(course, sub)
        digests[id(sub)] = key(as_data.digest(files[id(sub)]), sub.refused, *same)
        sub.kept = None if settings.regrade else journal.kept(sub.student, sub.assignment, digests[id(sub)])
        if sub.kept is not None:
            sub.graded = True
        else:
            todo.append(sub)
    if len(todo) < len(subs):
        print(
            f"{len(subs) - len(todo)} submission(s) already graded with the same files, course, settings and seed: "
            "kept (--regrade grades them again)."
        )
    journal.start(seed)
    used = (
        f"seed {seed}"
        if seed is not None
        else "the seeds kept in seeds.toml: " + ", ".join(f"{name} {value}" for name, value in kept_seeds.items())
    )
    confinement = "+".join(layers) or "none"

    def merged(graded: Graded) -> None:
        sub = graded.sub
        journal.forget(sub.student, sub.assignment)
        merge(course, graded)
        if sub.graded and not sub.faults:
            journal.graded(
                sub.student, sub.assignment, digests[id(sub)], seed_of(sub), confinement, "; ".join(sub.problems)
            )

    jobs = max(1, min(settings.jobs, len(todo) or 1))
    share_cores(jobs)
    try:
        if settings.scheduler and todo:
            grade_class(course, todo, overrides, settings.scheduler, jobs, lambda sub: files[id(sub)], merged)
        elif todo:
            grade_here(course, todo, overrides, jobs, merged)
    except KeyboardInterrupt:
        done = sum(s.graded and not s.kept for s in todo)
        print(
            f"\nInterrupted: {done} of {len(todo)} submission(s) were graded and are in the gradebook. "
            f"Run make grade again to grade the rest (it takes up this run, {used})."
        )
        return 130
    journal.end(seed)
    write_tables(course, subs, seed_of, layers)
    failed = [s for s in subs if s.faults]
    for sub in subs:
        state = "kept (graded earlier)" if sub.kept else "graded" if sub.graded else "NOT GRADED"
        print(f"  {sub.student} ({sub.assignment}): {state}")
        for line in [sub.kept["problems"]] if sub.kept and sub.kept["problems"] else sub.problems + sub.faults:
            print(f"    {line}")
    print(
        f"Graded {sum(s.graded and not s.kept for s in subs)} and kept {sum(bool(s.kept) for s in subs)} of "
        f"{len(subs)} submission(s) in {time.monotonic() - start:.0f} s "
        f"with {used}; wrote gradebook.db, grades.csv, grades_by_cell.csv, "
        f"autograded/ and feedback/."
    )
    if failed:
        print("Could not grade fully: " + ", ".join(sorted({f"{s.student} ({s.assignment})" for s in failed})))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
