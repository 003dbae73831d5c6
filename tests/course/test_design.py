"""docs/design.md's list of the course's packages is the list of attention_course's subpackages."""

from __future__ import annotations

import re
from pathlib import Path

import attention_course

REPO = Path(__file__).resolve().parents[2]


def test_the_design_lists_every_package_and_no_other():
    listed = re.findall(r"^\| `(attention_course\.\w+)` \|", (REPO / "docs" / "design.md").read_text(), re.M)
    root = Path(attention_course.__file__).parent
    real = sorted(f"attention_course.{p.name}" for p in root.iterdir() if (p / "__init__.py").exists())
    assert sorted(listed) == real


def test_the_path_of_a_submission_names_files_that_exist():
    text = (REPO / "docs" / "design.md").read_text()
    path = text[text.index("The path of one submission") : text.index("`helpers` (in `course_helpers/`")]
    named = set(re.findall(r"`((?:grading|confinement|sandbox|authoring|model)/\w+\.py)`", path))
    assert len(named) >= 5
    missing = [name for name in named if not (REPO / "attention_course" / name).exists()]
    assert not missing, missing
