"""Everything a student of the zh-CN edition reads, as (where, text) pairs, for the tests that guard
the edition (test_glossary, test_zh_english, test_zh_typography):

- the catalogues of i18n/zh-CN/ (notebook cells, checks, feedback, plot and widget labels);
- README.zh-CN.md;
- the stored printed output of the zh-CN notebooks (what the helpers and the cells print);
- the text of the figures the helpers draw in Chinese (the pipeline schematic, drawn here).
"""

from __future__ import annotations

import re

import nbformat
from babel.messages.pofile import read_po

from attention_course.model import manifest

COURSE = manifest.load()
ZH = manifest.REPO / "i18n" / "zh-CN"
README = manifest.REPO / "README.zh-CN.md"
CJK = "\u4e00-\u9fff"
FULL_WIDTH = "，。：；！？、（）《》“”"


def catalogue_texts() -> list[tuple[str, str]]:
    """(where, translation) of every translated unit of every zh-CN catalogue."""
    found = []
    for path in sorted(ZH.glob("*.po")):
        with path.open("rb") as handle:
            for message in read_po(handle):
                if message.id and message.string:
                    strings = message.string if isinstance(message.string, tuple) else (message.string,)
                    found += [(f"{path.name}: {message.context or str(message.id)[:40]}", s) for s in strings]
    return found


def readme_text() -> list[tuple[str, str]]:
    return [("README.zh-CN.md", README.read_text(encoding="utf-8"))]


def printed_outputs() -> list[tuple[str, str]]:
    """The stored text output of every code cell of the zh-CN notebooks (stdout, results, errors)."""
    found = []
    for path in sorted(COURSE.source_dir("zh-CN").glob("*.ipynb")):
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
                if "image/png" in output.get("data", {}):
                    continue  # a figure's repr (<Figure size ...>); its text is read from its sources
                text = output.get("text") or output.get("data", {}).get("text/plain", "")
                if text:
                    found.append((f"{path.name}#{i} output", "".join(text)))
    return found


def figure_texts() -> list[tuple[str, str]]:
    """Every text of the pipeline schematic drawn in Chinese (labels built from several messages)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    from helpers import i18n, schematic

    with i18n.using("zh-CN"):
        fig = schematic.pipeline_figure("attend")
    texts = [t.get_text() for t in fig.findobj(Text) if t.get_text()]
    plt.close(fig)
    return [(f"schematic: {t!r}", t) for t in texts]


def everything() -> list[tuple[str, str]]:
    return catalogue_texts() + readme_text() + printed_outputs() + figure_texts()


# Typography of printed text (outputs, messages, figure labels): print's separator after a
# full-width colon ("最大差异： 低于"), a space between two Chinese words ("最大差异 低于"), ASCII
# punctuation right after Chinese ("查询,"). Runs of two spaces or more are column padding.
SPACE_AFTER_FULL_WIDTH = re.compile(rf"[{FULL_WIDTH}] (?! )")
SPACE_BETWEEN_WORDS = re.compile(rf"[{CJK}]{{2}} [{CJK}]{{2}}")
# ... or closing a Chinese line ("注意力权重 (B, H, T, T),": the schematic's label once did).
ASCII_AFTER_CHINESE = re.compile(rf"[{CJK}][,;:!?]|^(?=[^\n]*[{CJK}])[^\n]*[,;]$", re.M)


def typography_findings(texts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(where, excerpt) of each typographic finding in printed text."""
    found = []
    for where, text in texts:
        for pattern in (SPACE_AFTER_FULL_WIDTH, SPACE_BETWEEN_WORDS, ASCII_AFTER_CHINESE):
            found += [(where, text[max(0, m.start() - 10) : m.end() + 10]) for m in pattern.finditer(text)]
    return found
