"""The Pythons teachers have: 3.11, 3.12 and 3.13 are accepted by the packages and by make, an
older or newer one is refused in one sentence, and every pinned package has wheels for each."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from conftest import REPO, describe, run

ACCEPTED = ("3.11", "3.12", "3.13")


def _makefile_pythons() -> tuple[str, ...]:
    match = re.search(r"^PYTHONS\s*:?=\s*(.+)$", (REPO / "Makefile").read_text(), re.M)
    assert match, "the Makefile names no PYTHONS"
    return tuple(match.group(1).split())


@pytest.mark.parametrize("pyproject", ["pyproject.toml", "course_helpers/pyproject.toml"])
def test_both_packages_accept_exactly_the_supported_pythons(pyproject):
    spec = SpecifierSet(tomllib.loads((REPO / pyproject).read_text())["project"]["requires-python"])
    assert all(f"{v}.0" in spec for v in ACCEPTED), spec
    assert "3.10.13" not in spec and "3.14.0" not in spec, spec
    assert _makefile_pythons() == ACCEPTED


def _python(version: str) -> str | None:
    """An interpreter of `version` on this machine, if there is one."""
    found = shutil.which(f"python{version}")
    candidates = [found] if found else []
    candidates += sorted(str(p) for p in Path.home().glob(f".pyenv/versions/{version}.*/bin/python3"))
    for path in candidates:
        proc = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True)
        if proc.returncode == 0 and proc.stdout.decode().strip() == version:
            return path
    return None


def test_make_says_which_python_it_uses(tmp_path):
    proc = run(["make", "python", f"VENV={tmp_path / 'none'}", f"PYTHON={sys.executable}"], cwd=REPO, timeout=60)
    version = "{}.{}".format(*sys.version_info[:2])
    assert proc.returncode == 0 and f"Using Python {version} ({sys.executable})." in proc.stdout, describe(proc)


@pytest.mark.parametrize("version", ["3.10", "3.14"])
def test_make_refuses_an_unsupported_python_in_one_sentence(version, tmp_path):
    python = _python(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine")
    venv = tmp_path / "venv"
    proc = run(["make", "lab", f"VENV={venv}", f"PYTHON={python}"], cwd=REPO, timeout=60)
    assert proc.returncode != 0, describe(proc)
    sentence = next(line for line in proc.stdout.splitlines() if line.startswith(f"Python {version} "))
    assert "is not supported: use 3.11, 3.12 or 3.13" in sentence and sentence.replace("e.g. ", "").count(". ") == 0, (
        sentence
    )
    assert not venv.exists(), "a venv was made with an unsupported Python"


def test_the_venvs_own_python_is_one_of_them():
    """CI runs on this machine's Python, which must stay one of the accepted ones."""
    assert "{}.{}".format(*sys.version_info[:2]) in ACCEPTED


def _reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=20):
            return True
    except urllib.error.HTTPError:
        return True  # it answered
    except OSError:
        return False


def _pins(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if "==" in line and not line.startswith("#")]


@pytest.mark.slow
@pytest.mark.parametrize("requirements", ["requirements.txt", "binder/requirements.txt"])
@pytest.mark.parametrize("version", ACCEPTED)
def test_every_pinned_package_has_wheels_for_each_python(version, requirements, tmp_path):
    """pip download, binary only, as a teacher's (or a student's) pip on that Python would resolve
    the pins; `--python-version 3.11` means 3.11.0, the oldest Python the packages accept."""
    where = tmp_path / "wheels"
    pinned = tmp_path / "pins.txt"  # the pins and pip's options (binder's file also installs ./course_helpers)
    options = [line for line in (REPO / requirements).read_text().splitlines() if line.startswith("--")]
    pinned.write_text("\n".join(options + _pins(REPO / requirements)) + "\n")
    for url in ["https://pypi.org/simple/"] + [o.split("=", 1)[-1].split()[-1] for o in options if "index-url" in o]:
        if not _reachable(url):  # pip would leave the index out without a word, and then not find its wheels
            pytest.skip(f"{url}, an index of {requirements}, cannot be reached from here")
    proc = run(
        [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--python-version", version, "--no-deps"]
        + ["-d", str(where), "-r", str(pinned)],
        cwd=tmp_path,
        timeout=1800,
    )
    try:
        assert proc.returncode == 0, describe(proc)
        names = {pin.split("==")[0].lower().replace("-", "_").replace(".", "_") for pin in _pins(REPO / requirements)}
        got = {p.name.split("-")[0].lower().replace(".", "_") for p in where.iterdir()}
        assert names <= got, sorted(names - got)
        if requirements == "requirements.txt":
            assert any(p.name.startswith("torch-2.13.0") for p in where.iterdir()), "no torch 2.13.0 wheel"
    finally:
        shutil.rmtree(where, ignore_errors=True)
