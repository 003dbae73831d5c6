"""`attention_course.authoring.outputs` (`make outputs`), without running a notebook or touching the
repository: which notebooks `main` re-runs (all of them in course order, or those named; none with
`--no-execute`) in which editions and in what order the steps come, the course it works on (the one in the
working directory: a tmp copy of course.toml); what `execute` does to a notebook once it has run (no
execution timings, widget ids made stable, no widget state), with nbclient's NotebookClient replaced by one
that fills in outputs as a kernel would; and what `release` runs for each edition (nbgrader
generate_assignment, recorded rather than run) and the junk it sweeps from the release folders.

The heavy steps that `main` calls (build, the question cells, execute, the other editions, release) are
recorded by stand-ins: each has tests of its own, and running them would rewrite the course.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from attention_course.authoring import edition, outputs
from attention_course.model.manifest import load
from conftest import REPO

COURSE = load()
NOTEBOOKS = list(COURSE.notebooks)
ZH = "zh-CN"


def _course_folder(root: Path, only_english: bool = False) -> Path:
    """A course folder holding a copy of course.toml (without its Chinese edition, if asked)."""
    root.mkdir(parents=True, exist_ok=True)
    manifest = (REPO / "course.toml").read_text(encoding="utf-8")
    if only_english:
        manifest, found = re.subn(r"\[editions\.zh-CN\].*?(?=\n# -{10})", "", manifest, count=1, flags=re.S)
        assert found == 1
    (root / "course.toml").write_text(manifest, encoding="utf-8")
    return root


@pytest.fixture
def steps(monkeypatch):
    """What main() does, step by step, with every heavy step recorded instead of done."""
    done = []
    monkeypatch.setattr(outputs, "build", lambda course: done.append(("build", course.root)))
    monkeypatch.setattr(outputs, "render_source_notebooks", lambda course: done.append(("questions", course.root)))
    monkeypatch.setattr(outputs, "release", lambda course: done.append(("release", course.root)))
    monkeypatch.setattr(edition, "build_edition", lambda course, name: done.append(("edition", name)))

    def execute(path: Path) -> float:
        done.append(("execute", path.parent.name, path.stem))
        return 1.5

    monkeypatch.setattr(outputs, "execute", execute)
    return done


def test_every_notebook_of_every_edition_is_rerun_in_course_order_and_released_last(
    tmp_path, monkeypatch, steps, capsys
):
    root = _course_folder(tmp_path / "course")
    monkeypatch.chdir(root)
    outputs.main([])
    zh = COURSE.edition(ZH).assignment
    assert steps == [
        ("build", root),
        ("questions", root),
        *[("execute", "attention", name) for name in NOTEBOOKS],
        ("edition", ZH),
        *[("execute", zh, name) for name in NOTEBOOKS],
        ("release", root),
    ]
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"  {NOTEBOOKS[0]}: 1.5 s" and f"  {ZH} {NOTEBOOKS[-1]}: 1.5 s" in printed
    assert printed[-1].startswith("Outputs rebuilt")


def test_only_the_notebooks_named_are_rerun_in_the_order_given(tmp_path, monkeypatch, steps):
    monkeypatch.chdir(_course_folder(tmp_path / "course"))
    outputs.main(["03_split_heads", "01_scaling_problem"])
    ran = [(folder, name) for step, *rest in steps if step == "execute" for folder, name in [rest]]
    zh = COURSE.edition(ZH).assignment
    assert ran == [
        ("attention", "03_split_heads"),
        ("attention", "01_scaling_problem"),
        (zh, "03_split_heads"),
        (zh, "01_scaling_problem"),
    ]
    assert [s[0] for s in steps if s[0] != "execute"] == ["build", "questions", "edition", "release"]


def test_no_execute_rebuilds_and_releases_without_running_a_notebook(tmp_path, monkeypatch, steps):
    root = _course_folder(tmp_path / "course")
    monkeypatch.chdir(root)
    outputs.main(["--no-execute", "01_scaling_problem"])
    assert steps == [("build", root), ("questions", root), ("edition", ZH), ("release", root)]


def test_a_course_of_one_edition_builds_no_other(tmp_path, monkeypatch, steps):
    root = _course_folder(tmp_path / "course", only_english=True)
    monkeypatch.chdir(root)
    assert [e.name for e in load(root).editions] == ["en"]
    outputs.main(["--no-execute"])
    assert steps == [("build", root), ("questions", root), ("release", root)]


def test_an_unknown_option_is_refused_before_anything_is_done(tmp_path, monkeypatch, steps, capsys):
    monkeypatch.chdir(_course_folder(tmp_path / "course"))
    with pytest.raises(SystemExit) as stopped:
        outputs.main(["--execute-everything"])
    assert stopped.value.code == 2 and steps == []
    assert "unrecognized arguments: --execute-everything" in capsys.readouterr().err


# ----------------------------------------------------------------------------------- execute


class KernelStandIn:
    """nbclient's NotebookClient as `execute` uses it, filling in what a kernel run leaves behind:
    timings in each code cell's metadata, a widget view with a random model id, widget state."""

    made = []

    def __init__(self, nb, timeout, kernel_name, record_timing, resources):
        self.nb = nb
        KernelStandIn.made.append({"timeout": timeout, "kernel": kernel_name, "timing": record_timing, **resources})

    def execute(self):
        for n, cell in enumerate(c for c in self.nb.cells if c.cell_type == "code"):
            cell.metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
            view = {"model_id": f"random{n}", "version_major": 2, "version_minor": 0}
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text=f"cell {n}\n"),
                nbformat.v4.new_output(
                    "display_data", data={"application/vnd.jupyter.widget-view+json": view, "text/plain": "w"}
                ),
            ]
        self.nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
        return self.nb


def test_execute_stores_outputs_without_timings_or_random_widget_ids(tmp_path, monkeypatch):
    KernelStandIn.made = []
    monkeypatch.setattr(outputs, "NotebookClient", KernelStandIn)
    path = tmp_path / "attention" / "01_scaling_problem.ipynb"
    path.parent.mkdir()
    shutil.copy(COURSE.source_notebook("01_scaling_problem"), path)
    seconds = outputs.execute(path, timeout=60)
    assert 0 <= seconds < 60
    assert KernelStandIn.made == [
        {"timeout": 60, "kernel": "python3", "timing": False, "metadata": {"path": str(path.parent)}}
    ]
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and "widgets" not in nb.metadata
    for n, cell in enumerate(code):
        assert "execution" not in cell.metadata
        assert cell.outputs[0].text == f"cell {n}\n"
        assert cell.outputs[1].data["application/vnd.jupyter.widget-view+json"]["model_id"] == f"{cell.id}-1"


def test_execute_twice_gives_the_same_file(tmp_path, monkeypatch):
    monkeypatch.setattr(outputs, "NotebookClient", KernelStandIn)
    path = tmp_path / "02_scaled_dot_product_attention.ipynb"
    shutil.copy(COURSE.source_notebook("02_scaled_dot_product_attention"), path)
    outputs.execute(path)
    first = path.read_bytes()
    outputs.execute(path)
    assert path.read_bytes() == first


# ----------------------------------------------------------------------------------- release


def test_release_runs_nbgrader_for_every_edition_and_sweeps_the_junk(tmp_path, monkeypatch):
    root = _course_folder(tmp_path / "course")
    course = load(root)
    junk, kept = [], []
    for e in course.editions:
        folder = course.release_dir(e.name)
        (folder / "__pycache__").mkdir(parents=True)
        (folder / "__pycache__" / "helpers.cpython-311.pyc").write_bytes(b"")
        (folder / "data" / ".ipynb_checkpoints").mkdir(parents=True)
        (folder / "01_scaling_problem.ipynb").write_text("{}")
        junk += [folder / "__pycache__", folder / "data" / ".ipynb_checkpoints"]
        kept += [folder / "01_scaling_problem.ipynb", folder / "data"]
    ran = []

    def record(argv, cwd, check, env, stdout):
        ran.append((argv, cwd, check, env["PATH"].split(":")[0], stdout))
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(outputs.subprocess, "run", record)
    outputs.release(course)
    bin_dir = str(Path(sys.executable).parent)
    assert ran == [
        (
            [f"{bin_dir}/nbgrader", "generate_assignment", e.assignment, "--force"],
            root,
            True,
            bin_dir,
            subprocess.DEVNULL,
        )
        for e in course.editions
    ]
    assert not any(path.exists() for path in junk) and all(path.exists() for path in kept)


def test_a_notebook_name_that_does_not_exist_is_refused_before_anything_is_rewritten(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    rewritten = []
    monkeypatch.setattr(outputs, "build", lambda course: rewritten.append("build"))
    with pytest.raises(SystemExit):
        outputs.main(["02_scaled_dot_product_atention"])
    assert not rewritten
    assert "no notebook called 02_scaled_dot_product_atention" in capsys.readouterr().err
