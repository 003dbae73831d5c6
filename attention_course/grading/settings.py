"""The grading settings, in one place: the `Grading` section of the course's nbgrader_config.py.

    c.Grading.jobs = 2            # or `make grade JOBS=2`
    c.Grading.memory_gib = 3

`make grade` reads them when grading starts (command-line values override the file); the
nbgrader plugins read the same section from nbgrader's own configuration, so plain
`nbgrader autograde` and formgrader grade with the same settings.
"""

from __future__ import annotations

from pathlib import Path

from traitlets import Bool, Float, Integer, List, Unicode, validate
from traitlets.config import Config, Configurable
from traitlets.config.loader import PyFileConfigLoader

CONFIG_FILE = "nbgrader_config.py"


class Grading(Configurable):
    """How the course's submissions are graded."""

    seed = Integer(
        None,
        allow_none=True,
        help="Seed of the trusted grader's test cases; None draws one per grading run. The seed "
        "of every run is recorded with its grades, so a regrade can reproduce them.",
    ).tag(config=True)
    jobs = Integer(1, help="Students graded at a time by `make grade` (one nbgrader process each).").tag(config=True)
    memory_gib = Float(2.0, help="Memory cap of everything that runs student code, per student.").tag(config=True)
    seconds = Float(30.0, help="Time limit of one exercise's trusted run (all its cases).").tag(config=True)
    cell_timeout = Integer(
        120,
        help="nbgrader's time limit for one cell; after a cell runs out of time, the rest of that notebook is not run.",
    ).tag(config=True)
    student_seconds = Float(
        900.0,
        help="Bound on one student's whole grading (all their notebooks' cells); once it is spent, "
        "what did not run is graded 0 with the reason and grading goes on with the next student.",
    ).tag(config=True)
    threads = Integer(
        0,
        help="PyTorch's and OpenMP's threads in each kernel and sandbox; 0 leaves them to the "
        "environment (OMP_NUM_THREADS). `make grade` sets it to each student's share of the cores.",
    ).tag(config=True)
    layers = List(
        Unicode(),
        default_value=["auto"],
        help='Confinement layers: "auto" (every layer this machine offers) or some of "bwrap", "landlock", "user".',
    ).tag(config=True)
    unconfined = Bool(
        False,
        help="Grade even when no confinement layer works (student code then runs with the "
        "grader's rights). Never the default.",
    ).tag(config=True)

    @validate("layers")
    def _one_per_item(self, proposal) -> list[str]:
        """`--layers bwrap,landlock` on a command line: one layer per item."""
        return [part.strip() for item in proposal.value for part in item.split(",") if part.strip()]

    scheduler = Unicode(
        "",
        help='Where `make grade` grades: "" (this machine, --jobs students at a time), "local" (a '
        "Dask cluster of --jobs worker processes here) or a Dask scheduler's address (tcp://host:8786).",
    ).tag(config=True)
    regrade = Bool(
        False,
        help="Grade every submission again, even one already graded with the same files, course, "
        "settings and seed (which is otherwise kept).",
    ).tag(config=True)

    take_renamed = Bool(
        False,
        help="Grade a notebook handed in under a near name (JupyterLab's -Copy1, a download's (1), "
        "another case, no .ipynb) as the release notebook it stands for (otherwise it is only reported).",
    ).tag(config=True)

    warm_kernels = Bool(
        True,
        help="Fork each notebook's kernel from one warm, confined process per student (PyTorch and "
        "ipykernel imported once a student instead of once a notebook), under the same confinement. "
        "False: a fresh Python for each notebook's kernel.",
    ).tag(config=True)

    max_processes = Integer(64, help="Processes a student's code may have at once.").tag(config=True)
    max_file_mib = Integer(256, help="Largest file a student's code may write.").tag(config=True)
    scratch_mib = Integer(1024, help="Size of a student's private scratch folder.").tag(config=True)


def load(course: Path, overrides: dict | None = None, command_line: Config | None = None) -> Grading:
    """The settings of a course: its nbgrader_config.py, then a command line's configuration (as
    `make grade` parses it), then `overrides` (trait name -> value)."""
    config = Config()
    path = Path(course) / CONFIG_FILE
    if path.exists():
        config.merge(PyFileConfigLoader(CONFIG_FILE, path=str(course)).load_config())
    if command_line is not None:
        config.merge(command_line)
    for name, value in (overrides or {}).items():
        if value is not None:
            config.Grading[name] = value
    return Grading(config=config)
