"""Editions are declared once, in course.toml: a throw-away third edition added to a copy of the
course is built, released, opened by `make lab`, spoken by the helpers, drawn with its fonts and
handed to students, with no other file edited."""

from __future__ import annotations

import os
import subprocess

import pytest

from attention_course.model.manifest import load
from conftest import REPO, copy_course, describe, run

pytestmark = pytest.mark.slow

THIRD = """
[editions.fr]
assignment = "attention_fr"
language = "fr"
lab_locale = "fr_FR"
fonts = ["DejaVu Serif"]
"""


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = copy_course(tmp_path_factory.mktemp("editions") / "course")
    with open(root / "course.toml", "a", encoding="utf-8") as handle:
        handle.write(THIRD)
    proc = run(["make", "release", f"VENV={REPO / '.venv'}"], cwd=root, timeout=900)
    assert proc.returncode == 0, describe(proc)
    return load(root)


def _python(course, code: str, cwd=None) -> str:
    """Run `code` with this copy's helpers (as `make` runs it there); its output."""
    env = dict(os.environ, PYTHONPATH=str(course.root / "course_helpers"))
    proc = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-c", code],
        cwd=cwd or course.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_third_edition_is_built_and_released(course):
    fr = course.edition("fr")
    for folder in (course.source_dir("fr"), course.release_dir("fr")):
        assert sorted(p.stem for p in folder.glob("*.ipynb")) == sorted(course.notebooks), folder
        assert not (folder / "helpers").exists()
    assert fr.lab_locale == "fr_FR" and fr.fonts == ("DejaVu Serif",)


def test_the_helpers_speak_it_in_its_folder_and_draw_with_its_fonts(course):
    code = (
        "from helpers.i18n import language; from helpers.fonts import use_language_fonts\n"
        "print(language(), use_language_fonts())\n"
    )
    assert _python(course, code, cwd=course.release_dir("fr")).split() == ["fr", "DejaVu", "Serif"]
    assert _python(course, code, cwd=course.release_dir("zh-CN")).split()[0] == "zh-CN"
    assert _python(course, code, cwd=course.release_dir("en")).split() == ["en", "None"]


def test_make_lab_opens_it_in_its_locale(course):
    proc = run(["make", "-n", "lab", "EDITION=fr", f"VENV={REPO / '.venv'}"], cwd=course.root, timeout=60)
    assert "-m helpers.lab fr" in proc.stdout, describe(proc)
    out = _python(course, "from helpers.lab import main; main(['fr', '--print'])")
    assert "notebooks/attention_fr/00_start_here.ipynb" in out and "jupyter-fr" in out, out
    links = _python(course, "from helpers.course import edition; e = edition('fr'); print(e['lab_locale'], e['start'])")
    assert links.split() == ["fr_FR", "notebooks/attention_fr/00_start_here.ipynb"]


def test_the_student_folder_carries_it(course):
    proc = run(["make", "student-folder", f"VENV={REPO / '.venv'}"], cwd=course.root, timeout=300)
    assert proc.returncode == 0 and "CLEAN" in proc.stdout, describe(proc)
    dest = course.root / "build" / "student"
    assert sorted(p.stem for p in (dest / "notebooks" / "attention_fr").glob("*.ipynb")) == sorted(course.notebooks)
    assert (dest / "README.md").exists() and (dest / "README.zh-CN.md").exists()
