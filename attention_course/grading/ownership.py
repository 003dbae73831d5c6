"""Grading as root leaves the course folder as it found it: what grading wrote belongs to the
account that owns the course folder (the grader), not to root.

`make grade` must run as root for the sandbox-user layer; the gradebook, autograded/, feedback/,
the tables, the kept seeds and build/grading/ it writes would otherwise be root's, and the grader's
formgrader or next `make grade` without root could not update them.
"""

from __future__ import annotations

import os
from pathlib import Path

# What grading writes in the course folder (relative to its root).
WRITTEN = (
    "gradebook.db",
    "gradebook.db-journal",
    "grades.csv",
    "grades_by_cell.csv",
    "seeds.toml",
    "autograded",
    "feedback",
    "submitted",
    "build/grading",
)


def give_back(root: Path, written=WRITTEN) -> int:
    """When running as root: give what root owns among `written` (recursively, links themselves,
    never followed) to the owner of `root`. Returns how many entries changed owner."""
    root = Path(root)
    if os.geteuid() != 0 or not root.is_dir():
        return 0
    owner = root.lstat()
    if owner.st_uid == 0:
        return 0  # a course folder of root's own: nothing to give back
    changed = 0
    for name in written:
        top = root / name
        if not os.path.lexists(top):
            continue
        entries = [top]
        if top.is_dir() and not top.is_symlink():
            for base, dirs, files in os.walk(top):  # os.walk does not follow links to folders
                entries += [Path(base) / n for n in dirs + files]
        for entry in entries:
            if entry.lstat().st_uid == 0:
                os.lchown(entry, owner.st_uid, owner.st_gid)
                changed += 1
    return changed
