"""Fonts that can draw the notebook's language in plots.

matplotlib's default font (DejaVu Sans) has no Chinese characters: a Chinese title would draw as
empty boxes and warn "Glyph missing". An edition names the font families its figures need
(`fonts` in course.toml, e.g. Noto Sans CJK for zh-CN: Debian's fonts-noto-cjk, which CI and
Binder install); the first one installed is used, with DejaVu Sans behind it for the rest.
"""

from __future__ import annotations

import functools
import glob

import matplotlib
from matplotlib import font_manager

from .course import editions
from .i18n import language

FONT_FILES = ("/usr/share/fonts/**/*.ttc", "/usr/share/fonts/**/*.otf", "/usr/share/fonts/**/*.ttf")


def wanted_families(lang: str) -> tuple[str, ...]:
    """The font families the edition of language `lang` names (none: matplotlib's own will do)."""
    for edition in editions().values():
        if edition.get("language") == lang:
            return tuple(edition.get("fonts", ()))
    return ()


@functools.cache
def installed_family(families: tuple[str, ...]) -> str | None:
    """The first of `families` that matplotlib can use, registering its file if matplotlib's font
    cache predates the font's installation; None when none is installed."""
    if not families:
        return None
    known = {f.name for f in font_manager.fontManager.ttflist}
    for family in families:
        if family in known:
            return family
    for pattern in FONT_FILES:
        for path in glob.glob(pattern, recursive=True):
            try:
                name = font_manager.get_font(path).family_name
            except (OSError, RuntimeError):
                continue
            if name in families:
                font_manager.fontManager.addfont(path)
                return name
    return None


def use_language_fonts(lang: str | None = None) -> str | None:
    """Make matplotlib draw the notebook's language; returns the family in use (None when the
    edition names none, as in English)."""
    family = installed_family(wanted_families(lang or language()))
    if family:
        matplotlib.rcParams["font.family"] = "sans-serif"
        matplotlib.rcParams["font.sans-serif"] = [family, "DejaVu Sans"]
        matplotlib.rcParams["axes.unicode_minus"] = False
    return family


def in_language_fonts(draw):
    """Decorate a function that makes a figure: the fonts of the notebook's language are set when
    it is called (the first figure, not the import, changes matplotlib's settings)."""

    @functools.wraps(draw)
    def drawing(*args, **kwargs):
        use_language_fonts()
        return draw(*args, **kwargs)

    return drawing
