"""A question's answer, read from the student's answer cell with `ast` and never run (a literal,
or arithmetic on numbers for a numeric question), and judged against the manifest: the option's
explanation, or the reasoning with the tolerance, in the submission's language."""

from __future__ import annotations

import ast

from attention_course.model.catalogue import grader_text
from attention_course.model.manifest import Item
from helpers.cells import cell_source, find_cell, is_test_cell
from helpers.i18n import _
from helpers.numbers import NotANumber, arithmetic
from helpers.questions import normalise_option


def assigned(notebook: dict, item: Item) -> ast.expr | None:
    """The expression a notebook's answer cell (or, failing it, the first other code cell that does)
    assigns to a question's variable; None when no cell does. Read with ast, never run."""
    cells = [find_cell(notebook, item.answer_cell)]
    cells += [c for c in notebook.get("cells", []) if c.get("cell_type") == "code" and not is_test_cell(c)]
    for cell in cells:
        if cell is None:
            continue
        try:
            tree = ast.parse(cell_source(cell))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in reversed(tree.body):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == item.variable
            ):
                return node.value
    return None


def choice_answer(notebook: dict, item: Item):
    """The literal a notebook's answer cell gives a question's variable (None when there is none)."""
    node = assigned(notebook, item)
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def judge_choice(item: Item, value, language: str = "en") -> tuple[float, str]:
    """(score, reason) of a question's answer; the reason explains the chosen option, right or
    wrong, in the submission's language (the explanations are never released)."""
    if value is None:
        return 0.0, _("No answer: {variable} is not set.").format(variable=item.variable)
    option = normalise_option(value)
    if option not in item.explanations:
        return 0.0, _("The answer {value!r} is not one of {options}.").format(
            value=value, options=_(", ").join(item.explanations)
        )
    why = grader_text(item.explanations[option], f"explain/{item.name}", language)
    if option == item.answer:
        return item.points, _("Right: {option}. {why}").format(option=option, why=why)
    return 0.0, _("Not {option}. {why}").format(option=option, why=why)


def judge_numeric(item: Item, node: ast.expr | None, language: str = "en") -> tuple[float, str]:
    """(score, reason) of a numeric question's answer (the expression its cell assigns): full points
    within the tolerance, none outside it; the reason gives the reasoning either way, in the
    submission's language."""
    if node is None or (isinstance(node, ast.Constant) and node.value in (None, "")):
        return 0.0, _("No answer: {variable} is not set.").format(variable=item.variable)
    try:
        number = arithmetic(item.variable, node)
    except NotANumber as problem:
        return 0.0, str(problem)
    relative, absolute = item.tolerance
    allowed = max(relative * abs(item.value), absolute)
    why = grader_text(item.explanations["reasoning"], f"explain/{item.name}", language)
    if abs(number - item.value) <= allowed:
        return item.points, _("Right: {answer:.6g}. {why}").format(answer=number, why=why)
    return 0.0, _("Not {answer:.6g}: the answer is {value:.6g} (within {allowed:.2g} either side). {why}").format(
        answer=number, value=item.value, allowed=allowed, why=why
    )
