"""Feedback pages in the submission's language.

nbgrader writes feedback HTML with its own English labels (Score, Test cell, Comments...). For a
submission of another edition, `localize` puts those labels in that language (from the course's
translation catalogue); the grading summary and the check messages in the page are already in it.
"""

from __future__ import annotations

import re
from pathlib import Path

from helpers.i18n import N_, _, using

LABELS = (
    N_("Score:"),
    N_("Test cell"),
    N_("Coding free-response"),
    N_("Written response"),
    N_("Task"),
    N_("Comment"),
    N_("Comments:"),
    N_("Late submission penalty"),
    N_("Student's answer"),
    N_("Student's task"),
    N_("Grade cell:"),
    N_("(Top)"),
    N_("Score"),
)


def localize(page: Path, language: str) -> None:
    """Rewrite nbgrader's labels of one feedback page in `language`."""
    if language == "en":
        return
    text = page.read_text(encoding="utf-8")
    with using(language):
        for label in sorted(LABELS, key=len, reverse=True):  # "Score:" before "Score"
            text = re.sub(rf"(?<![\w-]){re.escape(label)}(?![\w-])", _(label), text)
    text = text.replace("<html>", f'<html lang="{language}">', 1)
    page.write_text(text, encoding="utf-8")
