"""What one nbgrader conversion (an autograde of one or more students) shares between the notebooks
it grades (`run_of`: kept by the conversion's exporter), and the submission's ids and release
notebook that every extension point looks up."""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import uuid
import weakref
from pathlib import Path

import nbformat
from nbgrader.coursedir import CourseDirectory

from attention_course.confinement.probe import choose_layers
from attention_course.model.manifest import Course
from helpers.i18n import using

from .. import near_names, seeds
from ..coursedir import course_of
from ..intake import Unreadable, read_submission
from ..result import StudentResult
from ..sandbox_run import ConfinementFailed
from ..settings import Grading
from ..trusted import Verdict, grade_student, missing
from ..warm_kernels import WarmStarter
from ..workspace import Workspace, new_base, sweep


class Run:
    """What one nbgrader conversion shares between notebooks: settings, seed, layers, workspaces
    (in a folder of its own, removed with the Run), the trusted jobs and the students' records."""

    def __init__(self, config):
        self.coursedir = CourseDirectory(config=config)
        self.root = Path(self.coursedir.root)
        self.course: Course = course_of(self.coursedir)
        self.settings = Grading(config=config)
        self.seed = self.settings.seed  # None: each assignment's seed kept with the course (seeds.py)
        self.layers, self.probe = choose_layers(self.settings.layers, probed=False)
        if not self.layers and not self.settings.unconfined:
            raise ConfinementFailed(
                "no confinement layer works on this machine: "
                + "; ".join(f"{k}: {v}" for k, v in self.probe.items())
                + " (pass --Grading.unconfined=True to grade anyway)"
            )
        self.workspaces: dict[tuple[str, str], Workspace] = {}
        self.trusted: dict[tuple[str, str], dict[str, concurrent.futures.Future]] = {}
        self.tidied: dict[tuple[str, str, str], list[str]] = {}  # what TidySubmission put right
        self.timed_out: set[tuple[str, str]] = set()  # students whose code ran out of time in a cell
        self.jobs: dict[tuple[str, str], concurrent.futures.Future] = {}  # the trusted job of each student
        self.spent: dict[tuple[str, str], float] = {}  # seconds of a student's cells run so far
        self.results: dict[tuple[str, str], StudentResult] = {}  # what this process found, per student
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="trusted")
        sweep()
        self.base = new_base()
        # when the Run goes (its conversion ended) or the process exits: its thread and its folder
        self.close = weakref.finalize(self, _close, self.pool, self.base)

    def workspace(self, student: str, assignment: str) -> Workspace:
        key = (student, assignment)
        if key not in self.workspaces:
            own = "user" in self.layers and os.geteuid() == 0
            workspace = Workspace(student, assignment, self.base, own_account=own)
            workspace.fill(self.submitted(student, assignment))
            if self.settings.warm_kernels:
                kernels = self.root / "build" / "grading" / "kernels"
                kernels.mkdir(parents=True, exist_ok=True)
                workspace.warm = WarmStarter(
                    workspace.policy(self.settings, self.layers), str(kernels / f"warm-{uuid.uuid4().hex}.json")
                )
            self.workspaces[key] = workspace
        return self.workspaces[key]

    def start_trusted(self, student: str, assignment: str) -> dict[str, concurrent.futures.Future]:
        """The trusted verdicts on a student's notebooks, one future per notebook, computed in the
        background while nbgrader executes the notebooks. A notebook's future is settled as soon
        as its verdicts are known, so a slow exercise in a later notebook (an endless loop) holds
        up only that notebook, and its time limit runs while nbgrader runs the same loop."""
        key = (student, assignment)
        if key not in self.trusted:
            submitted = self.submitted(student, assignment)
            paths = {
                name: submitted / f"{name}.ipynb"
                for name in self.course.graded_notebooks()
                if os.path.lexists(submitted / f"{name}.ipynb")  # a link is there, and refused
            }
            workspace = self.workspace(student, assignment)
            futures = {name: concurrent.futures.Future() for name in self.course.graded_notebooks()}
            edition = self.course.edition(assignment).name if assignment in self._assignments() else "en"

            def publish(notebook: str, verdicts: list[Verdict]) -> None:
                if not futures[notebook].done():
                    futures[notebook].set_result(verdicts)

            def job() -> None:
                try:
                    everything = grade_student(
                        self.course,
                        paths,
                        self.seed_for(assignment),
                        self.settings,
                        self.layers,
                        workspace,
                        edition,
                        publish,
                        submitted,
                    )
                except BaseException as exc:
                    for future in futures.values():
                        if not future.done():
                            future.set_exception(exc)
                    return
                for notebook, future in futures.items():
                    if not future.done():
                        future.set_result(everything.get(notebook, []))

            self.jobs[key] = self.pool.submit(job)
            self.trusted[key] = futures
        return self.trusted[key]

    def near_named(self, student: str, assignment: str) -> list[str]:
        """The student's graded notebooks handed in only under a near name, as their feedback says it."""
        submitted = self.submitted(student, assignment)
        try:
            files = [path.name for path in submitted.iterdir()]
        except OSError:
            return []
        with using(self.language(assignment)):
            return [
                missing(notebook, submitted)
                for notebook in self.course.graded_notebooks()
                if f"{notebook}.ipynb" not in files and near_names.near(notebook, files)
            ]

    def seed_for(self, assignment: str) -> int:
        """This run's seed if one was given, else the assignment's, kept with the course."""
        return self.seed if self.seed is not None else seeds.seed_of(self.course.root, assignment)

    def submitted(self, student: str, assignment: str) -> Path:
        return Path(self.coursedir.format_path(self.coursedir.submitted_directory, student, assignment))

    def _assignments(self) -> set[str]:
        return {edition.assignment for edition in self.course.editions}

    def language(self, assignment: str) -> str:
        return self.course.language(assignment)

    def result(self, student: str, assignment: str) -> StudentResult:
        """The record this process keeps of a student (see result.py)."""
        key = (student, assignment)
        if key not in self.results:
            self.results[key] = StudentResult(student, assignment)
        return self.results[key]

    def problem(self, student: str, assignment: str, notebook: str, text: str) -> None:
        """Something wrong with a submission's files (reported; the student is still graded)."""
        record = self.result(student, assignment)
        record.problems.append({"notebook": notebook, "text": text})
        record.save(self.root)

    def fault(self, student: str, assignment: str, notebook: str, kind: str, text: str) -> None:
        """A notebook the grader could not grade fully, and why (the grader's fault, not the student's)."""
        record = self.result(student, assignment)
        record.faults.append({"kind": kind, "notebook": notebook, "text": text})
        record.save(self.root)

    def verdict_saved(self, student: str, assignment: str, notebook: str) -> None:
        """The trusted verdict on `notebook` is in the gradebook and its summary in the notebook."""
        record = self.result(student, assignment)
        record.finished.append(notebook)
        record.save(self.root)

    def finished(self, student: str, assignment: str, notebook: str) -> None:
        """After the last graded notebook the student submitted, their workspace goes (once the
        trusted job, and so its sandbox, has ended)."""
        submitted = self.submitted(student, assignment)
        graded = [n for n in self.course.graded_notebooks() if os.path.lexists(submitted / f"{n}.ipynb")]
        if not graded or notebook == graded[-1]:
            workspace = self.workspaces.pop((student, assignment), None)
            self.trusted.pop((student, assignment), None)
            job = self.jobs.pop((student, assignment), None)
            if job is not None:  # its sandbox ends right after the last verdict: nothing stays
                concurrent.futures.wait([job], timeout=60)
            if workspace is not None:
                workspace.remove()


def _close(pool: concurrent.futures.ThreadPoolExecutor, base: Path) -> None:
    pool.shutdown(wait=False)
    shutil.rmtree(base, ignore_errors=True)


def run_of(plugin) -> Run:
    """The Run of the conversion `plugin` (an extension point) works in. nbgrader builds each
    preprocessor with the conversion's exporter as its parent, and the course's exporter
    (`SubmittedNotebookExporter`) keeps the Run: a new conversion (formgrader makes one per
    press, the command line one per run) gets a new Run, and nothing outlives its conversion."""
    exporter = plugin.parent
    if not hasattr(exporter, "grading_run"):
        raise RuntimeError(
            f"{type(plugin).__name__} works only under the course's exporter (nbgrader_config.py: "
            "c.Autograde.exporter_class = SubmittedNotebookExporter)"
        )
    if exporter.grading_run is None:
        exporter.grading_run = Run(exporter.config)
    return exporter.grading_run


def ids_of(resources) -> tuple[str, str, str]:
    ids = resources["nbgrader"]
    return ids["student"], ids["assignment"], ids["notebook"]


def basename_of(resources) -> str:
    return f"{resources['metadata']['name']}.ipynb"


def release_notebook(coursedir, assignment: str, name: str) -> nbformat.NotebookNode | None:
    """The student release of one notebook (answers empty), or None."""
    path = Path(coursedir.format_path(coursedir.release_directory, ".", assignment)) / f"{name}.ipynb"
    try:
        return read_submission(path).notebook
    except Unreadable:
        return None
