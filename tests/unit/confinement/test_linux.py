"""attention_course/confinement/linux.py: prctl and Landlock, tried for real in forked children of this test (no root,
no bubblewrap), and the one place of the course that spells their numbers."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attention_course.confinement import bubblewrap, linux
from conftest import in_child

REPO = Path(__file__).resolve().parents[3]
ABI = linux.landlock_abi()
needs_landlock = pytest.mark.skipif(
    ABI < 1 and not os.environ.get("CI"), reason=linux.landlock_reason(ABI) or "Landlock works"
)
needs_scoping = pytest.mark.skipif(ABI < 6 and not os.environ.get("CI"), reason=f"Landlock ABI {ABI} < 6")


def test_not_dumpable_takes():
    def attempt():
        before = linux.prctl(linux.PR_GET_DUMPABLE)
        linux.not_dumpable()
        return {"before": before, "after": linux.prctl(linux.PR_GET_DUMPABLE)}

    assert in_child(attempt) == {"before": 1, "after": 0}


def test_reasons_and_rights_by_abi():
    assert linux.landlock_reason(3) is None
    assert "not enabled" in linux.landlock_reason(-errno.EOPNOTSUPP)
    assert "5.13" in linux.landlock_reason(-errno.ENOSYS)
    assert linux.handled_fs(1) == (1 << 13) - 1
    assert linux.handled_fs(2) & linux.LL_REFER and not linux.handled_fs(2) & linux.LL_TRUNCATE
    assert linux.handled_fs(5) & linux.LL_IOCTL_DEV


@needs_landlock
def test_a_ruleset_reads_beneath_its_paths_and_nothing_else(tmp_path):
    allowed, other = tmp_path / "allowed", tmp_path / "other"
    for folder in (allowed, other):
        folder.mkdir()
        (folder / "file").write_text("x")

    def attempt():
        ruleset = linux.landlock_ruleset([str(allowed)], [], [])
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        linux.landlock_enforce(ruleset)
        out = {"allowed": (allowed / "file").read_text()}
        for name, path in (("other", other / "file"), ("write", allowed / "new")):
            try:
                path.write_text("y") if name == "write" else path.read_text()
                out[name] = "done"
            except PermissionError:
                out[name] = "refused"
        return out

    assert in_child(attempt) == {"allowed": "x", "other": "refused", "write": "refused"}


@needs_landlock
def test_a_missing_path_is_skipped_and_a_refusal_says_which_call(tmp_path):
    ruleset = linux.landlock_ruleset([str(tmp_path / "absent")], [], [])
    os.close(ruleset)
    not_a_ruleset = os.open(os.devnull, os.O_RDONLY)
    with pytest.raises(linux.LandlockError, match=r"landlock_restrict_self failed \(.*"):
        linux.landlock_enforce(not_a_ruleset)  # and it is closed
    with pytest.raises(OSError):
        os.fstat(not_a_ruleset)


@needs_scoping
def test_scoping_itself_a_process_can_no_longer_signal_its_parent():
    parent = os.getpid()

    def attempt():
        os.kill(parent, 0)  # allowed before
        scoped = linux.landlock_scope_self()
        try:
            os.kill(parent, 0)
            after = "delivered"
        except PermissionError:
            after = "refused"
        return {"scoped": scoped, "after": after}

    assert in_child(attempt) == {"scoped": True, "after": "refused"}


def test_the_inner_stage_archive_holds_its_modules_as_they_are():
    import io
    import zipfile

    archive = zipfile.ZipFile(io.BytesIO(bubblewrap.inner_archive()))
    package = "attention_course/confinement/"
    assert sorted(archive.namelist()) == sorted(
        ["__main__.py", "attention_course/__init__.py", package + "__init__.py"]
        + [package + name for name in ("inner.py", "linux.py", "policy.py")]
    )
    for name in ("inner.py", "linux.py", "policy.py"):
        assert archive.read(package + name) == (REPO / package / name).read_bytes()
    assert bubblewrap.inner_archive() == bubblewrap.inner_archive()  # reproducible: no time stamps


def test_the_inner_stage_archive_runs_as_a_script(tmp_path):
    """Python runs the archive as bubblewrap's inner stage does (`-I -S`, no site): the inner
    stage then finds `policy` and `linux` in the archive, not on disk."""
    archive = tmp_path / "inner.pyz"
    archive.write_bytes(bubblewrap.inner_archive())
    code = subprocess.run([sys.executable, "-I", "-S", str(archive)], capture_output=True, text=True, timeout=60)
    assert (code.returncode, code.stderr) == (2, "usage: the inner stage of confine.py: --inner CONFIG\n")


def test_only_linux_py_spells_the_calls():
    """prctl options and Landlock syscall numbers live in attention_course/confinement/linux.py alone,
    but for the warm starter, which runs confined as `python -c` with the standard library only and
    spells the two prctl options it sets (a subreaper, not dumpable) beside their names."""
    spelled = re.compile(r"syscall\((ctypes\.c_long\()?44[4-6]|prctl\(\s*(4|38)\s*,|PR_SET_DUMPABLE\s*=|_LandlockAttr")
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True).stdout.split()
    found = [
        path
        for path in tracked
        if path not in ("attention_course/confinement/linux.py", "attention_course/grading/warm_program.py")
        and not path.startswith("tests/")
        and spelled.search((REPO / path).read_text())
    ]
    assert found == []


def test_a_user_namespace_of_its_own_counts_the_process_limit_apart():
    """Beside 40 sleeping children of this uid, a process in its own namespace with a limit of 8
    tasks can still start 5 (the limit counts its namespace); outside one, the same limit stops it."""
    import resource

    def attempt(own: bool):
        def run():
            if os.geteuid() == 0:  # root is not held to RLIMIT_NPROC: nobody is
                os.setgroups([])
                os.setresgid(65534, 65534, 65534)
                os.setresuid(65534, 65534, 65534)
            sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(40)]
            try:
                if own:
                    linux.own_user_namespace()
                    mapped = open("/proc/self/uid_map").read().split()
                else:
                    mapped = []
                resource.setrlimit(resource.RLIMIT_NPROC, (8, 8))
                started = []
                try:
                    for _ in range(5):
                        started.append(subprocess.Popen(["true"]))
                except OSError as exc:
                    return {"started": len(started), "error": exc.errno, "mapped": mapped}
                for child in started:
                    child.wait()
                return {"started": len(started), "mapped": mapped}
            finally:
                for sleeper in sleepers:
                    sleeper.kill()

        return run

    own, shared = in_child(attempt(True)), in_child(attempt(False))
    uid = "65534" if os.geteuid() == 0 else str(os.getuid())
    assert own["started"] == 5 and own["mapped"][:2] == [uid, uid], own
    assert shared.get("error") == errno.EAGAIN, shared
