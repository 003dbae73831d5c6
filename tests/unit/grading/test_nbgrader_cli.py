"""`attention_course/grading/nbgrader_cli.py`: nbgrader as the grader runs it, unpatched and quick to start."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import REPO, run


def test_nbgrader_starts_without_compiling_iri_grammars():
    """The jsonschema pin keeps rfc3987_syntax (3.5 s of grammars per nbgrader process) away."""
    probe = "import sys, nbgrader.api, nbformat; nbformat.validate(nbformat.v4.new_notebook()); "
    probe += "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rfc3987_syntax', 'lark')))"
    assert run([sys.executable, "-c", probe], REPO, check=True).stdout.strip() == "[]"


def _migrations_head() -> str:
    import nbgrader
    from alembic.script import ScriptDirectory

    (head,) = ScriptDirectory(str(Path(nbgrader.__file__).with_name("alembic"))).get_heads()
    return head


def test_the_script_is_nbgrader_and_its_gradebook_is_nbgraders(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text((REPO / "nbgrader_config.py").read_text())
    (course / "source").symlink_to(REPO / "source", target_is_directory=True)
    run(
        [sys.executable, REPO / "attention_course/grading/nbgrader_cli.py", "generate_assignment", "attention"]
        + ["--force"],
        cwd=course,
        check=True,
    )
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        notebooks = {n.name for n in gradebook.find_assignment("attention").notebooks}
    assert notebooks == {p.stem for p in (REPO / "source" / "attention").glob("0*.ipynb")}
    import sqlite3

    (version,) = sqlite3.connect(course / "gradebook.db").execute("SELECT version_num FROM alembic_version").fetchone()
    assert version == _migrations_head()


def test_export_tables_runs_nbgraders_export_once_for_each_table_in_one_process(tmp_path):
    import json

    from small_gradebook import graded_class

    course = graded_class(tmp_path / "course")
    runs = [
        [f"--exporter=attention_course.grading.export.{exporter}", f"--to={tmp_path / table}"]
        for exporter, table in (("NotebookGrades", "grades.csv"), ("CellGrades", "cells.csv"))
    ]
    script = REPO / "attention_course/grading/nbgrader_cli.py"
    run([sys.executable, script, "export-tables", json.dumps(runs)], cwd=course, check=True)
    grades = (tmp_path / "grades.csv").read_text().splitlines()
    cells = (tmp_path / "cells.csv").read_text().splitlines()
    assert grades[0].startswith("student,") and any(line.startswith("bo,") for line in grades)
    assert cells[0].startswith("student,") and len(cells) == 5  # two cells of ada's and bo's
