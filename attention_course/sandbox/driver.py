"""The trusted grader's sandbox: run a student's definitions on test inputs, hand back numbers.

The grader starts this program confined (`attention_course.confinement.confine`), feeding its source on stdin, so
no file of the grading code is readable from inside:

    python -I - INBOX WORK_DIR < sandbox.py

`INBOX` is the grader's, read-only here and out of reach of the student's kernel (which shares
the workspace and runs at the same time): `INBOX/request.json` names the student's notebooks, the
exercises to run in each and the limits; `INBOX/inputs.npz` holds the test inputs (never expected
results); `INBOX/helpers` are the released helpers the driver and its children import. The
student's output goes to a log in `WORK_DIR`, in the student's workspace. This process,
the driver, never runs student code. For each notebook it forks a child that takes the
notebook's definitions (functions, classes, imports, constants; never test cells or top-level
actions), then calls each exercise on its cases. The child's results come back through a pipe
as plain arrays; the inputs live in memory shared with the driver, which compares them itself
after every call. A child that hangs, dies or grows past its memory cap costs only the
exercise it was running (a fresh child carries on with the next one). Only the driver holds
the channel to the grader (its stdout): the children write to a log file, and the driver is
not dumpable, so they cannot reach its memory or file descriptors. What comes back is data, one
framed message per notebook as soon as that notebook is done (then one that says the run is
over), so the grader can judge a notebook while later ones still run.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import mmap
import os
import resource
import select
import signal
import struct
import sys
import time
from pathlib import Path

import numpy as np

FORBIDDEN_OPS = ("scaled_dot_product", "_native_multi_head_attention", "multi_head_attention")


# --------------------------------------------------------------------------- framing


def _contiguous(array: np.ndarray) -> np.ndarray:
    """`array` in C order with its shape kept (np.ascontiguousarray turns a 0-d array into 1-d)."""
    return np.ascontiguousarray(array).reshape(np.shape(array))


def _send(fd: int, header: dict, arrays: dict[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    header = {**header, "arrays": list(arrays)}
    for array in arrays.values():
        part = io.BytesIO()
        np.lib.format.write_array(part, _contiguous(array), allow_pickle=False)
        data = part.getvalue()
        buffer.write(struct.pack("<Q", len(data)) + data)
    head = json.dumps(header, default=str).encode()
    message = struct.pack("<Q", len(head)) + head + buffer.getvalue()
    view = memoryview(struct.pack("<Q", len(message)) + message)
    while view:
        view = view[os.write(fd, view) :]


class _Reader:
    """Reads framed messages from a child's pipe, with a deadline."""

    def __init__(self, fd: int):
        self.fd, self.buffer = fd, b""

    def read(self, deadline: float, alive) -> tuple[dict, dict] | str:
        """A message, or "eof" / "timeout" / a reason from `alive()`."""
        while True:
            if len(self.buffer) >= 8:
                size = struct.unpack("<Q", self.buffer[:8])[0]
                if len(self.buffer) >= 8 + size:
                    message, self.buffer = self.buffer[8 : 8 + size], self.buffer[8 + size :]
                    return _decode(message)
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.05))
            if ready:
                chunk = os.read(self.fd, 1 << 20)
                if not chunk:
                    return "eof"
                self.buffer += chunk
            else:
                reason = alive()
                if reason:
                    return reason


def _decode(message: bytes) -> tuple[dict, dict]:
    size = struct.unpack("<Q", message[:8])[0]
    header = json.loads(message[8 : 8 + size])
    arrays, at = {}, 8 + size
    for key in header.pop("arrays"):
        length = struct.unpack("<Q", message[at : at + 8])[0]
        arrays[key] = np.lib.format.read_array(io.BytesIO(message[at + 8 : at + 8 + length]), allow_pickle=False)
        at += 8 + length
    return header, arrays


# --------------------------------------------------------------------------- the child


def _plain(value) -> np.ndarray | None:
    """A tensor's numbers as a plain float64 array, whatever class the tensor claims to be."""
    import torch

    if not isinstance(value, torch.Tensor):
        return None
    plain = torch.Tensor._make_subclass(torch.Tensor, value.detach()) if type(value) is not torch.Tensor else value
    return np.array(plain.detach().cpu().to(torch.float64).numpy(), dtype=np.float64, copy=True)


def _child(unit: dict, exercises: list[str], cases: list, specs: dict, fd: int, log: str, cpu_seconds: int) -> None:
    """Runs in the forked child: define the notebook, run the exercises, report case by case."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from helpers.exercises import CALLS, StructureProblem
    from helpers.notebook_code import run_statements

    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    for other in range(3, 1024):  # nothing but the pipe to the driver stays open
        if other not in (fd, out):
            with contextlib.suppress(OSError):
                os.close(other)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    # a Landlock domain of its own (ABI >= 6): the child can no longer signal the driver; without
    # it, killing the driver costs the student the rest of their trusted run, and nobody else anything
    import linux  # the inbox's copy, imported by the driver before it forked

    with contextlib.suppress(OSError, linux.LandlockError):
        linux.landlock_scope_self()

    class OpRecorder(TorchDispatchMode):
        """Notes built-in attention operators as they run (a backstop to the grader's static policy)."""

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False

        def __init__(self):
            super().__init__()
            self.seen: set[str] = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if any(op in str(func) for op in FORBIDDEN_OPS):
                self.seen.add(str(func))
            return func(*args, **(kwargs or {}))

    namespace, errors = run_statements(unit["statements"])
    torch.set_grad_enabled(True)
    for exercise in exercises:
        spec = specs[exercise]
        _send(fd, {"start": exercise, "definition_errors": errors}, {})
        for index, case in cases:
            if case.exercise != exercise:
                continue
            entry = {
                "case": index,
                "defined": exercise in namespace,
                "results": None,
                "dtypes": None,
                "error": None,
                "problem": None,
                "mistake": None,
                "ops": [],
            }
            arrays: dict[str, np.ndarray] = {}
            if entry["defined"]:
                recorder = OpRecorder()
                try:
                    with recorder:
                        results = CALLS[spec["call"]](spec, namespace[exercise], case)
                    entry["results"], entry["dtypes"] = [], []
                    for j, value in enumerate(results):
                        plain = _plain(value)
                        entry["results"].append(type(value).__name__ if plain is None else f"r{j}")
                        entry["dtypes"].append(str(value.dtype) if plain is not None else None)
                        if plain is not None:
                            arrays[f"r{j}"] = plain
                except StructureProblem as problem:
                    entry["problem"], entry["mistake"] = str(problem), problem.mistake
                except BaseException as exc:
                    entry["error"] = [type(exc).__name__, str(exc)[:500]]
                entry["ops"] = sorted(recorder.seen)
            _send(fd, entry, arrays)
    _send(fd, {"done": True}, {})


# --------------------------------------------------------------------------- the driver


def _shared_cases(data, index: list) -> tuple[list, dict, mmap.mmap]:
    """The cases with their input tensors in one shared memory block, and a private copy of it."""
    import torch

    from helpers.exercises import Case

    keys = [(n, name, key) for n, c in enumerate(index) for name, key in c["tensors"].items()]
    arrays = {key: _contiguous(data[key]) for _, _, key in keys}
    total = sum(a.nbytes for a in arrays.values()) or 1
    block = mmap.mmap(-1, total)
    offsets, at = {}, 0
    for key, array in arrays.items():
        block[at : at + array.nbytes] = array.tobytes()
        offsets[key] = (at, array.nbytes)
        at += array.nbytes
    cases = []
    for n, c in enumerate(index):
        tensors = {}
        for name, key in c["tensors"].items():
            start, size = offsets[key]
            view = np.frombuffer(block, dtype=arrays[key].dtype, count=arrays[key].size, offset=start)
            tensors[name] = torch.from_numpy(view.reshape(arrays[key].shape))
        cases.append((n, Case(c["exercise"], c["name"], tensors, c["params"], c["hidden"], c["raises"])))
    return cases, offsets, block


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _cpu_seconds(pid: int) -> float:
    """Processor time (user + system, all threads) a process has used so far."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


# A call may compute for `seconds` of processor time; it may take up to this many times as long on
# the clock, so that a machine busy grading many students at once does not stop an honest one.
WALL_FACTOR = 3


def _why(status: int) -> dict:
    if os.WIFSIGNALED(status):
        return {"kind": "signal", "signal": signal.Signals(os.WTERMSIG(status)).name}
    return {"kind": "exit", "code": os.WEXITSTATUS(status)}


def _preload(modules: list[str], inbox: Path) -> None:
    """Import the course's own modules once, here, so that the children (forks) find them loaded.
    Only library and helper code runs (the helpers come from the grader's inbox). matplotlib
    reads its package's own settings, not a `matplotlibrc` the student's kernel may have left in
    the workspace (it looks in the working folder first, so the driver imports from the inbox),
    and draws without a display."""
    import importlib
    import importlib.util

    spec = importlib.util.find_spec("matplotlib")
    if spec is not None and spec.submodule_search_locations:
        os.environ["MATPLOTLIBRC"] = os.path.join(spec.submodule_search_locations[0], "mpl-data", "matplotlibrc")
    os.environ["MPLBACKEND"] = "agg"
    here = os.getcwd()
    os.chdir(inbox)
    try:
        for name in modules:
            with contextlib.suppress(Exception):
                importlib.import_module(name)
    finally:
        os.chdir(here)


def drive(inbox: Path, work: Path, emit) -> None:
    """Run every unit of the request; `emit(report, arrays)` after each (plain data, arrays)."""
    import torch  # imported once here, before any fork

    torch.set_num_threads(1)  # the cases are small; other students are graded on the other cores

    # The helpers imported here are the inbox's copy, whose course.json the grader wrote from the
    # course it grades (sandbox_run.run_sandbox).
    request = json.loads((inbox / "request.json").read_text())
    _preload(request.get("preload", []), inbox)
    with np.load(inbox / "inputs.npz", allow_pickle=False) as data:
        index = json.loads(str(data["index"]))
        cases, offsets, block = _shared_cases(data, index)
    original = bytes(block)
    gc.freeze()  # the children's collector leaves the modules and cases loaded here alone
    log = str(work / "student_output.txt")
    memory, seconds = int(request["memory"]), float(request["seconds"])
    # Once one exercise has run out of time, the others get a tenth of it (at least 2 s): a loop
    # in a function that later exercises call costs about one time limit in all, not one each.
    limit = [seconds]
    for unit in request["units"]:
        report: dict = {"cases": {}, "exercises": {}}
        arrays_out: dict[str, np.ndarray] = {}
        pending = list(unit["exercises"])
        while pending:
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: never returns
                os.close(read_fd)
                try:
                    _child(unit, pending, cases, request["specs"], write_fd, log, int(limit[0]) * len(pending) + 5)
                    os._exit(0)
                except BaseException:
                    os._exit(70)
            os.close(write_fd)
            reader, current, started, status = _Reader(read_fd), None, time.monotonic(), None
            too_big, cpu_at_start = [], [None]  # processor time when the current exercise started

            def alive(pid: int = pid, too_big: list = too_big, cpu_at_start: list = cpu_at_start) -> str:
                if _rss(pid) > memory:
                    too_big.append(True)
                    os.kill(pid, signal.SIGKILL)
                    return "memory"
                if cpu_at_start[0] is not None and _cpu_seconds(pid) - cpu_at_start[0] > limit[0]:
                    return "timeout"
                return ""

            while True:
                deadline = started + WALL_FACTOR * limit[0] if current else time.monotonic() + 120
                message = reader.read(deadline, alive)
                if isinstance(message, str):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                    _, status = os.waitpid(pid, 0)
                    failed = current or pending[0]
                    reason = (
                        {"kind": "memory", "gib": memory / 2**30}
                        if too_big
                        else {"kind": "timeout", "seconds": limit[0]}
                        if message == "timeout"
                        else _why(status)
                    )
                    report["exercises"][failed] = {"failed": reason}
                    if reason["kind"] == "timeout":
                        limit[0] = min(limit[0], max(2.0, seconds / 10))
                    pending = pending[pending.index(failed) + 1 :]
                    break
                header, arrays = message
                if header.get("done"):
                    os.waitpid(pid, 0)
                    pending = []
                    break
                if "start" in header:
                    current, started = header["start"], time.monotonic()
                    cpu_at_start[0] = _cpu_seconds(pid)
                    report["exercises"][current] = {"definition_errors": header["definition_errors"]}
                    continue
                n = header["case"]
                changed = [
                    name
                    for name, key in index[n]["tensors"].items()
                    if block[offsets[key][0] : sum(offsets[key])] != original[offsets[key][0] : sum(offsets[key])]
                ]
                header["changed_inputs"] = changed
                for name in changed:  # the next child starts from the inputs as they were
                    start, size = offsets[index[n]["tensors"][name]]
                    block[start : start + size] = original[start : start + size]
                report["cases"][str(n)] = header
                for key, array in arrays.items():
                    arrays_out[f"c{n}/{key}"] = array
            os.close(read_fd)
        emit(report, arrays_out)


def read_frames(stream):
    """The messages a driver wrote on `stream` (a binary file), in order, until it ends."""
    while True:
        head = stream.read(8)
        if len(head) < 8:
            return
        message = stream.read(struct.unpack("<Q", head)[0])
        yield _decode(message)


def main() -> None:
    inbox, work = Path(sys.argv[1]), Path(sys.argv[2])
    sys.path.insert(0, str(inbox))
    import linux  # attention_course/confinement/linux.py, which the grader puts in the inbox

    linux.not_dumpable()
    channel = sys.stdout.fileno()
    drive(inbox, work, lambda report, arrays: _send(channel, {"report": report}, arrays))
    _send(channel, {"done": True}, {})


if __name__ == "__main__":
    main()
