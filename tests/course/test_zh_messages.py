"""Every message of the zh-CN messages catalogue, rendered with sample values, reads as Chinese:
the same placeholders as the English, no doubled spaces, no space next to full-width punctuation,
none before Chinese at the start of a fragment, lists joined with 、. A message whose English pads
labels into columns keeps its padding."""

from __future__ import annotations

import re
import string

import pytest
from babel.messages.pofile import read_po

from attention_course.model import manifest

CATALOGUE = manifest.REPO / "i18n" / "zh-CN" / "messages.po"
with CATALOGUE.open("rb") as _handle:
    MESSAGES = [m for m in read_po(_handle) if m.id and isinstance(m.string, str) and m.string]

FULL_WIDTH = "，。：；！？、（）《》“”"


def _fields(text: str) -> list[tuple[str, str, str]]:
    parsed = string.Formatter().parse(text)
    return [(name, spec or "", conv or "") for _, name, spec, conv in parsed if name is not None]


def render(text: str) -> str:
    """A message with a sample value in each placeholder (a number where the format asks for one)."""
    values = {}
    for name, spec, conv in _fields(text):
        key = name.split(".")[0].split("[")[0]
        values[key] = 3.5 if spec[-1:] in "efg%" and spec else 3 if spec[-1:] == "d" else "甲" if not conv else "x"
    return text.format(**values) if values else text


def test_render_finds_a_space_before_full_width_punctuation():
    assert re.search(rf" [{FULL_WIDTH}]", render("{name} ，结果")) is not None


@pytest.mark.parametrize("message", MESSAGES, ids=[str(m.id)[:50] for m in MESSAGES])
def test_the_message_renders_as_chinese(message):
    if "python-format" in message.flags or "{" in message.id:
        assert sorted(n for n, _, _ in _fields(message.id)) == sorted(n for n, _, _ in _fields(message.string))
    text = render(message.string) if "{" in message.id else message.string
    if "  " in message.id:
        return  # a column layout (labels padded to one width), spaced as in the English
    assert "  " not in text.strip("\n").replace("\n  ", "\n"), f"doubled space: {text!r}"
    assert not re.search(rf" [{FULL_WIDTH}]|[{FULL_WIDTH}] ", text), f"space next to full-width punctuation: {text!r}"
    assert not spliced_with_a_space(message.string), f"a space before Chinese: {message.string!r}"


def spliced_with_a_space(text: str) -> bool:
    """A fragment spliced after other text that starts with a space before Chinese (" 在索引 {index} 处");
    a joiner spaced on both sides (" 和 ", between numbers) is fine."""
    return bool(re.match(r"\s+[\u4e00-\u9fff（]", text)) and not text.endswith(" ")


def test_a_planted_leading_space_fails_the_guard():
    assert spliced_with_a_space(" 在索引 {index} 处")
    assert not spliced_with_a_space("（在索引 {index} 处）") and not spliced_with_a_space(" 和 ")


def test_lists_are_joined_with_the_chinese_list_comma():
    separators = [m.string for m in MESSAGES if m.context == "list separator"]
    assert separators == ["、"]
