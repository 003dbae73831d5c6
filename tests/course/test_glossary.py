"""The zh-CN edition uses the glossary's one term for each idea and none of its avoided phrasings
(i18n/zh-CN/glossary.toml), in everything a student reads: the catalogues, README.zh-CN.md, the
printed output of the notebooks and the figure text (tests/zh_reading.py)."""

from __future__ import annotations

import re
import tomllib

import pytest
from zh_reading import ZH, catalogue_texts, everything, readme_text

GLOSSARY = tomllib.loads((ZH / "glossary.toml").read_text(encoding="utf-8"))
TERMS = GLOSSARY["term"]
PHRASES = GLOSSARY["phrase"]
TEXTS = everything()


def _patterns(term: dict) -> list[str]:
    return [re.escape(v) for v in term.get("avoid", [])] + term.get("avoid_patterns", [])


def term_findings(term: dict, texts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(where, variant) of each avoided word or pattern of `term` in `texts`."""
    patterns = _patterns(term)
    return [(where, m.group()) for p in patterns for where, text in texts for m in re.finditer(p, text)]


def phrase_findings(phrase: dict, texts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(where, m.group()) for where, text in texts for m in re.finditer(phrase["pattern"], text)]


def test_every_term_has_one_chinese_word_and_distinct_ideas_have_distinct_words():
    words = [t["zh"] for t in TERMS]
    assert len(words) == len(set(words))
    for term in TERMS:
        assert term["zh"] not in term.get("avoid", []), term
        assert not term_findings(term, [("glossary", term["zh"])]), f"{term['zh']} matches its own avoided patterns"


def test_one_word_each_for_mask_cell_split_and_attend():
    chosen = {t["zh"]: _patterns(t) for t in TERMS}
    for word, variant in [
        ("掩码", "遮罩"),
        ("屏蔽", "掩蔽"),
        ("单元格", "单元"),
        ("拆分", "切分"),
        ("计算注意力", "做注意力"),
    ]:
        assert any(re.search(p, variant) for p in chosen[word] if not re.search(p, word)), (word, variant)


@pytest.mark.parametrize("term", TERMS, ids=[t["en"] for t in TERMS])
def test_no_student_reads_a_variant(term):
    used = term_findings(term, TEXTS)
    assert not used, f"use {term['zh']!r} for {term['en']!r}, not: {used}"


@pytest.mark.parametrize("phrase", PHRASES, ids=[p["pattern"] for p in PHRASES])
def test_no_student_reads_an_avoided_phrase(phrase):
    used = phrase_findings(phrase, TEXTS)
    assert not used, f"{phrase['why']}; write {phrase['use']!r}, not: {used}"


@pytest.mark.parametrize("term", TERMS, ids=[t["en"] for t in TERMS])
def test_every_term_is_used(term):
    assert any(term["zh"] in text for _, text in catalogue_texts()), f"{term['zh']!r} appears in no catalogue"


# Planted findings: each kind of finding of the editor's review, put into a real text, is caught.
PLANTED = [
    ("term drift: mask as a verb", "被掩蔽的分数"),
    ("term drift: cell", "运行这个单元时"),
    ("term drift: split", "把 d_model 切分给各个头"),
    ("term drift: attend", "在每个头中做注意力"),
    ("term drift: spread with a number", "分数的离散程度都是 1"),
    ("term drift: bare one-hot", "softmax 几乎变成独热，"),
    ("term drift: practice question", "**练习（不计分）**：问题"),
    ("term drift: message", "✗ 会用一条消息说明"),
    ("term drift: question", "`split_heads`，1 道题"),
    ("meaning: N times as many", "小运算多了 16 倍"),
    ("meaning: the student's feedback", "会随你的反馈一起给出"),
    ("meaning: a condition for no marks", "评分程序不运行它就不给分"),
    ("calque: each half", "每一半旁边有一个 LayerNorm"),
    ("calque: read-out", "损失是对权重的随机读出"),
    ("calque: two halves", "对注意力权重和两半的输出都做暂退法"),
    ("term drift: attend, past tense", "每个查询都在批量轴上做了注意力"),
    ("leftover English: q.k", "q.k 的方差随 d_k 增长"),
    ("feedback wording: the wrong axis", "你交换了错误的轴"),
    ("feedback wording: every H-th", "取的是每隔 H 个的特征"),
    ("feedback wording: a bare view", "用直接的 view(B, H, T, d_head) 切分头"),
    ("feedback wording: chained 的", "v 的大小的平方根"),
    ("feedback wording: the heads' findings", "W_o 混合各个头的发现"),
]


@pytest.mark.parametrize("kind, planted", PLANTED, ids=[k for k, _ in PLANTED])
def test_a_planted_finding_fails_the_guard(kind, planted):
    where, text = readme_text()[0]
    texts = [(where, text.replace("## 给学生", f"## 给学生\n\n{planted}\n", 1))]
    assert not any(term_findings(t, readme_text()) for t in TERMS) and not any(
        phrase_findings(p, readme_text()) for p in PHRASES
    )
    found = [f for t in TERMS for f in term_findings(t, texts)] + [
        f for p in PHRASES for f in phrase_findings(p, texts)
    ]
    assert found, f"{kind}: {planted!r} is not caught"
