"""`make check-grader` (attention_course/grading/check.py) without probing the machine: the report's
lines and exit status from the course's grading settings and a given probe, and `main`'s command
line. (tests/e2e/test_check.py has the basics and a run of the real `make check-grader`.)"""

from __future__ import annotations

import os
import sys

import pytest

from attention_course.confinement import confine
from attention_course.confinement import probe as probing
from attention_course.grading import check

ALL_WORK = {"bwrap": None, "landlock": None, "user": None}


@pytest.fixture
def machine(monkeypatch):
    """Set what the confinement probe finds on "this machine" (the real probe runs confined Pythons)."""

    def found_here(found: dict) -> None:
        monkeypatch.setattr(probing, "probe", lambda python=None, layers=confine.LAYERS: dict(found))

    return found_here


def _course(folder, settings: str = ""):
    """A course folder whose nbgrader_config.py holds only `settings`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nbgrader_config.py").write_text(f"c = get_config()\n{settings}\n")
    return folder


def _line_of(lines: list[str], layer: str) -> str:
    return next(line for line in lines if line.split()[:1] == [layer])


def test_the_first_line_names_the_account_and_the_python_that_grades(tmp_path, machine):
    machine(ALL_WORK)
    lines, _ = check.report(_course(tmp_path))
    who = "root" if os.geteuid() == 0 else f"uid {os.geteuid()}"
    assert lines[0] == f"Grading as {who}, with {sys.executable}"


def test_each_layer_is_listed_once_in_the_order_of_its_needs(tmp_path, machine):
    machine(ALL_WORK)
    lines, status = check.report(_course(tmp_path))
    listed = [line.split()[0] for line in lines[1:] if line.split()[:1] in ([n] for n in check.NEEDS)]
    assert listed == list(check.NEEDS) and status == 0
    for layer, needs in check.NEEDS.items():
        assert _line_of(lines, layer).endswith(f"needs: {needs}")


def test_a_layer_that_works_has_no_missing_line_and_one_that_does_not_says_why(tmp_path, machine):
    machine({"bwrap": None, "landlock": "landlock: kernel 5.4", "user": None})
    lines, status = check.report(_course(tmp_path))
    at = lines.index(_line_of(lines, "landlock"))
    assert "off" in lines[at].split()[1] and lines[at + 1].strip() == "missing here: landlock: kernel 5.4"
    assert sum("missing here" in line for line in lines) == 1
    assert (status, lines[-1]) == (0, "Grading would go ahead with: bwrap, user.")


def test_auto_takes_every_working_layer_in_the_probes_order(tmp_path, machine):
    machine(ALL_WORK)
    lines, status = check.report(_course(tmp_path))
    assert (status, lines[-1]) == (0, "Grading would go ahead with: " + ", ".join(confine.LAYERS) + ".")
    assert all(_line_of(lines, layer).split()[1] == "on" for layer in confine.LAYERS)


def test_layers_named_in_the_config_are_the_only_ones_on_even_when_others_work(tmp_path, machine):
    machine(ALL_WORK)
    lines, status = check.report(_course(tmp_path, "c.Grading.layers = ['landlock, bwrap']"))
    assert status == 0 and lines[-1] == "Grading would go ahead with: landlock, bwrap."
    assert _line_of(lines, "user").split()[1] == "off"
    assert not any("missing here" in line for line in lines), "user works here: it is only not asked for"


def test_a_named_layer_this_machine_lacks_refuses_with_what_to_change(tmp_path, machine):
    machine({"bwrap": None, "landlock": "landlock: not in the LSM list", "user": "user: only as root"})
    lines, status = check.report(_course(tmp_path, "c.Grading.layers = ['bwrap', 'landlock', 'user']"))
    assert status == 2 and len(lines) == 2
    assert "landlock: not in the LSM list" in lines[0] and "user: only as root" in lines[0]
    assert "bwrap:" not in lines[0], "a layer that works is not named as missing"
    assert "c.Grading.layers" in lines[1]


def test_the_note_on_user_without_bwrap_is_shown_only_when_user_is_applied(tmp_path, machine):
    found = {**ALL_WORK, "user without bwrap": "user: works here only together with bwrap (no search)"}
    machine(found)
    lines, _ = check.report(_course(tmp_path))
    assert lines[-2] == f"  note: {found['user without bwrap']}"
    lines, _ = check.report(_course(tmp_path, "c.Grading.layers = ['bwrap']"))
    assert not any("note:" in line for line in lines)


def test_unconfined_changes_nothing_while_some_layer_works(tmp_path, machine):
    machine({"bwrap": "bwrap: absent", "landlock": None, "user": "user: absent"})
    lines, status = check.report(_course(tmp_path, "c.Grading.unconfined = True"))
    assert status == 0 and lines[-1] == "Grading would go ahead with: landlock."
    assert not any("UNCONFINED" in line for line in lines)


def test_without_any_layer_the_exit_status_follows_the_unconfined_setting(tmp_path, machine):
    machine({layer: f"{layer}: absent" for layer in confine.LAYERS})
    lines, status = check.report(_course(tmp_path))
    assert status == 2 and "--unconfined" in lines[-1]
    assert all(_line_of(lines, layer).split()[1] == "off" for layer in confine.LAYERS)
    lines, status = check.report(_course(tmp_path, "c.Grading.unconfined = True"))
    assert status == 0 and "UNCONFINED" in lines[-1]


def test_main_prints_the_report_of_the_course_it_is_given_and_returns_its_status(tmp_path, machine, capsys):
    machine({layer: f"{layer}: absent" for layer in confine.LAYERS})
    refusing = _course(tmp_path / "refusing")
    allowing = _course(tmp_path / "allowing", "c.Grading.unconfined = True")
    assert check.main(["--course", str(refusing)]) == 2
    printed = capsys.readouterr().out
    assert printed == "\n".join(check.report(refusing)[0]) + "\n"
    assert check.main(["--course", str(allowing)]) == 0
    assert "UNCONFINED" in capsys.readouterr().out
