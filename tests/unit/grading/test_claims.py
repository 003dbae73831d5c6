"""Claims a teacher can trust: every figure the README and the hub guide quote is the one the code
and the course's settings give (nbgrader_config.py, as `make grade` reads it)."""

from __future__ import annotations

import re

import pytest

from attention_course.confinement import supervisor
from attention_course.grading import intake, settings, slot
from attention_course.grading.kernel import IOPUB_WAIT
from attention_course.sandbox.driver import WALL_FACTOR
from conftest import REPO

README = (REPO / "README.md").read_text()
HUB_GUIDE = (REPO / "docs" / "jupyterhub.md").read_text()
SETTINGS = settings.load(REPO)


def _number(pattern: str, text: str = README) -> float:
    match = re.search(pattern, text, re.S)
    assert match, f"the text no longer says {pattern!r}"
    return float(match.group(1))


def test_every_setting_quoted_with_its_figure_is_the_courses():
    quoted = re.findall(r"`c\.Grading\.(\w+)`[,(]?\s*\(?([\d.]+) (s|GiB)\b", README)
    assert len(quoted) >= 4, quoted
    for name, value, _unit in quoted:
        assert float(value) == getattr(SETTINGS, name), (
            f"README: c.Grading.{name} is {value}, the course says {getattr(SETTINGS, name)}"
        )


def test_the_bound_of_one_student_is_as_stated():
    assert _number(r"past that bound plus (\d+) s") == IOPUB_WAIT
    assert _number(r"half the bound, at most\s+(\d+) s") == slot.STUDENT_MARGIN
    assert _number(r"looping exercise if longer: (\d+) s") == WALL_FACTOR * SETTINGS.seconds + 10
    stated = _number(r"so (\d+) s in all by\s+default")
    assert stated == slot.student_bound(SETTINGS.student_seconds, SETTINGS.seconds)
    assert _number(r"past ([\d.]+) GiB of its own memory") * 2**30 == slot.NBGRADER_OWN_MEMORY


def test_what_a_submitted_notebook_may_be_is_as_stated():
    assert _number(r"at most (\d+) MiB,") * 2**20 == intake.MAX_BYTES
    assert _number(r"at most (\d+) levels deep") == intake.MAX_DEPTH
    assert _number(r"at most (\d+) cells") == intake.MAX_CELLS
    assert _number(r"watched by the\s+supervisor every ([\d.]+) s") == supervisor.MEMORY_EVERY


def test_what_happens_after_a_timeout_is_stated_as_it_is():
    """The rest of the notebook is not run, and later notebooks get a tenth of the cell timeout."""
    assert "the rest of that notebook\nis not run" in README or "the rest of that notebook is not run" in README
    assert "the rest of that notebook is not run" in settings.Grading.cell_timeout.help
    tenth = _number(r"a tenth\s+of the cell timeout \((\d+) s, at least")
    assert tenth == max(5, SETTINGS.cell_timeout // 10)
    assert "costs only the cell it broke" not in README  # what the README said before, and did not hold


def test_the_endless_loop_row_says_which_timeout_it_was_measured_with():
    row = next(line for line in README.splitlines() if line.startswith("| an endless loop"))
    measured_with = _number(r"--cell-timeout (\d+)", row)
    assert f"({measured_with:g} s here)" in row, row
    assert _number(r"the default `cell_timeout` is (\d+) s", row) == SETTINGS.cell_timeout


@pytest.mark.parametrize("where", ["CONTRIBUTING.md", "Makefile"])
def test_make_test_takes_the_same_minutes_everywhere(where):
    readme = _number(r"`make test` runs everything \(about (\d+) minutes")
    assert _number(r"make test\s.*?about (\d+) minutes", (REPO / where).read_text()) == readme


def test_the_hub_guides_figures_are_the_hub_configurations():
    config = (REPO / "hub" / "jupyterhub_config.py").read_text()
    course = (REPO / "hub" / "course_config.py").read_text()
    factors = re.search(r"PROXY_TIMEOUT_MS = (\d+) \* (\d+)", config).groups()
    ms = int(factors[0]) * int(factors[1])
    assert "of an hour" in HUB_GUIDE and ms == 3600 * 1000
    limit = re.search(r'"ATTENTION_MEMORY_LIMIT", "(\w+)"', course)
    assert limit and f"`ATTENTION_MEMORY_LIMIT` (default `{limit.group(1)}`)" in HUB_GUIDE
