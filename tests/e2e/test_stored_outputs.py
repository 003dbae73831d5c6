"""Each source notebook of every edition, run top to bottom, reproduces its stored outputs (nbval).

nbval runs in its own pytest process per notebook: the suite's pytest.ini (xdist workers and other
addopts) does not apply there (``-c /dev/null``). The notebooks come from the manifest.
"""

from __future__ import annotations

import sys

import pytest

from attention_course.model.manifest import load
from conftest import REPO, describe, run

pytestmark = pytest.mark.slow
COURSE = load()
NOTEBOOKS = [(e.name, nb) for e in COURSE.editions for nb in COURSE.notebooks]


@pytest.mark.parametrize("edition,notebook", NOTEBOOKS, ids=[f"{e}-{nb}" for e, nb in NOTEBOOKS])
def test_stored_outputs(edition, notebook):
    path = COURSE.source_notebook(notebook, edition)
    proc = run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            "/dev/null",
            "--rootdir",
            REPO,
            "-o",
            "addopts=",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            "--color=no",
            "--nbval",
            "--nbval-current-env",
            path.relative_to(REPO),
        ],
        cwd=REPO,
        timeout=900,
    )
    assert proc.returncode == 0, describe(proc)
