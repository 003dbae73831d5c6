"""The similarity report (`make similarity`): which students handed in unusually alike code.

For each exercise, every student's definition is taken from their submitted notebooks with `ast`
(nothing runs) and cut into fingerprints: each statement and each larger expression, with
docstrings, comments and formatting gone and the student's own names (arguments, locals,
attributes set on `self`) replaced by one placeholder, so renaming and reformatting change
nothing and reordering statements keeps them. Fingerprints of the release's stub, of the code in
its hints and of the reference answers weigh nothing; any other weighs log(N / n), N students,
n of them sharing it: what most of the class wrote weighs little. A pair's score is the weight they
share over the weight either has (weighted Jaccard), so pairs are ranked by how unusual their
common code is.

It writes `build/similarity/<exercise>.html` (ranked pairs, each with the two definitions side by
side, student text escaped) and `build/similarity/similarity.csv`. It reports, it does not accuse:
see docs/similarity.md for how to read it.
"""

from __future__ import annotations

import ast
import builtins
import csv
import html
import itertools
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from attention_course.model.manifest import Course, Item, load
from attention_course.model.reference import answer_source

from .coursedir import CoursePaths, report_paths

OUT = Path("build") / "similarity"
PLACEHOLDER = "_"
SHOWN_PAIRS = 10
CSV_COLUMNS = ["exercise", "rank", "student_a", "student_b", "score", "shared_weight", "shared_fingerprints"]


# ----------------------------------------------------------------------------- fingerprints


def _own_names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names, attributes) the code itself introduces: arguments, assigned names, defined
    functions and classes, and attributes assigned on an object (`self.w_q = ...`)."""
    names, attributes = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            attributes.add(node.attr)
    return names, attributes


class _Normalise(ast.NodeTransformer):
    def __init__(self, names: set[str], attributes: set[str]):
        self.names, self.attributes = names, attributes

    def visit_Name(self, node):
        return ast.Name(PLACEHOLDER, node.ctx) if node.id in self.names else node

    def visit_arg(self, node):
        return ast.arg(PLACEHOLDER)

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr in self.attributes:
            node.attr = PLACEHOLDER
        return node

    def visit_FunctionDef(self, node):
        node.name = PLACEHOLDER
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            node.body = body[1:] or [ast.Pass()]  # the docstring
        self.generic_visit(node)
        return node

    visit_ClassDef = visit_FunctionDef


def _size(node: ast.AST) -> int:
    return sum(1 for _ in ast.walk(node))


def fingerprints(tree: ast.AST, names: set[str] | None = None) -> Counter:
    """The fingerprints of some code: each statement and each expression of five nodes or more,
    normalised (see the module's docstring). `names` are the names to blank (its own by default)."""
    own, attributes = _own_names(tree)
    tree = _Normalise(own | (names or set()), attributes).visit(ast.parse(ast.unparse(tree)))
    found = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, ast.FunctionDef | ast.ClassDef):
            found[ast.dump(node, annotate_fields=False)] += 1
        elif isinstance(node, ast.expr) and _size(node) >= 5:
            found[ast.dump(node, annotate_fields=False)] += 1
    return found


def parse_cells(sources: list[str]) -> list[ast.Module]:
    """The cells that parse (a cell with a syntax error or an IPython magic is skipped)."""
    trees = []
    for source in sources:
        try:
            trees.append(ast.parse(source))
        except SyntaxError:
            continue
    return trees


def definition(sources: list[str], name: str) -> ast.AST | None:
    """The last top-level definition of `name` in some cells (the one a kernel would keep)."""
    found = None
    for tree in parse_cells(sources):
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
                found = node
    return found


HINT_CODE = re.compile(r"```(?:python)?\n(.*?)```|`([^`\n]+)`", re.S)


def hint_code(markdown: str) -> list[str]:
    """The code in a release's hints and prompts (fenced blocks and inline code)."""
    return [(block or inline).strip() for block, inline in HINT_CODE.findall(markdown)]


def _cells(notebook: dict, kind: str) -> list[str]:
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in notebook.get("cells", [])
        if c.get("cell_type") == kind
    ]


def given(course: Course, item: Item, editions: list[str]) -> Counter:
    """What no student earns credit for sharing: the release's stub and hint code, the reference
    answer and its alternatives."""
    found = Counter()
    sources = [answer_source(course, item), *item.alternatives]
    for edition in editions:
        path = course.release_dir(edition) / f"{item.notebook}.ipynb"
        if path.exists():
            release = json.loads(path.read_text(encoding="utf-8"))
            sources += _cells(release, "code")
            sources += [code for text in _cells(release, "markdown") for code in hint_code(text)]
    trees = [tree for source in sources for tree in parse_cells(source.split("\n# %%\n"))]
    kept = set(dir(builtins)) | {alias.asname or alias.name.split(".")[0] for alias in _imports(trees)}
    for tree in trees:
        # a hint's `q @ k.transpose(-2, -1)` names the arguments a student's definition takes
        loose = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in kept}
        found.update(fingerprints(tree, loose))
    return found


def _imports(trees: list[ast.AST]) -> list[ast.alias]:
    return [a for t in trees for n in ast.walk(t) if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names]


# ----------------------------------------------------------------------------- pairs


@dataclass
class Submission:
    student: str
    source: str  # the definition as the student wrote it
    prints: Counter = field(default_factory=Counter)


@dataclass
class Pair:
    a: Submission
    b: Submission
    score: float
    shared_weight: float
    shared: int


def weights(submissions: list[Submission], given_prints: Counter) -> dict[str, float]:
    """log(N / n) for each fingerprint n of N students have; 0 for what the course gave."""
    counts = Counter(p for s in submissions for p in set(s.prints))
    total = len(submissions)
    return {p: 0.0 if p in given_prints else math.log(total / n) for p, n in counts.items()}


def rank(submissions: list[Submission], given_prints: Counter) -> list[Pair]:
    """Every pair of students, most unusual shared code first."""
    weight = weights(submissions, given_prints)
    pairs = []
    for a, b in itertools.combinations(submissions, 2):
        shared = set(a.prints) & set(b.prints)
        both = sum(weight[p] for p in shared)
        either = sum(weight[p] for p in set(a.prints) | set(b.prints))
        pairs.append(Pair(a, b, both / either if either else 0.0, both, len(shared)))
    return sorted(pairs, key=lambda p: (-p.score, -p.shared_weight, p.a.student, p.b.student))


# ----------------------------------------------------------------------------- the class


def submissions(course: Course, root: Path, item: Item) -> list[Submission]:
    """Each student's definition of an exercise, from the submitted notebooks of every edition."""
    dirs = CoursePaths(root)
    found = []
    for edition in course.editions:
        top = dirs.top("submitted")
        for folder in sorted(top.glob(f"*/{edition.assignment}")) if top.exists() else []:
            path = folder / f"{item.notebook}.ipynb"
            if not path.is_file() or path.is_symlink():
                continue
            try:
                notebook = json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError):
                continue
            node = definition(_cells(notebook, "code"), item.name)
            if node is not None:
                source = ast.get_source_segment(_joined(notebook, node), node) or ast.unparse(node)
                found.append(Submission(folder.parent.name, source, fingerprints(node)))
    return found


def _joined(notebook: dict, node: ast.AST) -> str:
    """The source of the cell that holds `node` (found by its text)."""
    for source in reversed(_cells(notebook, "code")):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        if any(ast.dump(n) == ast.dump(node) for n in tree.body):
            return source
    return ""


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Similarity: {name}</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;vertical-align:top}} pre{{margin:0;white-space:pre-wrap}}
.pair{{display:grid;grid-template-columns:1fr 1fr;gap:1em;margin-bottom:2em}}</style></head>
<body><h1>Similarity of <code>{name}</code></h1>
<p>{count} definitions. Score: the share of the pair's weighted fingerprints that they share; what the
release gave, the reference and what most of the class wrote weigh nothing or little. A high score
asks for a look, it proves nothing (docs/similarity.md).</p>
<table><tr><th>rank</th><th>students</th><th>score</th><th>shared weight</th></tr>{rows}</table>
{pairs}</body></html>
"""


def _rank_cell(n: int) -> str:
    """A pair's rank, linked to its side-by-side view when the page shows one."""
    return f'<a href="#pair-{n}">{n}</a>' if n <= SHOWN_PAIRS else str(n)


def page(name: str, count: int, pairs: list[Pair]) -> str:
    """The HTML page of one exercise; every student text is escaped."""
    e = html.escape
    rows = "".join(
        f"<tr><td>{_rank_cell(n)}</td>"
        f"<td>{e(p.a.student)} / {e(p.b.student)}</td>"
        f"<td>{p.score:.2f}</td><td>{p.shared_weight:.2f}</td></tr>"
        for n, p in enumerate(pairs, 1)
    )
    shown = "".join(
        f'<h2 id="pair-{n}">{n}. {e(p.a.student)} / {e(p.b.student)} ({p.score:.2f})</h2><div class="pair">'
        f"<div><h3>{e(p.a.student)}</h3><pre>{e(p.a.source)}</pre></div>"
        f"<div><h3>{e(p.b.student)}</h3><pre>{e(p.b.source)}</pre></div></div>"
        for n, p in enumerate(pairs[:SHOWN_PAIRS], 1)
    )
    return PAGE.format(name=e(name), count=count, rows=rows, pairs=shown)


def report(course: Course, root: Path, out: Path) -> dict[str, list[Pair]]:
    """Write the pages and the CSV for every exercise; return the ranked pairs by exercise."""
    out.mkdir(parents=True, exist_ok=True)
    editions = [e.name for e in course.editions]
    ranked = {}
    with open(out / "similarity.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for item in course.exercises():
            found = submissions(course, root, item)
            pairs = rank(found, given(course, item, editions))
            ranked[item.name] = pairs
            (out / f"{item.name}.html").write_text(page(item.name, len(found), pairs), encoding="utf-8")
            for n, p in enumerate(pairs, 1):
                writer.writerow(
                    [item.name, n, p.a.student, p.b.student, f"{p.score:.3f}", f"{p.shared_weight:.3f}", p.shared]
                )
    return ranked


def main(argv: list[str] | None = None) -> None:
    root, out = report_paths(__doc__.splitlines()[0], OUT, argv)
    ranked = report(load(root), root, out)
    for name, pairs in ranked.items():
        top = ", ".join(f"{p.a.student}/{p.b.student} {p.score:.2f}" for p in pairs[:3])
        print(f"{name}: {top or 'fewer than two submissions'}")
    print(f"wrote {out}/<exercise>.html and {out}/similarity.csv")


if __name__ == "__main__":
    main()
