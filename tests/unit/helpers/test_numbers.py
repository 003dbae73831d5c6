"""What counts as a numeric answer: the visible check's reading of a value and the grader's reading
of an answer cell's expression, each with one clear sentence for what is not a finite number."""

from __future__ import annotations

import ast
import math

import numpy as np
import pytest

from helpers.numbers import NotANumber, arithmetic, read_number


def _expr(source: str) -> ast.expr:
    return ast.parse(source, mode="eval").body


@pytest.mark.parametrize(
    ("answer", "number"),
    [(32, 32.0), (3.46, 3.46), ("0.125", 0.125), (" 1/8 ", 0.125), ("-2.5e-1", -0.25), ("−3", -3.0)]
    + [(np.float64(1.5), 1.5), ("7 / 2", 3.5)],
)
def test_a_number_in_any_of_its_forms_is_read(answer, number):
    assert read_number("x", answer) == pytest.approx(number)


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (None, "Set x to a number"),
        (True, "Set x to a number"),
        ([3], "Set x to a number"),
        ("", "is '', which is not a number"),
        ("thirty-two", "which is not a number"),
        ("1/2/3", "which is not a number"),
        (float("nan"), "not a finite number"),
        ("inf", "not a finite number"),
        ("-inf", "not a finite number"),
        ("1/0", "not a finite number"),
    ],
)
def test_what_is_not_a_finite_number_is_refused_in_one_sentence(answer, says):
    with pytest.raises(NotANumber, match=says) as refused:
        read_number("x", answer)
    assert str(refused.value).count(". ") == 0 and str(refused.value).endswith(".")


@pytest.mark.parametrize(
    ("source", "number"),
    [
        ("32", 32.0),
        ("'32'", 32.0),
        ("'1/8'", 0.125),
        ("2 ** -3", 0.125),
        ("(64 * 4 ** 2) ** 0.5", 32.0),
        ("768 ** 0.5 / 8", math.sqrt(12)),
        ("math.sqrt(12)", math.sqrt(12)),
        ("-(7 // 2) + 7 % 2", -2.0),
    ],
)
def test_the_grader_reads_arithmetic_on_numbers(source, number):
    assert arithmetic("x", _expr(source)) == pytest.approx(number)


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("ratio", "without running your code"),
        ("d_k ** 0.5", "without running your code"),
        ("float('32')", "without running your code"),
        ("[32]", "without running your code"),
        ("True", "without running your code"),
        ("10.0 ** 400", "not a finite number"),
        ("1 / 0", "not a finite number"),
        ("sqrt(-1)", "not a finite number"),
        ("'nan'", "not a finite number"),
    ],
)
def test_the_grader_refuses_what_it_would_have_to_run_or_is_not_finite(source, says):
    with pytest.raises(NotANumber, match=says):
        arithmetic("x", _expr(source))


def test_a_deeply_nested_expression_is_refused_not_a_fault():
    node = ast.Constant(1)
    for _ in range(100_000):
        node = ast.UnaryOp(ast.USub(), node)
    with pytest.raises(NotANumber, match="numbers only"):
        arithmetic("x", node)
