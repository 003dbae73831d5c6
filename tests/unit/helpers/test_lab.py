"""`helpers.lab` (`make lab EDITION=...`), without starting JupyterLab: the command line and environment it
would run for each edition of course.toml (its start page, `binder/jupyter` first on the config path, the
edition's locale in a settings folder of its own, `binder/` on PYTHONPATH), the settings folder written only
when it changes, `--print`, and what is refused. The editions come from the manifest's student view (what
course.json holds); `sys.prefix`, where the locale folders go, is a tmp folder, and `os.execvpe` is recorded.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from attention_course.model.manifest import load
from helpers import lab
from helpers.course import viewing

COURSE = load()


@pytest.fixture(autouse=True)
def editions(tmp_path, monkeypatch):
    """The manifest's editions, a tmp sys.prefix, no PYTHONPATH and no JupyterLab."""
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "prefix"))
    monkeypatch.delenv("PYTHONPATH", raising=False)

    def no_lab(*args):
        raise AssertionError(f"JupyterLab would start: {args}")

    monkeypatch.setattr(lab.os, "execvpe", no_lab)
    with viewing(COURSE.student_view()):
        yield


def _start(edition: str) -> str:
    return f"{COURSE.release}/{COURSE.edition(edition).assignment}/{COURSE.notebooks[0]}.ipynb"


def _jupyter() -> str:
    jupyter = Path(sys.executable).with_name("jupyter")
    return str(jupyter) if jupyter.exists() else "jupyter"


def _overrides(folder: Path) -> Path:
    return folder / "labconfig" / "default_setting_overrides.json"


def test_the_english_edition_opens_its_start_page_with_the_course_settings_only(tmp_path):
    cmd, extra = lab.command("en", ["--no-browser"], root=tmp_path)
    assert cmd == [_jupyter(), "lab", "notebooks/attention/00_start_here.ipynb", "--no-browser"]
    assert cmd[2] == _start("en")
    assert extra == {
        "JUPYTER_CONFIG_PATH": str(tmp_path / "binder" / "jupyter"),
        "PYTHONPATH": str(tmp_path / "binder"),
    }
    assert not (tmp_path / "prefix").exists()  # English needs no locale folder


def test_the_chinese_edition_opens_in_chinese(tmp_path):
    cmd, extra = lab.command("zh-CN", [], root=tmp_path)
    assert cmd[1:] == ["lab", _start("zh-CN")] and "attention_zh" in cmd[2]
    binder, locale = extra["JUPYTER_CONFIG_PATH"].split(os.pathsep)
    assert binder == str(tmp_path / "binder" / "jupyter")
    assert Path(locale) == tmp_path / "prefix" / "etc" / "attention-course" / "jupyter-zh-CN"
    assert json.loads(_overrides(Path(locale)).read_text()) == {lab.TRANSLATION: {"locale": "zh_CN"}}


def test_an_existing_pythonpath_comes_after_binder(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/opt/mine")
    _cmd, extra = lab.command("en", [], root=tmp_path)
    assert extra["PYTHONPATH"] == os.pathsep.join([str(tmp_path / "binder"), "/opt/mine"])


def test_the_course_folder_is_the_working_directory_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _cmd, extra = lab.command("en", [])
    assert extra["JUPYTER_CONFIG_PATH"] == str(tmp_path / "binder" / "jupyter")


def test_the_locale_folder_is_written_only_when_it_changes(tmp_path):
    folder = lab.locale_config("zh-CN", "zh_CN")
    overrides = _overrides(folder)
    first = overrides.stat().st_mtime_ns
    os.utime(overrides, ns=(first - 10**9, first - 10**9))
    assert lab.locale_config("zh-CN", "zh_CN") == folder
    assert overrides.stat().st_mtime_ns == first - 10**9  # the same settings: left alone
    overrides.write_text("{}")
    lab.locale_config("zh-CN", "zh_CN")
    assert json.loads(overrides.read_text()) == {lab.TRANSLATION: {"locale": "zh_CN"}}
    lab.locale_config("zh-CN", "ja_JP")
    assert json.loads(overrides.read_text()) == {lab.TRANSLATION: {"locale": "ja_JP"}}


def test_an_unknown_edition_is_refused_with_the_names(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"No edition is called 'fr'; choose one of \['en', 'zh-CN'\]"):
        lab.command("fr", [], root=tmp_path)
    assert lab.main(["fr", "--print"]) == 2
    assert "No edition is called 'fr'" in capsys.readouterr().err


def test_without_an_edition_main_shows_how_to_call_it(capsys):
    assert lab.main([]) == 2
    assert capsys.readouterr().err.strip() == "python -m helpers.lab zh-CN [jupyter lab arguments ...]"


def test_print_shows_the_command_and_its_settings_and_starts_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert lab.main(["zh-CN", "--print", "--port", "9999"]) == 0
    out = capsys.readouterr().out.strip()
    cmd, extra = lab.command("zh-CN", ["--port", "9999"])
    assert out == " ".join(f"{k}={shlex.quote(v)}" for k, v in extra.items()) + " " + shlex.join(cmd)
    assert out.endswith(f"lab {_start('zh-CN')} --port 9999")
    assert shlex.split(out)[0] == "JUPYTER_CONFIG_PATH=" + extra["JUPYTER_CONFIG_PATH"]


def test_main_hands_the_process_to_jupyter_lab_with_the_settings_added(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTENTION_TEST_MARK", "kept")
    handed = []
    monkeypatch.setattr(lab.os, "execvpe", lambda file, argv, env: handed.append((file, argv, env)))
    assert lab.main(["en", "--no-browser"]) == 1  # only when exec returns, which it never does
    [(file, argv, env)] = handed
    assert file == argv[0] == _jupyter() and argv[1:] == ["lab", _start("en"), "--no-browser"]
    assert env["JUPYTER_CONFIG_PATH"] == str(tmp_path / "binder" / "jupyter")
    assert env["PYTHONPATH"] == str(tmp_path / "binder") and env["ATTENTION_TEST_MARK"] == "kept"


def test_a_read_only_environment_keeps_the_locale_in_the_users_cache(tmp_path, monkeypatch):
    blocked = tmp_path / "prefix"
    blocked.write_text("a file where the environment's etc/ would be: nothing can be made under it")
    monkeypatch.setattr(lab.sys, "prefix", str(blocked))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = lab.locale_config("zh-CN", "zh_CN")
    assert folder == tmp_path / "cache" / "attention-course" / "jupyter-zh-CN"
    assert json.loads(_overrides(folder).read_text()) == {lab.TRANSLATION: {"locale": "zh_CN"}}
