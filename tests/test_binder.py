"""Binder cannot be reached from here, so its configuration is checked statically."""
from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line!r} is not pinned with =="
            found[name.lower().replace("_", "-")] = version
    return found


def test_binder_installs_the_same_pins_with_the_cpu_build_of_torch():
    ours, binder = pins(REPO / "requirements.txt"), pins(REPO / "binder" / "requirements.txt")
    assert ours["torch"] == "2.13.0" and binder.pop("torch") == "2.13.0+cpu"
    ours.pop("torch")
    assert binder == ours
    text = (REPO / "binder" / "requirements.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text


def test_binder_pins_python_3_11_and_needs_no_build_step():
    assert (REPO / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    assert not (REPO / "binder" / "postBuild").exists()  # widgets ship prebuilt with jupyterlab_widgets
    assert "jupyterlab-widgets" in pins(REPO / "binder" / "requirements.txt")


def test_readme_badge_opens_jupyterlab_on_the_start_notebook():
    readme = (REPO / "README.md").read_text()
    match = re.search(r"\(https://mybinder\.org/v2/gh/[^)]+\?urlpath=lab/tree/([^)\s]+)\)", readme)
    assert match, "README has no Binder badge link with urlpath=lab/tree/..."
    assert "badge_logo.svg" in readme
    target = match.group(1)
    assert target == "notebooks/attention/00_start_here.ipynb" and (REPO / target).exists()
