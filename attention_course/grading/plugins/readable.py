"""Before nbgrader's SaveAutoGrades: a test cell's result nbgrader cannot read is removed."""

from __future__ import annotations

import nbformat
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

UNREADABLE = (
    "This cell's result is not a grade nbgrader can read (it was removed); the trusted grader decides the cell.\n"
)


class ReadableGrades(NbGraderPreprocessor):
    """Runs before nbgrader's SaveAutoGrades: a test cell whose result nbgrader cannot read as a
    grade (a student's kernel can make a test cell show a number above its points, or a result
    without text, which would stop SaveAutoGrades and the whole notebook) loses that result and
    gets a line on stderr instead, so nbgrader saves 0 for it; the trusted verdict, right after,
    decides every test cell."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell):
            try:
                utils.determine_grade(cell, self.log)
            except (ValueError, KeyError, TypeError):
                cell.outputs = [o for o in cell.outputs if o.get("output_type") != "execute_result"]
                cell.outputs.append(nbformat.v4.new_output("stream", name="stderr", text=UNREADABLE))
        return cell, resources
