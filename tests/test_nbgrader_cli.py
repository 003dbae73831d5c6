"""`grading/nbgrader_cli.py`: nbgrader started faster, with the same results."""

from __future__ import annotations

import sys

from conftest import REPO, run

from grading import nbgrader_cli


def test_the_migration_head_read_in_process_is_the_one_alembic_reports():
    nbgrader_cli.fast_start()
    assert nbgrader_cli.nbgrader_alembic_version is not None
    assert nbgrader_cli.alembic_head() == nbgrader_cli.nbgrader_alembic_version()


def test_the_script_is_nbgrader_and_its_gradebook_is_nbgraders(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text((REPO / "nbgrader_config.py").read_text())
    (course / "source").symlink_to(REPO / "source", target_is_directory=True)
    run(
        [sys.executable, REPO / "grading" / "nbgrader_cli.py", "generate_assignment", "attention", "--force"],
        cwd=course,
        check=True,
    )
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        notebooks = {n.name for n in gradebook.find_assignment("attention").notebooks}
    assert notebooks == {p.stem for p in (REPO / "source" / "attention").glob("0*.ipynb")}
    import sqlite3

    (version,) = sqlite3.connect(course / "gradebook.db").execute("SELECT version_num FROM alembic_version").fetchone()
    assert version == nbgrader_cli.alembic_head()
