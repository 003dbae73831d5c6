"""`make grade`'s warm kernels (the default; `--cold-kernels` turns them off): every notebook's
kernel forked from one warm, confined process per student. Against grading with a kernel of its own
for each notebook, on the same submissions: the same scores; a student whose code kills the warm
process and leaves a process behind still has every later notebook run, and nothing of theirs
outlives the grading."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from attention_course.model.manifest import load
from classroom import right_answer, submission, write_submission
from conftest import copy_course, venv_env

pytestmark = pytest.mark.slow
COURSE = load()
NOTEBOOKS = ["02_scaled_dot_product_attention", "03_split_heads", "04_concat_heads"]
MARK = "attention-warm-left-behind"
HOSTILE = (
    "import os, subprocess\n"
    f"subprocess.Popen(['sh', '-c', 'exec -a {MARK} sleep 600'], start_new_session=True)\n"
    "os.kill(os.getppid(), 9)  # the warm process this kernel was forked from\n\n"
)


def _grade(tmp_path, name: str, *args: str) -> tuple[dict, str, dict]:
    root = copy_course(tmp_path / name)
    write_submission(root, "right", submission(COURSE, {}, NOTEBOOKS), "attention")
    hostile = {"split_heads": HOSTILE + right_answer(COURSE, "split_heads")}
    write_submission(root, "hostile", submission(COURSE, hostile, NOTEBOOKS), "attention")
    proc = subprocess.run(
        [sys.executable, "-m", "attention_course.grading.grade", "--jobs", "1", "--seed", "5", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=venv_env(),
        timeout=1500,
    )
    with open(root / "grades_by_cell.csv") as handle:
        scores = {(r["student"], r["notebook"], r["cell"]): r["score"] for r in csv.DictReader(handle)}
    executed = {
        notebook: (root / "autograded" / "hostile" / "attention" / f"{notebook}.ipynb").read_text()
        for notebook in NOTEBOOKS
    }
    return scores, proc.stdout + proc.stderr, executed


def test_warm_kernels_grade_as_kernels_of_their_own_and_survive_a_student_who_kills_them(tmp_path):
    cold, _, _ = _grade(tmp_path, "cold", "--cold-kernels")
    warm, said, executed = _grade(tmp_path, "warm")  # the default
    assert warm == cold, said
    submitted = [score for (_, notebook, _), score in warm.items() if notebook in NOTEBOOKS]
    assert submitted and all(float(score) > 0 for score in submitted), said
    # the kernel went with the warm process it came from, and the next notebook ran in a new one
    assert "DeadKernelError" in executed["03_split_heads"]
    assert '"execution_count": 1' in executed["04_concat_heads"]
    left = subprocess.run(["pgrep", "-f", MARK], capture_output=True, text=True).stdout.split()
    assert left == [], f"a student's process outlived the grading: {left}"
