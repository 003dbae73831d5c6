"""nbgrader's Execute, with every kernel confined to the student's workspace."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import nbformat
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbgrader.preprocessors import Execute

from attention_course.confinement import confine
from helpers.i18n import _, using

from ..kernel import IOPUB_WAIT, KERNEL_NAME, MAX_MESSAGE, ConfinedKernelSpecManager, close_everything
from ..sandbox_run import ConfinementFailed
from .run import ids_of, run_of

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
        run = run_of(self)
        student, assignment, notebook = ids_of(resources)
        run.start_trusted(student, assignment)
        self._workspace = run.workspace(student, assignment)
        self._policy = run.root / "build" / "grading" / "kernels" / f"{uuid.uuid4().hex}.json"
        self._policy.parent.mkdir(parents=True, exist_ok=True)
        confine.write_policy(self._workspace.policy(run.settings, run.layers), str(self._policy))
        # whose status says why a kernel did not start: its own supervisor's, or the warm starter's
        warm = self._workspace.warm
        self._supervisor_policy = warm.policy_path if warm is not None else str(self._policy)
        self.kernel_name = KERNEL_NAME
        self.shutdown_kernel = "immediate"  # by a signal to the supervisor, never over the channel
        self.iopub_timeout = IOPUB_WAIT
        self._language = run.language(assignment)
        self._run, self._student = run, (student, assignment)
        self._timeout = (
            run.settings.cell_timeout
            if self._student not in run.timed_out
            else min(run.settings.cell_timeout, max(5, run.settings.cell_timeout // 10))
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
                    "warm": self._workspace.warm,
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
        if process is not None:
            confine.stop(process)  # the supervisor (or warm starter) kills the confined tree at once
        close_everything(km, kc)

    def output(self, outs, msg, display_id, cell_index):
        """nbclient's, with the outputs bounded: at most CELL_OUTPUT bytes a cell and
        NOTEBOOK_OUTPUT a notebook; past that, one line says what was left out."""
        before = len(outs)
        out = super().output(outs, msg, display_id, cell_index)
        for added in list(outs[before:]):
            size = len(json.dumps(added))
            used = self._cell_output.get(cell_index, 0) + size
            self._notebook_output += size
            self._cell_output[cell_index] = used
            if used > CELL_OUTPUT or self._notebook_output > NOTEBOOK_OUTPUT:
                # this very output (an earlier one can be equal to it, and stays)
                del outs[next(i for i, o in enumerate(outs) if o is added)]
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
        process = self.km.provisioner.process if self.km.provisioner is not None else None
        for _attempt in range(50):
            if process is None or process.poll() is not None:
                break
            time.sleep(0.1)
        status = confine.read_status(self._supervisor_policy) or {}
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
