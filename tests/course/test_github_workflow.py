"""GitHub cannot be reached from here, so the workflow for people who host the course there is
checked statically: it must run the course's own CI entry point, in Debian, with CPU torch."""

from __future__ import annotations

import yaml

from conftest import REPO


def test_the_github_workflow_runs_ci_run_in_debian_with_cpu_torch():
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    (job,) = workflow["jobs"].values()
    assert job["container"].startswith("python:3.11") and "bookworm" in job["container"]
    assert job["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    assert job["timeout-minutes"] <= 90
    runs = [step.get("run", "") for step in job["steps"]]
    assert "bash .ci/run" in runs
    assert (REPO / ".ci" / "run").exists()


def test_ci_run_installs_what_the_tests_need_then_runs_make_test():
    script = (REPO / ".ci" / "run").read_text()
    for package in ("chromium", "bubblewrap", "fonts-noto-cjk"):
        assert package in script, package
    assert script.rstrip().endswith("make test") and "CI=true" in script
