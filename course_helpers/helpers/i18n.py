"""The language of everything the helpers say: checks, labs, plots and demos.

Messages are written in English and wrapped in `_()`; the Chinese edition's translations come
from the course's translation catalogue, compiled into `helpers/data/locale/` (gettext). Which
language a notebook speaks is decided by its assignment folder: the kernel runs in the
notebook's folder, and `course.json` maps each edition's assignment (the folder's name, as
course.toml declares it) to its language; any other folder is English. The grader switches
language per submission with `using(...)`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gettext
import unicodedata
from pathlib import Path

DOMAIN = "course"
LOCALE_DIR = Path(__file__).parent / "data" / "locale"
# The language `using` chose, in this context only (the grader judges in a thread of its own; a
# new thread starts without one).
_LANGUAGE: contextvars.ContextVar[str | None] = contextvars.ContextVar("language", default=None)


def edition_language(folder: Path | None = None) -> str:
    """The language of the edition whose assignment folder is `folder` (the working directory,
    where a notebook's kernel runs); "en" for any other folder."""
    from .course import editions

    name = (folder or Path.cwd()).name
    return editions().get(name, {}).get("language", "en")


def language() -> str:
    chosen = _LANGUAGE.get()
    return chosen if chosen is not None else edition_language()


@contextlib.contextmanager
def using(lang: str):
    """Speak `lang` inside the block (the grader judges each submission in its own language)."""
    token = _LANGUAGE.set(lang)
    try:
        yield
    finally:
        _LANGUAGE.reset(token)


@functools.cache
def _catalogue(lang: str) -> gettext.NullTranslations:
    if lang in ("en", ""):
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[lang.replace("-", "_")], fallback=True)


def _(message: str) -> str:
    """`message` in the current language (itself in English, or when no translation exists)."""
    return _catalogue(language()).gettext(message)


def width(text: str) -> int:
    """How many columns `text` takes in a monospaced font: Chinese characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def rjust(text: str, columns: int) -> str:
    return " " * max(0, columns - width(text)) + text


def ljust(text: str, columns: int) -> str:
    return text + " " * max(0, columns - width(text))


def N_(message: str) -> str:
    """Marks a message for the translation catalogue where it is defined; `_()` translates it where
    it is shown."""
    return message


# The words of the toy sentences. The numbers are computed from the English words; a word is
# shown in the notebook's language (in Chinese, "the cat sat on the mat" reads 小 猫 坐 在 小 垫子:
# the repeated word the "same word" head looks for is still there).
WORDS = ("the", "cat", "sat", "on", "mat", "dog", "bites", "man")


def word(text: str) -> str:
    """A word of a toy sentence, as the notebook's language writes it."""
    return pgettext("word", text)


def pgettext(context: str, message: str) -> str:
    """`message` in the current language, for a unit that has a context (a mistake's sentence)."""
    return _catalogue(language()).pgettext(context, message)


def listing(items) -> str:
    """Items joined as a list of the current language: `a, b, c` in English, `a、b、c` in Chinese."""
    return pgettext("list separator", ", ").join(str(item) for item in items)
