"""The translation catalogues of the course (`i18n/<language>/*.po`), as the grader reads them.

A graded question's explanations are said only by the grader, in the submission's language: they
are never compiled into the helpers' messages, so the grader reads them from the catalogue here.
The authoring side (`attention_course.authoring.edition`) writes and compiles the catalogues.
"""

from __future__ import annotations

import functools
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po

from .manifest import Course, load

I18N = "i18n"
DOMAIN = "course"
GRADER_ONLY = "explain/"  # contexts of what only the grader says (never compiled into the helpers)


def catalogue_dir(course: Course, language: str) -> Path:
    """`i18n/<language>/`: one .po file per notebook (its cells) and messages.po (the rest)."""
    return course.root / I18N / language


def read_catalogue(course: Course, language: str) -> Catalog:
    """Every .po file of a language, as one catalogue."""
    catalog = Catalog(locale=language.replace("-", "_"), domain=DOMAIN)
    for path in sorted(catalogue_dir(course, language).glob("*.po")):
        with open(path, "rb") as handle:
            part = read_po(handle, locale=language.replace("-", "_"))
        for message in part:
            if message.id:
                catalog[message.id] = message
        for message in part.obsolete.values():
            catalog.obsolete[message.key if hasattr(message, "key") else message.id] = message
    return catalog


@functools.cache
def _grader_catalogue(language: str) -> Catalog:
    return read_catalogue(load(), language)


def grader_text(text: str, context: str, language: str) -> str:
    """A sentence only the grader says (a graded question's explanation), in `language`: read from
    the instructor's catalogue, as it is never in the helpers' compiled messages."""
    if language == "en":
        return text
    message = _grader_catalogue(language).get(text, context=context)
    return message.string if message is not None and message.string and not message.fuzzy else text
