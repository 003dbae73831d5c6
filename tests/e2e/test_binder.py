"""Binder and the pins: every group of pyproject.toml is pinned in requirements.txt, and Binder
installs the students' group only; its environment is built from binder/ alone and runs the course."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from attention_course.model.manifest import load
from conftest import REPO

DEV_ONLY = ("pytest", "pytest-xdist", "nbval", "playwright", "ruff", "pre-commit", "nbdime", "coverage")


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith(("-", "./")):  # ./course_helpers: the course's own package
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line!r} is not pinned with =="
            found[name.lower().replace("_", "-")] = version
    return found


def groups() -> dict[str, dict[str, str]]:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["dependency-groups"]

    def expand(name):
        found = {}
        for entry in data[name]:
            if isinstance(entry, dict):
                found.update(expand(entry["include-group"]))
            else:
                package, _, version = entry.partition("==")
                found[package.lower().replace("_", "-")] = version
        return found

    return {name: expand(name) for name in data}


def test_every_group_is_pinned_exactly_and_requirements_txt_pins_them_all():
    ours = pins(REPO / "requirements.txt")
    for name, packages in groups().items():
        for package, version in packages.items():
            assert version, f"group {name}: {package} has no exact pin"
            assert ours.get(package) == version, (
                f"requirements.txt pins {package}=={ours.get(package)}, {name} says {version}"
            )
    assert ours["torch"] == "2.13.0"


def test_binder_installs_the_students_group_only_with_the_cpu_build_of_torch():
    ours, binder = pins(REPO / "requirements.txt"), pins(REPO / "binder" / "requirements.txt")
    students = groups()["students"]
    assert binder.pop("torch") == "2.13.0+cpu" and students.pop("torch") == "2.13.0"
    for package, version in students.items():
        assert binder.get(package) == version, f"binder/requirements.txt lacks {package}=={version}"
    for package in DEV_ONLY:
        assert package not in binder, f"Binder installs {package}, which only developers need"
    for package, version in binder.items():
        assert ours.get(package) == version, f"binder pins {package}=={version}, requirements.txt {ours.get(package)}"
    text = (REPO / "binder" / "requirements.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text


def test_binder_installs_the_helpers_package_from_this_repository():
    lines = [line.strip() for line in (REPO / "binder" / "requirements.txt").read_text().splitlines()]
    assert "./course_helpers" in lines
    assert (REPO / "course_helpers" / "pyproject.toml").exists()


def test_binder_pins_python_3_11_the_cjk_fonts_and_a_start_script_not_a_build_step():
    assert (REPO / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    assert not (REPO / "binder" / "postBuild").exists()
    assert "fonts-noto-cjk" in (REPO / "binder" / "apt.txt").read_text().split()
    start = (REPO / "binder" / "start").read_text()
    assert os.access(REPO / "binder" / "start", os.X_OK) and start.rstrip().endswith('exec "$@"')


def test_the_readme_badges_open_each_edition():
    readme = (REPO / "README.md").read_text() + (REPO / "README.zh-CN.md").read_text()
    links = re.findall(r"\(https://mybinder\.org/v2/gh/[^)]+\?urlpath=([^)\s]+)\)", readme)
    assert "course%2Fen" in links or "course/en" in links, links
    assert "course%2Fzh-CN" in links or "course/zh-CN" in links, links


@pytest.mark.slow
def test_binders_environment_built_from_binder_alone_runs_every_released_notebook(tmp_path):
    """pip installs binder/requirements.txt into a fresh virtual environment (what repo2docker runs),
    then that environment's kernel runs every released notebook with the source solutions in it."""
    venv = tmp_path / "binder-venv"
    subprocess.run(
        [
            sys.executable.replace(sys.prefix, sys.base_prefix) if sys.base_prefix != sys.prefix else sys.executable,
            "-m",
            "venv",
            str(venv),
        ],
        check=True,
    )
    python = venv / "bin" / "python"
    env = dict(os.environ, PIP_RETRIES="0", PIP_TIMEOUT="5", PIP_DISABLE_PIP_VERSION_CHECK="1")
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-r", str(REPO / "binder" / "requirements.txt")],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
        cwd=REPO,  # where repo2docker runs it: ./course_helpers is the repository's
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    course = load()
    script = tmp_path / "run.py"
    script.write_text(RUN_NOTEBOOKS)
    folders = {e.name: (str(course.release_dir(e.name)), str(course.source_dir(e.name))) for e in course.editions}
    proc = subprocess.run(
        [str(python), str(script), json.dumps(folders), str(tmp_path / "work")],
        capture_output=True,
        text=True,
        timeout=1200,
        env=dict(os.environ, MPLBACKEND="Agg"),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ran" in proc.stdout


RUN_NOTEBOOKS = r"""
import json, shutil, sys
from pathlib import Path
import nbformat
from nbclient import NotebookClient
folders, work = json.loads(sys.argv[1]), Path(sys.argv[2])
for edition, (release, source) in folders.items():
    copy = work / edition
    shutil.copytree(release, copy)
    for path in sorted(copy.glob("*.ipynb")):
        solved = nbformat.read(Path(source) / path.name, as_version=4)
        answers = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in solved.cells
                   if c.metadata.get("nbgrader", {}).get("solution")}
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in answers:
                cell.source = answers[grade_id]
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(copy)}}).execute()
        errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, (edition, path.name, errors[0].get("ename"), errors[0].get("evalue"))
        print("ran", edition, path.name)
"""
