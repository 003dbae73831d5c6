"""What counts as a numeric answer, read the same way by the visible check and by the grader.

An answer is a finite int or float, or a string holding one (`"0.125"`, `"1e-3"`) or a fraction
(`"1/8"`); True and False are not numbers here. The grader never runs an answer cell: it reads the
expression the cell assigns with `arithmetic`, which knows numbers, + - * / // % **, and `sqrt`
(bare, `math.`, `np.` or `numpy.`), and nothing else.
"""

from __future__ import annotations

import ast
import math
import numbers
import operator

from .i18n import N_, _


class NotANumber(ValueError):
    """An answer that is not a finite number; its message says what is wrong, in one sentence."""


_EXAMPLES = N_('0.125 or "1/8"')


def _finite(variable: str, answer, number: float) -> float:
    if not math.isfinite(number):
        raise NotANumber(
            _("{variable} is {answer!r}, not a finite number: work out the value and write it down.").format(
                variable=variable, answer=answer
            )
        )
    return float(number)


def _from_text(variable: str, text: str) -> float:
    cleaned = text.strip().replace("−", "-").replace(" ", "")
    parts = cleaned.split("/")
    try:
        if len(parts) == 2:
            top, bottom = float(parts[0]), float(parts[1])
            number = top / bottom if bottom else math.inf
        elif len(parts) == 1:
            number = float(cleaned)
        else:
            raise ValueError(text)
    except ValueError:
        raise NotANumber(
            _("{variable} is {answer!r}, which is not a number: write one such as {examples}.").format(
                variable=variable, answer=text, examples=_(_EXAMPLES)
            )
        ) from None
    return _finite(variable, text, number)


def read_number(variable: str, answer) -> float:
    """`answer` as a float, or NotANumber saying in one sentence what is wrong with it."""
    if isinstance(answer, str):
        return _from_text(variable, answer)
    if isinstance(answer, numbers.Real) and not isinstance(answer, bool):
        return _finite(variable, answer, float(answer))
    raise NotANumber(
        _("Set {variable} to a number such as {examples}; it is {answer!r}.").format(
            variable=variable, examples=_(_EXAMPLES), answer=answer
        )
    )


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_SQRT = ("sqrt", "math.sqrt", "np.sqrt", "numpy.sqrt")


def _evaluate(node: ast.AST):
    """The value of an expression of numbers (floats only, so a power cannot grow without end)."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, str):
        return node.value if isinstance(node.value, str) else float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](float(_evaluate(node.left)), float(_evaluate(node.right)))
    if isinstance(node, ast.Call) and ast.unparse(node.func) in _SQRT and len(node.args) == 1 and not node.keywords:
        inside = float(_evaluate(node.args[0]))
        return math.sqrt(inside) if inside >= 0 else math.nan
    raise ValueError(ast.unparse(node))


def _shown(node: ast.expr) -> str:
    """The expression as a student wrote it, cut short (and never failing on a deep one)."""
    try:
        text = ast.unparse(node)
    except RecursionError:
        return "..."
    return text if len(text) <= 80 else text[:77] + "..."


def arithmetic(variable: str, node: ast.expr) -> float:
    """The number an answer cell's expression writes, read without running anything; NotANumber
    when it uses anything but numbers (a name, a call other than sqrt) or is not finite."""
    try:
        value = _evaluate(node)
    except (ValueError, TypeError, RecursionError):
        raise NotANumber(
            _(
                "The grader reads {variable} without running your code, so write it with numbers only "
                "(such as {examples}, or 2 ** -3); it is `{source}`."
            ).format(variable=variable, examples=_(_EXAMPLES), source=_shown(node))
        ) from None
    except (ZeroDivisionError, OverflowError):
        value = math.inf
    return read_number(variable, value)
