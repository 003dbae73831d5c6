"""`plugins.execute.ConfinedExecute`, without a kernel: what happens after a cell runs out of time (and goes
on after its interrupt), the kernel dies, its output stops arriving or its channel breaks (the cell says why,
the rest of the notebook is not run and says why, in the submission's language); a student's time budget
(each cell's limit is what is left of it, and once it is spent nothing more runs); the shorter limit of a
student whose code already ran out of time; the retries of a kernel that does not start (and the fault when
it never does); the policy file's life; the bound on a cell's and a notebook's output; and how a kernel's
start that failed is told from a confinement that cannot be set up (the supervisor's status file).

The kernel is replaced by `KernelStandIn`, placed between ConfinedExecute and nbgrader's Execute in the
class hierarchy, so ConfinedExecute's own code runs and only "execute this cell on a kernel" is scripted
(by the cell's source). The conversion's Run is a stand-in with real `Grading` settings (a real Run probes
confinement and makes folders).
"""

from __future__ import annotations

import json
import time
import types
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbgrader.preprocessors import Execute
from traitlets.config import Configurable

from attention_course.confinement import confine
from attention_course.grading.kernel import KERNEL_NAME
from attention_course.grading.plugins import execute
from attention_course.grading.plugins.execute import CELL_OUTPUT, NOTEBOOK_OUTPUT, OUTPUT_CUT, ConfinedExecute
from attention_course.grading.sandbox_run import ConfinementFailed
from attention_course.grading.settings import Grading

STUDENT = ("ada", "attention")


class KernelStandIn(Execute):
    """Runs a notebook without a kernel: each code cell does what its source says."""

    start_failures = 0  # how many times the kernel "does not start"
    start_error: type[BaseException] = RuntimeError

    def preprocess(self, nb, resources=None, km=None):
        self.nb, self.resources = nb, resources
        self.policy_seen = json.loads(Path(self._policy).read_text())
        if self.start_failures:
            self.start_failures -= 1
            raise self.start_error("the kernel did not start")
        for index, cell in enumerate(nb.cells):
            self.preprocess_cell(cell, resources, index)
            if cell.source == "fail after":
                raise RuntimeError("the channel failed between cells")
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        self.ran.append((cell.source, self.timeout))
        if cell.source == "die":
            raise DeadKernelError("Kernel died")
        if cell.source == "endless loop, interrupt caught":
            self._interrupted = True  # what _async_handle_timeout records
            raise CellTimeoutError("Cell execution timed out")
        if cell.source == "output never arrives":
            raise CellTimeoutError("Timeout waiting for IOPub output")
        if cell.source == "garbage":
            raise ValueError("not a Jupyter message")
        if cell.source == "slow":  # interrupted at its limit: nbgrader records error_on_timeout
            cell.outputs = [nbformat.v4.new_output("error", **self.error_on_timeout)]
        if cell.source == "sleep":
            time.sleep(0.05)
        if cell.source != "slow":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"ran {cell.source}\n")]
        return cell, resources


class Scripted(ConfinedExecute, KernelStandIn):
    """ConfinedExecute over the stand-in kernel: super() in ConfinedExecute reaches KernelStandIn."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.ran = []


class WorkspaceStandIn:
    warm = None  # a kernel of its own, not one forked from a warm starter

    def __init__(self, folder: Path):
        self.folder = folder

    def policy(self, settings, layers):
        return confine.Policy(read=[], write=[str(self.folder)], cwd=str(self.folder), env={}, layers=list(layers))


class RunStandIn:
    """What ConfinedExecute asks of the conversion's Run; records faults and the trusted jobs started."""

    layers = ["bwrap"]

    def __init__(self, root: Path, language: str = "en", **settings):
        self.root = root
        self.settings = Grading(**settings)
        self.timed_out: set[tuple[str, str]] = set()
        self.spent: dict[tuple[str, str], float] = {}
        self.faults, self.started = [], []
        self._language = language

    def start_trusted(self, student, assignment):
        self.started.append((student, assignment))

    def workspace(self, student, assignment):
        return WorkspaceStandIn(self.root)

    def language(self, assignment):
        return self._language

    def fault(self, student, assignment, notebook, kind, text):
        self.faults.append((notebook, kind, text))


class Conversion(Configurable):
    grading_run = None


def grade(run: RunStandIn, sources, start_failures: int = 0, start_error=RuntimeError):
    """ConfinedExecute on a notebook of code cells (markdown for a source starting with '#'); the
    notebook, the executor."""
    cells = [nbformat.v4.new_markdown_cell(s) if s.startswith("#") else nbformat.v4.new_code_cell(s) for s in sources]
    nb = nbformat.v4.new_notebook(cells=cells)
    parent = Conversion()
    parent.grading_run = run
    executor = Scripted(parent=parent)
    executor.start_failures, executor.start_error = start_failures, start_error
    resources = {"nbgrader": {"student": STUDENT[0], "assignment": STUDENT[1], "notebook": "01_scaling_problem"}}
    nb, _resources = executor.preprocess(nb, resources)
    return nb, executor


def said(cell) -> str:
    """What a cell's outputs say: a stream's text, an error's name, value and traceback."""
    parts = []
    for o in cell.get("outputs", []):
        parts.append(o.get("text", "") if o.output_type == "stream" else f"{o.ename}|{o.evalue}|{''.join(o.traceback)}")
    return "\n".join(parts)


# ----------------------------------------------------------------------------------- after a cell fails


def test_cells_run_in_order_with_the_course_time_limit(tmp_path):
    run = RunStandIn(tmp_path, cell_timeout=120)
    nb, executor = grade(run, ["a = 1", "# notes", "b = 2"])
    assert executor.ran == [("a = 1", 120), ("b = 2", 120)]
    assert said(nb.cells[2]) == "ran b = 2\n" and run.faults == [] and run.started == [STUDENT]
    assert executor.kernel_name == KERNEL_NAME and executor.shutdown_kernel == "immediate"


def test_after_the_kernel_dies_the_cell_says_so_and_the_rest_is_not_run(tmp_path):
    run = RunStandIn(tmp_path)
    nb, executor = grade(run, ["a = 1", "die", "b = 2", "# notes", "", "c = 3"])
    assert [source for source, _ in executor.ran] == ["a = 1", "die"]
    assert nb.cells[1].outputs[-1].ename == "DeadKernelError"
    assert "The kernel died while running this cell" in said(nb.cells[1])
    for index in (2, 5):
        assert nb.cells[index].outputs == [
            nbformat.v4.new_output("stream", name="stderr", text="Not run: the kernel died in an earlier cell.\n")
        ]
    assert nb.cells[4].outputs == [] and nb.cells[3].cell_type == "markdown"  # an empty cell: nothing to say
    assert run.timed_out == set() and run.faults == []


def test_a_cell_that_goes_on_after_its_interrupt_stops_the_notebook_and_shortens_later_limits(tmp_path):
    run = RunStandIn(tmp_path, cell_timeout=40)
    nb, executor = grade(run, ["endless loop, interrupt caught", "b = 2"])
    assert "CellTimeoutError|the cell went on after its interrupt|" in said(nb.cells[0])
    assert "ran longer than 40 s and went on running after it was interrupted" in said(nb.cells[0])
    assert said(nb.cells[1]) == "Not run: an earlier cell ran longer than 40 s and could not be interrupted.\n"
    assert STUDENT in run.timed_out
    # the next notebook of the same student: a tenth of the limit (at least 5 s)
    _nb, executor = grade(run, ["c = 3"])
    assert executor.ran == [("c = 3", 5)]


def test_a_student_who_timed_out_gets_a_tenth_of_a_long_limit(tmp_path):
    run = RunStandIn(tmp_path, cell_timeout=120)
    run.timed_out.add(STUDENT)
    _nb, executor = grade(run, ["a = 1"])
    assert executor.ran == [("a = 1", 12)]


def test_a_cell_interrupted_at_its_limit_skips_the_rest_of_the_notebook(tmp_path):
    run = RunStandIn(tmp_path, cell_timeout=30)
    nb, executor = grade(run, ["slow", "b = 2"])
    assert [source for source, _ in executor.ran] == ["slow"]
    assert said(nb.cells[1]) == (
        "Not run: an earlier cell ran longer than 30 s, so the rest of this notebook was skipped.\n"
    )
    assert STUDENT in run.timed_out


def test_output_that_stops_arriving_is_not_counted_as_the_students_timeout(tmp_path):
    run = RunStandIn(tmp_path)
    nb, _executor = grade(run, ["output never arrives", "b = 2"])
    assert "CellTimeoutError|the kernel's output stopped arriving|" in said(nb.cells[0])
    assert "a message over 16 MiB is dropped" in said(nb.cells[0])
    assert said(nb.cells[1]) == "Not run: the kernel's output stopped arriving in an earlier cell.\n"
    assert run.timed_out == set()


def test_a_broken_channel_stops_the_notebook_with_the_exceptions_name(tmp_path):
    run = RunStandIn(tmp_path)
    nb, _executor = grade(run, ["garbage", "b = 2"])
    assert said(nb.cells[0]).startswith("ValueError|the kernel's channel broke|The kernel sent something")
    assert said(nb.cells[1]) == "Not run: the kernel's channel broke in an earlier cell.\n"


def test_what_a_stopped_notebook_says_is_in_the_submissions_language(tmp_path):
    run = RunStandIn(tmp_path, language="zh-CN")
    nb, _executor = grade(run, ["die", "b = 2"])
    assert "内核" in said(nb.cells[0]) and said(nb.cells[1]) == "未运行：内核在前面的单元格中终止了。\n"


# ----------------------------------------------------------------------------------- the student's time budget


def test_a_cells_limit_is_what_is_left_of_the_students_budget(tmp_path):
    run = RunStandIn(tmp_path, cell_timeout=120, student_seconds=100.0)
    run.spent[STUDENT] = 90.5
    _nb, executor = grade(run, ["a = 1"])
    assert executor.ran == [("a = 1", 10)]  # 9.5 s left, rounded up
    assert run.spent[STUDENT] > 90.5


def test_once_the_budget_is_spent_no_more_code_runs_and_each_cell_says_why(tmp_path):
    run = RunStandIn(tmp_path, student_seconds=60.0)
    run.spent[STUDENT] = 60.0
    nb, executor = grade(run, ["a = 1", "# notes", "b = 2"])
    assert executor.ran == []
    why = "Not run: this student's grading time (60 s in all) ran out.\n"
    assert said(nb.cells[0]) == why and said(nb.cells[2]) == why and "outputs" not in nb.cells[1]
    assert run.faults == []


def test_the_time_a_cell_takes_is_added_to_the_students_spending(tmp_path):
    run = RunStandIn(tmp_path)
    grade(run, ["sleep", "sleep"])
    assert 0.1 <= run.spent[STUDENT] < 30


# ----------------------------------------------------------------------------------- a kernel that does not start


def test_a_kernel_that_does_not_start_is_tried_again(tmp_path):
    run = RunStandIn(tmp_path)
    nb, executor = grade(run, ["a = 1"], start_failures=2)
    assert said(nb.cells[0]) == "ran a = 1\n" and run.faults == []


def test_a_kernel_that_never_starts_is_the_graders_fault_and_the_cells_stay_unrun(tmp_path):
    run = RunStandIn(tmp_path)
    nb, executor = grade(run, ["a = 1"], start_failures=execute.KERNEL_ATTEMPTS)
    assert executor.ran == [] and nb.cells[0].outputs == []
    [(notebook, kind, text)] = run.faults
    assert (notebook, kind) == ("01_scaling_problem", "grader")
    assert f"did not start in {execute.KERNEL_ATTEMPTS} attempts" in text and "the kernel did not start" in text


def test_a_channel_that_fails_after_student_code_ran_is_not_retried(tmp_path):
    run = RunStandIn(tmp_path)
    nb, executor = grade(run, ["a = 1", "fail after", "c = 3"])
    assert [source for source, _ in executor.ran] == ["a = 1", "fail after"]  # once: no second attempt
    assert said(nb.cells[0]) == "ran a = 1\n" and nb.cells[2].outputs == []
    assert run.faults == []


def test_a_confinement_that_cannot_be_set_up_is_recorded_and_stops_the_student(tmp_path):
    run = RunStandIn(tmp_path)
    with pytest.raises(ConfinementFailed):
        grade(run, ["a = 1"], start_failures=1, start_error=ConfinementFailed)
    assert [(kind, text) for _nb, kind, text in run.faults] == [("confinement", "the kernel did not start")]


def test_the_kernels_policy_is_the_workspaces_and_is_removed_afterwards(tmp_path):
    run = RunStandIn(tmp_path)
    _nb, executor = grade(run, ["a = 1"])
    assert executor.policy_seen["write"] == [str(tmp_path)] and executor.policy_seen["layers"] == ["bwrap"]
    assert list((tmp_path / "build" / "grading" / "kernels").iterdir()) == []


def test_why_a_kernel_did_not_start_comes_from_the_supervisors_status(tmp_path):
    executor = ConfinedExecute()
    executor.km = types.SimpleNamespace(provisioner=None)  # it never got as far as a process
    executor._supervisor_policy = str(tmp_path / "policy.json")  # its own, or the warm starter's
    executor._why_not_started()  # no status: nothing to say, the start's own error stands
    status = Path(confine.status_path(executor._supervisor_policy))
    status.write_text(json.dumps({"outcome": "exited", "layer": "", "reason": "", "code": 1}))
    executor._why_not_started()
    status.write_text(json.dumps({"outcome": "unavailable", "layer": "bwrap", "reason": "no user namespaces"}))
    with pytest.raises(ConfinementFailed, match=r"could not be confined \(bwrap: no user namespaces\)"):
        executor._why_not_started()


# ----------------------------------------------------------------------------------- bounded output


def _streamed(executor, outs, text: str, cell_index: int):
    message = {
        "msg_type": "stream",
        "header": {"msg_type": "stream"},
        "parent_header": {"msg_id": "m"},
        "content": {"name": "stdout", "text": text},
    }
    executor.output(outs, message, None, cell_index)


def _bounded_executor() -> ConfinedExecute:
    executor = ConfinedExecute()
    executor.clear_before_next_output = False
    executor._cell_output, executor._notebook_output = {}, 0
    return executor


def test_a_cells_output_is_cut_past_its_bound_with_one_line_saying_so():
    executor = _bounded_executor()
    outs = []
    for k in range(5):
        _streamed(executor, outs, f"{k}" * (CELL_OUTPUT // 3), 0)
    assert [o.text[0] for o in outs[:-1]] == ["0", "1"]  # the third would pass 2 MiB
    assert outs[-1].text.startswith(OUTPUT_CUT) and "2 MiB" in outs[-1].text and "16 MiB" in outs[-1].text
    other = []
    _streamed(executor, other, "another cell", 1)  # a cell of its own bound
    assert [o.text for o in other] == ["another cell"]


def test_a_notebooks_output_is_cut_past_its_bound():
    executor = _bounded_executor()
    cells = [[] for _ in range(NOTEBOOK_OUTPUT // (CELL_OUTPUT // 2) + 2)]
    for index, outs in enumerate(cells):
        _streamed(executor, outs, f"{index % 10}" * (CELL_OUTPUT // 2), index)
    kept = [index for index, outs in enumerate(cells) if not outs[-1].text.startswith(OUTPUT_CUT)]
    assert kept == list(range(len(kept))) and len(kept) == NOTEBOOK_OUTPUT // (CELL_OUTPUT // 2) - 1
    assert all(outs[-1].text.startswith(OUTPUT_CUT) and len(outs) == 1 for outs in cells[len(kept) :])


def test_the_output_cut_is_the_one_just_added_even_when_an_earlier_one_is_equal():
    executor = _bounded_executor()
    outs = []
    for _ in range(4):
        _streamed(executor, outs, "x" * (CELL_OUTPUT // 3), 0)
    assert [o.text[0] for o in outs] == ["x", "x", OUTPUT_CUT[0]]
    assert outs[-1].text.startswith(OUTPUT_CUT), "the line saying what was left out comes last"


def test_a_request_off_the_loop_returns_raises_and_leaves_no_thread():
    import asyncio
    import threading

    from attention_course.grading.kernel import in_own_thread

    def fails():
        raise LookupError("from the thread")

    async def both():
        assert await in_own_thread(lambda a, b: (a, b, threading.current_thread().name), 1, 2) == (1, 2, "warm-request")
        with pytest.raises(LookupError, match="from the thread"):
            await in_own_thread(fails)

    before = set(threading.enumerate())
    asyncio.run(both())
    assert set(threading.enumerate()) <= before
