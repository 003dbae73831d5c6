"""`make bench` runs end to end: every figure's code path, with the slow measurements replaced.

The figures themselves are measured by `make bench`, never asserted here (timed tests flake);
this only proves that the benchmark can run and that its budget table reads what it writes.
"""

from __future__ import annotations

import json
import subprocess

import nbformat
import pytest

import bench


def test_bench_without_grading_runs_and_writes_its_table(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(bench, "REPO", tmp_path)
    monkeypatch.setattr(bench, "run_notebook", lambda path, cwd: (seen.append(path.name) or 1.0, 2**20))
    monkeypatch.setattr(bench, "bench_mha", lambda: {"reference_ms": 1.0, "torch_ms": 1.0, "ratio": 1.0})
    code = bench.main(["--no-grading"])
    written = json.loads((tmp_path / "build" / "bench.json").read_text())
    # The sliders are timed for real, so a busy machine may miss their budget: the exit status
    # must say what the table says, whatever the figures.
    assert code == (0 if all(row["holds"] for row in written["budgets"]) else 1)
    course = bench._manifest()
    assert len(written["notebooks"]["notebooks"]) == len(course.notebooks) * len(course.editions)
    notebooks = len(course.notebooks) * len(course.editions)
    assert seen.count("import_only.ipynb") == 1 + 2 * notebooks  # a warm-up, then one beside each run
    assert seen[1:5] == ["import_only.ipynb", seen[2], "import_only.ipynb", seen[2]] and seen[2] != seen[1]
    assert {row["figure"] for row in written["budgets"]} >= {"reference MHA vs nn.MultiheadAttention"}
    assert written["sliders"]["d_k_lab_ms"] > 0  # the labs were really built and moved


def test_bench_grading_builds_its_classes(monkeypatch):
    runs = []

    def fake_grade(course, jobs, *args):
        runs.append((course.name, jobs, args, sorted(p.name for p in (course / "submitted").iterdir())))
        out = "Dask: 2 worker(s) at tcp://127.0.0.1:1, ready in 3.0 s\n"
        seconds = 10.0 + (len(runs) % 2 if args else 0)
        return seconds, {("student00", "cell"): "1"}, len(runs[-1][3]), 2**30, out, 6.0

    def fake_timed(cmd, cwd, cpu=None):
        if cpu is not None:
            cpu.append(20.0)
        return 8.0

    monkeypatch.setattr(bench, "_grade", fake_grade)
    monkeypatch.setattr(bench, "_timed", fake_timed)
    floors = []
    monkeypatch.setattr(bench, "cells_cpu", lambda folder: floors.append(folder.parent.name) or 7.0)
    g = bench.bench_grading(class_size=3)
    assert floors == ["student"]  # the cells of the one complete submission
    assert [(name, jobs) for name, jobs, _, _ in runs] == [
        ("one", 1),
        ("one", 1),
        ("one", 1),
        ("loop", 1),
        ("class", 1),
        ("class", 2),
        ("class", 2),
        ("class", 2),
        ("class", 2),
    ]
    # JOBS=2 and Dask in the order A B B A (the machine's drift falls on both alike)
    assert [args for _, _, args, _ in runs[-4:]] == [(), ("--scheduler", "local"), ("--scheduler", "local"), ()]
    assert runs[-1][3] == ["student00", "student01", "student02"]
    assert g["jobs2_runs"] == [10.0, 10.0] and g["dask_runs"] == [11.0, 10.0]
    assert g["jobs_ratio"] == 1.0 and g["same_scores"]
    assert g["dask_ratio"] == 1.05 and g["dask_same_scores"] and g["dask_start_seconds"] == 3.0  # the means
    assert [row["cores"] for row in g["projection"]] == [16, 64, 256]
    assert g["projection"][0]["memory_gib"] == 8.0  # 16 cores x half of the two workers' 1 GiB
    table = bench.budgets(
        {
            "notebooks": {"notebooks": {}},
            "mha": {"ratio": 1.0},
            "sliders": {"d_k_lab_ms": 1, "num_heads_lab_ms": 1},
            "grading": g,
        }
    )
    assert any(figure.startswith("JOBS=2 vs JOBS=1") and not ok for figure, _, ok in table)
    assert g["grade_cpu_ratio"] == 0.3  # 6 processor seconds grading against 20 executing
    cpu_row = next((value, ok) for figure, value, ok in table if figure.endswith("processor time"))
    # the class of 3 graded with JOBS=1 took 6 processor seconds: 2 a student
    assert g["class_cpu_per_student"] == 2.0 and g["class_cpu_ratio"] == 0.1
    assert cpu_row == (
        f"0.3x (6.0 s vs 20.0 s, measured by {bench.cpu_method()}; budget 1.1x); in the class of 3 with JOBS=1, "
        "2.0 s a student, 0.1x; the cells alone, their imports done, 7.0 s, 0.35x (the floor)",
        True,
    )
    assert runs[0][2] == () and runs[1][2] == ("--cold-kernels",)  # warm kernels are the default
    assert g["cold_cpu_ratio"] == 0.3 and g["cold_same_scores"]
    slower = bench.budgets(
        {
            "notebooks": {"notebooks": {}},
            "mha": {"ratio": 1.0},
            "sliders": {"d_k_lab_ms": 1, "num_heads_lab_ms": 1},
            "grading": {**g, "grade_cpu_ratio": 1.11},
        }
    )
    assert not next(ok for figure, _, ok in slower if figure.endswith("processor time"))
    dask_row = next((value, ok) for figure, value, ok in table if figure.startswith("a local Dask cluster"))
    assert dask_row[1] and "10.0, 11.0, 10.0, 10.0 s" in dask_row[0]  # the runs in the order they ran
    assert not bench.budgets(
        {
            **{"notebooks": {"notebooks": {}}, "mha": {"ratio": 1.0}},
            "sliders": {"d_k_lab_ms": 1, "num_heads_lab_ms": 1},
            "grading": {**g, "dask_ratio": 1.06},
        }
    )[-1][2]


def test_the_mha_figure_is_the_median_of_fresh_processes(monkeypatch):
    readings = iter([(1.0, 1.0), (3.0, 1.0), (1.2, 1.0)])
    started = []

    def fake_run(args, **options):
        started.append(args)
        ours, theirs = next(readings)
        out = json.dumps({"reference_ms": ours, "torch_ms": theirs, "ratio": ours / theirs})
        return subprocess.CompletedProcess(args, 0, stdout=out)

    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    mha = bench.bench_mha(processes=3)
    assert len(started) == 3 and all("mha_in_this_process" in args[-1] for args in started)
    assert mha == {"reference_ms": 1.2, "torch_ms": 1.0, "ratio": 1.2, "ratios": [1.0, 3.0, 1.2]}
    table = bench.budgets(
        {"notebooks": {"notebooks": {}}, "mha": mha, "sliders": {"d_k_lab_ms": 1, "num_heads_lab_ms": 1}}
    )
    row = next(row for row in table if row[0] == "reference MHA vs nn.MultiheadAttention")
    assert row == (
        "reference MHA vs nn.MultiheadAttention",
        "1.2x (budget 1.1x; the median of the processes' 1, 3, 1.2)",
        False,
    )


@pytest.mark.slow  # starts a kernel
def test_the_cells_floor_counts_the_cells_and_not_their_imports(tmp_path):
    """A notebook whose only work is an import that takes a second (a stand-in module) and a cell
    that burns half a second: the floor counts the cell, not the import."""
    burn = "import time\nend = time.process_time() + {}\nwhile time.process_time() < end:\n    pass"
    (tmp_path / "slow_import.py").write_text(burn.format(1.0))
    cells = [nbformat.v4.new_code_cell("import slow_import"), nbformat.v4.new_code_cell(burn.format(0.5))]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), tmp_path / "n.ipynb")
    assert bench._imports(nbformat.read(tmp_path / "n.ipynb", as_version=4)) == "import slow_import\nimport time"
    assert 0.5 <= bench.cells_cpu(tmp_path) < 0.9
