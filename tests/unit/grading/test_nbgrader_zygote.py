"""`attention_course/grading/nbgrader_zygote.py`: students' nbgrader processes forked from one warm
process per slot (a stand-in script that preloads nothing; no kernel, no nbgrader run)."""

from __future__ import annotations

import os
import sys
import time

import psutil
import pytest

from attention_course.grading.nbgrader_process import bounded, nbgrader
from attention_course.grading.nbgrader_zygote import Zygote, ZygoteGone

CHILD = """
import os, sys, time
sys.path[:0] = {paths!r}
from attention_course.grading.nbgrader_zygote import serve
args = serve(())
print("child", os.getpid(), os.getppid(), os.getsid(0), " ".join(args), flush=True)
open("cwd.txt", "w").write(os.getcwd())
from attention_course.confinement import linux
open("dumpable.txt", "w").write(str(linux.prctl(linux.PR_GET_DUMPABLE)))
print("to stderr", file=sys.stderr, flush=True)
if args[0] == "sleep":
    time.sleep(120)
sys.exit(int(args[0]) if args[0].isdigit() else 0)
"""


@pytest.fixture
def zygote(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(paths=[p for p in sys.path if p]))
    z = Zygote(str(script))
    yield z
    z.close()


def _spawn(zygote, tmp_path, *args, cwd=None):
    out, err = tmp_path / f"out{args[0]}", tmp_path / f"err{args[0]}"
    out.touch()
    err.touch()
    with open(tmp_path / "zygote.log", "a") as log:
        proc = zygote.spawn(list(args), cwd or tmp_path, dict(os.environ), str(out), str(err), log)
    return proc, out, err


def test_each_student_gets_a_child_of_its_own_forked_from_one_warm_process(zygote, tmp_path):
    first, out1, err1 = _spawn(zygote, tmp_path, "3", "a")
    assert first.wait(30) == 3 and first.returncode == 3
    warm = zygote.proc.pid
    second, out2, _ = _spawn(zygote, tmp_path, "0", "b")
    assert second.wait(30) == 0
    assert zygote.proc.pid == warm, "the zygote was started again"
    said = [out.read_text().split() for out in (out1, out2)]
    for (_, pid, parent, session, *args), proc, want in zip(said, (first, second), (["3", "a"], ["0", "b"])):
        assert int(pid) == proc.pid and int(parent) == warm and int(session) == proc.pid and args == want
    assert err1.read_text() == "to stderr\n"


def test_each_child_runs_in_the_folder_of_its_request(zygote, tmp_path):
    """A Dask worker's thread keeps one zygote while each task grades in a folder of its own."""
    for name in ("task1", "task2"):
        (tmp_path / name).mkdir()
        proc, _, _ = _spawn(zygote, tmp_path, "0", cwd=tmp_path / name)
        assert proc.wait(30) == 0
        assert (tmp_path / name / "cwd.txt").read_text() == str(tmp_path / name)
        assert (tmp_path / name / "dumpable.txt").read_text() == "0", "the zygote and its children are not dumpable"


def test_a_child_past_its_bound_is_killed_and_the_next_one_still_forks(zygote, tmp_path):
    proc, _, _ = _spawn(zygote, tmp_path, "sleep")
    assert proc.poll() is None
    assert "longer than 1 s" in bounded(proc, None, 1.0)
    assert proc.returncode == -9
    after, _, _ = _spawn(zygote, tmp_path, "0")
    assert after.wait(30) == 0


def test_a_child_never_waited_for_ends_the_zygote_and_the_next_student_starts_afresh(zygote, tmp_path):
    """The zygote answers its running child's exit status before it reads the next request: a
    slot that abandoned a child (an exception between the fork and the wait) gives the zygote up
    and its child with it, instead of waiting for an answer that cannot come."""
    proc, _, _ = _spawn(zygote, tmp_path, "sleep")
    abandoned = psutil.Process(proc.pid)
    with pytest.raises(ZygoteGone, match="not waited for"):
        _spawn(zygote, tmp_path, "0")
    abandoned.wait(10)
    assert zygote.proc is None and "not waited for" in zygote.broken


def test_the_children_die_with_the_zygote(zygote, tmp_path):
    proc, _, _ = _spawn(zygote, tmp_path, "sleep")
    child = psutil.Process(proc.pid)
    zygote.proc.kill()
    child.wait(10)
    assert proc.wait(10) == -9


def test_a_zygote_that_cannot_fork_leaves_nbgrader_to_start_a_fresh_process(tmp_path):
    broken = Zygote(str(tmp_path / "missing.py"))
    with pytest.raises(ZygoteGone):
        _spawn(broken, tmp_path, "0")
    started = time.monotonic()
    with pytest.raises(ZygoteGone, match="did not fork"):  # given up once, not tried for each student
        _spawn(broken, tmp_path, "0")
    assert time.monotonic() - started < 1
    ended = nbgrader(["export-tables", "[]"], tmp_path, tmp_path, zygote=broken)
    assert ended.returncode == 0 and "started afresh" in ended.stderr


@pytest.mark.slow  # imports nbgrader and PyTorch in two processes: `make test`, not `make test-fast`
def test_nbgraders_command_line_runs_forked_from_the_course_zygote(tmp_path):
    """The real script: `nbgrader_cli.py zygote` preloads nbgrader, PyTorch and the plugins, and
    its child runs the command line it is sent."""
    from attention_course.grading.nbgrader_process import CLI

    warm = Zygote(str(CLI))
    try:
        for _ in range(2):
            ended = nbgrader(["export-tables", "[]"], tmp_path, tmp_path.parent, zygote=warm)
            assert ended.returncode == 0 and "afresh" not in ended.stderr, ended.stderr
        modules = psutil.Process(warm.proc.pid).memory_maps()
        assert any("torch" in m.path for m in modules), "the zygote did not preload PyTorch"
    finally:
        warm.close()
