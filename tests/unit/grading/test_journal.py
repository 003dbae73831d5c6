"""The journal of `make grade`: a run that did not end is taken up with its seed; a student is
kept only with the same digest and only while their last line says so."""

from __future__ import annotations

from attention_course.grading.journal import Journal, key


def test_an_unfinished_run_gives_its_seed_and_a_finished_one_none(tmp_path):
    journal = Journal(tmp_path)
    assert journal.unfinished_seed() is None
    journal.start(7)
    journal.graded("ada", "attention", "d1", 7, "bwrap", "")
    assert Journal(tmp_path).unfinished_seed() == 7
    journal.end(7)
    assert Journal(tmp_path).unfinished_seed() is None


def test_a_student_is_kept_only_with_the_same_digest_and_until_forgotten(tmp_path):
    journal = Journal(tmp_path)
    journal.start(1)
    journal.graded("ada", "attention", "d1", 1, "bwrap", "")
    again = Journal(tmp_path)
    assert again.kept("ada", "attention", "d1")["seed"] == 1
    assert again.kept("ada", "attention", "d2") is None
    assert again.kept("ada", "attention_zh", "d1") is None
    again.forget("ada", "attention")
    assert Journal(tmp_path).kept("ada", "attention", "d1") is None


def test_a_line_cut_short_by_a_killed_run_is_skipped(tmp_path):
    journal = Journal(tmp_path)
    journal.start(3)
    with open(journal.path, "a") as handle:
        handle.write('{"student": "ada", "assig')
    assert Journal(tmp_path).unfinished_seed() == 3


def test_the_key_changes_with_every_part():
    assert len({key("a", "b"), key("a", "c"), key("b", "b"), key("ab", "")}) == 4
