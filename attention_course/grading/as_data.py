"""A folder as plain data and back: what a Dask worker is sent (a submission, the course) and what
it sends back (a student's autograded notebooks and feedback), so that no file system is shared.

A folder is a dict from relative path ("a/b.ipynb") to (kind, content): ("file", bytes),
("link", target) for a symbolic link (never followed: it is kept as a link), or ("special", "")
for anything else (a FIFO: written back as a FIFO, never opened). Unpacking refuses a path that
would leave the destination.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
from pathlib import Path, PurePosixPath

Folder = dict[str, tuple[str, bytes | str]]


def pack(folder: Path) -> Folder:
    """Every entry below `folder` (nothing when it does not exist), without following links."""
    folder = Path(folder)
    if not folder.is_dir() or folder.is_symlink():
        return {}
    found: Folder = {}
    for top, dirs, files in os.walk(folder):
        for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(top, d))]):
            path = Path(top) / name
            rel = path.relative_to(folder).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(mode):
                found[rel] = ("file", path.read_bytes())
            else:
                found[rel] = ("special", "")
    return found


def _inside(dest: Path, rel: str) -> Path:
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or any(p in ("..", ".", "") for p in parts):
        raise ValueError(f"refused to unpack {rel!r}: it would leave its folder")
    return dest.joinpath(*parts)


def unpack(data: Folder, dest: Path) -> None:
    """Write a packed folder into `dest` (created), links as links and special files as FIFOs."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for rel, (kind, content) in sorted(data.items()):
        path = _inside(dest, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "link":
            path.symlink_to(content)
        elif kind == "special":
            os.mkfifo(path)
        elif kind == "file":
            path.write_bytes(content)
        else:
            raise ValueError(f"refused to unpack {rel!r}: unknown kind {kind!r}")


def digest(data: Folder) -> str:
    """A digest of a packed folder's names, kinds and contents."""
    h = hashlib.sha256()
    for rel, (kind, content) in sorted(data.items()):
        raw = content if isinstance(content, bytes) else content.encode()
        h.update(f"{rel}\0{kind}\0{len(raw)}\0".encode())
        h.update(raw)
    return h.hexdigest()


def tar(root: Path, keep) -> bytes:
    """A reproducible gzip'd tar of the regular files below `root` for which `keep(relative path)`
    is true (sorted, no times or owners, so the same files give the same bytes)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for top, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if keep(Path(top, d).relative_to(root)))
            for name in sorted(files):
                path = Path(top) / name
                rel = path.relative_to(root)
                if not keep(rel) or not stat.S_ISREG(path.lstat().st_mode):
                    continue
                info = tarfile.TarInfo(rel.as_posix())
                info.size, info.mode = path.stat().st_size, path.stat().st_mode & 0o755
                with open(path, "rb") as handle:
                    archive.addfile(info, handle)
    return gzip.compress(out.getvalue(), compresslevel=1, mtime=0)


def untar(raw: bytes, dest: Path) -> None:
    """Unpack `tar`'s bytes into `dest` (tarfile's "data" filter: nothing outside it, no links)."""
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as archive:
        archive.extractall(dest, filter="data")
