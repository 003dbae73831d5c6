"""The course's plugin for `nbgrader generate_assignment`.

`ClearSolutionsAndQuestions` is nbgrader's `ClearSolutions` with two differences: its `code_stub`
is the one of the assignment's edition in course.toml (so the Chinese edition's exercises say
`# 在这里写你的代码`), and the answer cell of a multiple-choice question becomes
`answer = ""  # "A", "B", "C" or "D"` (a line a beginner can fill in), and the one of a numeric
question `answer = None  # a number` (its comment in the edition's language), instead of
`raise NotImplementedError()`. The course's nbgrader_config.py puts it in place of
`ClearSolutions` in `GenerateAssignment.preprocessors`.
"""

from __future__ import annotations

from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearSolutions
from nbgrader.utils import is_solution

from attention_course.model.manifest import load
from helpers.i18n import _, using


def question_stub(variable: str, options) -> str:
    return f'{variable} = ""  # {", ".join(repr(o).replace(chr(39), chr(34)) for o in options)}'


def numeric_stub(variable: str, language: str = "en") -> str:
    with using(language):
        return f"{variable} = None  # " + _("a number")


class ClearSolutionsAndQuestions(ClearSolutions):
    """ClearSolutions, with a fill-in-the-letter stub for the course's multiple-choice questions."""

    def preprocess(self, nb, resources):
        coursedir = CourseDirectory(config=self.config)
        course = load((Path(coursedir.root) / coursedir.source_directory).resolve().parent)
        notebook = resources.get("nbgrader", {}).get("notebook")
        self._questions = {i.answer_cell: i for i in course.items_in(notebook) if i.is_question}
        assignment = resources.get("nbgrader", {}).get("assignment")
        editions = [e for e in course.editions if e.assignment == assignment]
        self._language = editions[0].language if editions else "en"
        if editions:
            self.code_stub = {**self.code_stub, "python": editions[0].code_stub}
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        item = self._questions.get(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"))
        if item is None or not is_solution(cell) or cell.cell_type != "code":
            return super().preprocess_cell(cell, resources, cell_index)
        saved = dict(self.code_stub)
        if item.is_numeric:
            stub = numeric_stub(item.variable, self._language)
        else:
            stub = question_stub(item.variable, item.spec["options"])
        self.code_stub = {**saved, resources["language"]: stub}
        try:
            return super().preprocess_cell(cell, resources, cell_index)
        finally:
            self.code_stub = saved
