"""Each source notebook, run top to bottom, reproduces its stored outputs (nbval).

nbval runs in its own pytest process per notebook: the suite's pytest.ini (xdist workers and other
addopts) does not apply there (``-c /dev/null``), and a notebook added to source/attention is
picked up by the glob.
"""
from __future__ import annotations

import sys

import nbformat
import pytest

from conftest import REPO, describe, run

NOTEBOOKS = sorted(REPO.glob("source/attention/0*.ipynb"))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_stored_outputs(notebook):
    proc = run([sys.executable, "-m", "pytest", "-c", "/dev/null", "--rootdir", REPO,
                "-o", "addopts=", "-p", "no:xdist", "-p", "no:cacheprovider",
                "--color=no", "--nbval", "--nbval-current-env", notebook.relative_to(REPO)],
               cwd=REPO, timeout=900)
    if proc.returncode == 5 and not has_code(notebook):
        return  # pytest: "no tests ran"; a notebook of Markdown only has no outputs to compare
    assert proc.returncode == 0, describe(proc)


def has_code(notebook) -> bool:
    nb = nbformat.read(notebook, as_version=4)
    return any(cell.cell_type == "code" and cell.source.strip() for cell in nb.cells)
