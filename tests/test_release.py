"""The committed student release (notebooks/attention) is exactly what nbgrader makes of source/.

nbgrader regenerates the release in a private copy of the course; the committed folder must match
it file for file and byte for byte, so nobody can edit the release by hand or forget
``make release`` after changing source/.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from conftest import REPO, copy_course, describe, run

RELEASE = Path("notebooks") / "attention"
SKIP_PARTS = {"__pycache__", ".ipynb_checkpoints"}


def tree(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file under root, without caches."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not SKIP_PARTS.intersection(rel.parts) and path.suffix != ".pyc":
            files[rel.as_posix()] = path.read_bytes()
    return files


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """notebooks/attention as `nbgrader generate_assignment` writes it from the current source/."""
    copy = copy_course(tmp_path_factory.mktemp("release") / "course")
    proc = run(["nbgrader", "generate_assignment", "attention", "--force"], cwd=copy)
    assert proc.returncode == 0, describe(proc)
    release = copy / RELEASE
    assert release.is_dir(), f"nbgrader wrote no {RELEASE}\n{describe(proc)}"
    return release


def release_notebooks(release: Path) -> list[Path]:
    notebooks = sorted(release.glob("*.ipynb"))
    assert notebooks, f"no notebooks in {release}"
    return notebooks


def test_committed_release_matches_source(generated: Path):
    committed = REPO / RELEASE
    assert committed.is_dir(), f"{RELEASE} is missing: run make release"
    want, have = tree(generated), tree(committed)
    missing = sorted(set(want) - set(have))
    extra = sorted(set(have) - set(want))
    changed = sorted(name for name in set(want) & set(have) if want[name] != have[name])
    lines = []
    lines += [f"  missing from {RELEASE}: {name}" for name in missing]
    lines += [f"  not made by nbgrader:   {name}" for name in extra]
    lines += [f"  differs from source/:   {name}" for name in changed]
    assert not lines, (f"{RELEASE} is out of sync with source/attention; run make release\n"
                       + "\n".join(lines))


def test_release_has_no_solutions_or_hidden_tests(generated: Path):
    leaks = []
    for nb in release_notebooks(generated):
        text = nb.read_text(encoding="utf-8")
        for marker in ("### BEGIN SOLUTION", "BEGIN HIDDEN TESTS"):
            if marker in text:
                leaks.append(f"{nb.name}: contains {marker!r}")
    assert not leaks, "\n".join(leaks)


def test_release_answer_cells_are_stubs(generated: Path):
    """Every autograded answer cell (nbgrader solution code cell) is nbgrader's stub."""
    problems, answers = [], 0
    for path in release_notebooks(generated):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if not meta.get("solution") or cell.cell_type != "code":
                continue
            answers += 1
            if "raise NotImplementedError" not in cell.source:
                problems.append(f"{path.name}: answer cell {meta.get('grade_id')!r} has no "
                                f"`raise NotImplementedError`:\n{cell.source}")
    assert not problems, "\n\n".join(problems)
    assert answers > 0, "the release has no autograded answer cells at all"
