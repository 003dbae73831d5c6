"""nbgrader's first sanitize step: what in a submission would stop nbgrader is put right."""

from __future__ import annotations

import json
import uuid

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from helpers.cells import grade_id, is_answer_cell
from helpers.i18n import N_, _

from .run import ids_of, release_notebook, run_of


class TidySubmission(NbGraderPreprocessor):
    """The first of nbgrader's sanitize steps: what would stop nbgrader is put right.

    - a notebook that could not be read (a stand-in) gets a first cell saying why;
    - a duplicated grade cell keeps its first copy (the others lose nbgrader's metadata);
    - a duplicated cell id is renewed;
    - grading marks the student changed are put back as the release has them: a cell marked for
      grading that the release does not have loses its marks, and a release cell whose marks
      (points, grade or answer flags, lock, id kept) were changed gets the release's back, so
      a tampered notebook is graded as released and costs no other notebook;
    - an answer cell the student deleted comes back from the release as its empty stub, after the
      grade cell before it, so that its test cell is graded (as not answered) rather than failing
      the notebook.
    What was put right goes to the teacher's problems and, in the student's language, into the
    notebook's grading summary (its feedback)."""

    def preprocess(self, nb, resources):
        run = run_of(self)
        student, assignment, notebook = ids_of(resources)
        notes = tidy(nb, release_notebook(run.coursedir, assignment, notebook), f"{notebook}.ipynb")
        for note in notes:
            run.problem(student, assignment, notebook, str(note))
        run.tidied[(student, assignment, notebook)] = notes
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        return cell, resources


class Note(str):
    """A sentence about a submission, in English (the teacher's), that can be said again in the
    student's language: `Note(template, **values)`; `said()` translates under `using`."""

    def __new__(cls, template: str, **values):
        note = super().__new__(cls, template.format(**values))
        note.template, note.values = template, values
        return note

    def said(self) -> str:
        return _(self.template).format(**self.values)


# What nbgrader reads from a grade cell's metadata: what a student's change to it may not move.
MARKS = ("grade", "solution", "locked", "task", "points", "grade_id")


def tidy(nb, release, name: str) -> list[str]:
    """TidySubmission's work on one notebook (changed in place); what was wrong with it."""
    notes = []
    unreadable = nb.metadata.get("attention_unreadable")
    if unreadable:
        notes.append(unreadable)
    seen, ids = set(), set()
    released = {grade_id(c): c for c in release.cells if grade_id(c)} if release is not None else None
    for cell in nb.cells:
        if cell.get("id") in ids or not cell.get("id"):
            cell["id"] = uuid.uuid4().hex[:12]
        ids.add(cell["id"])
        if "nbgrader" not in cell.get("metadata", {}):
            continue
        gid = grade_id(cell)
        if gid is not None and gid in seen:
            del cell.metadata["nbgrader"]
            notes.append(Note(N_("{name}: a copy of cell {gid!r} was ignored"), name=name, gid=gid))
            continue
        seen.add(gid)
        if released is None or unreadable:
            continue
        if gid not in released:
            del cell.metadata["nbgrader"]
            notes.append(
                Note(
                    N_("{name}: a cell marked for grading ({gid!r}) is not in the release; its marks were removed"),
                    name=name,
                    gid=gid or "no id",
                )
            )
            continue
        marks = released[gid].metadata["nbgrader"]
        changed = sorted(k for k in MARKS if cell.metadata["nbgrader"].get(k) != marks.get(k))
        if changed or cell.cell_type != released[gid].cell_type:
            cell.metadata["nbgrader"] = nbformat.from_dict(json.loads(json.dumps(marks)))
            if cell.cell_type != released[gid].cell_type:
                changed.append("cell type")
                cell.cell_type = released[gid].cell_type
                cell.pop("outputs", None), cell.pop("execution_count", None)
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
            notes.append(
                Note(
                    N_("{name}: the grading settings of cell {gid!r} were changed ({what}); they were put back"),
                    name=name,
                    gid=gid,
                    what=", ".join(changed),
                )
            )
    if release is not None and not unreadable:
        notes += _restore_answer_cells(nb, release, name)
    if unreadable:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**{unreadable}**"))
    return notes


def _restore_answer_cells(nb, release, name: str) -> list[str]:
    present = {grade_id(c) for c in nb.cells}
    notes = []
    for index, cell in enumerate(release.cells):
        gid = grade_id(cell)
        if gid and is_answer_cell(cell) and gid not in present:
            after = next((grade_id(c) for c in reversed(release.cells[:index]) if grade_id(c) in present), None)
            at = next((i + 1 for i, c in enumerate(nb.cells) if after and grade_id(c) == after), 0)
            copy = nbformat.from_dict(json.loads(json.dumps(cell)))
            copy["id"] = uuid.uuid4().hex[:12]
            nb.cells.insert(at, copy)
            present.add(gid)
            notes.append(
                Note(N_("{name}: answer cell {gid!r} was missing; it was graded as not answered"), name=name, gid=gid)
            )
    return notes
