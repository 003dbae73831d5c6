"""What the class got wrong (`make report`): counts of the named mistakes and of the failing
cases, per exercise and question, from what grading already recorded. Nothing is regraded.

Grading records, for each student and graded item, the test cell's score and the trusted
grader's reason as the answer cell's automatic comment in nbgrader's gradebook (the sentence
the feedback shows). The report reads those back:
- a named mistake is a mistake sentence of course.toml (in the submission's language) found in
  the reason; for a question, the wrong option the reason explains;
- a failing case is the case whose inputs the reason names ("For q (4, 1, 9), k (4, 11, 9) ...");
  hidden cases are marked;
- points lost with neither (an error, a missing definition) count as "other".
A notebook with no reason and no point recorded is one the student did not hand in: not counted.
Each row has the share of the students who submitted the notebook, one anonymous example (the
grader's reason and the answer cell of one such student's autograded notebook) and a link to the
section of the release notebook that teaches the item. It writes `build/report/class_report.html`
and `build/report/class_report.csv`.
"""

from __future__ import annotations

import csv
import html
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from attention_course.model.cases import item_cases
from attention_course.model.catalogue import grader_text
from attention_course.model.manifest import Course, Item, load
from helpers.cells import cell_source, find_cell
from helpers.feedback import mistake_context
from helpers.i18n import pgettext, using

from .coursedir import CoursePaths, report_paths

OUT = Path("build") / "report"
CSV_COLUMNS = ["notebook", "item", "kind", "what", "students", "submitted", "share", "example_reason", "teaches"]


@dataclass
class Recorded:
    """One student's grading of one item, as the gradebook holds it."""

    student: str
    assignment: str
    notebook: str
    item: Item
    score: float
    max_score: float
    reason: str


@dataclass
class Row:
    notebook: str
    item: str
    kind: str  # "mistake", "hidden case", "case" or "other"
    what: str
    students: list[Recorded] = field(default_factory=list)


def recorded(course: Course, db: Path) -> tuple[list[Recorded], dict[str, set[str]]]:
    """Every graded item of every submission, and who submitted each notebook."""
    from nbgrader.api import Gradebook

    found, submitted = [], defaultdict(set)
    with Gradebook(f"sqlite:///{db}") as gradebook:
        present = {a.name for a in gradebook.assignments}
        for edition in course.editions:
            if edition.assignment not in present:
                continue
            for submission in gradebook.assignment_submissions(edition.assignment):
                for notebook in submission.notebooks:
                    comments = {c.name: c.auto_comment or "" for c in notebook.comments}
                    grades = {g.name: g for g in notebook.grades}
                    items = [i for i in course.items_in(notebook.name) if i.test_cell in grades]
                    if all(not comments.get(i.answer_cell) and grades[i.test_cell].score == 0 for i in items):
                        continue  # nothing graded: a notebook the student did not hand in
                    submitted[notebook.name].add(submission.student.id)
                    for item in items:
                        grade = grades[item.test_cell]
                        found.append(
                            Recorded(
                                submission.student.id,
                                edition.assignment,
                                notebook.name,
                                item,
                                grade.score,
                                grade.max_score,
                                comments.get(item.answer_cell, ""),
                            )
                        )
    return found, submitted


def named_mistakes(course: Course, item: Item) -> dict[str, list[str]]:
    """name -> the sentences that name it, in every edition's language."""
    languages = sorted({e.language for e in course.editions})
    names: dict[str, list[str]] = {}
    if item.is_choice:
        for option in item.wrong_options:
            names[f"chose {option}"] = [
                grader_text(item.explanations[option], f"explain/{item.name}", lang)
                for lang in languages
                if option in item.explanations
            ]
        return names
    for mistake in item.mistakes.values():
        sentences = []
        for lang in languages:
            with using(lang):
                sentences.append(pgettext(mistake_context(item.name, mistake.name), mistake.sentence))
        names[mistake.name] = sentences
    return names


def case_kinds(course: Course, item: Item) -> list[tuple[str, str, bool]]:
    """(inputs as the reasons write them, case name, hidden) of an exercise, longest first."""
    if item.is_question:
        return []
    kinds = [(case.describe_inputs(), case.name, case.hidden) for case in item_cases(course, item)]
    return sorted(kinds, key=lambda k: -len(k[0]))


def tally(course: Course, records: list[Recorded]) -> list[Row]:
    """The rows of the report: for each item, its mistakes, failing cases and other losses."""
    rows: dict[tuple[str, str, str], Row] = {}

    def add(record: Recorded, kind: str, what: str) -> None:
        row = rows.setdefault((record.item.name, kind, what), Row(record.notebook, record.item.name, kind, what))
        row.students.append(record)

    for record in records:
        if record.score >= record.max_score:
            continue
        named = False
        for name, sentences in named_mistakes(course, record.item).items():
            if any(s and s in record.reason for s in sentences):
                add(record, "mistake", name)
                named = True
        for inputs, case, hidden in case_kinds(course, record.item):
            if re.search(rf"(?<![\w(,]){re.escape(inputs)}", record.reason):
                add(record, "hidden case" if hidden else "case", case)
                named = True
                break
        if not named:
            add(record, "other", record.reason.splitlines()[0][:120] if record.reason else "no reason recorded")
    order = {item.name: n for n, item in enumerate(course.items)}
    kinds = ["mistake", "hidden case", "case", "other"]
    return sorted(rows.values(), key=lambda r: (order[r.item], kinds.index(r.kind), -len(r.students), r.what))


def teaching_section(course: Course, item: Item, edition: str = "en") -> str:
    """A link to the section of the release notebook that teaches an item (the heading above
    its answer cell), relative to the report's folder."""
    path = course.release_dir(edition) / f"{item.notebook}.ipynb"
    link = f"../../{course.release}/{course.edition(edition).assignment}/{item.notebook}.ipynb"
    if not path.exists():
        return link
    notebook = json.loads(path.read_text(encoding="utf-8"))
    answer = find_cell(notebook, item.answer_cell)
    cells = notebook["cells"][: notebook["cells"].index(answer)] if answer in notebook["cells"] else []
    for cell in reversed(cells):
        if cell.get("cell_type") != "markdown":
            continue
        headings = [line for line in cell_source(cell).splitlines() if line.startswith("#")]
        if headings:
            title = headings[-1].lstrip("#").strip()
            return f"{link}#{quote(title.replace(' ', '-'))}"
    return link


def example(root: Path, record: Recorded) -> str:
    """The answer cell of one student's autograded notebook (no name), or '' if it is gone."""
    dirs = CoursePaths(root)
    path = Path(dirs.of("autograded", record.student, record.assignment)) / f"{record.notebook}.ipynb"
    if not path.is_absolute():
        path = root / path
    try:
        cell = find_cell(json.loads(path.read_text(encoding="utf-8")), record.item.answer_cell)
    except (OSError, ValueError):
        return ""
    return cell_source(cell) if cell else ""


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>What the class got wrong</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;vertical-align:top}}
pre{{margin:0;white-space:pre-wrap;max-width:50em}}</style>
</head><body><h1>What the class got wrong</h1>
<p>From the gradebook (what grading recorded; nothing was regraded). Share: of the students who
submitted the notebook. Examples are anonymous.</p>
<table><tr><th>notebook</th><th>item</th><th>kind</th><th>what</th><th>students</th><th>share</th>
<th>one example</th><th>taught in</th></tr>{rows}</table></body></html>
"""


def write(course: Course, root: Path, out: Path) -> list[Row]:
    """Write the report's HTML and CSV; return its rows."""
    db = CoursePaths(root).gradebook
    if not db.is_file():
        raise SystemExit(f"{db} does not exist: grade first (make grade); the report only reads what grading recorded")
    records, submitted = recorded(course, db)
    rows = tally(course, records)
    out.mkdir(parents=True, exist_ok=True)
    e = html.escape
    cells, lines = [], []
    for row in rows:
        total = len(submitted[row.notebook]) or 1
        share = len({r.student for r in row.students}) / total
        first = min(row.students, key=lambda r: r.student)
        link = teaching_section(course, course.item(row.item))
        lines.append(
            [row.notebook, row.item, row.kind, row.what, len(row.students), total, f"{share:.2f}", first.reason, link]
        )
        code = example(root, first)
        cells.append(
            f"<tr><td>{e(row.notebook)}</td><td><code>{e(row.item)}</code></td><td>{e(row.kind)}</td>"
            f"<td>{e(row.what)}</td><td>{len(row.students)} / {total}</td><td>{share:.0%}</td>"
            f"<td><pre>{e(first.reason)}</pre>{f'<pre>{e(code)}</pre>' if code else ''}</td>"
            f'<td><a href="{e(link)}">{e(row.notebook)}</a></td></tr>'
        )
    (out / "class_report.html").write_text(PAGE.format(rows="".join(cells)), encoding="utf-8")
    with open(out / "class_report.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(lines)
    return rows


def main(argv: list[str] | None = None) -> None:
    root, out = report_paths(__doc__.splitlines()[0], OUT, argv)
    rows = write(load(root), root, out)
    for row in rows:
        print(f"{row.notebook} {row.item}: {row.kind} {row.what}: {len(row.students)}")
    print(f"wrote {out}/class_report.html and {out}/class_report.csv")


if __name__ == "__main__":
    main()
