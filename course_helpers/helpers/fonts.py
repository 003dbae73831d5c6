"""Fonts that can draw the notebook's language in plots.

matplotlib's default font (DejaVu Sans) has no Chinese characters: a Chinese title would draw as
empty boxes and warn "Glyph missing". In a Chinese edition the plots use a CJK font (Noto Sans CJK,
Debian's fonts-noto-cjk, which CI and Binder install), with DejaVu Sans behind it for the rest.
"""

from __future__ import annotations

import functools
import glob

import matplotlib
from matplotlib import font_manager

from .i18n import language

CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans SC", "WenQuanYi Zen Hei", "Source Han Sans SC")
CJK_FILES = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/**/NotoSansCJK*.ttc",
    "/usr/share/fonts/**/wqy-zenhei.ttc",
)


@functools.cache
def cjk_family() -> str | None:
    """The name of a CJK font matplotlib can use, registering its file if its font cache predates it."""
    known = {f.name for f in font_manager.fontManager.ttflist}
    for family in CJK_FAMILIES:
        if family in known:
            return family
    for pattern in CJK_FILES:
        for path in glob.glob(pattern, recursive=True):
            font_manager.fontManager.addfont(path)
            name = font_manager.FontProperties(fname=path).get_name()
            if name:
                return name
    return None


def use_language_fonts(lang: str | None = None) -> str | None:
    """Make matplotlib draw the notebook's language; returns the CJK family in use (None in English)."""
    lang = lang or language()
    if not lang.startswith("zh"):
        return None
    family = cjk_family()
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
