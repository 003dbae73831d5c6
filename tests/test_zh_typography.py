"""The typography of a Chinese textbook in the zh-CN edition: no italics in Chinese prose (Chinese
fonts have none; bold or plain instead), full-width parentheses and quotes around Chinese text,
and clean catalogue headers."""

from __future__ import annotations

import re

import nbformat
import pytest
from babel.messages.pofile import read_po

from attention_course.model import manifest

COURSE = manifest.load()
ZH = manifest.REPO / "i18n" / "zh-CN"
CJK = "\u4e00-\u9fff"
_CODE = re.compile(r"```.*?```|`[^`]*`|\$\$.*?\$\$|\$[^$\n]*\$|<[^>]+>|\]\([^)]*\)", re.S)
ITALIC = re.compile(
    rf"(?<![*A-Za-z0-9])\*(?![*\s])[^*\n]*[{CJK}][^*\n]*(?<![*\s])\*(?![*A-Za-z0-9])"
    rf"|(?<!\w)_[^_\n]*[{CJK}][^_\n]*_(?!\w)"
)
HALF_WIDTH = re.compile(rf"[{CJK}][()\"]|[()\"][{CJK}]")


def _prose() -> list[tuple[str, str]]:
    found = [("README.zh-CN.md", (manifest.REPO / "README.zh-CN.md").read_text(encoding="utf-8"))]
    for path in sorted(COURSE.release_dir("zh-CN").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        found += [(f"{path.name}#{i}", c.source) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"]
    return [(where, _CODE.sub(" ", text)) for where, text in found]


PROSE = _prose()


def test_the_patterns_catch_what_they_should():
    assert ITALIC.search("*选学*部分") and not ITALIC.search("**加粗**") and not ITALIC.search("a * b 和 c * d")
    assert HALF_WIDTH.search("核心(选学)") and not HALF_WIDTH.search("核心（选学）")


def test_no_italics_in_chinese_prose():
    found = [(where, m.group()) for where, text in PROSE for m in ITALIC.finditer(text)]
    assert not found, "\n".join(f"{w}: {t}" for w, t in found)


def test_full_width_parentheses_and_quotes_next_to_chinese():
    found = [
        (where, text[max(0, m.start() - 8) : m.end() + 8]) for where, text in PROSE for m in HALF_WIDTH.finditer(text)
    ]
    assert not found, "\n".join(f"{w}: {t!r}" for w, t in found)


@pytest.mark.parametrize("path", sorted(ZH.glob("*.po")), ids=lambda p: p.name)
def test_catalogue_headers_are_clean(path):
    text = path.read_text(encoding="utf-8")
    header = text.split("\n\n")[0]
    assert "fuzzy" not in header
    for placeholder in ("PACKAGE", "FIRST AUTHOR", "FULL NAME", "YEAR-MO-DA", "EMAIL@ADDRESS", "LANGUAGE <"):
        assert placeholder not in header, placeholder
    with path.open("rb") as handle:
        catalog = read_po(handle)
    assert catalog.locale.language == "zh" and not catalog.fuzzy
