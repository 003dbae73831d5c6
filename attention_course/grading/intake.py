"""Reading what a student submitted, safely: one bad file costs its own student only.

A submitted notebook is read only when it is a regular file reached without following a link
(the file and every folder below `submitted/`), at most `MAX_BYTES` long, strict UTF-8, JSON
nested at most `MAX_DEPTH` deep, nbformat 4 with at most `MAX_CELLS` cells of the known kinds.
Anything else is `Unreadable`, with one sentence saying why; the grader then grades a stand-in
(the released notebook, unanswered) so that the student gets a gradebook row of 0 with the
reason, and nobody else is touched. Special files (fifos, devices) are opened non-blocking and
refused, so reading never waits.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.v4.rwbase import rejoin_lines, strip_transient

MAX_BYTES = 8 * 2**20
MAX_DEPTH = 32
MAX_CELLS = 1000
CELL_TYPES = ("code", "markdown", "raw")


class Unreadable(Exception):
    """A submitted file the grader refuses to read, and why (one sentence)."""

    def __init__(self, name: str, why: str, whole: bool = False):
        super().__init__(f"{name}: {why}")
        self.name, self.why, self.whole = name, why, whole

    def sentence(self) -> str:
        return f"{self.name} could not be graded: {self.why}. It was graded 0."


@dataclass
class Submitted:
    """A notebook read from a submission: the nbformat node."""

    path: Path
    notebook: nbformat.NotebookNode


def link_below(path: Path, top: Path) -> Path | None:
    """The first link (or non-folder) on the way from `top` down to `path`'s folder, if any."""
    path, top = Path(os.path.abspath(path)), Path(os.path.abspath(top))
    try:
        parts = path.parent.relative_to(top).parts
    except ValueError:
        return None
    here = top
    for part in parts:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except OSError:
            return here
        if not stat.S_ISDIR(mode):
            return here
    return None


def _open_regular(path: Path) -> int:
    """A file descriptor of a regular file, opened without following a link or waiting on a
    special file; Unreadable otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Unreadable(path.name, "it is a link, not a file (links are never followed)") from None
        raise Unreadable(path.name, f"it cannot be opened ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Unreadable(path.name, "it is not a regular file")
    return fd


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size <= limit:
        chunk = os.read(fd, min(2**20, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_bytes(path: Path, limit: int = MAX_BYTES) -> bytes:
    """A regular file's bytes, never through a link, never waiting on a special file."""
    fd = _open_regular(Path(path))
    try:
        data = _read_at_most(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Unreadable(Path(path).name, f"it is more than the {limit // 2**20} MiB a notebook may be")
    return data


def read_prefix(path: Path, limit: int = MAX_BYTES) -> bytes:
    """A regular file's first `limit` + 1 bytes at most (never through a link): enough for
    `read_bytes` to refuse a copy of it when the original is too long."""
    fd = _open_regular(Path(path))
    try:
        return _read_at_most(fd, limit)
    finally:
        os.close(fd)


def _depth(data) -> int:
    """How deep JSON data nests (without recursion)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                return depth
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def parse(raw: bytes, name: str) -> nbformat.NotebookNode:
    """Checked notebook data from a file's bytes."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(name, f"it is not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise Unreadable(name, f"its JSON nests more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:
        raise Unreadable(name, f"it is not valid JSON ({str(exc)[:120]})") from None
    if _depth(data) > MAX_DEPTH:
        raise Unreadable(name, f"its JSON nests more than {MAX_DEPTH} levels deep")
    if not isinstance(data, dict) or data.get("nbformat") != 4 or not isinstance(data.get("cells"), list):
        raise Unreadable(name, "it is not a Jupyter notebook of format 4")
    cells = data["cells"]
    if len(cells) > MAX_CELLS:
        raise Unreadable(name, f"it has {len(cells)} cells, more than the {MAX_CELLS} a notebook may have")
    for index, cell in enumerate(cells):
        source = cell.get("source") if isinstance(cell, dict) else None
        if (
            not isinstance(cell, dict)
            or cell.get("cell_type") not in CELL_TYPES
            or not (isinstance(source, str) or (isinstance(source, list) and all(isinstance(s, str) for s in source)))
            or not isinstance(cell.get("metadata", {}), dict)
        ):
            raise Unreadable(name, f"its cell {index + 1} is not a notebook cell")
        cell.setdefault("metadata", {})
        if cell["cell_type"] == "code":
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
    if not isinstance(data.get("metadata", {}), dict):
        raise Unreadable(name, "its metadata is not a mapping")
    data.setdefault("metadata", {})
    data.setdefault("nbformat_minor", 5)
    return strip_transient(rejoin_lines(nbformat.from_dict(data)))  # as nbformat.read leaves it


def read_submission(path: Path, top: Path | None = None) -> Submitted:
    """A submitted notebook, read safely (see the module's docstring); `top` is the folder below
    which no link is followed (the course's `submitted/`)."""
    path = Path(path)
    if top is not None:
        link = link_below(path, top)
        if link is not None:
            raise Unreadable(link.name, "it is a link or not a folder (links are never followed)", whole=True)
    return Submitted(path, parse(read_bytes(path), path.name))
