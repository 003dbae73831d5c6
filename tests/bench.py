"""`make bench`: the performance budgets of docs/design.md, measured side by side in one run.

    python tests/bench.py [--class-size N] [--no-grading]

Prints every figure as a ratio against its baseline taken in the same run, says which budgets
hold, and writes build/bench.json. Figures:
- each source notebook's wall time (both editions; the faster of two runs) against a notebook
  that only imports torch, matplotlib and ipywidgets, run beside it (the faster of two runs
  taken in turn with the notebook's), and the peak resident memory of each kernel;
- the reference MultiHeadAttention against nn.MultiheadAttention returning per-head weights
  (B=8, T=256, d_model=512, H=8, float32, CPU, no_grad);
- the median slider update (compute and redraw) of both labs;
- grading one complete submission (`make grade` on one student: confined, trusted) against
  nbgrader executing the same notebooks with its own preprocessors and nothing else, and, beside
  both, the processor time of the notebooks' own cells in kernels whose imports were run first
  (the floor under any grader that runs the notebooks);
- a submission stuck in an endless loop: how much longer it takes than a right one, against the
  cell timeout;
- grading a class with JOBS=2 against JOBS=1, whether the scores are identical, and whether
  every student of both runs was graded fully (the bench fails if one was not);
- the same class on a local Dask cluster of two worker processes against JOBS=2, graded in the
  order JOBS=2, Dask, Dask, JOBS=2 and compared by the means (same scores every run, the extra
  worker-seconds per student, the cluster's start), and from these a projection of a
  class of 2,000 on 16, 64 and 256 cores (hours, and the memory the workers need together).
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import psutil
import torch
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient

from attention_course.model.manifest import REPO, load
from attention_course.model.reference import reference
from classroom import submission, write_submission


def _manifest():
    """The manifest, read when a figure needs it (importing this module reads nothing)."""
    return load()


IMPORT_ONLY = "import torch\nimport matplotlib.pyplot as plt\nimport ipywidgets\n"


def run_notebook(path: Path, cwd: Path) -> tuple[float, int]:
    """Execute a notebook headless in a fresh kernel: (wall seconds, peak kernel RSS in bytes)."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    peak, stop = [0], threading.Event()

    def sample():
        while not stop.is_set():
            try:
                pid = client.km.provisioner.process.pid
                tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
                peak[0] = max(peak[0], sum(p.memory_info().rss for p in tree))
            except Exception:
                pass
            time.sleep(0.05)

    start = time.perf_counter()
    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    try:
        client.execute()
    finally:
        stop.set()
        watcher.join()
    return time.perf_counter() - start, peak[0]


def bench_notebooks() -> dict:
    """Each source notebook against the import-only notebook, run in turn beside it (baseline,
    notebook, baseline, notebook): a change in the machine's load during the bench then moves
    both sides of a ratio, not only the notebooks measured late."""
    rows, baselines = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "import_only.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(IMPORT_ONLY)]), base)
        run_notebook(base, Path(tmp))  # warms the file cache, not counted
        for edition in _manifest().editions:
            for name in _manifest().notebooks:
                path = _manifest().source_notebook(name, edition.name)
                pairs = [(run_notebook(base, path.parent)[0], run_notebook(path, path.parent)) for _ in range(2)]
                baseline = min(b for b, _ in pairs)
                wall, peak = min(r[0] for _, r in pairs), max(r[1] for _, r in pairs)
                baselines.append(baseline)
                rows[f"{edition.name} {name}"] = {
                    "seconds": round(wall, 2),
                    "baseline_seconds": round(baseline, 2),
                    "ratio": round(wall / baseline, 2),
                    "peak_mib": round(peak / 2**20),
                }
    return {"import_only_seconds": round(min(baselines), 2), "notebooks": rows}


MHA_PROCESSES = 5


def bench_mha(processes: int = MHA_PROCESSES) -> dict:
    """The course's reference MHA against nn.MultiheadAttention, in `processes` fresh Pythons. One
    process reads the ratio consistently from round to round, but from one process to the next it
    moved between 0.84x and 1.37x here, so the figure is the median of the processes' ratios."""
    code = "import json, bench; print(json.dumps(bench.mha_in_this_process()))"
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))
    )
    runs = [
        json.loads(
            subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
        )
        for _ in range(processes)
    ]
    return {
        "reference_ms": round(statistics.median(r["reference_ms"] for r in runs), 2),
        "torch_ms": round(statistics.median(r["torch_ms"] for r in runs), 2),
        "ratio": round(statistics.median(r["ratio"] for r in runs), 3),
        "ratios": [r["ratio"] for r in runs],
    }


def mha_in_this_process() -> dict:
    """One process's reading: the two timed in turn, five times, and each one's median taken."""
    from torch.utils import benchmark

    torch.manual_seed(0)
    B, T, D, H = 8, 256, 512, 8
    ours = reference(_manifest(), _manifest().item("MultiHeadAttention"))(D, H)
    theirs = torch.nn.MultiheadAttention(D, H, batch_first=True)
    x = torch.randn(B, T, D)
    timers = {
        "reference": benchmark.Timer("m(x, x, x)", globals={"m": ours, "x": x}),
        "nn.MultiheadAttention": benchmark.Timer(
            "m(x, x, x, need_weights=True, average_attn_weights=False)", globals={"m": theirs, "x": x}
        ),
    }
    medians = {name: [] for name in timers}
    with torch.no_grad():
        for _ in range(5):  # alternate, so that both see the same machine
            for name, timer in timers.items():
                medians[name].append(timer.blocked_autorange(min_run_time=0.4).median)
    ms = {name: statistics.median(v) * 1000 for name, v in medians.items()}
    return {
        "reference_ms": round(ms["reference"], 2),
        "torch_ms": round(ms["nn.MultiheadAttention"], 2),
        "ratio": round(ms["reference"] / ms["nn.MultiheadAttention"], 3),
    }


def bench_sliders() -> dict:
    from helpers.dk_lab import D_K_VALUES, DkLab
    from helpers.heads_lab import HeadsLab, divisors

    def median_update(slider, values) -> float:
        times = []
        for value in values:
            start = time.perf_counter()
            slider.value = value
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1000

    ref = {
        name: reference(_manifest(), _manifest().item(name))
        for name in ("raw_scores", "scaled_scores", "MultiHeadAttention")
    }
    dk = DkLab(raw_scores=ref["raw_scores"], scaled_scores=ref["scaled_scores"])
    heads = HeadsLab(mha_class=ref["MultiHeadAttention"])
    values = D_K_VALUES + D_K_VALUES[::-1]
    return {
        "d_k_lab_ms": round(median_update(dk.slider, values), 1),
        "num_heads_lab_ms": round(median_update(heads.slider, divisors(12) + divisors(12)[::-1]), 1),
    }


PLAIN_CONFIG = """c = get_config()
c.CourseDirectory.root = {root!r}
c.Execute.timeout = 120
"""


def _course_folder(dest: Path, plain: bool = False) -> Path:
    """A copy of the course; `plain`: with nbgrader's own configuration only (no plugins)."""
    dest.mkdir(parents=True)
    for name in ("nbgrader_config.py", "course.toml", "Makefile", "requirements.txt", "pyproject.toml"):
        shutil.copy2(REPO / name, dest / name)
    for name in ("source", "notebooks", "course_helpers"):
        shutil.copytree(REPO / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.db"))
    if plain:
        (dest / "nbgrader_config.py").write_text(PLAIN_CONFIG.format(root=str(dest)))
    return dest


CGROUPS = (  # (a hierarchy with CPU accounting, a group's CPU counter, its unit in seconds)
    (Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage", 1e-9),
    (Path("/sys/fs/cgroup/unified"), "cpu.stat", 1e-6),
    (Path("/sys/fs/cgroup"), "cpu.stat", 1e-6),
)


def _hierarchies() -> list[tuple[Path, str, float]]:
    return [
        (top, counter, scale) for top, counter, scale in CGROUPS if (top / counter).exists() and os.access(top, os.W_OK)
    ]


def cpu_method() -> str:
    """How CpuMeter measures here."""
    return "cgroup" if _hierarchies() else "rusage (a lower bound)"


class CpuMeter:
    """Processor seconds of one command's whole process tree.

    A control group of its own counts every process in it, whoever reaps it. The rusage of reaped
    descendants misses a process killed together with its parent (a kernel whose supervisor killed
    the confined tree is never waited for by it): it read grading's processor time at less than
    half, so it is only the fallback, reported as a lower bound."""

    def __init__(self, name: str):
        self.group, self.counter, self.scale = None, "", 1.0
        for top, counter, scale in _hierarchies():
            group = top / f"attention-bench-{os.getpid()}-{name}"
            try:
                group.mkdir(exist_ok=True)
            except OSError:
                continue
            self.group, self.counter, self.scale = group, counter, scale
            break
        self.before = _rusage_children()

    def enter(self) -> None:
        """In the child, before it runs the command (Popen's preexec_fn)."""
        if self.group is not None:
            (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        if self.group is None:
            return _rusage_children() - self.before
        text = (self.group / self.counter).read_text()
        value = float(text.split()[0]) if self.counter.endswith("usage") else float(text.split()[1])
        try:
            self.group.rmdir()
        except OSError:
            pass
        return value * self.scale


def _rusage_children() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _timed(cmd: list[str], cwd: Path, cpu: list | None = None) -> float:
    """Wall seconds of `cmd`; its processor seconds (whole tree) appended to `cpu`."""
    meter = CpuMeter("timed")
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True, preexec_fn=meter.enter)
    if cpu is not None:
        cpu.append(meter.seconds())
    return time.perf_counter() - start


def _imports(notebook) -> str:
    """The notebook's own top-level import statements, in order."""
    lines = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        lines += [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    return "\n".join(lines)


def _process_cpu(pid: int) -> float:
    used = psutil.Process(pid).cpu_times()
    return used.user + used.system + used.children_user + used.children_system


def cells_cpu(folder: Path) -> float:
    """Processor seconds of the notebooks' own cells, each notebook in a fresh kernel whose imports
    were run first and not counted: the work any grader that runs the notebooks must do."""
    total = 0.0
    for path in sorted(folder.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        manager, client = start_new_kernel(kernel_name="python3", cwd=str(path.parent))
        try:
            pid = manager.provisioner.process.pid
            client.execute_interactive(_imports(notebook), timeout=600, output_hook=lambda msg: None)
            before = _process_cpu(pid)
            for cell in notebook.cells:
                if cell.cell_type == "code":
                    client.execute_interactive(cell.source, timeout=600, output_hook=lambda msg: None)
            total += _process_cpu(pid) - before
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    return total


def _tree_rss(pid: int) -> int:
    try:
        top = psutil.Process(pid)
        tree = [top, *top.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for proc in tree:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            continue
    return total


def _grade(course: Path, jobs: int, *args: str) -> tuple[float, dict, int, int, str]:
    """`make grade` on a course from scratch: (wall seconds, scores by (student, cell), students
    graded fully, peak resident memory of the whole process tree in bytes, its output)."""
    for name in ("autograded", "feedback", "build", "gradebook.db"):
        shutil.rmtree(course / name, ignore_errors=True) if (course / name).is_dir() else (course / name).unlink(
            missing_ok=True
        )
    meter = CpuMeter("grade")
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "attention_course.grading.grade", "--jobs", str(jobs), "--seed", "1", *args],
        cwd=course,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=meter.enter,
    )
    peak = [0]

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout = proc.communicate()[0]
    seconds = time.perf_counter() - start
    sampler.join()
    with open(course / "grades_by_cell.csv") as handle:
        scores = {(r["student"], r["cell"]): r["score"] for r in csv.DictReader(handle)}
    # graded fully: a row for every cell, and not named among those that could not be
    ungraded = set(re.findall(r"^  (\S+) \(\S+\): NOT GRADED", stdout, re.M))
    named = re.search(r"^Could not grade fully: (.*)$", stdout, re.M)
    ungraded |= {s.split(" (")[0] for s in named.group(1).split(", ")} if named else set()
    graded = len({student for student, _ in scores} - ungraded)
    return seconds, scores, graded, peak[0], stdout, meter.seconds()


PROJECTION_CLASS = 2000
PROJECTION_CORES = (16, 64, 256)


def projection(core_seconds: float, overhead: float, start: float, peak_per_student: int) -> list[dict]:
    """A class of PROJECTION_CLASS on Dask workers of one thread and one core each: hours, and
    the memory the workers need together, from the measured cost of one student (core-seconds),
    the scheduling overhead per student, the cluster's start and the peak memory per student."""
    rows = []
    for cores in PROJECTION_CORES:
        seconds = start + PROJECTION_CLASS * (core_seconds + overhead) / cores
        rows.append(
            {
                "cores": cores,
                "hours": round(seconds / 3600, 2),
                "memory_gib": round(cores * peak_per_student / 2**30, 1),
            }
        )
    return rows


# grading's processor time against nbgrader's plain execution of the same notebooks (docs/design.md)
CPU_BUDGET = 1.1

LOOP = "def split_heads(x, num_heads):\n    while True:\n        pass\n"


def bench_grading(class_size: int, loop_timeout: int = 30) -> dict:
    nbgrader = str(Path(sys.executable).with_name("nbgrader"))
    graded = _manifest().graded_notebooks()
    with tempfile.TemporaryDirectory() as tmp:
        one = _course_folder(Path(tmp) / "one")
        write_submission(one, "student", submission(_manifest(), {}, graded), "attention")
        plain_root = _course_folder(Path(tmp) / "plain", plain=True)
        shutil.copytree(one / "submitted", plain_root / "submitted")
        _timed([nbgrader, "generate_assignment", "attention", "--force"], plain_root)
        execute_cpu: list[float] = []
        execute = _timed([nbgrader, "autograde", "attention", "--force"], plain_root, execute_cpu)
        cells = cells_cpu(plain_root / "submitted" / "student" / "attention")
        grade, warm_scores, *_, grade_cpu = _grade(one, 1)  # warm kernels, the default
        cold, cold_scores, *_, cold_cpu = _grade(one, 1, "--cold-kernels")
        looping = _course_folder(Path(tmp) / "loop")
        write_submission(looping, "looping", submission(_manifest(), {"split_heads": LOOP}, graded), "attention")
        right, *_ = _grade(looping.parent / "one", 1, f"--cell-timeout={loop_timeout}")
        stuck, *_ = _grade(looping, 1, f"--cell-timeout={loop_timeout}")
        klass = _course_folder(Path(tmp) / "class")
        for i in range(class_size):
            edition = _manifest().editions[i % len(_manifest().editions)]
            write_submission(
                klass, f"student{i:02d}", submission(_manifest(), {}, graded, edition.name), edition.assignment
            )
        serial, serial_scores, serial_graded, *_, serial_cpu = _grade(klass, 1)
        # JOBS=2 and Dask in the order A B B A: this machine's speed drifts by several per cent
        # over an hour (other tenants), which a single pair reads as one mode's cost
        runs = {"jobs2": [], "dask": []}
        for mode in ("jobs2", "dask", "dask", "jobs2"):
            runs[mode].append(_grade(klass, 2, *(("--scheduler", "local") if mode == "dask" else ())))
        parallel = statistics.mean(run[0] for run in runs["jobs2"])
        dask = statistics.mean(run[0] for run in runs["dask"])
        parallel_graded = min(run[2] for run in runs["jobs2"])
        dask_graded = min(run[2] for run in runs["dask"])
        dask_peak = max(run[3] for run in runs["dask"])
        started = [re.search(r"^Dask: .*ready in ([0-9.]+) s", run[4], re.M) for run in runs["dask"]]
        dask_start = max((float(s.group(1)) for s in started if s), default=0.0)
    overhead = (dask - parallel) * 2 / class_size  # extra worker-seconds per student, on two workers
    core_seconds = parallel * 2 / class_size
    return {
        "execute_seconds": round(execute, 1),
        "grade_seconds": round(grade, 1),
        "execute_cpu_seconds": round(execute_cpu[0], 1),
        "grade_cpu_seconds": round(grade_cpu, 1),
        "grade_cpu_ratio": round(grade_cpu / execute_cpu[0], 2),
        "cpu_method": cpu_method(),
        # the notebooks' own cells, their imports done: a floor under any grader that runs them
        "cells_cpu_seconds": round(cells, 1),
        "cells_cpu_ratio": round(cells / execute_cpu[0], 2),
        # the same over the class graded with JOBS=1: make grade's own start is shared by all
        "class_cpu_per_student": round(serial_cpu / class_size, 1),
        "class_cpu_ratio": round(serial_cpu / class_size / execute_cpu[0], 2),
        "cold_seconds": round(cold, 1),
        "cold_cpu_seconds": round(cold_cpu, 1),
        "cold_cpu_ratio": round(cold_cpu / execute_cpu[0], 2),
        "cold_ratio": round(cold / execute, 2),
        "cold_same_scores": warm_scores == cold_scores,
        "grade_ratio": round(grade / execute, 2),
        "loop_cell_timeout": loop_timeout,
        "loop_extra_seconds": round(stuck - right, 1),
        "class_size": class_size,
        "jobs1_seconds": round(serial, 1),
        "jobs2_seconds": round(parallel, 1),
        "jobs_ratio": round(parallel / serial, 2),
        "same_scores": all(run[1] == serial_scores for run in runs["jobs2"]),
        "jobs2_runs": [round(run[0], 1) for run in runs["jobs2"]],
        "dask_runs": [round(run[0], 1) for run in runs["dask"]],
        "jobs1_graded": serial_graded,
        "jobs2_graded": parallel_graded,
        "dask_seconds": round(dask, 1),
        "dask_ratio": round(dask / parallel, 2),
        "dask_same_scores": all(run[1] == serial_scores for run in runs["dask"]),
        "dask_graded": dask_graded,
        "dask_overhead_per_student": round(overhead, 2),
        "dask_start_seconds": round(dask_start, 1),
        "core_seconds_per_student": round(core_seconds, 1),
        "peak_mib_per_student": round(dask_peak / 2 / 2**20),
        "projection": projection(core_seconds, max(overhead, 0.0), dask_start, dask_peak // 2),
    }


def budgets(r: dict) -> list[tuple[str, str, bool]]:
    """(figure, value, budget held) for every budget of docs/design.md."""
    nbs = r["notebooks"]["notebooks"]
    rows = [
        (f"{name}: wall time vs import-only", f"{v['ratio']}x (budget 2x)", v["ratio"] <= 2.0)
        for name, v in nbs.items()
    ]
    rows += [
        (f"{name}: kernel peak memory", f"{v['peak_mib']} MiB (budget < 1024)", v["peak_mib"] < 1024)
        for name, v in nbs.items()
    ]
    rows.append(
        (
            "reference MHA vs nn.MultiheadAttention",
            f"{r['mha']['ratio']}x (budget 1.1x; the median of the processes' "
            f"{', '.join(f'{x:g}' for x in r['mha'].get('ratios') or [r['mha']['ratio']])})",
            r["mha"]["ratio"] <= 1.1,
        )
    )
    for key in ("d_k_lab_ms", "num_heads_lab_ms"):
        rows.append(
            (
                f"slider update, {key[:-3].replace('_', ' ')}",
                f"{r['sliders'][key]} ms (budget 150)",
                r["sliders"][key] < 150,
            )
        )
    if "grading" in r:
        g = r["grading"]
        rows.append(
            ("grading one submission vs executing it", f"{g['grade_ratio']}x (budget 1.5x)", g["grade_ratio"] <= 1.5)
        )
        rows.append(
            (
                "grading one submission vs executing it: processor time",
                f"{g['grade_cpu_ratio']}x ({g['grade_cpu_seconds']} s vs {g['execute_cpu_seconds']} s, "
                f"measured by {g['cpu_method']}; budget {CPU_BUDGET}x); in the class of {g['class_size']} "
                f"with JOBS=1, {g['class_cpu_per_student']} s a student, {g['class_cpu_ratio']}x; the cells "
                f"alone, their imports done, {g['cells_cpu_seconds']} s, {g['cells_cpu_ratio']}x (the floor)",
                g["grade_cpu_ratio"] <= CPU_BUDGET,
            ),
        )
        rows.append(
            (
                "the same with a fresh Python per kernel (--cold-kernels): wall time, processor time",
                f"{g['cold_ratio']}x, {g['cold_cpu_ratio']}x ({g['cold_cpu_seconds']} s); same scores as "
                f"warm: {g['cold_same_scores']} (budget 1.5x of wall time; processor time for comparison)",
                g["cold_ratio"] <= 1.5 and g["cold_same_scores"],
            ),
        )
        limit = 1.5 * g["loop_cell_timeout"]
        rows.append(
            (
                "an endless loop: extra time vs a right submission",
                f"{g['loop_extra_seconds']} s (cell timeout {g['loop_cell_timeout']} s; budget about one, "
                f"< {limit:g} s)",
                g["loop_extra_seconds"] < limit,
            )
        )
        rows.append(
            (
                f"JOBS=2 vs JOBS=1, {g['class_size']} submissions",
                f"{g['jobs_ratio']}x (budget 0.65x), same scores: {g['same_scores']}",
                g["jobs_ratio"] <= 0.65 and g["same_scores"],
            )
        )
        rows.append(
            (
                f"a class of {g['class_size']}, JOBS=1 and JOBS=2: every student graded",
                f"{g['jobs1_graded']} and {g['jobs2_graded']} of {g['class_size']} graded fully",
                g["jobs1_graded"] == g["jobs2_graded"] == g["class_size"],
            )
        )
        rows.append(
            (
                f"a local Dask cluster of 2 workers vs JOBS=2, {g['class_size']} submissions",
                f"{g['dask_ratio']}x (budget 1.05x; means of JOBS=2, Dask, Dask, JOBS=2: {g['jobs2_runs'][0]}, "
                f"{g['dask_runs'][0]}, {g['dask_runs'][1]}, {g['jobs2_runs'][1]} s), "
                f"same scores as JOBS=1: {g['dask_same_scores']}, "
                f"{g['dask_graded']} of {g['class_size']} graded fully; overhead "
                f"{g['dask_overhead_per_student']} s per student, ready in {g['dask_start_seconds']} s",
                g["dask_ratio"] <= 1.05 and g["dask_same_scores"] and g["dask_graded"] == g["class_size"],
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--class-size",
        type=int,
        default=40,
        help="submissions for the JOBS speed-up (default 40; about 90 minutes on two cores)",
    )
    parser.add_argument("--no-grading", action="store_true", help="skip the grading figures (the slow part)")
    args = parser.parse_args(argv)
    results = {"notebooks": bench_notebooks(), "mha": bench_mha(), "sliders": bench_sliders()}
    if not args.no_grading:
        results["grading"] = bench_grading(args.class_size)
    table = budgets(results)
    results["budgets"] = [{"figure": f, "value": v, "holds": ok} for f, v, ok in table]
    out = REPO / "build" / "bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    width = max(len(f) for f, _, _ in table)
    for figure, value, ok in table:
        print(f"{'✓' if ok else '✗'} {figure.ljust(width)}  {value}")
    if "grading" in results:
        g = results["grading"]
        print(
            f"A class of {PROJECTION_CLASS} on Dask ({g['core_seconds_per_student']} core-seconds and "
            f"{g['peak_mib_per_student']} MiB per student, as measured here):"
        )
        for row in g["projection"]:
            print(f"  {row['cores']:>4} cores: {row['hours']:>6} h, {row['memory_gib']:>6} GiB of memory in all")
    print(f"wrote {out}")
    return 0 if all(ok for _, _, ok in table) else 1


if __name__ == "__main__":
    sys.exit(main())
