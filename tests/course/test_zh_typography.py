"""The typography of a Chinese textbook in the zh-CN edition: no italics in Chinese prose (Chinese
fonts have none; bold or plain instead), full-width parentheses and quotes around Chinese text,
no straight quotes in Chinese prose, clean catalogue headers; and in what the notebooks print and
draw (stored outputs, messages, figure labels) no space after full-width punctuation, none between
two Chinese words and no ASCII punctuation after Chinese (tests/zh_reading.py)."""

from __future__ import annotations

import re

import nbformat
import pytest
from babel.messages.pofile import read_po
from zh_reading import figure_texts, printed_outputs, typography_findings

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
# A straight quote in Chinese prose outside code: "A" 到 "D" (code goes in backticks: `"A"`)
STRAIGHT_QUOTES = re.compile(rf"[{CJK}（，：；][^\n\"]{{0,3}}\"|\"[^\n\"]{{0,3}}[{CJK}）]")


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


def test_no_straight_quotes_in_chinese_prose():
    assert STRAIGHT_QUOTES.search('写成字符串（"A" 到 "D"）')
    assert not STRAIGHT_QUOTES.search(_CODE.sub(" ", '写成字符串（`"A"` 到 `"D"`）'))
    found = [(where, m.group()) for where, text in PROSE for m in STRAIGHT_QUOTES.finditer(text)]
    assert not found, "\n".join(f"{w}: {t}" for w, t in found)


def _messages() -> list[tuple[str, str]]:
    with (ZH / "messages.po").open("rb") as handle:
        return [(f"messages.po: {str(m.id)[:40]}", m.string) for m in read_po(handle) if m.id and m.string]


PRINTED = printed_outputs() + figure_texts() + [(w, s) for w, s in _messages() if isinstance(s, str)]


def test_printed_text_is_set_as_chinese():
    found = typography_findings(PRINTED)
    assert not found, "\n".join(f"{w}: {t!r}" for w, t in found)


PLANTED_OUTPUT = [
    ("space after a full-width colon (print's separator)", "各个头的贡献之和等于 W_o 的输出，最大差异： 低于 1e-06"),
    ("space between two Chinese words", "最大差异 低于 1e-06"),
    ("a space after a full-width parenthesis", "-0.576（第 0 个头） +0.631（第 1 个头）"),
    ("ASCII comma after a Chinese label", "注意力权重 (B, H, T, T),\n输出 (B, H, T, d_head)"),
    ("ASCII colon right after Chinese", "形状: (1, 3, 4, 2)"),
]


@pytest.mark.parametrize("kind, planted", PLANTED_OUTPUT, ids=[k for k, _ in PLANTED_OUTPUT])
def test_a_planted_output_finding_fails_the_guard(kind, planted):
    where, text = next((w, t) for w, t in PRINTED if w.endswith("output"))
    assert not typography_findings([(where, text)])
    assert typography_findings([(where, text + planted + "\n")]), kind


def test_the_schematic_labels_are_read_in_chinese():
    texts = [t for _, t in figure_texts()]
    assert any("注意力权重" in t for t in texts) and not any("attention weights" in t for t in texts)


def test_a_planted_straight_quote_fails_the_guard():
    where, text = PROSE[0]
    assert not STRAIGHT_QUOTES.search(text)
    assert STRAIGHT_QUOTES.search(text + '把答案写成字符串（"A" 到 "D"）')


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
