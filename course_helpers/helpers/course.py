"""What the checks know about the graded items, read from `course.json`.

`course.json` is written from the course manifest by `make outputs`: every exercise's call
(arguments, outputs), the built-ins it may not use and the sentences that name its known
mistakes, every graded question with its text and options only, and every practice question (no
points) with its answer and the reason for each option. It holds no solution.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
from pathlib import Path

COURSE_FILE = Path(__file__).parent / "data" / "course.json"
# The view `viewing` chose, in this context only (the grader judges in a thread of its own; a new
# thread starts without it and reads course.json).
_VIEW: contextvars.ContextVar[dict | None] = contextvars.ContextVar("course_view", default=None)


@contextlib.contextmanager
def viewing(view: dict):
    """Inside the block, use `view` (a manifest's student view) instead of course.json: the
    grader and the build judge with the view of the course they work on."""
    token = _VIEW.set(view)
    try:
        yield
    finally:
        _VIEW.reset(token)


@functools.cache
def _read(path: str) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _view(path: Path = COURSE_FILE) -> dict:
    view = _VIEW.get()
    return view if view is not None else _read(str(path))


def items(path: Path = COURSE_FILE) -> dict[str, dict]:
    """Every graded item by name."""
    return {item["name"]: item for item in _view(path)["items"]}


def item(name: str) -> dict:
    """One graded item; a ValueError listing the names when there is none."""
    known = items()
    if name not in known:
        raise ValueError(f"No exercise or question is called {name!r}; choose one of {sorted(known)}.")
    return known[name]


def practice(name: str) -> dict:
    """One practice question; a ValueError listing the names when there is none."""
    known = {p["name"]: p for p in _view().get("practice", [])}
    if name not in known:
        raise ValueError(f"No practice question is called {name!r}; choose one of {sorted(known)}.")
    return known[name]


def exercises() -> dict[str, dict]:
    return {name: i for name, i in items().items() if i["kind"] not in ("choice", "numeric")}


def is_class(name: str) -> bool:
    return item(name)["kind"] == "class"


def editions() -> dict[str, dict]:
    """Each edition by its assignment folder: its name, language, JupyterLab locale, figure fonts
    and start page, as course.toml declares them."""
    try:
        return dict(_view().get("editions", {}))
    except OSError:  # no course.json yet (a fresh build): every folder speaks English
        return {}


def edition(name: str) -> dict:
    """One edition by its name (en, zh-CN, ...); a ValueError listing the names when there is none."""
    known = {e["name"]: e for e in editions().values()}
    if name not in known:
        raise ValueError(f"No edition is called {name!r}; choose one of {sorted(known)}.")
    return known[name]
