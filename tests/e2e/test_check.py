"""`make check-grader` (attention_course/grading/check.py): the layers, what each needs, what is
missing, and a non-zero exit exactly when grading would refuse."""

from __future__ import annotations

import pytest

from attention_course.confinement import confine
from attention_course.confinement import probe as probing
from attention_course.grading import check
from conftest import REPO, describe, run


def _course(tmp_path, settings: str = ""):
    (tmp_path / "nbgrader_config.py").write_text(f"c = get_config()\n{settings}\n")
    return tmp_path


def _fake_probe(monkeypatch, found):
    monkeypatch.setattr(probing, "probe", lambda python=None, layers=confine.LAYERS: dict(found))


def test_every_layer_is_listed_with_its_needs_and_what_is_missing(tmp_path, monkeypatch):
    _fake_probe(monkeypatch, {"bwrap": None, "landlock": "landlock: not in the LSM list", "user": None})
    lines, status = check.report(_course(tmp_path))
    text = "\n".join(lines)
    assert status == 0, text
    for layer in confine.LAYERS:
        assert any(line.split()[:1] == [layer] and "needs:" in line for line in lines), text
    assert "missing here: landlock: not in the LSM list" in text
    assert "go ahead with: bwrap, user" in text


def test_no_layer_means_grading_would_refuse(tmp_path, monkeypatch):
    _fake_probe(monkeypatch, {layer: f"{layer}: absent" for layer in confine.LAYERS})
    lines, status = check.report(_course(tmp_path))
    assert status == 2 and "would refuse" in lines[-1], lines
    lines, status = check.report(_course(tmp_path, "c.Grading.unconfined = True"))
    assert status == 0 and "UNCONFINED" in lines[-1], lines


def test_a_layer_asked_for_but_absent_refuses(tmp_path, monkeypatch):
    _fake_probe(monkeypatch, {"bwrap": "bubblewrap: not found", "landlock": None, "user": None})
    lines, status = check.report(_course(tmp_path, "c.Grading.layers = ['bwrap']"))
    assert status == 2 and "bubblewrap: not found" in lines[0], lines


@pytest.mark.slow
def test_make_check_grader_agrees_with_make_grades_probe():
    proc = run(["make", "check-grader"], cwd=REPO, timeout=300)
    found = confine.probe()
    works = [layer for layer in confine.LAYERS if found.get(layer) is None]
    assert proc.returncode == (0 if works else 2), describe(proc)
    for layer in confine.LAYERS:
        assert f"{layer:9} {'on ' if layer in works else 'off'}" in proc.stdout, describe(proc)
