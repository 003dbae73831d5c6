"""The course manifest (`course.toml`): the notebooks, the editions and every graded item.

Everything that needs to know what is graded asks this module: the case file builder, the
trusted grader, the mutation and attack suites, the release and the tests. `student_view()`
is the part a student may see (no solution edits, no answers, no alternatives); `make outputs`
writes it to `helpers/data/course.json` for the released checks.
"""

from __future__ import annotations

import functools
import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .manifest_schema import validate

REPO = Path(__file__).resolve().parents[2]
MANIFEST = "course.toml"


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: the sentence that names it and the edits that make it."""

    name: str
    sentence: str
    edits: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Item:
    """One graded item: an exercise (function or class), a multiple-choice question or a numeric one."""

    name: str
    kind: str  # "function", "class", "choice" or "numeric"
    notebook: str
    answer_cell: str  # grade id of the answer cell
    test_cell: str  # grade id of the test cell
    points: float
    spec: dict = field(repr=False, compare=False, hash=False)  # the whole table, as written

    @property
    def is_choice(self) -> bool:
        return self.kind == "choice"

    @property
    def is_numeric(self) -> bool:
        return self.kind == "numeric"

    @property
    def is_question(self) -> bool:
        """A question (multiple-choice or numeric), not an exercise."""
        return self.kind in ("choice", "numeric")

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
        """A multiple-choice question's wrong letters; a numeric one's known wrong answers, as the
        source an answer cell would give its variable (the mutation suite grades each)."""
        if self.is_numeric:
            return list(self.spec.get("wrong", []))
        return [o for o in self.spec.get("options", {}) if o != self.spec.get("answer")]

    @property
    def explanations(self) -> dict[str, str]:
        """A question's reason for every option, the right one included (instructor only: the
        grader puts the one for the chosen option in the feedback). A numeric question has one
        reasoning, said whatever the answer."""
        if self.is_numeric:
            return {"reasoning": self.spec["reasoning"]}
        return self.spec.get("explain", {})

    @property
    def value(self) -> float:
        """A numeric question's right value (instructor only)."""
        return float(self.spec["value"])

    @property
    def tolerance(self) -> tuple[float, float]:
        """A numeric question's (relative, absolute) tolerance: an answer within the larger is right."""
        return float(self.spec.get("rel_tol", 0.0)), float(self.spec.get("abs_tol", 0.0))


@dataclass(frozen=True)
class Practice:
    """A practice question: no points, no grade cell; every option explained at once, so all of
    it is released."""

    name: str
    notebook: str
    question: str
    options: dict = field(compare=False, hash=False)
    answer: str = ""
    explain: dict = field(compare=False, hash=False, default_factory=dict)

    def student_view(self) -> dict:
        return {
            "name": self.name,
            "kind": "practice",
            "notebook": self.notebook,
            "question": self.question,
            "options": self.options,
            "answer": self.answer,
            "explain": self.explain,
        }


@dataclass(frozen=True)
class Edition:
    """A language edition: its nbgrader assignment, its language, JupyterLab's locale for it, the
    font families its figures need (besides matplotlib's own) and the stub of its exercises."""

    name: str
    assignment: str
    language: str
    code_stub: str = "# YOUR CODE HERE\nraise NotImplementedError()"
    lab_locale: str = "en"
    fonts: tuple[str, ...] = ()

    def student_view(self, course: Course) -> dict:
        """What the helpers, the lab launcher and the course links know of the edition."""
        return {
            "name": self.name,
            "language": self.language,
            "lab_locale": self.lab_locale,
            "fonts": list(self.fonts),
            "start": f"{course.release}/{self.assignment}/{course.notebooks[0]}.ipynb",
        }


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
    practice: tuple[Practice, ...] = ()

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
        return [item for item in self.items if not item.is_question]

    def questions(self) -> list[Item]:
        """The multiple-choice questions."""
        return [item for item in self.items if item.is_choice]

    def numeric_questions(self) -> list[Item]:
        return [item for item in self.items if item.is_numeric]

    def edition(self, name_or_assignment: str) -> Edition:
        for edition in self.editions:
            if name_or_assignment in (edition.name, edition.assignment):
                return edition
        raise KeyError(f"No edition or assignment {name_or_assignment!r} in {MANIFEST}.")

    def language(self, assignment: str) -> str:
        """The language of `assignment`'s edition (English for an assignment of no edition)."""
        for edition in self.editions:
            if edition.assignment == assignment:
                return edition.language
        return "en"

    def source_dir(self, edition: str = "en") -> Path:
        return self.root / self.source / self.edition(edition).assignment

    def release_dir(self, edition: str = "en") -> Path:
        return self.root / self.release / self.edition(edition).assignment

    @property
    def helpers_dir(self) -> Path:
        """The one copy of the notebooks' helpers package (installed from course_helpers/)."""
        return self.root / "course_helpers" / "helpers"

    @property
    def data_dir(self) -> Path:
        """What the build writes for the helpers: course.json, the visible cases, the messages."""
        return self.helpers_dir / "data"

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
        """What the released checks need: no solution edits, no answers, no alternatives, and for a
        graded question nothing but its text and options (the same data for every option), and
        for a numeric one its text and the form of number it expects (no value, no tolerance)."""
        items = []
        for item in self.items:
            entry = {"name": item.name, "kind": item.kind, "notebook": item.notebook}
            if item.is_choice:
                entry.update(
                    variable=item.variable,
                    question=item.spec.get("question", ""),
                    options=item.spec["options"],
                )
            elif item.is_numeric:
                entry.update(variable=item.variable, question=item.spec["question"], unit=item.spec["unit"])
            else:
                for key in ("call", "args", "optional", "init", "outputs", "masked_output"):
                    if key in item.spec:
                        entry[key] = item.spec[key]
                entry.setdefault("call", "module" if item.kind == "class" else "function")
                entry["forbidden"] = list(self.forbidden) if item.forbid_builtins else []
                entry["mistakes"] = {m.name: m.sentence for m in item.mistakes.values()}
            items.append(entry)
        return {
            "items": items,
            "practice": [p.student_view() for p in self.practice],
            # Which edition a notebook belongs to (so its language): its assignment folder's name.
            "editions": {e.assignment: e.student_view(self) for e in self.editions},
        }


def _item(table: dict) -> Item:
    missing = [k for k in ("name", "kind", "notebook", "answer_cell", "test_cell", "points") if k not in table]
    if missing:
        raise ValueError(f"{MANIFEST}: item {table.get('name', '?')!r} lacks {', '.join(missing)}.")
    if table["kind"] not in ("function", "class", "choice", "numeric"):
        raise ValueError(
            f"{MANIFEST}: item {table['name']!r} has kind {table['kind']!r}; use function, class, choice or numeric."
        )
    if table["kind"] == "numeric":
        needed = ("variable", "question", "unit", "value", "reasoning")
        lacking = [k for k in needed if k not in table]
        if lacking or "options" in table or not ("rel_tol" in table or "abs_tol" in table):
            raise ValueError(
                f"{MANIFEST}: numeric question {table['name']!r} needs {', '.join(needed)} and rel_tol or abs_tol, "
                f"and no options (it lacks {', '.join(lacking) or 'nothing'})."
            )
    if table["kind"] == "choice":
        options, explain = table.get("options", {}), table.get("explain", {})
        if set(explain) != set(options) or table.get("answer") not in options:
            raise ValueError(
                f"{MANIFEST}: question {table['name']!r} needs an answer among its options and an explanation "
                f"for every option (options {sorted(options)}, explained {sorted(explain)})."
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


def _practice(table: dict) -> Practice:
    fields = ("name", "notebook", "question", "options", "answer", "explain")
    missing = [k for k in fields if k not in table]
    if missing or set(table["explain"]) != set(table["options"]) or table["answer"] not in table["options"]:
        raise ValueError(
            f"{MANIFEST}: practice question {table.get('name', '?')!r} needs {', '.join(fields)}, "
            "an answer among its options and an explanation for every option."
        )
    return Practice(*(table[k] for k in fields))


@functools.cache
def load(root: Path | str = REPO) -> Course:
    """Read `course.toml` at a course root (by default this repository)."""
    root = Path(root).resolve()
    data = tomllib.loads((root / MANIFEST).read_text(encoding="utf-8"))
    validate(data, MANIFEST)
    course = data["course"]
    items = tuple(_item(t) for t in data.get("items", []))
    for table in data.get("items", []):  # `cases_like` borrows another item's kinds of case
        if "cases_like" in table:
            table["cases"] = next(t for t in data["items"] if t["name"] == table["cases_like"])["cases"]
    editions = tuple(
        Edition(
            name,
            e["assignment"],
            e["language"],
            **({"code_stub": e["code_stub"]} if "code_stub" in e else {}),
            lab_locale=e.get("lab_locale", "en"),
            fonts=tuple(e.get("fonts", ())),
        )
        for name, e in data.get("editions", {}).items()
    )
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
        tuple(_practice(t) for t in data.get("practice", [])),
    )
    unknown = {i.notebook for i in (*items, *result.practice)} - set(result.notebooks)
    if unknown:
        raise ValueError(f"{MANIFEST}: items name notebooks that [course] notebooks does not list: {sorted(unknown)}")
    return result


def write_student_view(course: Course, path: Path) -> None:
    """Write `student_view()` as JSON (sorted, stable bytes)."""
    path.write_text(
        json.dumps(course.student_view(), indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8"
    )
