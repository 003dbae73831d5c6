"""The committed student releases are exactly what nbgrader makes of source/, without solutions.

nbgrader regenerates each edition's release in a private copy of the course; the committed folder
must match it file for file and byte for byte, so nobody can edit a release by hand or forget
`make release` after changing source/. The release of a question is a line to fill in.
"""

from __future__ import annotations

import nbformat
import pytest

from attention_course.model.manifest import load
from conftest import REPO, copy_course, describe, run
from helpers.casefile import load_cases
from helpers.cells import find_cell

pytestmark = pytest.mark.slow
COURSE = load()
EDITIONS = [e.name for e in COURSE.editions]
SKIP_PARTS = {"__pycache__", ".ipynb_checkpoints"}


def tree(root) -> dict[str, bytes]:
    """Relative path -> bytes of every file under root, without caches."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not SKIP_PARTS.intersection(p.relative_to(root).parts) and p.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Each edition's release as `nbgrader generate_assignment` writes it from the current source/."""
    copy = copy_course(tmp_path_factory.mktemp("release") / "course")
    course = load(copy)
    for edition in course.editions:
        proc = run(["nbgrader", "generate_assignment", edition.assignment, "--force"], cwd=copy)
        assert proc.returncode == 0, describe(proc)
    return course


@pytest.mark.parametrize("edition", EDITIONS)
def test_committed_release_matches_source(generated, edition):
    want, have = tree(generated.release_dir(edition)), tree(COURSE.release_dir(edition))
    lines = [f"  missing: {n}" for n in sorted(set(want) - set(have))]
    lines += [f"  not made by nbgrader: {n}" for n in sorted(set(have) - set(want))]
    lines += [f"  differs from source/: {n}" for n in sorted(set(want) & set(have)) if want[n] != have[n]]
    assert not lines, f"{COURSE.release_dir(edition).relative_to(REPO)} is out of sync; run make release\n" + "\n".join(
        lines
    )


@pytest.mark.parametrize("edition", EDITIONS)
def test_release_has_no_solutions_hidden_tests_or_hidden_cases(generated, edition):
    release = generated.release_dir(edition)
    for nb in release.glob("*.ipynb"):
        text = nb.read_text(encoding="utf-8")
        for marker in ("### BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True"):
            assert marker not in text, f"{nb.name}: contains {marker!r}"
    assert not any(case.hidden for case in load_cases(generated.data_dir / "check_cases.npz"))


@pytest.mark.parametrize("edition", EDITIONS)
def test_answer_cells_are_stubs_and_questions_are_a_line_to_fill_in(generated, edition):
    for item in COURSE.items:
        nb = nbformat.read(generated.release_dir(edition) / f"{item.notebook}.ipynb", as_version=4)
        cell = find_cell(nb, item.answer_cell)
        if item.is_choice:
            assert cell.source.startswith(f'{item.variable} = ""'), cell.source
        elif item.is_numeric:
            assert cell.source.startswith(f"{item.variable} = None"), cell.source
        else:
            assert "raise NotImplementedError()" in cell.source, cell.source
