"""ruff (lint and format) is clean over the repository, as pre-commit keeps it."""

from __future__ import annotations

from conftest import REPO, VENV_BIN, describe, run


def test_ruff_check_is_clean():
    proc = run([VENV_BIN / "ruff", "check", "."], cwd=REPO, timeout=120)
    assert proc.returncode == 0, describe(proc)


def test_ruff_format_is_clean():
    proc = run([VENV_BIN / "ruff", "format", "--check", "."], cwd=REPO, timeout=120)
    assert proc.returncode == 0, describe(proc)
