"""After nbgrader's SaveAutoGrades: the trusted verdict decides every test cell's score."""

from __future__ import annotations

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor

from helpers.i18n import _, using

from ..sandbox_run import ConfinementFailed
from ..trusted import Verdict, test_cells
from .run import Run, ids_of, run_of
from .tidy import Note


class TrustedGrades(NbGraderPreprocessor):
    """The trusted verdict decides every test cell's automatic score."""

    def preprocess(self, nb, resources):
        run = run_of(self)
        student, assignment, notebook = ids_of(resources)
        cells = test_cells(run.course, notebook)
        if not cells:
            run.finished(student, assignment, notebook)
            return nb, resources
        try:
            future = run.start_trusted(student, assignment).get(notebook)
            verdicts = future.result() if future is not None else []
        except ConfinementFailed as failed:
            run.fault(student, assignment, notebook, "confinement", str(failed))
            raise
        self._save(resources, verdicts, run)
        for verdict in verdicts:
            if verdict.fault:
                run.fault(student, assignment, notebook, "grader", f"{verdict.cell.grade_id}: {verdict.reason}")
        notes = run.tidied.pop((student, assignment, notebook), []) + run.near_named(student, assignment)
        _summarise(nb, verdicts, run.seed_for(assignment), run.language(assignment), run.layers, notes)
        run.verdict_saved(student, assignment, notebook)
        run.finished(student, assignment, notebook)
        return nb, resources

    def _save(self, resources, verdicts: list[Verdict], run: Run) -> None:
        student, assignment, notebook = ids_of(resources)
        with Gradebook(resources["nbgrader"]["db_url"]) as gradebook:
            for verdict in verdicts:
                try:
                    grade = gradebook.find_grade(verdict.cell.grade_id, notebook, assignment, student)
                except MissingEntry:
                    continue
                grade.auto_score = verdict.score
                # decided (a teacher's manual_score still wins), unless the grader itself failed
                grade.needs_manual_grade = verdict.fault
                answer = run.course.item(verdict.cell.item).answer_cell
                try:
                    comment = gradebook.find_comment(answer, notebook, assignment, student)
                    comment.auto_comment = verdict.reason or None
                except MissingEntry:
                    pass
            gradebook.db.commit()

    def preprocess_cell(self, cell, resources, index):
        return cell, resources


def _summarise(nb, verdicts: list[Verdict], seed: int, language: str, layers: list[str], notes=()) -> None:
    """A grading summary as the notebook's first cell, in the submission's language, with what
    was put right in the notebook before grading (`notes`)."""
    with using(language):
        lines = [_("## Grading summary"), ""]
        said = [note.said() if isinstance(note, Note) else str(note) for note in notes]
        if said:
            lines += [_("Put right before grading:"), *(f"- {line}" for line in said), ""]
        for v in verdicts:
            mark = "✓" if v.score == v.cell.points else "✗"
            reason = " ".join(v.reason.split())[:600]
            lines.append(
                f"- {mark} **{v.cell.grade_id}**: {v.score:g} / {v.cell.points:g}" + (f". {reason}" if reason else "")
            )
        lines += [
            "",
            _("Graded by the course's trusted grader (seed {seed}; confinement: {layers}).").format(
                seed=seed, layers=", ".join(layers) or _("none")
            ),
        ]
    cell = nbformat.v4.new_markdown_cell("\n".join(lines))
    cell.metadata["grading_summary"] = True
    nb.cells = [c for c in nb.cells if not c.get("metadata", {}).get("grading_summary")]
    nb.cells.insert(0, cell)
