"""Grading on Dask, with what goes wrong on a real cluster: a worker process killed while it
grades a student (the student is graded again elsewhere, once, and nobody is lost or counted
twice), a run interrupted with Ctrl-C and started again (it takes up the run's seed and grades
only the rest), and a scheduler and two workers on hosts of their own (network namespaces of
this machine, each with its own address, talking over TCP), which must give the same grades.
The class: four right answers and two wrong ones of `03_split_heads`.
(The ten students with the mess of a real class are graded on a local cluster too, in
test_class_grading.py, against JOBS=1.)
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from attention_course.grading.cluster import QUIET, SETTINGS, grade_task, host_threads, local_cluster
from attention_course.grading.merge import merge
from attention_course.grading.submission import Submission
from attention_course.model.manifest import load
from classroom import submission, write_submission, wrong_answer
from conftest import REPO, copy_course, venv_env

pytestmark = pytest.mark.slow
NOTEBOOK = "03_split_heads"
RIGHT = ["r1", "r2", "r3", "r4"]
WRONG = {"w1": "bare_view", "w2": "no_transpose"}
ARGS = "--seconds 20 --cell-timeout 20"


def write_class(root: Path) -> None:
    course = load(root)
    right = submission(course, {}, [NOTEBOOK])
    for student in RIGHT:
        write_submission(root, student, right, "attention")
    for student, mistake in WRONG.items():
        answer = wrong_answer(course, "split_heads", mistake)
        write_submission(root, student, submission(course, {"split_heads": answer}), "attention")


def _ctrl_c_as_at_a_terminal() -> None:
    """In the child: SIGINT back to its default. A suite started in the background (`make test &`,
    a CI runner's shell) hands its children SIGINT ignored, and `make grade` would then never see
    the Ctrl-C these tests send, as a teacher's terminal always delivers it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_grading(course: Path, scheduler: str, args: str, log: Path) -> subprocess.Popen:
    cmd = ["make", "grade", f"VENV={REPO / '.venv'}", "JOBS=2", f"SCHEDULER={scheduler}", f"GRADE_ARGS={args}"]
    return subprocess.Popen(
        cmd,
        cwd=course,
        env=venv_env(),
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_ctrl_c_as_at_a_terminal,
    )


def _is_zygote(process: psutil.Process) -> bool:
    return "zygote" in process.cmdline()


def graders(proc: psutil.Process) -> list[psutil.Process]:
    """The nbgrader processes below `proc` (one per student being graded): started with
    `grade-group`, or forked by a worker thread's warm nbgrader process (the zygote)."""
    found = []
    for child in proc.children(recursive=True):
        try:
            if "grade-group" in child.cmdline() or (_is_zygote(child) and _is_zygote(child.parent())):
                found.append(child)
        except psutil.Error:
            continue
    return found


def _one_submission(folder: Path) -> str | None:
    found = [p.name for p in (folder / "submitted").iterdir()] if (folder / "submitted").is_dir() else []
    return found[0] if len(found) == 1 else None


def graded_by(process: psutil.Process) -> tuple[str, psutil.Process]:
    """The student a grader grades (from its command line, or the one submission in its slot's
    folder) and the Dask worker it runs in (above the zygote that forked it, if one did)."""
    cmdline = process.cmdline()
    if "grade-group" in cmdline:
        student = cmdline[cmdline.index("grade-group") + 2]
    else:  # just forked, it may not be in its slot's folder yet
        student = wait_for(lambda: _one_submission(Path(process.cwd())), 10, "the forked grader in its slot")
    worker = process.parent()
    return student, worker.parent() if _is_zygote(worker) else worker


def journal(course: Path) -> list[dict]:
    path = course / "build" / "grading" / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def kept_lines(course: Path) -> list[str]:
    return [line["student"] for line in journal(course) if line.get("digest")]


def cell_rows(course: Path) -> list[dict]:
    with open(course / "grades_by_cell.csv") as handle:
        return [r for r in csv.DictReader(handle) if r["notebook"] == NOTEBOOK]


def wait_for(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def merged_this_run(course: Path, runs_before: int = 0) -> list[str]:
    """Students merged by the run that follows `runs_before` runs in the journal (none yet: [])."""
    lines = journal(course)
    starts = [i for i, line in enumerate(lines) if line.get("start")]
    if len(starts) <= runs_before:
        return []
    end = starts[runs_before + 1] if len(starts) > runs_before + 1 else len(lines)
    return [line["student"] for line in lines[starts[runs_before] + 1 : end] if line.get("digest")]


SEED = 777


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """Grade the class on a local cluster of two workers, killing the worker of the first
    student being graded; then grade it again with --seed SEED and press Ctrl-C once two students
    are merged; then start `make grade` once more, without a seed."""
    course = copy_course(tmp_path_factory.mktemp("cluster") / "course")
    write_class(course)
    first = start_grading(course, "local", ARGS, course.parent / "first.log")
    top = psutil.Process(first.pid)
    seen: set[psutil.Process] = set()

    def grading_now():
        found = graders(top)
        seen.update(found)
        return found

    victim = wait_for(grading_now, 300, "a student's nbgrader process")[0]
    student, worker = graded_by(victim)
    worker.kill()
    while first.poll() is None:
        grading_now()
        time.sleep(0.2)
    killed_run = {"returncode": first.returncode, "merged": merged_this_run(course), "rows": cell_rows(course)}
    second = start_grading(course, "local", f"--seed {SEED} {ARGS}", course.parent / "second.log")
    top = psutil.Process(second.pid)

    def orchestrator() -> psutil.Process | None:
        """`make grade`'s Python process: the one that merges students into the gradebook."""
        for child in top.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if "attention_course.grading.grade" in child.cmdline():
                    return child
        return None

    def held_after_two():
        """Once two students are merged, the merging process is stopped first (no student is
        merged after that, however far the workers have got), then the graders at work, so that
        Ctrl-C comes mid-run however fast or busy this machine is (an event, not a time)."""
        found = grading_now()
        if len(merged_this_run(course, 1)) < 2:
            return None
        merger = orchestrator()
        if merger is None:
            pytest.fail("the run ended before two students were seen merged: nothing left to interrupt")
        merger.suspend()
        found = grading_now()
        for process in found:
            with contextlib.suppress(psutil.Error):
                process.suspend()
        return [[merger, *found]]

    held = wait_for(held_after_two, 600, "two students merged")[0]
    os.killpg(second.pid, signal.SIGINT)  # pending for the stopped ones until they go on
    for process in held:
        with contextlib.suppress(psutil.Error):
            process.resume()
    second.wait(120)
    time.sleep(2)
    alive = [p for p in seen if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    before = merged_this_run(course, 1)
    third = start_grading(course, "local", ARGS, course.parent / "third.log")
    third.wait(900)
    return {
        "course": course,
        "killed": student,
        "killed_run": killed_run,
        "left_running": alive,
        "before": before,
        "first": (course.parent / "first.log").read_text(),
        "second": (course.parent / "second.log").read_text(),
        "third": (course.parent / "third.log").read_text(),
        "returncode": third.returncode,
    }


def test_killing_a_worker_mid_student_loses_nobody_and_counts_nobody_twice(interrupted):
    run, output = interrupted["killed_run"], interrupted["first"]
    assert run["returncode"] == 0, output
    assert interrupted["killed"] in run["merged"]  # graded again, on a worker that lives, in the same run
    assert sorted(run["merged"]) == sorted([*RIGHT, *WRONG]), run["merged"]  # once each
    keys = [(r["student"], r["cell"]) for r in run["rows"]]
    assert len(keys) == len(set(keys)), "a student counted twice"
    assert {r["student"] for r in run["rows"]} == {*RIGHT, *WRONG}
    for r in run["rows"]:
        if r["student"] in RIGHT:
            assert r["score"] == r["max_score"], (r, output)
    for student in WRONG:
        row = next(r for r in run["rows"] if r["student"] == student and r["cell"] == "test_split_heads")
        assert float(row["score"]) < float(row["max_score"]), row


def test_after_ctrl_c_nothing_runs_on_and_a_new_run_grades_only_the_rest_with_the_same_seed(interrupted):
    assert not interrupted["left_running"], interrupted["left_running"]
    before, output = interrupted["before"], interrupted["third"]
    assert interrupted["returncode"] == 0, output
    assert 2 <= len(before) < len(RIGHT) + len(WRONG), before
    assert "Interrupted: " in interrupted["second"] and "Traceback" not in interrupted["second"], interrupted["second"]
    assert f"Taking up the last run, which did not finish, with its seed {SEED}." in output, output
    assert f"{len(before)} submission(s) already graded" in output, output
    kept = re.findall(r"^  (\S+) \(attention\): kept", output, re.M)
    graded = re.findall(r"^  (\S+) \(attention\): graded$", output, re.M)
    assert sorted(kept) == sorted(before) and sorted(kept + graded) == sorted([*RIGHT, *WRONG]), output
    assert [(r["student"], r["cell"], r["score"]) for r in cell_rows(interrupted["course"])] == [
        (r["student"], r["cell"], r["score"]) for r in interrupted["killed_run"]["rows"]
    ]  # seeds differ, the right and wrong answers do not


def test_a_worker_without_the_teachers_layers_grades_nobody_and_says_why(tmp_path):
    course = load(copy_course(tmp_path / "course"))
    sub = Submission("ada", "attention")
    graded = grade_task(b"", b"", "digest", sub, {}, {"Grading": {"layers": ["bwrap", "pigeon"]}}, None)
    assert graded.sub.faults and graded.sub.faults[0].startswith("confinement: the worker on "), graded.sub.faults
    assert "pigeon: unknown layer" in graded.sub.faults[0]
    merge(course, graded)
    assert not graded.sub.graded and not (course.root / "gradebook.db").exists()


def _housekeeping() -> dict:
    import dask

    return {key: dask.config.get(key) for key in QUIET}


def test_a_local_clusters_workers_keep_dasks_profiler_and_monitors_quiet():
    """The profiler and 20-500 ms monitors cost about 5 CPU-seconds per student on two cores."""
    import dask
    from distributed import Client

    assert QUIET["distributed.worker.profile.enabled"] is False
    with dask.config.set(SETTINGS):
        with local_cluster(2) as cluster, Client(cluster) as client:
            seen = client.run(_housekeeping)
    assert len(seen) == 2 and all(values == QUIET for values in seen.values()), seen


def test_a_scheduler_whose_workers_are_still_starting_is_waited_for(tmp_path):
    """`make grade` on a scheduler with no worker yet says so and waits; a worker that joins
    later grades the class in full (its threads worked out once it is there)."""
    import dask
    import distributed  # noqa: F401  (imported first: dask.config.set would drop its defaults on exit)

    course = copy_course(tmp_path / "course")
    write_submission(course, "r1", submission(load(course), {}, [NOTEBOOK]), "attention")
    log = tmp_path / "grade.log"
    with dask.config.set(SETTINGS), local_cluster(0) as cluster:
        proc = start_grading(course, cluster.scheduler_address, ARGS, log)
        wait_for(lambda: "waiting for the first one to join" in log.read_text(), 120, "the waiting message")
        assert proc.poll() is None, log.read_text()
        cluster.scale(1)
        proc.wait(600)
    output = log.read_text()
    assert proc.returncode == 0, output
    assert f"Dask: 1 worker(s) at {cluster.scheduler_address}" in output, output
    rows = cell_rows(course)
    assert rows and all(r["score"] == r["max_score"] for r in rows), rows


def test_an_existing_clusters_worker_gets_its_hosts_share_of_threads_unless_it_chose(monkeypatch):
    import socket

    here = {socket.gethostname(): 3}
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")  # what Dask's nanny gives every worker
    assert host_threads(here) == 3
    assert host_threads({"another-host": 3}) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "5")  # the worker's own setting
    assert host_threads({socket.gethostname(): 2}) == 0  # kept: the kernels get the worker's 5
    assert os.environ["OMP_NUM_THREADS"] == "5"  # and nothing is written into the environment


# Simulated hosts: a bridge in this namespace, and one network namespace per host behind it.
BRIDGE, SUBNET = "att-br0", "10.213.0"
HOSTS = {"att-sched": 2, "att-w1": 3, "att-w2": 4}


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _teardown() -> None:
    for host in HOSTS:
        subprocess.run(["ip", "netns", "pids", host], capture_output=True)
        pids = subprocess.run(["ip", "netns", "pids", host], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        subprocess.run(["ip", "netns", "del", host], capture_output=True)
    subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)


def _hosts_or_reason() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    if not shutil.which("ip"):
        return "no `ip` command (iproute2)"
    _teardown()
    try:
        _ip("link", "add", BRIDGE, "type", "bridge")
        _ip("addr", "add", f"{SUBNET}.1/24", "dev", BRIDGE)
        _ip("link", "set", BRIDGE, "up")
        for host, last in HOSTS.items():
            _ip("netns", "add", host)
            _ip("link", "add", f"v-{host}"[:15], "type", "veth", "peer", "name", "eth0", "netns", host)
            _ip("link", "set", f"v-{host}"[:15], "master", BRIDGE, "up")
            _ip("-n", host, "addr", "add", f"{SUBNET}.{last}/24", "dev", "eth0")
            _ip("-n", host, "link", "set", "eth0", "up")
            _ip("-n", host, "link", "set", "lo", "up")
    except subprocess.CalledProcessError as exc:
        _teardown()
        return f"this machine does not allow network namespaces and veth pairs ({exc.stderr.strip()})"
    return None


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """A Dask scheduler on one simulated host and a worker on each of two others."""
    reason = _hosts_or_reason()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"simulated hosts needed under CI: {reason}")
        pytest.skip(reason)
    dask = str(REPO / ".venv" / "bin" / "dask")
    logs = tmp_path_factory.mktemp("hosts")
    address = f"tcp://{SUBNET}.{HOSTS['att-sched']}:8786"
    procs = [
        subprocess.Popen(
            ["ip", "netns", "exec", "att-sched", dask, "scheduler", "--host", f"{SUBNET}.2", "--port", "8786"]
            + ["--no-dashboard"],
            env=venv_env(),
            stdout=open(logs / "scheduler.log", "w"),
            stderr=subprocess.STDOUT,
        )
    ]
    for host in ("att-w1", "att-w2"):
        cmd = ["ip", "netns", "exec", host, dask, "worker", address, "--nthreads", "1", "--nworkers", "1"]
        cmd += ["--host", f"{SUBNET}.{HOSTS[host]}", "--no-dashboard", "--local-directory", str(logs / host)]
        procs.append(
            subprocess.Popen(cmd, env=venv_env(), stdout=open(logs / f"{host}.log", "w"), stderr=subprocess.STDOUT)
        )
    try:
        from distributed import Client

        with Client(address, timeout=120) as client:  # both workers joined: an event, not a time
            client.wait_for_workers(2, timeout=300)
        yield address, logs
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        _teardown()


def test_a_scheduler_and_workers_on_hosts_of_their_own_give_the_same_grades(interrupted, hosts, tmp_path):
    address, logs = hosts
    course = copy_course(tmp_path / "course")
    write_class(course)
    proc = start_grading(course, address, f"--seed {SEED} {ARGS}", tmp_path / "grade.log")
    proc.wait(900)
    output = (tmp_path / "grade.log").read_text()
    assert proc.returncode == 0, output + "".join(p.read_text() for p in logs.glob("*.log"))
    assert f"Dask: 2 worker(s) at {address}" in output, output
    for table in ("grades.csv", "grades_by_cell.csv"):
        assert (course / table).read_text() == (interrupted["course"] / table).read_text(), table
    workers = "".join((logs / f"{h}.log").read_text() for h in ("att-w1", "att-w2"))
    assert f"{SUBNET}.3" in workers and f"{SUBNET}.4" in workers, workers
