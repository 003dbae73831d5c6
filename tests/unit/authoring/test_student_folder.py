"""`make student-folder`: what students get holds no solution, hidden test, grading code or
expected result of a hidden case, and is a course a student can start with `make lab`."""

from __future__ import annotations

import json

import pytest

from attention_course.authoring.student_folder import scan, write
from attention_course.model.manifest import load

COURSE = load()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write(COURSE, tmp_path_factory.mktemp("student") / "student")


def test_the_student_folder_is_clean(folder):
    assert scan(COURSE, folder) == []


def test_it_holds_what_students_need(folder):
    for edition in COURSE.editions:
        release = folder / "notebooks" / edition.assignment
        assert sorted(p.stem for p in release.glob("*.ipynb")) == sorted(COURSE.notebooks)
    helpers = folder / "course_helpers" / "helpers"
    assert (helpers / "checks.py").exists() and (helpers / "data" / "check_cases.npz").exists()
    for name in (
        "README.md",
        "README.zh-CN.md",
        "LICENSE",
        "Makefile",
        "requirements.txt",
        "binder/start",
        "binder/requirements.txt",
    ):
        assert (folder / name).exists(), name
    assert "make lab" in (folder / "README.md").read_text() and "make lab" in (folder / "README.zh-CN.md").read_text()


@pytest.mark.parametrize("leak", ["solution", "hidden_test", "grading_code", "hidden_case", "answer", "numeric_answer"])
def test_the_scan_finds_every_kind_of_leak(folder, tmp_path, leak):
    """The scan can fail: plant one leak of each kind in a copy."""
    import shutil

    from attention_course.model.reference import answer_source

    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    notebook = copy / "notebooks" / "attention" / "05_output_projection.ipynb"
    if leak == "solution":
        (copy / "notes.py").write_text(answer_source(COURSE, COURSE.item("MultiHeadAttention")))
    elif leak == "hidden_test":
        data = json.loads(notebook.read_text())
        data["cells"][-1]["source"] = "### BEGIN HIDDEN TESTS\ncheck('x', x, hidden=True)\n"
        notebook.write_text(json.dumps(data))
    elif leak == "grading_code":
        shutil.copytree(COURSE.root / "attention_course" / "grading", copy / "grading")
    elif leak == "hidden_case":
        from attention_course.model.cases import all_cases
        from helpers.casefile import save_cases

        save_cases(
            [c for c in all_cases(COURSE) if c.hidden][:2], copy / "course_helpers" / "helpers" / "data" / "x.npz"
        )
    elif leak == "numeric_answer":
        from attention_course.model.reference import solution_lines

        (copy / "answers.txt").write_text(solution_lines(COURSE, COURSE.numeric_questions()[0])[0] + "\n")
    else:
        item = COURSE.questions()[0]
        (copy / "answers.txt").write_text(f'{item.variable} = "{item.answer}"')
    assert scan(COURSE, copy), f"the scan missed a planted {leak}"
