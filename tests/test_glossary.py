"""The zh-CN catalogues use the glossary's one term for each idea (i18n/zh-CN/glossary.toml)."""

from __future__ import annotations

import tomllib

import pytest
from babel.messages.pofile import read_po

from attention_course.model import manifest

ZH = manifest.REPO / "i18n" / "zh-CN"
GLOSSARY = tomllib.loads((ZH / "glossary.toml").read_text(encoding="utf-8"))["term"]


def _translations() -> list[tuple[str, str]]:
    """(where, translation) of every translated unit of every zh-CN catalogue."""
    found = []
    for path in sorted(ZH.glob("*.po")):
        with path.open("rb") as handle:
            for message in read_po(handle):
                if message.id and message.string:
                    strings = message.string if isinstance(message.string, tuple) else (message.string,)
                    found += [(f"{path.name}: {message.context or str(message.id)[:40]}", s) for s in strings]
    return found


TRANSLATIONS = _translations()


def test_every_term_has_one_chinese_word_and_distinct_ideas_have_distinct_words():
    words = [t["zh"] for t in GLOSSARY]
    assert len(words) == len(set(words))
    for term in GLOSSARY:
        assert term["zh"] not in term.get("avoid", []), term


@pytest.mark.parametrize("term", GLOSSARY, ids=[t["en"] for t in GLOSSARY])
def test_no_catalogue_uses_a_variant(term):
    used = [(where, variant) for variant in term.get("avoid", []) for where, text in TRANSLATIONS if variant in text]
    assert not used, f"use {term['zh']!r} for {term['en']!r}, not: {used}"


@pytest.mark.parametrize("term", GLOSSARY, ids=[t["en"] for t in GLOSSARY])
def test_every_term_is_used(term):
    assert any(term["zh"] in text for _, text in TRANSLATIONS), f"{term['zh']!r} appears in no catalogue"
