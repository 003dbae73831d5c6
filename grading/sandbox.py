"""Run a student's definitions on test inputs in a fresh process, and hand back plain numbers.

    python -m grading.sandbox REQUEST_DIR

The grader writes `REQUEST_DIR/request.json` (units: the notebooks to read, each with its
source notebook, its slice of the cases and the names of values to report) and `REQUEST_DIR/inputs.npz` (test inputs only, no expected results). This
process takes the notebook's definitions (functions, classes, imports and constants, via `ast`;
never the test cells, never top-level actions), calls them on the inputs and writes
`REQUEST_DIR/outputs.npz`: results as plain arrays, and a JSON index of errors, problems,
changed inputs and forbidden built-ins seen at run time. Nothing the student's code does here
can reach the grader: the grader compares these numbers with its own reference, in its own
process. The grader also limits this process's time and memory.
"""
from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
from pathlib import Path

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import SOURCE  # noqa: F401  (puts the trusted helpers on sys.path)
from helpers.exercises import EXERCISES, Case, run_case  # noqa: E402
from helpers.notebook_code import course_cell_sources, notebook_statements, read_notebook, run_statements  # noqa: E402

FORBIDDEN_OPS = ("scaled_dot_product", "_native_multi_head_attention", "multi_head_attention")


class OpRecorder(TorchDispatchMode):
    """Records the names of the ATen operators that run, to see built-in attention however it is reached."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nothing is compiled here, so torch need not wrap this mode for TorchDynamo; the
        # wrapping would import torch._dynamo (2-3 s) in every sandbox.
        return False

    def __init__(self):
        super().__init__()
        self.seen: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        if any(op in name for op in FORBIDDEN_OPS):
            self.seen.add(name)
        return func(*args, **(kwargs or {}))


class ForbiddenBuiltIn(Exception):
    """Raised in place of a built-in that an exercise forbids."""


class Traps:
    """Make nn.MultiheadAttention unusable while an exercise that forbids it runs."""

    def __init__(self):
        self.used: set[str] = set()
        self.saved = (torch.nn.MultiheadAttention.forward, torch.nn.functional.multi_head_attention_forward)

    def _trapped(self, *args, **kwargs):
        self.used.add("nn.MultiheadAttention")
        raise ForbiddenBuiltIn("nn.MultiheadAttention is not allowed in this exercise")

    def __enter__(self):
        torch.nn.MultiheadAttention.forward = self._trapped
        torch.nn.functional.multi_head_attention_forward = self._trapped
        return self

    def __exit__(self, *exc):
        torch.nn.MultiheadAttention.forward, torch.nn.functional.multi_head_attention_forward = self.saved


def _plain(value) -> np.ndarray | None:
    """A tensor's numbers as a plain float64 array, whatever class the tensor claims to be."""
    if not isinstance(value, torch.Tensor):
        return None
    plain = torch.Tensor._make_subclass(torch.Tensor, value.detach()) if type(value) is not torch.Tensor else value
    return np.array(plain.detach().cpu().to(torch.float64).numpy(), dtype=np.float64, copy=True)


def _run_one(i: int, case: Case, namespace: dict, traps, arrays: dict) -> dict:
    """Run one case; its results go into `arrays`, everything else into the returned entry."""
    entry = {"defined": case.exercise in namespace, "results": None, "error": None, "problem": None,
             "mistake": None, "changed_inputs": [], "forbidden": []}
    if not entry["defined"]:
        return entry
    recorder = OpRecorder()
    if traps is not None:
        traps.used.clear()
    try:
        with recorder:
            outcome = run_case(namespace[case.exercise], case)
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends included
        outcome = None
        entry["error"] = (type(exc).__name__, str(exc)[:500])
    if outcome is not None:
        entry.update(error=outcome.error, problem=outcome.problem, mistake=outcome.mistake,
                     changed_inputs=outcome.changed_inputs)
        if outcome.results is not None:
            keys = []
            for j, value in enumerate(outcome.results):
                plain = _plain(value)
                keys.append(type(value).__name__ if plain is None else f"c{i}/r{j}")
                if plain is not None:
                    arrays[keys[-1]] = plain
            entry["results"] = keys
            entry["dtypes"] = [str(v.dtype) if isinstance(v, torch.Tensor) else None for v in outcome.results]
    if EXERCISES[case.exercise].forbidden:
        entry["forbidden"] = sorted(recorder.seen | (traps.used if traps is not None else set()))
    return entry


def run(request_dir: Path) -> None:
    request = json.loads((request_dir / "request.json").read_text())
    limit_s = int(request.get("cpu_seconds", 60))
    resource.setrlimit(resource.RLIMIT_CPU, (limit_s, limit_s + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # The student's prints and warnings go to a file, never into our answer.
    log = open(request_dir / "student_output.txt", "w")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)

    with np.load(request_dir / "inputs.npz", allow_pickle=False) as data:
        index = json.loads(str(data["index"]))
        cases = [Case(c["exercise"], c["name"], {k: torch.from_numpy(np.array(data[v])) for k, v in c["tensors"].items()},
                      c["params"], c["hidden"], c["raises"]) for c in index]

    (request_dir / "started").touch()  # the time limit counts from here: the student's code begins
    arrays: dict[str, np.ndarray] = {}
    report = {"units": [], "cases": []}
    for unit in request["units"]:
        own = cases[unit["first"]:unit["first"] + unit["count"]]
        forbidden = any(EXERCISES[c.exercise].forbidden for c in own)
        with (Traps() if forbidden else contextlib.nullcontext()) as traps:
            # Each notebook's definitions in a namespace of its own, as in its own kernel.
            course = read_notebook(unit["source"])
            statements = notebook_statements(read_notebook(unit["notebook"]), course_cell_sources(course))
            namespace, definition_errors = run_statements(statements)
            torch.set_grad_enabled(True)
            values = {}
            for name in unit["values"]:
                value = namespace.get(name)
                values[name] = value if isinstance(value, (str, int, float, bool)) or value is None else repr(value)
            report["units"].append({"definition_errors": definition_errors, "values": values})
            for i, case in enumerate(own, start=unit["first"]):
                report["cases"].append(_run_one(i, case, namespace, traps, arrays))
    arrays["report"] = np.array(json.dumps(report, default=str))
    np.savez(request_dir / "outputs.npz", **arrays)


if __name__ == "__main__":
    run(Path(sys.argv[1]))
