"""The course manifest (`course.toml`): the notebooks, the editions and every graded item.

Everything that needs to know what is graded asks this module: the case file builder, the
trusted grader, the mutation and attack suites, the release and the tests. `student_view()`
is the part a student may see (no solution edits, no answers, no alternatives); `make outputs`
writes it to `helpers/course.json` for the released checks.
"""

from __future__ import annotations

import functools
import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST = "course.toml"


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: the sentence that names it and the edits that make it."""

    name: str
    sentence: str
    edits: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Item:
    """One graded item: an exercise (function or class) or a multiple-choice question."""

    name: str
    kind: str  # "function", "class" or "choice"
    notebook: str
    answer_cell: str  # grade id of the answer cell
    test_cell: str  # grade id of the test cell
    points: float
    spec: dict = field(repr=False, compare=False, hash=False)  # the whole table, as written

    @property
    def is_choice(self) -> bool:
        return self.kind == "choice"

    @property
    def mistakes(self) -> dict[str, Mistake]:
        return {
            m["name"]: Mistake(m["name"], m["sentence"], tuple(tuple(e) for e in m.get("edits", ())))
            for m in self.spec.get("mistakes", [])
        }

    @property
    def alternatives(self) -> list[str]:
        return [a["source"] for a in self.spec.get("alternatives", [])]

    @property
    def forbid_builtins(self) -> bool:
        return bool(self.spec.get("forbid_builtins"))

    @property
    def variable(self) -> str:
        """The name an answer cell defines: the exercise itself, or a question's answer variable."""
        return self.spec.get("variable", self.name)

    @property
    def answer(self) -> str:
        """A question's right option (instructor only)."""
        return self.spec["answer"]

    @property
    def wrong_options(self) -> list[str]:
        return [o for o in self.spec.get("options", {}) if o != self.spec.get("answer")]


@dataclass(frozen=True)
class Edition:
    """A language edition: its nbgrader assignment and its language."""

    name: str
    assignment: str
    language: str


@dataclass(frozen=True)
class Course:
    """The whole manifest, with the course root it was read from."""

    root: Path
    assignment: str
    source: str
    release: str
    case_seed: int
    notebooks: tuple[str, ...]
    forbidden: tuple[str, ...]
    editions: tuple[Edition, ...]
    items: tuple[Item, ...]

    # -------------------------------------------------------------------------------- lookups
    def item(self, name: str) -> Item:
        for item in self.items:
            if item.name == name:
                return item
        raise KeyError(f"No item {name!r} in {MANIFEST}; items: {[i.name for i in self.items]}")

    def items_in(self, notebook: str) -> list[Item]:
        return [item for item in self.items if item.notebook == notebook]

    def graded_notebooks(self) -> list[str]:
        """The notebooks with at least one graded item, in course order."""
        return [nb for nb in self.notebooks if self.items_in(nb)]

    def exercises(self) -> list[Item]:
        return [item for item in self.items if not item.is_choice]

    def questions(self) -> list[Item]:
        return [item for item in self.items if item.is_choice]

    def edition(self, name_or_assignment: str) -> Edition:
        for edition in self.editions:
            if name_or_assignment in (edition.name, edition.assignment):
                return edition
        raise KeyError(f"No edition or assignment {name_or_assignment!r} in {MANIFEST}.")

    def source_dir(self, edition: str = "en") -> Path:
        return self.root / self.source / self.edition(edition).assignment

    def release_dir(self, edition: str = "en") -> Path:
        return self.root / self.release / self.edition(edition).assignment

    def source_notebook(self, notebook: str, edition: str = "en") -> Path:
        return self.source_dir(edition) / f"{notebook}.ipynb"

    @property
    def total_points(self) -> float:
        return sum(item.points for item in self.items)

    # -------------------------------------------------------------------------------- seeds
    def item_seed(self, item: str, seed: int | None = None) -> int:
        """The seed of one item's random stream: adding an item never changes another's cases."""
        base = self.case_seed if seed is None else seed
        return int.from_bytes(hashlib.sha256(f"{base}/{item}".encode()).digest()[:8], "little") >> 1

    # -------------------------------------------------------------------------------- students
    def student_view(self) -> dict:
        """What the released checks need: no solution edits, no answers, no alternatives."""
        from helpers.checks import choice_digest

        items = []
        for item in self.items:
            entry = {"name": item.name, "kind": item.kind, "notebook": item.notebook}
            if item.is_choice:
                entry.update(
                    variable=item.variable,
                    question=item.spec.get("question", ""),
                    options=item.spec["options"],
                    why_not=item.spec.get("why_not", {}),
                    digest=choice_digest(item.name, item.answer),
                )
            else:
                for key in ("call", "args", "optional", "init", "outputs", "masked_output"):
                    if key in item.spec:
                        entry[key] = item.spec[key]
                entry.setdefault("call", "module" if item.kind == "class" else "function")
                entry["forbidden"] = list(self.forbidden) if item.forbid_builtins else []
                entry["mistakes"] = {m.name: m.sentence for m in item.mistakes.values()}
            items.append(entry)
        return {"items": items}


def _item(table: dict) -> Item:
    missing = [k for k in ("name", "kind", "notebook", "answer_cell", "test_cell", "points") if k not in table]
    if missing:
        raise ValueError(f"{MANIFEST}: item {table.get('name', '?')!r} lacks {', '.join(missing)}.")
    if table["kind"] not in ("function", "class", "choice"):
        raise ValueError(
            f"{MANIFEST}: item {table['name']!r} has kind {table['kind']!r}; use function, class or choice."
        )
    return Item(
        table["name"],
        table["kind"],
        table["notebook"],
        table["answer_cell"],
        table["test_cell"],
        float(table["points"]),
        table,
    )


@functools.cache
def load(root: Path | str = REPO) -> Course:
    """Read `course.toml` at a course root (by default this repository)."""
    root = Path(root).resolve()
    data = tomllib.loads((root / MANIFEST).read_text(encoding="utf-8"))
    course = data["course"]
    items = tuple(_item(t) for t in data.get("items", []))
    for table in data.get("items", []):  # `cases_like` borrows another item's kinds of case
        if "cases_like" in table:
            table["cases"] = next(t for t in data["items"] if t["name"] == table["cases_like"])["cases"]
    editions = tuple(Edition(name, e["assignment"], e["language"]) for name, e in data.get("editions", {}).items())
    result = Course(
        root,
        course["assignment"],
        course.get("source", "source"),
        course.get("release", "notebooks"),
        int(course["case_seed"]),
        tuple(course["notebooks"]),
        tuple(course.get("forbidden", ())),
        editions or (Edition("en", course["assignment"], "en"),),
        items,
    )
    unknown = {i.notebook for i in items} - set(result.notebooks)
    if unknown:
        raise ValueError(f"{MANIFEST}: items name notebooks that [course] notebooks does not list: {sorted(unknown)}")
    return result


def write_student_view(course: Course, path: Path) -> None:
    """Write `student_view()` as JSON (sorted, stable bytes)."""
    path.write_text(
        json.dumps(course.student_view(), indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8"
    )
