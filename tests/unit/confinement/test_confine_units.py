"""The pure parts of the confinement, on any laptop in milliseconds (no bubblewrap, Landlock or root
needed): the bubblewrap command line for a described host, the policy file, the supervisor's
status. What the layers really stop is tests/e2e/test_confine.py's and the attack suite's."""

from __future__ import annotations

import json

import pytest

from attention_course.confinement import confine
from attention_course.confinement.bubblewrap import Host, bwrap_argv
from attention_course.confinement.policy import PROC_COVER, Policy
from attention_course.confinement.status import Report


def _policy(**overrides) -> Policy:
    fields = {
        "read": ["/opt/venv", "/opt/venv/lib"],
        "write": ["/home/grader/build/ws", "/opt/venv/lib/cache"],
        "cwd": "/home/grader/build/ws/folder",
        "env": {"HOME": "/home/grader/build/ws", "PATH": "/usr/bin"},
        "layers": ["bwrap"],
    }
    return Policy(**(fields | overrides))


def _host(root: bool = False, **overrides) -> Host:
    fields = {
        "bwrap": "/usr/bin/bwrap",
        "root": root,
        "system": {"/usr": "", "/lib": "usr/lib", "/bin": "usr/bin"},
        "existing": frozenset({"/opt/venv", "/opt/venv/lib", "/etc/passwd", "/usr/local/python"}),
        "base_prefix": "/usr/local/python",
    }
    return Host(**(fields | overrides))


def _pairs(args: list[str], option: str) -> list[tuple[str, str]]:
    """The (source, destination) of every use of a mount option taking two paths."""
    return [(args[i + 1], args[i + 2]) for i, a in enumerate(args) if a == option]


def test_without_root_the_sandbox_gets_a_user_namespace_and_no_capability_options():
    args = bwrap_argv(_policy(), 9, user=False, host=_host(root=False))
    assert args[0] == "/usr/bin/bwrap"
    assert "--unshare-user" in args and "--disable-userns" in args
    assert "--cap-drop" not in args


@pytest.mark.parametrize("user", [False, True])
def test_as_root_every_capability_is_dropped_but_what_the_inner_stage_needs(user):
    args = bwrap_argv(_policy(), 9, user=user, host=_host(root=True))
    assert "--unshare-user" not in args
    added = [args[i + 1] for i, a in enumerate(args) if a == "--cap-add"]
    assert args[args.index("--cap-drop") + 1] == "ALL"
    assert added == (["CAP_SETPCAP", "CAP_SETUID", "CAP_SETGID"] if user else ["CAP_SETPCAP"])


def test_system_folders_are_bound_read_only_and_top_level_links_recreated():
    args = bwrap_argv(_policy(), 9, user=False, host=_host())
    assert ("/usr", "/usr") in _pairs(args, "--ro-bind")
    assert ("usr/lib", "/lib") in _pairs(args, "--symlink") and ("usr/bin", "/bin") in _pairs(args, "--symlink")
    for sub in PROC_COVER:
        assert (f"/proc/{sub}", f"/proc/{sub}") in _pairs(args, "--ro-bind-try")


def test_reads_that_exist_are_read_only_writes_are_bound_and_a_write_inside_a_read_comes_after_it():
    args = bwrap_argv(_policy(), 9, user=False, host=_host())
    reads, writes = _pairs(args, "--ro-bind-try"), _pairs(args, "--bind")
    assert ("/opt/venv", "/opt/venv") in reads and ("/etc/passwd", "/etc/passwd") in reads
    assert ("/etc/hosts", "/etc/hosts") not in reads  # not on this host
    assert writes == [("/home/grader/build/ws",) * 2, ("/opt/venv/lib/cache",) * 2]
    position = {path: i for i, path in enumerate(args)}
    assert position["/opt/venv/lib"] < position["/opt/venv/lib/cache"]


def test_missing_parents_are_made_reachable_once_and_before_what_is_mounted_below():
    args = bwrap_argv(_policy(), 9, user=False, host=_host())
    made = [args[i + 3] for i, a in enumerate(args) if a == "--perms" and args[i + 1] == "0755"]
    assert made == ["/etc", "/opt", "/home", "/home/grader", "/home/grader/build"]
    assert args.index("/home/grader/build") < args.index("/home/grader/build/ws")


def test_the_environment_is_only_the_policys_and_the_program_starts_in_its_folder():
    args = bwrap_argv(_policy(), 9, user=False, host=_host())
    assert "--clearenv" in args and args.index("--clearenv") < args.index("--setenv")
    assert _pairs(args, "--setenv") == [("HOME", "/home/grader/build/ws"), ("PATH", "/usr/bin")]
    assert args[args.index("--chdir") + 1] == "/home/grader/build/ws/folder"
    assert args[args.index("--info-fd") + 1] == "9"
    for namespace in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--die-with-parent"):
        assert namespace in args


def test_the_same_policy_and_host_give_the_same_command_line():
    assert bwrap_argv(_policy(), 9, False, _host()) == bwrap_argv(_policy(), 9, False, _host())


def test_a_policy_round_trips_and_an_unknown_field_is_refused():
    policy = _policy(memory_bytes=2**30, uid=1234)
    assert Policy.from_json(policy.to_json()) == policy
    data = json.loads(policy.to_json()) | {"hiden": True}
    with pytest.raises(ValueError, match="hiden"):
        Policy.from_json(json.dumps(data))


def test_the_status_names_the_last_failure_of_the_exit_code(tmp_path):
    report = Report()
    policy_path = str(tmp_path / "policy.json")
    assert confine.read_status(policy_path) is None  # nothing written: the supervisor was killed
    report.write(confine.status_path(policy_path), 3)
    assert confine.read_status(policy_path) == {"outcome": "exited", "layer": "", "reason": "", "exit": 3}
    code = report.fail("limit", "memory over 2 GiB", confine.EXIT_LIMIT)
    report.write(confine.status_path(policy_path), code)
    assert confine.read_status(policy_path) == {
        "outcome": "limit",
        "layer": "limit",
        "reason": "memory over 2 GiB",
        "exit": confine.EXIT_LIMIT,
    }
    code = report.fail("exec", "/bin/nothing: not found", 127)
    report.write(confine.status_path(policy_path), code)
    assert confine.read_status(policy_path)["outcome"] == "exec"
