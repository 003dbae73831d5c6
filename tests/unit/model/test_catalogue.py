"""The translation catalogues as the grader reads them (attention_course/model/catalogue.py): where a
language's catalogue lives, its .po files read as one catalogue (contexts kept apart, obsolete
entries set aside, fuzzy ones marked), and `grader_text`, which says a graded question's explanation
in the submission's language only when a finished translation exists."""

from __future__ import annotations

import dataclasses

import pytest
from babel import Locale

from attention_course.model import catalogue
from attention_course.model.catalogue import DOMAIN, GRADER_ONLY, catalogue_dir, grader_text, read_catalogue
from attention_course.model.manifest import load

COURSE = load()
HEADER = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
CELLS = (
    HEADER
    + """msgctxt "explain/softmax_axis"
msgid "Rows sum to one."
msgstr "Les lignes somment à un."

msgctxt "explain/other"
msgid "Rows sum to one."
msgstr "Chaque ligne fait un."

#, fuzzy
msgctxt "explain/softmax_axis"
msgid "Columns sum to one."
msgstr "Les colonnes somment à un."

msgctxt "explain/softmax_axis"
msgid "Not yet translated."
msgstr ""

#~ msgctxt "explain/gone"
#~ msgid "An old explanation."
#~ msgstr "Une vieille explication."
"""
)
MESSAGES = HEADER + 'msgid "Well done."\nmsgstr "Bravo."\n'


@pytest.fixture
def course(tmp_path):
    """The repository's manifest at a root of its own, with a fr-CA catalogue of two .po files."""
    course = dataclasses.replace(COURSE, root=tmp_path / "course")
    folder = course.root / "i18n" / "fr-CA"
    folder.mkdir(parents=True)
    (folder / "02_scaled_dot_product_attention.po").write_text(CELLS, encoding="utf-8")
    (folder / "messages.po").write_text(MESSAGES, encoding="utf-8")
    (folder / "glossary.toml").write_text('attention = "attention"\n', encoding="utf-8")  # not a catalogue
    (folder / "messages.po.orig").write_text(HEADER + 'msgid "Stale."\nmsgstr "Vieux."\n', encoding="utf-8")
    return course


@pytest.fixture
def grader_reads(course, monkeypatch):
    """`grader_text` reading the catalogues of `course` (it reads the repository's course by default)."""
    monkeypatch.setattr(catalogue, "load", lambda: course)
    catalogue._grader_catalogue.cache_clear()
    yield course
    catalogue._grader_catalogue.cache_clear()


def test_a_languages_catalogue_is_its_folder_under_i18n(course):
    assert catalogue_dir(course, "zh-CN") == course.root / "i18n" / "zh-CN"
    assert catalogue_dir(COURSE, "zh-CN").is_dir()


def test_every_po_file_of_a_language_is_read_into_one_catalogue_with_contexts_apart(course):
    found = read_catalogue(course, "fr-CA")
    assert found.locale == Locale.parse("fr_CA") and found.domain == DOMAIN
    assert {(m.id, m.context) for m in found if m.id} == {
        ("Rows sum to one.", "explain/softmax_axis"),
        ("Rows sum to one.", "explain/other"),
        ("Columns sum to one.", "explain/softmax_axis"),
        ("Not yet translated.", "explain/softmax_axis"),
        ("Well done.", None),
    }, "nothing from a file that is not .po, no obsolete entry"
    assert found.get("Rows sum to one.", context="explain/other").string == "Chaque ligne fait un."
    assert found.get("Well done.").string == "Bravo."
    assert found.get("Columns sum to one.", context="explain/softmax_axis").fuzzy
    assert not found.get("Rows sum to one.", context="explain/softmax_axis").fuzzy


def test_obsolete_entries_are_set_aside_not_lost(course):
    found = read_catalogue(course, "fr-CA")
    assert [(m.id, m.context, m.string) for m in found.obsolete.values()] == [
        ("An old explanation.", "explain/gone", "Une vieille explication.")
    ]
    assert found.get("An old explanation.", context="explain/gone") is None


def test_a_language_without_a_catalogue_reads_as_an_empty_one(course):
    assert len(read_catalogue(course, "de")) == 0


def test_english_is_said_as_written_without_reading_a_catalogue(grader_reads):
    assert grader_text("Rows sum to one.", "explain/softmax_axis", "en") == "Rows sum to one."
    assert catalogue._grader_catalogue.cache_info().currsize == 0


def test_the_grader_says_the_translation_of_the_sentence_in_its_own_context(grader_reads):
    assert grader_text("Rows sum to one.", "explain/softmax_axis", "fr-CA") == "Les lignes somment à un."
    assert grader_text("Rows sum to one.", "explain/other", "fr-CA") == "Chaque ligne fait un."


@pytest.mark.parametrize(
    "text, context",
    [
        ("Columns sum to one.", "explain/softmax_axis"),  # fuzzy: not a finished translation
        ("Not yet translated.", "explain/softmax_axis"),  # empty
        ("Rows sum to one.", "explain/mask_convention"),  # another question's context has none
        ("An old explanation.", "explain/gone"),  # obsolete
        ("Never in the catalogue.", "explain/softmax_axis"),
    ],
)
def test_without_a_finished_translation_the_grader_says_it_in_english(grader_reads, text, context):
    assert grader_text(text, context, "fr-CA") == text


def test_the_repositorys_chinese_catalogue_translates_a_graded_questions_explanations():
    item = next(i for i in COURSE.questions() if i.explanations)
    chinese = read_catalogue(COURSE, "zh-CN")
    for why in item.explanations.values():
        message = chinese.get(why, context=f"{GRADER_ONLY}{item.name}")
        assert message is not None and message.string, why
        said = grader_text(why, f"{GRADER_ONLY}{item.name}", "zh-CN")
        assert said == message.string != why
