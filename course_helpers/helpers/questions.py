"""Questions: graded multiple-choice and numeric ones, whose check only reads the form of the
answer, and practice ones, which explain every option at once.

A graded question's release holds its text and options and nothing else (no answer, no per-option
data): `check_choice` only confirms that the answer is one of the letters, and the grader's
verdict, with the reason for the chosen option, comes with the feedback. A practice question
(`practice(name, letter)`) has no points, so it explains the chosen option at once, right or not.
A numeric question's release holds its text and the form of number it expects: `check_numeric`
only confirms that the answer is a finite number (`helpers.numbers`), never how close it is.
`render` writes a question as the markdown of its notebook cell; the build uses it, so the text a
student reads and the text a check echoes come from one place.
"""

from __future__ import annotations

from collections.abc import Callable

from . import course
from .feedback import CheckFailed
from .i18n import N_, _
from .numbers import NotANumber, read_number


def normalise_option(answer) -> str:
    """ "b", " B ", "(B)" and "B." all mean option B."""
    return str(answer).strip().upper().strip("()\"'. ")


def render(spec: dict, points: float | None = None, translate: Callable[[str], str] = _) -> str:
    """The markdown of a question's cell: the question, its options, and what to do."""
    t = translate
    if spec["kind"] == "practice":
        lines = [t(N_("**Try it (no points).** {question}")).format(question=t(spec["question"]))]
    else:
        heading = N_("**{question}** (1 point)") if (points or 1) == 1 else N_("**{question}** ({points:g} points)")
        lines = [t(heading).format(question=t(spec["question"]), points=points or 1)]
    lines.append("")
    if spec["kind"] == "numeric":
        lines.append(
            t(
                N_(
                    "Expected: {unit}. Set `{variable}` to a number in the cell below, written with numbers only "
                    '(such as `0.125`, `"1/8"` or `2 ** -3`: the grader reads the cell, it does not run it), and run '
                    "the check. The check only confirms that it is a number; whether it is right, and why, comes "
                    "with your feedback."
                )
            ).format(unit=t(spec["unit"]), variable=spec["variable"])
        )
        return "\n".join(lines)
    lines += [f"- **{letter}.** {t(text)}" for letter, text in spec["options"].items()]
    lines.append("")
    if spec["kind"] == "practice":
        lines.append(
            t(
                N_(
                    "Put a letter between the quotes in the cell below and run it: you read at once why that "
                    "option is right or wrong. Try the others too."
                )
            )
        )
    else:
        lines.append(
            t(
                N_(
                    'Set `{variable}` to your letter as a string ("A" to "D") and run the check. The check only '
                    "confirms the form of your answer; whether it is right, and why, comes with your feedback."
                )
            ).format(variable=spec["variable"])
        )
    return "\n".join(lines)


def check_choice(name: str, answer) -> None:
    """A graded question's visible check: the answer must be one of the option letters."""
    spec = course.item(name)
    option = normalise_option(answer)
    if option not in spec["options"]:
        raise CheckFailed(
            _('Set {variable} to one of {options} (a string such as "A"); it is {answer!r}.').format(
                variable=spec["variable"], options=_(", ").join(spec["options"]), answer=answer
            )
        )
    print(
        "• "
        + _("Answer {option} recorded: “{text}”. Whether it is right, and why, comes with your feedback.").format(
            option=option, text=_(spec["options"][option])
        )
    )


def check_numeric(name: str, answer) -> None:
    """A numeric question's visible check: the answer must be a finite number (how close it is to
    the right one is the grader's alone to say)."""
    spec = course.item(name)
    try:
        number = read_number(spec["variable"], answer)
    except NotANumber as problem:
        raise CheckFailed(str(problem)) from None
    print(
        "• "
        + _("Answer {number:g} recorded. Whether it is right, and why, comes with your feedback.").format(number=number)
    )


def practice(name: str, answer: str = "") -> None:
    """A practice question: why the chosen option is right or wrong, at once (no points)."""
    spec = course.practice(name)
    option = normalise_option(answer)
    if option not in spec["options"]:
        print(
            _("Put one of {options} between the quotes, then run the cell again.").format(
                options=_(", ").join(spec["options"])
            )
        )
        return
    verdict = _("✓ {option} is right. {why}") if option == spec["answer"] else _("✗ {option} is not right. {why}")
    print(verdict.format(option=option, why=_(spec["explain"][option])))
