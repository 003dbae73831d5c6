"""How a check talks to a student: the failure it raises and the sentences it says.

`CheckFailed` shows as a short red message in the notebook instead of a long traceback.
`call_student` runs a student's function for a lab or demo and turns a failure into one
sentence (`MissingImplementation`). `mistake_message` gives the sentence that names a known
wrong answer (from `course.json`); `explain_error` explains common exceptions.
"""

from __future__ import annotations

import re

import torch

from . import course
from .i18n import N_, _, pgettext


class CheckFailed(AssertionError):
    """A check did not pass. In IPython it shows as its message alone, without a traceback."""

    def _render_traceback_(self):  # IPython's hook for custom error display
        red, bold, reset = "\x1b[31m", "\x1b[1m", "\x1b[0m"
        lines = str(self).splitlines() or [_("Check failed.")]
        return [f"{red}{bold}✗ {lines[0]}{reset}"] + [f"{red}  {line}{reset}" for line in lines[1:]]


class MissingImplementation(Exception):
    """A lab or demo needs a student's function that is not done or fails; the message says which."""


def call_student(name: str, fn, *args, then: str | None = None, **kwargs):
    """Call a student's function for a lab or demo, turning any failure into one sentence.

    A stub (NotImplementedError) asks for the exercise first; any other exception is named
    with its message and points back to the exercise's check. Raises MissingImplementation.
    """
    then = then or _("move the slider again")
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise MissingImplementation(
            _("Implement `{name}` above first, then {then}.").format(name=name, then=then)
        ) from None
    except Exception as exc:  # a lab should point back to the exercise, not show a traceback
        raise MissingImplementation(
            _("Your `{name}` raised {kind}: {text}. Its check above says more.").format(
                name=name, kind=type(exc).__name__, text=exc
            )
        ) from None


def passed(text: str) -> None:
    """Tell the student a check passed."""
    print(f"✓ {text}")


def shape_of(value) -> str:
    """A tensor's shape written like a tuple, `(2, 3)`; other values by their type."""
    if isinstance(value, torch.Tensor):
        return str(tuple(value.shape))
    return _("a {type}").format(type=type(value).__name__)


def preview(tensor: torch.Tensor, index: tuple = (), width: int = 5) -> str:
    """A few values of `tensor` along its last axis, starting at `index` (a leading index); a
    boolean tensor's as True and False."""
    t = tensor.detach()

    def text(x) -> str:
        return str(bool(x)) if t.dtype == torch.bool else f"{float(x):.4f}"

    if t.dim() == 0:
        return text(t)
    row = t[index] if index else t
    while row.dim() > 1:
        row = row[0]
    values = ", ".join(text(x) for x in row[:width])
    more = ", ..." if row.shape[0] > width else ""
    return f"[{values}{more}]"


def first_difference(received: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> tuple:
    """The leading index (all axes but the last) of the first row where two tensors differ."""
    close = torch.isclose(received.double(), expected.double(), atol=atol, rtol=rtol, equal_nan=True)
    bad = (~close).nonzero()
    if bad.numel() == 0 or received.dim() < 2:
        return ()
    return tuple(int(i) for i in bad[0][:-1])


def mistake_context(exercise: str, mistake: str) -> str:
    """The key of a mistake's sentence in the translation catalogue."""
    return f"mistake/{exercise}/{mistake}"


def mistake_message(exercise: str, mistake: str) -> str:
    """The sentence that names a known mistake of an exercise ('' when the exercise has none)."""
    sentence = course.items().get(exercise, {}).get("mistakes", {}).get(mistake)
    return pgettext(mistake_context(exercise, mistake), sentence) if sentence else ""


# Explanations for exceptions a student's code raises, matched against the error message.
ERROR_HINTS: list[tuple[str, str]] = [
    (
        r"view size is not compatible with input tensor's size and stride",
        N_(
            "`.view` needs a contiguous tensor and a transposed one is not: use `.reshape(...)` or "
            "`.contiguous().view(...)`."
        ),
    ),
    (
        r"must match the size of tensor b \(\d+\) at non-singleton dimension",
        N_(
            "Two shapes do not fit together in a product. If you wrote `k.T`: on a tensor with batch axes "
            "it reverses every axis, the batch axes too, while `k.transpose(-2, -1)` swaps only the last two."
        ),
    ),
    (
        r"Boolean value of Tensor with more than one value is ambiguous",
        N_(
            "`if mask:` (or `and`, `or`, `not`) asks one True or False of a whole tensor; work element by "
            'element instead, for example `scores.masked_fill(~mask, float("-inf"))`.'
        ),
    ),
    (
        r"shape '\[[\d, ]+\]' is invalid for input of size",
        N_(
            "A reshape asked for more or fewer numbers than the tensor holds. Inside attention, take each "
            "length from its own tensor: the keys' T_k from `key`, not the queries' T_q (they differ in "
            "cross-attention)."
        ),
    ),
    (
        r"mat1 and mat2 shapes cannot be multiplied|size mismatch|must match the size of tensor",
        N_("Two shapes do not fit together: check which axes you multiply or transpose."),
    ),
    (
        r"expected .* to have the same dtype|same dtype|found dtype",
        N_("Two tensors have different dtypes: keep the dtype of the inputs (float32 or float64) throughout."),
    ),
    (
        r"The use of `x.T` on tensors of dimension other than 2",
        N_("`.T` reverses every axis; use `.transpose(-2, -1)` (or `.mT`) to swap the last two."),
    ),
    (
        r"bmm|batch1 must be a 3D tensor|3D tensor",
        N_("torch.bmm only takes 3-D tensors; `@` (torch.matmul) handles any number of batch axes."),
    ),
    (r"not divisible|divisible", N_("Check that d_model is divisible by num_heads before reshaping.")),
]


def explain_error(error_type: str, message: str) -> str:
    """One sentence about an exception, or an empty string when none applies."""
    for pattern, hint in ERROR_HINTS:
        if re.search(pattern, message):
            return _(hint)
    return ""
