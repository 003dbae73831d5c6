"""The course's grading, plugged into nbgrader's own extension points.

The course's nbgrader_config.py puts two preprocessors into `Autograde.autograde_preprocessors`,
so `make grade`, plain `nbgrader autograde` and formgrader's autograde button all grade the
same way:
- `ConfinedExecute` replaces nbgrader's `Execute`: every notebook runs in a kernel confined to
  the student's workspace (`grading.workspace`), started through the `attention-confined`
  kernelspec, talking to nbgrader over unix sockets in the workspace (no network); after a cell
  runs out of time or the kernel dies, the rest of the notebook is not run;
- `SaveAutoGradesSafely` replaces nbgrader's `SaveAutoGrades` (a test cell whose output nbgrader
  cannot read as a grade no longer stops the notebook);
- `TrustedGrades` comes right after it (and before `AssignLatePenalties`, so late
  penalties apply to the trusted score): the trusted verdict (`grading.trusted`) decides every
  test cell's `auto_score`, leaves a teacher's `manual_score` and extra credit alone, writes the
  reason as the answer cell's automatic comment, and puts a grading summary at the top of the
  autograded notebook (it reaches the feedback).
A student whose confinement cannot be set up is not graded: the notebook fails in nbgrader (which
keeps nothing of it) and the fault is recorded for `make grade` to report.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import json
import os
import secrets
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat
from nbclient.exceptions import DeadKernelError
from nbclient.util import run_sync
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute, NbGraderPreprocessor, SaveAutoGrades

from . import confine
from .manifest import Course, load
from .settings import FAULTS, Grading
from .trusted import ConfinementFailed, Verdict, grade_student, test_cells
from .workspace import Workspace, choose_layers

KERNEL_NAME = "attention-confined"
PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE = 36, 4


class _Run:
    """What one nbgrader process shares between notebooks: settings, seed, layers, workspaces."""

    def __init__(self, config):
        self.coursedir = CourseDirectory(config=config)
        self.root = Path(self.coursedir.root)
        # A grading course folder links `source` to the course's: the manifest sits beside it.
        self.course: Course = load((self.root / self.coursedir.source_directory).resolve().parent)
        self.settings = Grading(config=config)
        self.seed = self.settings.seed if self.settings.seed is not None else secrets.randbelow(2**31)
        self.layers, self.probe = choose_layers(self.settings)
        if not self.layers and not self.settings.unconfined:
            raise ConfinementFailed(
                "no confinement layer works on this machine: "
                + "; ".join(f"{k}: {v}" for k, v in self.probe.items())
                + " (pass --Grading.unconfined=True to grade anyway)"
            )
        self.workspaces: dict[tuple[str, str], Workspace] = {}
        self.trusted: dict[tuple[str, str], dict[str, concurrent.futures.Future]] = {}
        self.timed_out: set[tuple[str, str]] = set()  # students whose code ran out of time in a cell
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no student process may read this one's memory
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of the kernels come back here

    def workspace(self, student: str, assignment: str) -> Workspace:
        key = (student, assignment)
        if key not in self.workspaces:
            workspace = Workspace(student, assignment)
            workspace.fill(
                self.submitted(student, assignment), self.root / self.coursedir.source_directory / assignment
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
                if (submitted / f"{name}.ipynb").exists()
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
                        self.course, paths, self.seed, self.settings, self.layers, workspace, edition, publish
                    )
                except BaseException as exc:
                    for future in futures.values():
                        if not future.done():
                            future.set_exception(exc)
                    return
                for notebook, future in futures.items():
                    if not future.done():
                        future.set_result(everything.get(notebook, []))

            self.pool.submit(job)
            self.trusted[key] = futures
        return self.trusted[key]

    def submitted(self, student: str, assignment: str) -> Path:
        return Path(self.coursedir.format_path(self.coursedir.submitted_directory, student, assignment))

    def _assignments(self) -> set[str]:
        return {edition.assignment for edition in self.course.editions}

    def language(self, assignment: str) -> str:
        try:
            return self.course.edition(assignment).language
        except KeyError:
            return "en"

    def fault(self, student: str, assignment: str, notebook: str, kind: str, text: str) -> None:
        path = self.root / FAULTS
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(
                json.dumps(
                    {"student": student, "assignment": assignment, "notebook": notebook, "kind": kind, "text": text}
                )
                + "\n"
            )

    def finished(self, student: str, assignment: str, notebook: str) -> None:
        """After a student's last graded notebook their workspace goes."""
        graded = self.course.graded_notebooks()
        if graded and notebook == graded[-1]:
            workspace = self.workspaces.pop((student, assignment), None)
            self.trusted.pop((student, assignment), None)
            sweep_orphans()
            if workspace is not None:
                workspace.remove()


_runs: dict[int, _Run] = {}


def run_of(config) -> _Run:
    key = id(config)
    if key not in _runs:
        _runs.clear()
        _runs[key] = _Run(config)
    return _runs[key]


def _ids(resources) -> tuple[str, str, str]:
    ids = resources["nbgrader"]
    return ids["student"], ids["assignment"], ids["notebook"]


def sweep_orphans() -> None:
    """Kill what a kernel left behind and came back to this process (only in the grader's own
    nbgrader processes, where nothing else runs below us)."""
    if os.environ.get("ATTENTION_GRADER_PROCESS") != "1":
        return
    import psutil

    from .trusted import RUNNING

    for _ in range(20):
        keep = set(RUNNING)  # a sandbox at work, and what runs below it
        for pid in list(keep):
            try:
                keep |= {p.pid for p in psutil.Process(pid).children(recursive=True)}
            except psutil.Error:
                pass
        children = [p for p in psutil.Process().children(recursive=True) if p.pid not in keep]
        if not children:
            return
        for child in children:
            try:
                child.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(children, timeout=2)


def write_kernelspec(folder: Path) -> None:
    """The `attention-confined` kernelspec: ipykernel started by the confinement supervisor. The
    student's policy (workspace, layers, limits) comes from the kernel's environment."""
    spec = folder / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        "-I",
        str(Path(confine.__file__)),
        "run",
        "--policy-env",
        confine.POLICY_ENV,
        "--",
        sys.executable,
        "-m",
        "ipykernel_launcher",
        "-f",
        "{connection_file}",
    ]
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": argv,
                "display_name": "Python 3 (confined for grading)",
                "language": "python",
                "metadata": {"debugger": False},
            },
            indent=1,
        )
    )


class ConfinedExecute(Execute):
    """nbgrader's Execute with every kernel confined to the student's workspace."""

    def preprocess(self, nb, resources):
        run = run_of(self.config)
        student, assignment, notebook = _ids(resources)
        run.start_trusted(student, assignment)
        self._workspace = run.workspace(student, assignment)
        self._policy = run.root / "build" / "grading" / "kernels" / f"{uuid.uuid4().hex}.json"
        self._policy.parent.mkdir(parents=True, exist_ok=True)
        confine.write_policy(self._workspace.policy(run.settings, run.layers), str(self._policy))
        write_kernelspec(self._workspace.root.parent)
        os.environ["JUPYTER_PATH"] = os.pathsep.join(
            [str(self._workspace.root.parent), *filter(None, [os.environ.get("JUPYTER_PATH")])]
        )
        self.kernel_name = KERNEL_NAME
        self._run, self._student = run, (student, assignment)
        self._timeout = (
            run.settings.cell_timeout if self._student not in run.timed_out else max(5, run.settings.cell_timeout // 10)
        )
        self._stopped = ""
        try:
            return super().preprocess(nb, resources)
        except ConfinementFailed as failed:
            run.fault(student, assignment, notebook, "confinement", str(failed))
            raise
        except Exception as exc:
            # nbgrader would drop the whole student; the notebook keeps what ran, the trusted
            # verdict decides its cells, and the kernel goes.
            self.log.warning("%s/%s: the kernel's channel failed (%s); the rest was not run", student, notebook, exc)
            self._kill_kernel()
            return getattr(self, "nb", nb), resources
        finally:
            self._policy.unlink(missing_ok=True)
            sweep_orphans()

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        km.transport = "ipc"
        name = f"kernel-{uuid.uuid4().hex[:12]}"
        km.connection_file = str(self._workspace.runtime / f"{name}.json")
        km.ip = str(self._workspace.runtime / name)
        return km

    async def async_start_new_kernel(self, **kwargs):
        kwargs["env"] = {**os.environ, **self._workspace.env(), confine.POLICY_ENV: str(self._policy)}
        kwargs["cwd"] = str(self._workspace.folder)
        try:
            await super().async_start_new_kernel(**kwargs)
        except Exception:
            self._why_not_started()
            raise

    async def async_start_new_kernel_client(self):
        try:
            client = await super().async_start_new_kernel_client()
        except Exception:
            self._why_not_started()
            raise
        # nbclient watches the kernel's process, not its heartbeat; and a heartbeat channel whose
        # kernel died (a student's code can kill it) blocks forever on its next ping over ipc, so
        # that stopping it at the end of the notebook would hang nbgrader.
        client.hb_channel.pause()
        return client

    async def _async_cleanup_kernel(self) -> None:
        # jupyter_client would ask the kernel to shut down over its control channel, and that
        # request blocks for ever once a student's code has wedged the channel (writing into the
        # kernel's own sockets is enough). The supervisor is told by a signal instead: it ends the
        # kernel and everything below it; then nbclient finds no kernel alive and only tidies up.
        self._kill_kernel()
        await super()._async_cleanup_kernel()

    # nbclient's blocking versions wrap its own coroutines: wrap ours instead.
    start_new_kernel = run_sync(async_start_new_kernel)
    start_new_kernel_client = run_sync(async_start_new_kernel_client)
    _cleanup_kernel = run_sync(_async_cleanup_kernel)

    def _stop(self, cell, ename: str, evalue: str, line: str, later: str):
        """Record why this cell failed and skip the rest of the notebook."""
        cell.outputs.append(nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[line]))
        self._stopped = later
        return cell, self.resources

    def _kill_kernel(self) -> None:
        km = getattr(self, "km", None)
        process = getattr(getattr(km, "provisioner", None), "process", None)
        if process is not None and process.poll() is None:
            process.terminate()  # the supervisor forwards it, and kills the tree after its grace time
            try:
                process.wait(confine.GRACE_SECONDS + 5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def _why_not_started(self) -> None:
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        for _ in range(50):
            if process is None or process.poll() is not None:
                break
            time.sleep(0.1)
        if process is not None and process.poll() == confine.EXIT_UNAVAILABLE:
            raise ConfinementFailed("the student's kernel could not be confined")

    def preprocess_cell(self, cell, resources, index):
        # nbclient re-reads its traits from the configuration when a notebook starts, so the time
        # limit is set here, cell by cell: the course's, or a short one once this student's code
        # has run out of time in an earlier notebook (an endless loop costs one timeout in all).
        self.timeout = self._timeout
        if self._stopped:
            if cell.cell_type == "code" and cell.source.strip():
                cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text=self._stopped + "\n")]
            return cell, resources
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            return self._stop(
                cell,
                "DeadKernelError",
                "the kernel died while running this cell",
                "The kernel died while running this cell (a crash, os._exit, or too much memory).",
                "Not run: the kernel died in an earlier cell.",
            )
        except Exception as exc:
            return self._stop(
                cell,
                type(exc).__name__,
                "the kernel's channel broke",
                "The kernel sent something that is not a Jupyter message; the rest was not run.",
                "Not run: the kernel's channel broke in an earlier cell.",
            )
        if any(
            o.get("output_type") == "error" and o.get("ename") == self.error_on_timeout["ename"]
            for o in cell.get("outputs", [])
        ):
            self._stopped = (
                f"Not run: an earlier cell ran longer than {self.timeout} s, so the rest of this notebook was skipped."
            )
            self._run.timed_out.add(self._student)
        return cell, resources


class SaveAutoGradesSafely(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, except that a test cell whose output nbgrader cannot read as a
    grade (a student's kernel can make a test cell show a number above its points, which nbgrader
    reads as partial credit and rejects) no longer stops the notebook: its score waits at 0 for
    the trusted verdict, which decides every test cell right after."""

    def _add_score(self, cell, resources) -> None:
        try:
            super()._add_score(cell, resources)
        except ValueError:
            grade = self.gradebook.find_grade(
                cell.metadata["nbgrader"]["grade_id"], self.notebook_id, self.assignment_id, self.student_id
            )
            grade.auto_score, grade.needs_manual_grade = 0.0, False
            self.gradebook.db.commit()


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
        _summarise(nb, verdicts, run.seed, run.language(assignment), run.layers)
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
                grade.needs_manual_grade = False  # decided; a teacher's manual_score still wins
                answer = run.course.item(verdict.cell.item).answer_cell
                try:
                    comment = gradebook.find_comment(answer, notebook, assignment, student)
                    comment.auto_comment = verdict.reason or None
                except MissingEntry:
                    pass
            gradebook.db.commit()

    def preprocess_cell(self, cell, resources, index):
        return cell, resources


def _summarise(nb, verdicts: list[Verdict], seed: int, language: str, layers: list[str]) -> None:
    """A grading summary as the notebook's first cell, in the submission's language."""
    from helpers.i18n import _, using

    with using(language):
        lines = [_("## Grading summary"), ""]
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
