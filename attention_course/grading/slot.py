"""Where a student is graded: a slot is a private course folder with a copy of the course
gradebook, in which one nbgrader process grades one student within that student's bound and gives
back what it gave as data (`submission.Graded`); `grade_here` runs `--jobs` slots on this machine,
each taking the next student as it frees up, with one lock around the one writer."""

from __future__ import annotations

import json
import os
import queue
import shutil
import threading
from pathlib import Path

from attention_course.model.manifest import Course
from attention_course.sandbox.driver import WALL_FACTOR

from . import as_data, workspace
from . import gradebook as records
from .coursedir import CoursePaths, paths
from .kernel import IOPUB_WAIT
from .nbgrader_process import CLI, nbgrader
from .nbgrader_zygote import Zygote
from .result import StudentResult
from .submission import Graded, Submission, place_submission

NBGRADER_OWN_MEMORY = int(1.5 * 2**30)  # nbgrader's own process (the kernels are capped by their supervisor)
STUDENT_MARGIN = 60.0  # beyond a student's cells' bound: nbgrader's start, the trusted verdict's end, the feedback


def student_bound(student_seconds: float, seconds: float) -> float:
    """How long one student's nbgrader process may take: their cells' bound (which the cell that
    stops a notebook can overrun by one wait for its output, IOPUB_WAIT), and a margin of half that
    bound (at most STUDENT_MARGIN) or, if longer, the trusted grader's own bound on one looping
    exercise (WALL_FACTOR x `seconds` + 10 s), which runs beside the cells: 1030 s by default."""
    margin = max(min(STUDENT_MARGIN, student_seconds / 2), WALL_FACTOR * seconds + 10)
    return student_seconds + IOPUB_WAIT + margin


class Slot:
    """One of the `--jobs` places where a student is graded: a private course folder (a copy of
    the course gradebook, which carries the teachers' manual grades into the feedback), where
    one nbgrader process per student autogrades and writes the feedback within the student's
    bound; then one writer (the lock) merges that student into the course, and the next one comes."""

    def __init__(
        self,
        course: Course,
        folder: Path,
        overrides: dict,
        lock: threading.Lock,
        in_place: bool = True,
        zygote: Zygote | None = None,
    ):
        self.course, self.folder, self.overrides, self.lock = course, folder, overrides, lock
        self.zygote = zygote  # the warm process that forks each student's nbgrader process (None: fresh ones)
        self.in_place = in_place
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        config = (course.root / "nbgrader_config.py").read_text(encoding="utf-8")
        if in_place:  # nbgrader writes the graded notebooks and the feedback where they belong
            home = paths(course.root)
            config += (
                "\n# make grade's slot: the graded notebooks and the feedback go straight into the course\n"
                f"c.CourseDirectory.autograded_directory = {str(home.top('autograded'))!r}\n"
                f"c.CourseDirectory.feedback_directory = {str(home.top('feedback'))!r}\n"
            )
        (folder / "nbgrader_config.py").write_text(config, encoding="utf-8")
        for name in (course.source, course.release):
            (folder / name).symlink_to(course.root / name, target_is_directory=True)
        self.paths = CoursePaths(folder)
        with lock:
            shutil.copy(paths(course.root).gradebook, self.paths.gradebook)
        settings = overrides["Grading"]
        self.bound = student_bound(settings["student_seconds"], settings["seconds"])
        self.memory = NBGRADER_OWN_MEMORY

    def run(self, sub: Submission, files: as_data.Folder) -> Graded:
        """Grade one student here from their files (`submission_files`): what it gave, as data.
        Nothing is merged into the course; in place, nbgrader has written the student's graded
        notebooks and feedback into the course's folders, otherwise (on a Dask worker) they come
        back as data."""
        for step in ("submitted", "autograded", "feedback"):
            shutil.rmtree(self.paths.of(step, sub.student, sub.assignment), ignore_errors=True)
        StudentResult.forget(self.folder, sub.student, sub.assignment)
        if sub.refused:
            return Graded(sub, self.course.graded_notebooks(), shipped=not self.in_place)
        place_submission(
            self.course,
            sub,
            files,
            self.paths.of("submitted", sub.student, sub.assignment),
            self.overrides["Grading"].get("take_renamed", False),
        )
        proc = nbgrader(
            ["grade-group", sub.assignment, sub.student, "--", json.dumps(self.overrides)],
            self.folder,
            self.course.root,
            self.memory,
            self.bound,
            self.zygote,
        )
        result = StudentResult.load(self.folder, sub.student, sub.assignment)
        sub.faults += result.fault_lines()
        sub.problems += result.problem_lines()
        left = unfinished(self.course, self.paths, sub, result)
        if left:
            why = (
                f"grading was stopped: {proc.stopped}"
                if proc.stopped
                else f"nbgrader could not grade it ({proc.last_error()})"
            )
            sub.faults.append(f"{', '.join(n + '.ipynb' for n in left)}: {why}; graded 0")
        unsent = without_feedback(self.course, self.paths, sub, left)
        if unsent:  # the verdict stands, but the student has no page: not kept, graded again next run
            why = proc.stopped and f"grading was stopped: {proc.stopped}" or proc.last_error()
            sub.faults.append(f"{', '.join(n + '.html' for n in unsent)}: no feedback page was written ({why})")
        graded = Graded(sub, left, shipped=not self.in_place)
        from nbgrader.api import MissingEntry

        autograded = self.paths.of("autograded", sub.student, sub.assignment)
        if autograded.exists():
            try:
                graded.rows = records.student_rows(self.paths.gradebook, sub.assignment, sub.student)
            except MissingEntry:
                return graded  # nbgrader wrote no submission: everything is in `left`
            if not self.in_place:
                graded.autograded = as_data.pack(autograded)
                graded.feedback = as_data.pack(self.paths.of("feedback", sub.student, sub.assignment))
        return graded

    def grade(self, sub: Submission, files: as_data.Folder, merged) -> None:
        """Grade one student here, then `merged(graded)` under the lock (the one writer)."""
        graded = self.run(sub, files)
        with self.lock:
            merged(graded)
        workspace.sweep()


def unfinished(course: Course, where: CoursePaths, sub: Submission, result: StudentResult) -> list[str]:
    """Submitted graded notebooks that did not get their trusted verdict, or whose autograded copy
    nbgrader did not write (`where`: the grading folder's paths)."""
    left = []
    for notebook in course.graded_notebooks():
        if not os.path.lexists(where.of("submitted", sub.student, sub.assignment) / f"{notebook}.ipynb"):
            continue
        graded = where.of("autograded", sub.student, sub.assignment) / f"{notebook}.ipynb"
        if notebook not in result.finished or not graded.exists():
            left.append(notebook)
    return left


def without_feedback(course: Course, where: CoursePaths, sub: Submission, left: list[str]) -> list[str]:
    """Submitted graded notebooks with their verdict (not in `left`) whose feedback page nbgrader
    did not write: a process stopped after the verdicts, before or while it wrote the pages."""
    submitted = where.of("submitted", sub.student, sub.assignment)
    pages = where.of("feedback", sub.student, sub.assignment)
    return [
        notebook
        for notebook in course.graded_notebooks()
        if notebook not in left
        and os.path.lexists(submitted / f"{notebook}.ipynb")
        and not (pages / f"{notebook}.html").exists()
    ]


def cores_share(jobs: int) -> int:
    """Each of the `jobs` students graded at a time gets its share of the cores for PyTorch's and
    OpenMP's threads (`Grading.threads`): kernels that each start a thread per core fight over the
    cores, and OpenMP's threads spin while they wait. 0 when the teacher set OMP_NUM_THREADS: theirs
    is kept."""
    if "OMP_NUM_THREADS" in os.environ:
        return 0
    return max(1, len(os.sched_getaffinity(0)) // jobs)


def grade_here(course: Course, subs: list[Submission], overrides: dict, jobs: int, files, merged) -> None:
    """Grade `subs` on this machine, `jobs` at a time (one Slot each, taking the next student as
    it frees up), calling `merged(graded)` under one lock as each student is done. `files(sub)`
    gives a student's files as data."""
    waiting: queue.SimpleQueue[Submission] = queue.SimpleQueue()
    for sub in subs:
        waiting.put(sub)
    lock = threading.Lock()
    work = course.root / "build" / "grading" / "slots"

    def slot(index: int) -> None:
        zygote = Zygote(str(CLI))
        place = Slot(course, work / f"slot{index}", overrides, lock, zygote=zygote)
        try:
            while True:
                try:
                    sub = waiting.get_nowait()
                except queue.Empty:
                    return
                try:
                    place.grade(sub, files(sub), merged)
                except Exception as exc:  # the grader's own fault: this student only
                    sub.faults.append(f"grading failed: {exc!r}")
        finally:
            zygote.close()

    threads = [threading.Thread(target=slot, args=(i,), name=f"slot{i}") for i in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
