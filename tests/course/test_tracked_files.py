"""One copy of everything: no two tracked files have the same content.

The helpers once lived in four byte-identical folders (the English source, the Chinese edition and
both releases); a stale copy would have changed what is graded. They are one installed package
now, and this keeps it so for every file of the repository.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

from conftest import REPO


def tracked_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name and (root / name).is_file()]


def identical_groups(root: Path) -> list[list[str]]:
    """The groups of tracked files (two or more) whose bytes are the same."""
    by_digest = defaultdict(list)
    for name in tracked_files(root):
        by_digest[hashlib.sha256((root / name).read_bytes()).hexdigest()].append(name)
    return sorted(group for group in by_digest.values() if len(group) > 1)


def test_no_two_tracked_files_have_the_same_content():
    groups = identical_groups(REPO)
    assert not groups, "the same content in several tracked files:\n" + "\n".join("  " + " = ".join(g) for g in groups)


def test_the_check_finds_a_copy(tmp_path):
    """It can fail: a helper copied into an edition's folder, as it once was, is found."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    helper = REPO / "course_helpers" / "helpers" / "checks.py"
    for place in ("course_helpers/helpers/checks.py", "source/attention_zh/helpers/checks.py"):
        (tmp_path / place).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(helper, tmp_path / place)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    assert identical_groups(tmp_path) == [["course_helpers/helpers/checks.py", "source/attention_zh/helpers/checks.py"]]
