"""The instructor's solutions, read from the source notebooks (the single place they live)."""
from __future__ import annotations

import functools
import re

from helpers.exercises import EXERCISES
from helpers.notebook_code import cell_source, read_notebook, run_statements

from . import SOURCE


def notebook_path(exercise: str):
    """The source notebook that holds an exercise."""
    return SOURCE / f"{EXERCISES[exercise].notebook}.ipynb"


def solution_source(exercise: str) -> str:
    """The answer cell of an exercise, as written in the source notebook (solution markers removed)."""
    pattern = re.compile(rf"^(def|class) {re.escape(exercise)}\b", re.MULTILINE)
    for cell in read_notebook(notebook_path(exercise))["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        source = cell_source(cell)
        if meta.get("solution") and pattern.search(source):
            return "\n".join(line for line in source.splitlines()
                             if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")) + "\n"
    raise LookupError(f"No answer cell defines {exercise} in {notebook_path(exercise).name}.")


PRELUDE = "import math\nimport torch\nfrom torch import nn\nimport torch.nn.functional as F\n"


def define(source: str, name: str):
    """Run one answer cell's source with the course's usual imports and return what it defines."""
    namespace, errors = run_statements([PRELUDE, source])
    if errors:
        raise RuntimeError(f"Defining {name} failed: {errors}")
    return namespace[name]


@functools.lru_cache(maxsize=None)
def reference(exercise: str):
    """The reference solution of an exercise: a function or a class."""
    return define(solution_source(exercise), exercise)
