"""attention_course/grading/near_names.py: a notebook handed in under a near name is found, never a stranger."""

from __future__ import annotations

import pytest

from attention_course.grading.near_names import near

NAME = "02_scaled_dot_product_attention"


@pytest.mark.parametrize(
    "file",
    [
        f"{NAME}-Copy1.ipynb",  # JupyterLab's copy
        f"{NAME} (1).ipynb",  # a browser's second download
        f"{NAME.upper()}.ipynb",  # another case
        NAME,  # no extension
        f"{NAME}.IPYNB",
        f"{NAME}-Copy2 (3).ipynb",
        "02_scaled_dot_product_atention.ipynb",  # one letter dropped
    ],
)
def test_a_near_name_is_found(file):
    assert near(NAME, ["01_scaling_problem.ipynb", file, "notes.txt"]) == file


@pytest.mark.parametrize(
    "files",
    [
        [],
        [f"{NAME}.ipynb"],  # the release name itself is not "near"
        ["03_split_heads.ipynb", "01_scaling_problem-Copy1.ipynb"],  # another notebook's copy
        ["my_attention_notes.ipynb", ".ipynb_checkpoints"],
    ],
)
def test_nothing_else_is_near(files):
    assert near(NAME, files) is None
