"""One seed per assignment, kept with the course: the hidden cases every student is graded on.

The seed of an assignment is drawn once, when it is first graded, and written to `seeds.toml` in
the course folder; every later grading (`make grade`, one student, a regrade, plain `nbgrader
autograde`, formgrader, every Dask worker) reads it, so every student meets the same hidden cases.
Changing a seed is an explicit act that regrades everyone at the next `make grade`:

    .venv/bin/python -m attention_course.grading.seeds                     # show the seeds
    .venv/bin/python -m attention_course.grading.seeds --redraw attention  # draw a new one
    .venv/bin/python -m attention_course.grading.seeds --set attention=1234

`c.Grading.seed` (or `make grade GRADE_ARGS="--seed N"`) grades one run with N instead and keeps the
file as it is (to reproduce a run, or in tests).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import secrets
import sys
import tomllib
from pathlib import Path

FILE = "seeds.toml"
HEADER = (
    "# The seed of each assignment's hidden cases, drawn at its first grading and kept with the course:\n"
    "# every student and every regrade meets the same cases. Change one only on purpose, with\n"
    "# `python -m attention_course.grading.seeds --redraw NAME` or `--set NAME=N`: the next make grade\n"
    "# then regrades everyone of that assignment.\n"
)
NAME = re.compile(r"[A-Za-z0-9_-]+")


def read(root: Path) -> dict[str, int]:
    """The kept seeds of the course at `root` (empty when none was drawn yet)."""
    path = Path(root) / FILE
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path} is not valid TOML ({exc}); fix it or restore it from your copy") from exc
    bad = [k for k, v in data.items() if not isinstance(v, int) or isinstance(v, bool) or v < 0]
    if bad:
        raise ValueError(f"{path}: the seed of {', '.join(bad)} must be a whole number of at least 0")
    return data


def _write(root: Path, seeds: dict[str, int]) -> None:
    path = Path(root) / FILE
    text = HEADER + "".join(f"{name} = {seeds[name]}\n" for name in sorted(seeds))
    tmp = path.with_name(f".{FILE}.{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _locked(root: Path, change) -> dict[str, int]:
    """Apply `change(seeds) -> seeds` to the file under a lock (two graders starting together draw once)."""
    # The lock is taken on the course folder itself: no lock file is left beside the teacher's files.
    folder = os.open(Path(root), os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        seeds = read(root)
        changed = change(dict(seeds))
        if changed != seeds:
            _write(root, changed)
        return changed
    finally:
        os.close(folder)


def ensure(root: Path, assignments) -> dict[str, int]:
    """The seed of each assignment, drawing (and keeping) one for an assignment that has none."""

    def draw(seeds):
        for name in assignments:
            seeds.setdefault(name, secrets.randbelow(2**31))
        return seeds

    seeds = read(root)
    if all(name in seeds for name in assignments):
        return {name: seeds[name] for name in assignments}
    kept = _locked(root, draw)
    return {name: kept[name] for name in assignments}


def seed_of(root: Path, assignment: str) -> int:
    return ensure(root, [assignment])[assignment]


def change(root: Path, assignment: str, seed: int | None = None) -> int:
    """Set the assignment's seed to `seed`, or to a fresh one when None; returns it."""
    if not NAME.fullmatch(assignment):
        raise ValueError(f"{assignment!r} is not an assignment name (letters, digits, _ and - only)")
    value = secrets.randbelow(2**31) if seed is None else seed
    if value < 0:
        raise ValueError(f"a seed is a whole number of at least 0, not {value}")
    _locked(root, lambda seeds: {**seeds, assignment: value})
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Show or change the course's kept grading seeds (seeds.toml).")
    parser.add_argument("--course", default=".", help="the course folder (default: here)")
    parser.add_argument("--redraw", metavar="ASSIGNMENT", action="append", default=[], help="draw a new seed")
    parser.add_argument("--set", metavar="ASSIGNMENT=N", action="append", default=[], help="set a seed")
    args = parser.parse_args(argv)
    root = Path(args.course)
    try:
        for name in args.redraw:
            print(f"{name}: new seed {change(root, name)}; the next make grade regrades everyone of {name}.")
        for item in args.set:
            name, sep, value = item.partition("=")
            if not sep or not value.strip().isdigit():
                raise ValueError(f"--set takes ASSIGNMENT=N with N a whole number, not {item!r}")
            print(f"{name}: seed {change(root, name, int(value))}; the next make grade regrades everyone of {name}.")
        seeds = read(root)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not seeds:
        print(f"No seed kept yet in {root / FILE}: the first grading of an assignment draws one.")
    for name, seed in sorted(seeds.items()):
        print(f"{name} = {seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
