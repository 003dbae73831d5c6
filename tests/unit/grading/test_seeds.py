"""One seed per assignment, kept with the course (attention_course/grading/seeds.py)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from attention_course.grading import seeds


def test_a_seed_is_drawn_once_and_then_kept(tmp_path):
    first = seeds.ensure(tmp_path, ["attention", "attention_zh"])
    assert set(first) == {"attention", "attention_zh"}
    text = (tmp_path / seeds.FILE).read_text()
    for _ in range(3):  # every later grading reads the same seeds
        assert seeds.ensure(tmp_path, ["attention", "attention_zh"]) == first
    assert seeds.seed_of(tmp_path, "attention") == first["attention"]
    assert (tmp_path / seeds.FILE).read_text() == text


def _draw(root: str) -> int:
    return seeds.seed_of(Path(root), "attention")


def test_graders_starting_together_draw_one_seed(tmp_path):
    with multiprocessing.get_context("fork").Pool(4) as pool:
        drawn = pool.map(_draw, [str(tmp_path)] * 8)
    assert len(set(drawn)) == 1, drawn
    assert sorted(p.name for p in tmp_path.iterdir()) == [seeds.FILE]  # no lock file left beside it


def test_changing_a_seed_is_explicit_and_leaves_the_others(tmp_path, capsys):
    before = seeds.ensure(tmp_path, ["attention", "attention_zh"])
    assert seeds.main(["--course", str(tmp_path), "--set", "attention=1234"]) == 0
    assert "regrades everyone of attention" in capsys.readouterr().out
    after = seeds.read(tmp_path)
    assert after == {"attention": 1234, "attention_zh": before["attention_zh"]}
    assert seeds.main(["--course", str(tmp_path), "--redraw", "attention_zh"]) == 0
    assert seeds.read(tmp_path)["attention"] == 1234


@pytest.mark.parametrize("bad", ["attention", "attention=-3", "attention=x", "../x=3"])
def test_a_bad_change_is_refused_with_a_reason(bad, tmp_path, capsys):
    assert seeds.main(["--course", str(tmp_path), "--set", bad]) == 2
    assert capsys.readouterr().err.strip()
    assert seeds.read(tmp_path) == {}


def test_a_broken_seed_file_is_named_not_redrawn(tmp_path):
    (tmp_path / seeds.FILE).write_text("attention = 'twelve'\n")
    with pytest.raises(ValueError, match="whole number"):
        seeds.seed_of(tmp_path, "attention")
    assert "twelve" in (tmp_path / seeds.FILE).read_text()


def test_the_plugins_grade_with_the_kept_seed_unless_one_is_given(tmp_path):
    """nbgrader's plugins (plain autograde, formgrader) read the same file as make grade."""
    from attention_course.grading.plugins.run import Run

    class Stub:
        seed = None
        course = type("C", (), {"root": tmp_path})()

    kept = seeds.seed_of(tmp_path, "attention")
    assert Run.seed_for(Stub(), "attention") == kept
    Stub.seed = 7
    assert Run.seed_for(Stub(), "attention") == 7
