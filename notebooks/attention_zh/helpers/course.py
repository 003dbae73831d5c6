"""What the checks know about the graded items, read from `course.json`.

`course.json` is written from the course manifest by `make outputs`: every exercise's call
(arguments, outputs), the built-ins it may not use and the sentences that name its known
mistakes, and every multiple-choice question with its options and the reason each wrong option
is wrong. It holds no solution.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

COURSE_FILE = Path(__file__).with_name("course.json")
_installed: dict[str, dict] | None = None


def install(view: dict | None) -> None:
    """Use `view` (a manifest's student view) instead of course.json; None goes back to the file.
    The grader installs the view of the course it grades."""
    global _installed
    _installed = None if view is None else {item["name"]: item for item in view["items"]}


@functools.cache
def _items(path: str) -> dict[str, dict]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {item["name"]: item for item in data["items"]}


def items(path: Path = COURSE_FILE) -> dict[str, dict]:
    """Every graded item by name."""
    return _installed if _installed is not None else _items(str(path))


def item(name: str) -> dict:
    """One graded item; a ValueError listing the names when there is none."""
    known = items()
    if name not in known:
        raise ValueError(f"No exercise or question is called {name!r}; choose one of {sorted(known)}.")
    return known[name]


def exercises() -> dict[str, dict]:
    return {name: i for name, i in items().items() if i["kind"] != "choice"}


def is_class(name: str) -> bool:
    return item(name)["kind"] == "class"
