"""attention_course/confinement/preflight.py, with no program started: a policy refused before
anything runs (unknown layer, relative or missing folders, a layer this machine lacks, a uid 0),
what it resolves for the inner stage (uid, process limit, user namespace, seccomp programs) with
and without root, the sandbox account looked up (never created here), and `chown_tree` giving a
folder to an unprivileged uid without following links or touching a file linked from elsewhere.
Tests that need root (or not being root) say so; nothing creates an account."""

from __future__ import annotations

import os
import pwd
import time

import pytest

from attention_course.confinement import bubblewrap, linux, preflight, seccomp_filter
from attention_course.confinement.bubblewrap import bwrap_path
from attention_course.confinement.policy import SANDBOX_USER, Policy, Unavailable

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root (the user layer, chown, what a root grader resolves)")
needs_non_root = pytest.mark.skipif(ROOT, reason="checks what preflight does for a grader that is not root")
ABI = linux.landlock_abi()
UID, GID = 4321, 5432  # numbers only: no account of that uid is needed (or made)


def _policy(folder, **overrides) -> Policy:
    work = folder / "work"
    work.mkdir(exist_ok=True)
    fields = {"read": [], "write": [str(work)], "cwd": str(work), "env": {}, "layers": [], "max_processes": 24}
    return Policy(**(fields | overrides))


def _refusal(policy: Policy) -> Unavailable:
    with pytest.raises(Unavailable) as caught:
        preflight.preflight(policy)
    return caught.value


def test_an_unknown_layer_is_refused_first_and_the_known_ones_named(tmp_path):
    refused = _refusal(_policy(tmp_path, layers=["bwrap", "chroot"], cwd="relative"))
    assert refused.layer == "chroot"
    assert refused.reason == "unknown layer (known: bwrap, landlock, user)"


@pytest.mark.parametrize("cwd", ["", "relative/folder"])
def test_the_program_folder_must_be_an_absolute_path(tmp_path, cwd):
    refused = _refusal(_policy(tmp_path, cwd=cwd))
    assert refused.layer == "policy" and "absolute" in refused.reason and repr(cwd) in refused.reason


def test_a_missing_program_folder_is_refused(tmp_path):
    missing = str(tmp_path / "missing")
    refused = _refusal(_policy(tmp_path, cwd=missing))
    assert (refused.layer, refused.reason) == ("policy", f"cwd {missing} does not exist")


def test_a_write_folder_that_is_missing_or_relative_is_refused(tmp_path, monkeypatch):
    missing = str(tmp_path / "missing")
    refused = _refusal(_policy(tmp_path, write=[str(tmp_path / "work"), missing]))
    assert (refused.layer, refused.reason) == ("policy", f"write directory {missing} does not exist")
    monkeypatch.chdir(tmp_path)  # "work" exists here, but only as a relative path
    assert _refusal(_policy(tmp_path, write=["work"])).reason == "write directory work does not exist"


def test_a_missing_bubblewrap_is_refused_with_how_to_install_it(tmp_path, monkeypatch):
    not_executable = tmp_path / "bwrap"
    not_executable.write_text("")
    monkeypatch.setattr(bubblewrap, "bwrap_path", lambda: str(not_executable))
    refused = _refusal(_policy(tmp_path, layers=["bwrap"]))
    assert refused.layer == "bwrap" and "apt-get install bubblewrap" in refused.reason
    assert str(not_executable) in refused.reason, "it names where it looked"


@pytest.mark.skipif(ABI >= 1, reason="Landlock works here")
def test_landlock_where_the_kernel_lacks_it_is_refused_with_the_kernels_reason(tmp_path):
    refused = _refusal(_policy(tmp_path, layers=["landlock"]))
    assert (refused.layer, refused.reason) == ("landlock", linux.landlock_reason(ABI))


@pytest.mark.skipif(ABI < 1, reason=linux.landlock_reason(ABI) or "Landlock works here")
def test_landlock_gets_a_filter_for_a_uid_0_child_and_one_for_any_other(tmp_path):
    seccomp = preflight.preflight(_policy(tmp_path, layers=["landlock"]))["seccomp"]
    assert seccomp == {
        "1": seccomp_filter.program(True, uid0=True).hex(),
        "0": seccomp_filter.program(True, uid0=False).hex(),
    }
    assert seccomp["0"] != seccomp["1"]


def test_the_filters_are_sandbox_ones_only_with_a_sandbox_layer():
    for layers in (["bwrap"], ["landlock"], ["bwrap", "landlock", "user"]):
        programs = preflight.seccomp_programs(layers)
        assert set(programs) == {"0", "1"}
        assert programs["1"] == seccomp_filter.program(True, uid0=True).hex()
    alone = preflight.seccomp_programs(["user"])
    assert alone == {"1": seccomp_filter.program(False, uid0=True).hex()}
    assert alone["1"] != preflight.seccomp_programs(["bwrap"])["1"]
    for program in (alone["1"], *preflight.seccomp_programs(["bwrap"]).values()):
        assert len(bytes.fromhex(program)) % 8 == 0  # whole BPF instructions


@needs_root
def test_as_root_without_layers_nothing_is_resolved(tmp_path):
    resolved = preflight.preflight(_policy(tmp_path, uid=UID))  # a uid without "user" is not used
    assert resolved == {"uid": None, "gid": None, "nproc": None, "nproc_shared": None, "userns": False, "seccomp": {}}


@needs_root
@pytest.mark.parametrize(("uid", "gid", "expected"), [(UID, None, (UID, UID)), (UID, GID, (UID, GID))])
def test_as_root_the_user_layer_takes_the_policys_uid_and_its_own_process_count(tmp_path, uid, gid, expected):
    resolved = preflight.preflight(_policy(tmp_path, layers=["user"], uid=uid, gid=gid))
    assert (resolved["uid"], resolved["gid"]) == expected
    assert (resolved["nproc"], resolved["nproc_shared"], resolved["userns"]) == (24, None, False)
    assert resolved["seccomp"] == preflight.seccomp_programs(["user"])


@needs_root
@pytest.mark.parametrize(("uid", "gid"), [(0, None), (0, GID), (UID, 0), (-1, None), (UID, -1)])
def test_as_root_the_user_layer_refuses_a_privileged_uid_or_gid(tmp_path, uid, gid):
    refused = _refusal(_policy(tmp_path, layers=["user"], uid=uid, gid=gid))
    assert refused.layer == "user" and "is not an unprivileged user" in refused.reason


@needs_non_root
def test_without_root_the_user_layer_is_refused(tmp_path):
    refused = _refusal(_policy(tmp_path, layers=["user"], uid=UID))
    assert (refused.layer, refused.reason) == ("user", "only when grading runs as root")


@needs_non_root
def test_without_root_the_process_count_is_the_graders_and_a_user_namespace_gives_its_own(tmp_path):
    import psutil

    resolved = preflight.preflight(_policy(tmp_path))
    assert resolved["uid"] is None and resolved["nproc"] == 24 and resolved["userns"] is True
    assert resolved["nproc_shared"] >= 24 + psutil.Process().num_threads()  # this test's own tasks too
    if os.access(bwrap_path(), os.X_OK):
        assert preflight.preflight(_policy(tmp_path, layers=["bwrap"]))["userns"] is False  # bwrap makes one


def test_the_sandbox_account_is_looked_up_without_being_made():
    try:
        entry = pwd.getpwnam(SANDBOX_USER)
    except KeyError:
        with pytest.raises(Unavailable, match=f"no user {SANDBOX_USER}"):
            preflight.sandbox_user(create=False)
        with pytest.raises(KeyError):
            pwd.getpwnam(SANDBOX_USER)  # still not made
    else:
        assert preflight.sandbox_user(create=False) == (entry.pw_uid, entry.pw_gid)


def _owner(path) -> tuple[int, int]:
    st = os.lstat(path)
    return st.st_uid, st.st_gid


@needs_root
def test_chown_tree_gives_folders_and_files_but_follows_no_link_and_leaves_hard_links(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("grader")
    root = tmp_path / "work"
    (root / "a" / "b").mkdir(parents=True)
    files = [root / "top", root / "a" / "one", root / "a" / "b" / "two"]
    for file in files:
        file.write_text("x")
    (root / "a" / "file-link").symlink_to(outside / "secret")
    (root / "a" / "folder-link").symlink_to(outside)
    os.link(outside / "secret", root / "a" / "hard")  # a second name of a file from elsewhere
    grader = _owner(outside / "secret")
    preflight.chown_tree(str(root), UID, GID)
    for path in [root, root / "a", root / "a" / "b", *files]:
        assert _owner(path) == (UID, GID), path
    for path in (
        outside,
        outside / "secret",
        root / "a" / "hard",
        root / "a" / "file-link",
        root / "a" / "folder-link",
    ):
        assert _owner(path) == grader, path


@needs_root
def test_chown_tree_never_chowns_a_hard_link_swapped_in_after_the_walk_saw_a_single_file(tmp_path, monkeypatch):
    """A concurrent sandbox of the same uid replaces a file it owns with a hard link to a file from
    elsewhere, between the walk's look at the entry and the chown: the chown goes to the inode
    checked, never to the name."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("grader")
    root = tmp_path / "work"
    root.mkdir()
    (root / "mine").write_text("x")
    grader = _owner(outside / "secret")
    chown = preflight._chown_if_single

    def swapped(name, parent, *args):
        os.unlink(name, dir_fd=parent)
        os.link(outside / "secret", name, dst_dir_fd=parent)
        return chown(name, parent, *args)

    monkeypatch.setattr(preflight, "_chown_if_single", swapped)
    preflight.chown_tree(str(root), UID, GID)
    assert _owner(outside / "secret") == grader
    assert _owner(root) == (UID, GID)


@needs_root
def test_chown_tree_refuses_a_root_that_is_a_link(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    before = _owner(target)
    with pytest.raises(OSError):
        preflight.chown_tree(str(tmp_path / "link"), UID, GID)
    assert _owner(target) == before


@needs_root
def test_chown_tree_leaves_what_is_the_users_already_untouched_and_can_give_it_back(tmp_path):
    root = tmp_path / "work"
    root.mkdir()
    (root / "file").write_text("x")
    preflight.chown_tree(str(root), UID, GID)
    changed = {path: os.lstat(path).st_ctime_ns for path in (root, root / "file")}
    time.sleep(0.02)
    preflight.chown_tree(str(root), UID, GID)  # a chown, even to the same owner, would change ctime
    assert {path: os.lstat(path).st_ctime_ns for path in (root, root / "file")} == changed
    preflight.chown_tree(str(root), 0, 0)
    assert _owner(root) == _owner(root / "file") == (0, 0)
