"""The course's grading, plugged into nbgrader's own extension points.

The course's nbgrader_config.py puts these preprocessors into `Autograde.autograde_preprocessors`,
so `make grade`, plain `nbgrader autograde` and formgrader's autograde button all grade the
same way:
- `ConfinedExecute` replaces nbgrader's `Execute`: every notebook runs in a kernel confined to
  the student's workspace (`attention_course.grading.workspace`), started through the `attention-confined`
  kernelspec, talking to nbgrader over unix sockets in the workspace (no network); after a cell
  runs out of time or the kernel dies, the rest of the notebook is not run;
- `ReadableGrades` comes before nbgrader's own `SaveAutoGrades`: a test cell whose output nbgrader
  cannot read as a grade loses it (and is saved as 0), so it no longer stops the notebook;
- `TrustedGrades` comes right after `SaveAutoGrades` (and before `AssignLatePenalties`, so late
  penalties apply to the trusted score): the trusted verdict (`attention_course.grading.trusted`) decides every
  test cell's `auto_score`, leaves a teacher's `manual_score` and extra credit alone, writes the
  reason as the answer cell's automatic comment, and puts a grading summary at the top of the
  autograded notebook (it reaches the feedback).
A student whose confinement cannot be set up is not graded: the notebook fails in nbgrader (which
keeps nothing of it) and the fault is recorded for `make grade` to report.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import nbformat
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbconvert.exporters import NotebookExporter
from nbconvert.exporters.exporter import ResourcesDict
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute, NbGraderPreprocessor

from attention_course.confinement import confine
from attention_course.model.manifest import Course
from helpers.cells import grade_id, is_answer_cell
from helpers.i18n import N_, _, using

from . import near_names, seeds
from .coursedir import course_of
from .intake import Unreadable, read_submission
from .kernel import IOPUB_WAIT, KERNEL_NAME, MAX_MESSAGE, ConfinedKernelSpecManager, close_everything
from .settings import FAULTS, PROBLEMS, Grading
from .trusted import ConfinementFailed, Verdict, grade_student, missing, test_cells
from .workspace import Workspace, choose_layers, sweep


class _Run:
    """What one nbgrader process shares between notebooks: settings, seed, layers, workspaces."""

    def __init__(self, config):
        self.coursedir = CourseDirectory(config=config)
        self.root = Path(self.coursedir.root)
        self.course: Course = course_of(self.coursedir)
        self.settings = Grading(config=config)
        self.seed = self.settings.seed  # None: each assignment's seed kept with the course (seeds.py)
        self.layers, self.probe = choose_layers(self.settings, probed=False)
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
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="trusted")
        sweep()

    def workspace(self, student: str, assignment: str) -> Workspace:
        key = (student, assignment)
        if key not in self.workspaces:
            own = "user" in self.layers and os.geteuid() == 0
            workspace = Workspace(student, assignment, own_account=own)
            workspace.fill(self.submitted(student, assignment))
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

    def problem(self, student: str, assignment: str, notebook: str, text: str) -> None:
        """Something wrong with a submission's files (reported; the student is still graded)."""
        self.fault(student, assignment, notebook, "problem", text, PROBLEMS)

    def fault(self, student: str, assignment: str, notebook: str, kind: str, text: str, where=FAULTS) -> None:
        path = self.root / where
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(
                json.dumps(
                    {"student": student, "assignment": assignment, "notebook": notebook, "kind": kind, "text": text}
                )
                + "\n"
            )

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


_runs: dict[int, _Run] = {}


def run_of(config) -> _Run:
    key = id(config)
    if key not in _runs:
        for old in _runs.values():  # a new nbgrader app (formgrader makes one per press)
            old.pool.shutdown(wait=True)
        _runs.clear()
        _runs[key] = _Run(config)
    return _runs[key]


def _ids(resources) -> tuple[str, str, str]:
    ids = resources["nbgrader"]
    return ids["student"], ids["assignment"], ids["notebook"]


class SubmittedNotebookExporter(NotebookExporter):
    """nbgrader's notebook exporter, reading a submission safely (`attention_course.grading.intake`): a link, a
    special file, an oversized, non-UTF-8, too deeply nested or malformed notebook is never
    followed or parsed further; the released notebook, unanswered, stands in for it, with the
    reason in its metadata, so the student gets a row of 0 with the reason and nobody else is
    touched."""

    def from_filename(self, filename, resources=None, **kw):
        resources = resources if resources is not None else ResourcesDict()
        if "metadata" not in resources or resources["metadata"] == "":
            resources["metadata"] = ResourcesDict()
        path, basename = os.path.split(filename)
        resources["metadata"]["name"] = os.path.splitext(basename)[0]
        resources["metadata"]["path"] = path
        coursedir = getattr(self.parent, "coursedir", None)
        top = Path(coursedir.root) / coursedir.submitted_directory if coursedir is not None else None
        try:
            nb = read_submission(Path(filename), top).notebook
        except Unreadable as bad:
            nb = self._stand_in(resources, bad)
        return self.from_notebook_node(nb, resources, **kw)

    def _stand_in(self, resources, bad: Unreadable) -> nbformat.NotebookNode:
        ids = resources.get("nbgrader", {})
        release = _release_notebook(self.parent.coursedir, ids.get("assignment", ""), resources["metadata"]["name"])
        nb = release if release is not None else nbformat.v4.new_notebook()
        nb.metadata["attention_unreadable"] = bad.sentence()
        self.log.warning("%s/%s: %s", ids.get("student"), basename_of(resources), bad.sentence())
        return nb


def basename_of(resources) -> str:
    return f"{resources['metadata']['name']}.ipynb"


def _release_notebook(coursedir, assignment: str, name: str) -> nbformat.NotebookNode | None:
    """The student release of one notebook (answers empty), or None."""
    path = Path(coursedir.format_path(coursedir.release_directory, ".", assignment)) / f"{name}.ipynb"
    try:
        return read_submission(path).notebook
    except Unreadable:
        return None


class TidySubmission(NbGraderPreprocessor):
    """The first of nbgrader's sanitize steps: what would stop nbgrader is put right.

    - a notebook that could not be read (a stand-in) gets a first cell saying why;
    - a duplicated grade cell keeps its first copy (the others lose nbgrader's metadata);
    - a duplicated cell id is renewed;
    - grading marks the student changed are put back as the release has them: a cell marked for
      grading that the release does not have loses its marks, and a release cell whose marks
      (points, grade or answer flags, lock, id kept) were changed gets the release's back, so
      a tampered notebook is graded as released and costs no other notebook;
    - an answer cell the student deleted comes back from the release as its empty stub, after the
      grade cell before it, so that its test cell is graded (as not answered) rather than failing
      the notebook.
    What was put right goes to the teacher's problems and, in the student's language, into the
    notebook's grading summary (its feedback)."""

    def preprocess(self, nb, resources):
        run = run_of(self.config)
        student, assignment, notebook = _ids(resources)
        notes = tidy(nb, _release_notebook(run.coursedir, assignment, notebook), f"{notebook}.ipynb")
        for note in notes:
            run.problem(student, assignment, notebook, str(note))
        run.tidied[(student, assignment, notebook)] = notes
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        return cell, resources


class Note(str):
    """A sentence about a submission, in English (the teacher's), that can be said again in the
    student's language: `Note(template, **values)`; `said()` translates under `using`."""

    def __new__(cls, template: str, **values):
        note = super().__new__(cls, template.format(**values))
        note.template, note.values = template, values
        return note

    def said(self) -> str:
        return _(self.template).format(**self.values)


# What nbgrader reads from a grade cell's metadata: what a student's change to it may not move.
MARKS = ("grade", "solution", "locked", "task", "points", "grade_id")


def tidy(nb, release, name: str) -> list[str]:
    """TidySubmission's work on one notebook (changed in place); what was wrong with it."""
    notes = []
    unreadable = nb.metadata.get("attention_unreadable")
    if unreadable:
        notes.append(unreadable)
    seen, ids = set(), set()
    released = {grade_id(c): c for c in release.cells if grade_id(c)} if release is not None else None
    for cell in nb.cells:
        if cell.get("id") in ids or not cell.get("id"):
            cell["id"] = uuid.uuid4().hex[:12]
        ids.add(cell["id"])
        if "nbgrader" not in cell.get("metadata", {}):
            continue
        gid = grade_id(cell)
        if gid is not None and gid in seen:
            del cell.metadata["nbgrader"]
            notes.append(Note(N_("{name}: a copy of cell {gid!r} was ignored"), name=name, gid=gid))
            continue
        seen.add(gid)
        if released is None or unreadable:
            continue
        if gid not in released:
            del cell.metadata["nbgrader"]
            notes.append(
                Note(
                    N_("{name}: a cell marked for grading ({gid!r}) is not in the release; its marks were removed"),
                    name=name,
                    gid=gid or "no id",
                )
            )
            continue
        marks = released[gid].metadata["nbgrader"]
        changed = sorted(k for k in MARKS if cell.metadata["nbgrader"].get(k) != marks.get(k))
        if changed or cell.cell_type != released[gid].cell_type:
            cell.metadata["nbgrader"] = nbformat.from_dict(json.loads(json.dumps(marks)))
            if cell.cell_type != released[gid].cell_type:
                changed.append("cell type")
                cell.cell_type = released[gid].cell_type
                cell.pop("outputs", None), cell.pop("execution_count", None)
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
            notes.append(
                Note(
                    N_("{name}: the grading settings of cell {gid!r} were changed ({what}); they were put back"),
                    name=name,
                    gid=gid,
                    what=", ".join(changed),
                )
            )
    if release is not None and not unreadable:
        notes += _restore_answer_cells(nb, release, name)
    if unreadable:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**{unreadable}**"))
    return notes


def _restore_answer_cells(nb, release, name: str) -> list[str]:
    present = {grade_id(c) for c in nb.cells}
    notes = []
    for index, cell in enumerate(release.cells):
        gid = grade_id(cell)
        if gid and is_answer_cell(cell) and gid not in present:
            after = next((grade_id(c) for c in reversed(release.cells[:index]) if grade_id(c) in present), None)
            at = next((i + 1 for i, c in enumerate(nb.cells) if after and grade_id(c) == after), 0)
            copy = nbformat.from_dict(json.loads(json.dumps(cell)))
            copy["id"] = uuid.uuid4().hex[:12]
            nb.cells.insert(at, copy)
            present.add(gid)
            notes.append(
                Note(N_("{name}: answer cell {gid!r} was missing; it was graded as not answered"), name=name, gid=gid)
            )
    return notes


# A kernel that dies or hangs before any cell of the student's ran (a start that timed out on a busy
# machine, a signal from outside) is started again: three attempts in all, as for the sandbox.
KERNEL_ATTEMPTS = 3
CELL_OUTPUT = 2 * 2**20
NOTEBOOK_OUTPUT = 16 * 2**20
OUTPUT_CUT = "[more output was left out]"


class ConfinedExecute(Execute):
    """nbgrader's Execute with every kernel confined to the student's workspace: started and
    stopped by the course's kernel provisioner (`attention_course.grading.kernel`), no heartbeat, every zmq context
    closed when the notebook is done; a student's cells share one time bound
    (`Grading.student_seconds`), and after a cell runs out of time, the kernel dies or its
    channel breaks, the rest of the notebook is not run."""

    def preprocess(self, nb, resources):
        run = run_of(self.config)
        student, assignment, notebook = _ids(resources)
        run.start_trusted(student, assignment)
        self._workspace = run.workspace(student, assignment)
        self._policy = run.root / "build" / "grading" / "kernels" / f"{uuid.uuid4().hex}.json"
        self._policy.parent.mkdir(parents=True, exist_ok=True)
        confine.write_policy(self._workspace.policy(run.settings, run.layers), str(self._policy))
        self.kernel_name = KERNEL_NAME
        self.shutdown_kernel = "immediate"  # by a signal to the supervisor, never over the channel
        self.iopub_timeout = IOPUB_WAIT
        self._language = run.language(assignment)
        self._run, self._student = run, (student, assignment)
        self._timeout = (
            run.settings.cell_timeout if self._student not in run.timed_out else max(5, run.settings.cell_timeout // 10)
        )
        self._stopped = ""
        self._cell_output, self._notebook_output = {}, 0  # bytes of output kept, by cell and in all
        try:
            for attempt in range(1, KERNEL_ATTEMPTS + 1):
                self._ran_a_cell = False
                try:
                    return super().preprocess(nb, resources)
                except ConfinementFailed as failed:
                    run.fault(student, assignment, notebook, "confinement", str(failed))
                    raise
                except Exception as exc:
                    # nbgrader would drop the whole student; the notebook keeps what ran, the
                    # trusted verdict decides its cells, and the kernel goes.
                    self._close()
                    if not self._ran_a_cell and attempt < KERNEL_ATTEMPTS:
                        self.log.warning("%s/%s: the kernel did not start (%s); again", student, notebook, exc)
                        continue  # no student code ran yet: not the student's doing
                    if not self._ran_a_cell:
                        run.fault(
                            student,
                            assignment,
                            notebook,
                            "grader",
                            f"the kernel did not start in {attempt} attempts ({exc}); its cells were not run "
                            "(the trusted verdict still grades them)",
                        )
                    self.log.warning(
                        "%s/%s: the kernel's channel failed (%s); the rest was not run", student, notebook, exc
                    )
                    return getattr(self, "nb", nb), resources
        finally:
            self._policy.unlink(missing_ok=True)
            Path(confine.status_path(str(self._policy))).unlink(missing_ok=True)

    def create_kernel_manager(self):
        self.km = self.kernel_manager_class(
            kernel_name=KERNEL_NAME,
            config=self.config,
            kernel_spec_manager=ConfinedKernelSpecManager(
                launch={
                    "policy_path": str(self._policy),
                    "cwd": str(self._workspace.folder),
                    "env": self._workspace.env(),
                }
            ),
            client_class="attention_course.grading.kernel.QuietKernelClient",
        )
        self.km.transport = "ipc"
        name = f"kernel-{uuid.uuid4().hex[:12]}"
        self.km.connection_file = str(self._workspace.runtime / f"{name}.json")
        self.km.ip = str(self._workspace.runtime / name)
        return self.km

    async def async_start_new_kernel(self, **kwargs):
        try:
            await super().async_start_new_kernel(**kwargs)
        except Exception:
            self._why_not_started()
            raise

    async def async_start_new_kernel_client(self):
        try:
            return await super().async_start_new_kernel_client()
        except Exception:
            self._why_not_started()
            raise

    async def _async_handle_timeout(self, timeout, cell=None):
        self._interrupted = True  # nbclient interrupts the kernel: the cell ran out of time
        return await super()._async_handle_timeout(timeout, cell)

    async def _async_cleanup_kernel(self) -> None:
        km, kc = self.km, getattr(self, "kc", None)
        try:
            await super()._async_cleanup_kernel()
        finally:
            close_everything(km, kc)

    # nbclient's blocking versions wrap its own coroutines: wrap ours instead.
    start_new_kernel = run_sync(async_start_new_kernel)
    start_new_kernel_client = run_sync(async_start_new_kernel_client)
    _cleanup_kernel = run_sync(_async_cleanup_kernel)

    def _close(self) -> None:
        km, kc = getattr(self, "km", None), getattr(self, "kc", None)
        process = getattr(getattr(km, "provisioner", None), "process", None)
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGUSR1)  # the supervisor kills the confined tree at once
            try:
                process.wait(confine.GRACE_SECONDS + 5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        close_everything(km, kc)

    def output(self, outs, msg, display_id, cell_index):
        """nbclient's, with the outputs bounded: at most CELL_OUTPUT bytes a cell and
        NOTEBOOK_OUTPUT a notebook; past that, one line says what was left out."""
        before = len(outs)
        out = super().output(outs, msg, display_id, cell_index)
        for added in outs[before:]:
            size = len(json.dumps(added))
            used = self._cell_output.get(cell_index, 0) + size
            self._notebook_output += size
            self._cell_output[cell_index] = used
            if used > CELL_OUTPUT or self._notebook_output > NOTEBOOK_OUTPUT:
                outs.remove(added)
                if not any(o.get("name") == "stdout" and OUTPUT_CUT in o.get("text", "") for o in outs):
                    outs.append(
                        nbformat.v4.new_output(
                            "stream",
                            name="stdout",
                            text=f"{OUTPUT_CUT} (a cell may show {CELL_OUTPUT // 2**20} MiB, "
                            f"a notebook {NOTEBOOK_OUTPUT // 2**20} MiB)\n",
                        )
                    )
        return out

    def _stop(self, cell, ename: str, evalue: str, line: str, later: str):
        """Record why this cell failed and skip the rest of the notebook."""
        cell.outputs.append(nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[line]))
        self._stopped = later
        return cell, self.resources

    def _why_not_started(self) -> None:
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        for _attempt in range(50):
            if process is None or process.poll() is not None:
                break
            time.sleep(0.1)
        status = confine.read_status(str(self._policy)) or {}
        if status.get("outcome") in ("unavailable", "usage"):
            why = f"{status['layer']}: {status['reason']}"
            raise ConfinementFailed(f"the student's kernel could not be confined ({why})")

    def preprocess_cell(self, cell, resources, index):
        with using(self._language):  # what the cell's outputs say, in the submission's language
            return self._run_cell(cell, resources, index)

    def _run_cell(self, cell, resources, index):
        # nbclient re-reads its traits from the configuration when a notebook starts, so the time
        # limit is set here, cell by cell: the course's (or a short one once this student's code
        # has run out of time in an earlier notebook: an endless loop costs one timeout in all),
        # and never more than what is left of the student's own bound.
        left = self._run.settings.student_seconds - self._run.spent.get(self._student, 0.0)
        if not self._stopped and cell.cell_type == "code" and cell.source.strip() and left <= 0:
            self._stopped = _("Not run: this student's grading time ({seconds:g} s in all) ran out.").format(
                seconds=self._run.settings.student_seconds
            )
        self.timeout = max(1, min(self._timeout, int(left) + 1))
        if self._stopped:
            if cell.cell_type == "code" and cell.source.strip():
                cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text=self._stopped + "\n")]
            return cell, resources
        started, self._interrupted = time.monotonic(), False
        self._ran_a_cell = self._ran_a_cell or (cell.cell_type == "code" and bool(cell.source.strip()))
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            return self._stop(
                cell,
                "DeadKernelError",
                "the kernel died while running this cell",
                _("The kernel died while running this cell (a crash, os._exit, or too much memory)."),
                _("Not run: the kernel died in an earlier cell."),
            )
        except CellTimeoutError:
            if self._interrupted:  # at its time limit, and the cell went on running
                self._run.timed_out.add(self._student)
                return self._stop(
                    cell,
                    "CellTimeoutError",
                    "the cell went on after its interrupt",
                    _(
                        "This cell ran longer than {seconds} s and went on running after it was interrupted "
                        "(an `except` that catches KeyboardInterrupt?); the rest was not run."
                    ).format(seconds=self.timeout),
                    _("Not run: an earlier cell ran longer than {seconds} s and could not be interrupted.").format(
                        seconds=self.timeout
                    ),
                )
            return self._stop(
                cell,
                "CellTimeoutError",
                "the kernel's output stopped arriving",
                _(
                    "The kernel's output stopped arriving ({seconds} s after the cell ended; a message over "
                    "{mib} MiB is dropped); the rest was not run."
                ).format(seconds=IOPUB_WAIT, mib=MAX_MESSAGE // 2**20),
                _("Not run: the kernel's output stopped arriving in an earlier cell."),
            )
        except Exception as exc:
            return self._stop(
                cell,
                type(exc).__name__,
                "the kernel's channel broke",
                _("The kernel sent something that is not a Jupyter message; the rest was not run."),
                _("Not run: the kernel's channel broke in an earlier cell."),
            )
        finally:
            self._run.spent[self._student] = self._run.spent.get(self._student, 0.0) + time.monotonic() - started
        if any(
            o.get("output_type") == "error" and o.get("ename") == self.error_on_timeout["ename"]
            for o in cell.get("outputs", [])
        ):
            self._stopped = _(
                "Not run: an earlier cell ran longer than {seconds} s, so the rest of this notebook was skipped."
            ).format(seconds=self.timeout)
            self._run.timed_out.add(self._student)
        return cell, resources


UNREADABLE = (
    "This cell's result is not a grade nbgrader can read (it was removed); the trusted grader decides the cell.\n"
)


class ReadableGrades(NbGraderPreprocessor):
    """Runs before nbgrader's SaveAutoGrades: a test cell whose result nbgrader cannot read as a
    grade (a student's kernel can make a test cell show a number above its points, or a result
    without text, which would stop SaveAutoGrades and the whole notebook) loses that result and
    gets a line on stderr instead, so nbgrader saves 0 for it; the trusted verdict, right after,
    decides every test cell."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell):
            try:
                utils.determine_grade(cell, self.log)
            except (ValueError, KeyError, TypeError):
                cell.outputs = [o for o in cell.outputs if o.get("output_type") != "execute_result"]
                cell.outputs.append(nbformat.v4.new_output("stream", name="stderr", text=UNREADABLE))
        return cell, resources


class TrustedGrades(NbGraderPreprocessor):
    """The trusted verdict decides every test cell's automatic score."""

    def preprocess(self, nb, resources):
        run = run_of(self.config)
        student, assignment, notebook = _ids(resources)
        cells = test_cells(run.course, notebook)
        if not cells:
            run.finished(student, assignment, notebook)
            return nb, resources
        try:
            future = run.start_trusted(student, assignment).get(notebook)
            verdicts = future.result() if future is not None else []
        except ConfinementFailed as failed:
            run.fault(student, assignment, notebook, "confinement", str(failed))
            raise
        self._save(resources, verdicts, run)
        for verdict in verdicts:
            if verdict.fault:
                run.fault(student, assignment, notebook, "grader", f"{verdict.cell.grade_id}: {verdict.reason}")
        notes = run.tidied.pop((student, assignment, notebook), []) + run.near_named(student, assignment)
        _summarise(nb, verdicts, run.seed_for(assignment), run.language(assignment), run.layers, notes)
        run.finished(student, assignment, notebook)
        return nb, resources

    def _save(self, resources, verdicts: list[Verdict], run: _Run) -> None:
        student, assignment, notebook = _ids(resources)
        with Gradebook(resources["nbgrader"]["db_url"]) as gradebook:
            for verdict in verdicts:
                try:
                    grade = gradebook.find_grade(verdict.cell.grade_id, notebook, assignment, student)
                except MissingEntry:
                    continue
                grade.auto_score = verdict.score
                # decided (a teacher's manual_score still wins), unless the grader itself failed
                grade.needs_manual_grade = verdict.fault
                answer = run.course.item(verdict.cell.item).answer_cell
                try:
                    comment = gradebook.find_comment(answer, notebook, assignment, student)
                    comment.auto_comment = verdict.reason or None
                except MissingEntry:
                    pass
            gradebook.db.commit()

    def preprocess_cell(self, cell, resources, index):
        return cell, resources


def _summarise(nb, verdicts: list[Verdict], seed: int, language: str, layers: list[str], notes=()) -> None:
    """A grading summary as the notebook's first cell, in the submission's language, with what
    was put right in the notebook before grading (`notes`)."""
    with using(language):
        lines = [_("## Grading summary"), ""]
        said = [note.said() if isinstance(note, Note) else str(note) for note in notes]
        if said:
            lines += [_("Put right before grading:"), *(f"- {line}" for line in said), ""]
        for v in verdicts:
            mark = "✓" if v.score == v.cell.points else "✗"
            reason = " ".join(v.reason.split())[:600]
            lines.append(
                f"- {mark} **{v.cell.grade_id}**: {v.score:g} / {v.cell.points:g}" + (f". {reason}" if reason else "")
            )
        lines += [
            "",
            _("Graded by the course's trusted grader (seed {seed}; confinement: {layers}).").format(
                seed=seed, layers=", ".join(layers) or _("none")
            ),
        ]
    cell = nbformat.v4.new_markdown_cell("\n".join(lines))
    cell.metadata["grading_summary"] = True
    nb.cells = [c for c in nb.cells if not c.get("metadata", {}).get("grading_summary")]
    nb.cells.insert(0, cell)
