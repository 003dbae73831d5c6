"""The hub guide (docs/jupyterhub.md) as the hub configuration does it: accounts from a roster, a
memory limit per student, TLS, the students' environment with what their servers start, every
setting named, and a troubleshooting section for the faults a teacher meets."""

from __future__ import annotations

import re

import pytest
from traitlets.config import Config

from conftest import REPO

GUIDE = (REPO / "docs" / "jupyterhub.md").read_text()
HUB = REPO / "hub"


def load(name: str, monkeypatch, env: dict[str, str]) -> Config:
    """The configuration file hub/<name> builds with `env`, as JupyterHub would load it."""
    for key in [k for k in __import__("os").environ if k.startswith("ATTENTION_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    config = Config()
    loaded = []
    code = compile((HUB / name).read_text(), str(HUB / name), "exec")
    exec(code, {"get_config": lambda: config, "load_subconfig": loaded.append, "__file__": str(HUB / name)})
    return config


def test_a_roster_makes_the_class(tmp_path, monkeypatch):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,first_name,last_name,email\nada,Ada,L,a@x.org\n  wei ,Wei,Z,w@x.org\n")
    config = load("course_config.py", monkeypatch, {"ATTENTION_ROSTER": str(roster), "ATTENTION_STUDENTS": "bo"})
    assert config.Authenticator.allowed_users == {"ada", "wei", "bo"}
    assert config.JupyterHub.load_groups["nbgrader-attention-course"]["users"] == ["ada", "bo", "wei"]


def test_a_roster_without_an_id_column_is_refused_with_the_reason(tmp_path, monkeypatch):
    roster = tmp_path / "roster.csv"
    roster.write_text("name,email\nada,a@x.org\n")
    with pytest.raises(ValueError, match="`id` column"):
        load("course_config.py", monkeypatch, {"ATTENTION_ROSTER": str(roster)})


def test_the_guides_roster_loop_reads_the_readmes_roster():
    readme = (REPO / "README.md").read_text()
    assert "nbgrader db student import roster.csv" in readme and "ATTENTION_ROSTER" in GUIDE
    assert "tail -n +2 roster.csv | cut -d, -f1" in GUIDE
    header = re.search(r"<!-- term:roster -->\n```text\n(.*?)\n", readme).group(1)
    assert header.split(",")[0] == "id", header  # the loop takes the first column


def test_each_student_has_the_memory_limit_the_guide_states(monkeypatch):
    assert load("course_config.py", monkeypatch, {}).Spawner.mem_limit == "2G"
    assert "`ATTENTION_MEMORY_LIMIT` (default `2G`)" in GUIDE
    assert load("course_config.py", monkeypatch, {"ATTENTION_MEMORY_LIMIT": "3G"}).Spawner.mem_limit == "3G"


def test_tls_takes_a_certificate_and_its_key_or_neither(monkeypatch):
    plain = load("jupyterhub_config.py", monkeypatch, {})
    assert "ssl_cert" not in plain.JupyterHub
    tls = load("jupyterhub_config.py", monkeypatch, {"ATTENTION_TLS_CERT": "/c.pem", "ATTENTION_TLS_KEY": "/k.pem"})
    assert (tls.JupyterHub.ssl_cert, tls.JupyterHub.ssl_key) == ("/c.pem", "/k.pem")
    with pytest.raises(ValueError, match="both"):
        load("jupyterhub_config.py", monkeypatch, {"ATTENTION_TLS_CERT": "/c.pem"})
    assert "ATTENTION_TLS_CERT" in GUIDE and "ATTENTION_TLS_KEY" in GUIDE


def test_the_students_environment_has_what_their_servers_start(monkeypatch):
    config = load("course_config.py", monkeypatch, {"ATTENTION_STUDENT_BIN": "/opt/s/bin"})
    assert config.Spawner.cmd == ["/opt/s/bin/jupyterhub-singleuser"]
    pinned = re.search(r"^jupyterhub==(\S+)$", (REPO / "requirements.txt").read_text(), re.M).group(1)
    assert f"pip install -r requirements.txt jupyterhub=={pinned}`" in GUIDE
    students = (REPO / "binder" / "requirements.txt").read_text().splitlines()
    assert not any(line.startswith("jupyterhub==") for line in students)  # why the guide adds it


def test_the_guide_names_every_setting_the_hub_files_read():
    read = set()
    for name in ("jupyterhub_config.py", "course_config.py"):
        read |= set(re.findall(r"ATTENTION_[A-Z_]+", (HUB / name).read_text()))
    documented = set(re.findall(r"ATTENTION_[A-Z_]+", GUIDE))
    undocumented = {v for v in read if v not in documented and v not in _listed_at_the_top()}
    assert not undocumented, undocumented


def _listed_at_the_top() -> set[str]:
    """The files list their settings in their docstrings, which the guide points to."""
    found = set()
    for name in ("jupyterhub_config.py", "course_config.py"):
        text = (HUB / name).read_text()
        found |= set(re.findall(r"^    (ATTENTION_[A-Z_]+)", text.split('"""')[1], re.M))
    return found


def test_the_guide_has_the_troubleshooting_a_teacher_needs():
    part = GUIDE[GUIDE.index("## Troubleshooting") :]
    for fault in ("A student cannot fetch", "A notebook cannot be graded", "A server will not start"):
        assert fault in part, fault
    assert "make check-grader" in part and "nbgrader collect --update" in part
