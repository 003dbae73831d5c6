"""`attention_course/grading/feedback_pages.py`: the feedback template's labels, all of them translatable."""

from __future__ import annotations

import re

import pytest

from attention_course.grading import feedback_pages
from helpers.i18n import _, using

TEMPLATE = (feedback_pages.TEMPLATES / "course_feedback.html.j2").read_text(encoding="utf-8")


def test_the_template_shows_exactly_the_listed_labels():
    used = set(re.findall(r'"([^"]+)" \| label', TEMPLATE)) | set(re.findall(r'said\("([^"]+)"\)', TEMPLATE))
    assert used == set(feedback_pages.LABELS)


def test_every_label_has_a_translation_in_each_edition():
    from attention_course.model.manifest import load

    for language in {e.language for e in load().editions} - {"en"}:
        with using(language):
            untranslated = [label for label in feedback_pages.LABELS if _(label) == label]
        assert not untranslated, f"{language}: {untranslated}"


def test_a_word_that_is_not_a_label_is_refused():
    with pytest.raises(KeyError, match="not a feedback label"):
        feedback_pages.label("Scroe:")
