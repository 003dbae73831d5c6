"""Grade a class: `make grade` (or `python -m attention_course.grading.grade`).

The grading itself is nbgrader's, with the course's plugins (nbgrader_config.py,
`attention_course.grading.plugins`), exactly as plain `nbgrader autograde` and formgrader's button run
it: safe reading of each notebook, tidying, confined kernels, the trusted verdict. This command
adds only the parallelism and the report (this module: the command line and the run; `submission`,
`slot`, `merge` and `cluster`: the steps below):
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
import sys
import tempfile
import time
from pathlib import Path

from traitlets import List, Unicode
from traitlets.config import Application

from attention_course.confinement import confine
from attention_course.confinement.probe import choose_layers
from attention_course.model.manifest import Course, load

from . import as_data, ownership, seeds
from . import settings as grading_settings
from .coursedir import paths
from .journal import Journal, key
from .merge import merge, write_tables
from .nbgrader_process import nbgrader
from .slot import cores_share, grade_here
from .submission import Graded, Submission, find_submissions, submission_files


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
        "warm-kernels": (
            {"Grading": {"warm_kernels": True}},
            "fork each notebook's kernel from one warm, confined process per student (the default)",
        ),
        "cold-kernels": (
            {"Grading": {"warm_kernels": False}},
            "start a fresh Python for each notebook's kernel instead of forking it from a warm one",
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
        layers, probe = choose_layers(settings.layers)
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
            "warm_kernels": bool(settings.warm_kernels),
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
    overrides["Grading"]["threads"] = cores_share(jobs)  # after the digests: JOBS does not change a grade
    try:
        if settings.scheduler and todo:
            grade_class(course, todo, overrides, settings.scheduler, jobs, lambda sub: files[id(sub)], merged)
        elif todo:
            grade_here(course, todo, overrides, jobs, lambda sub: files[id(sub)], merged)
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
