"""Grading on Dask without a cluster (attention_course/grading/cluster.py): what of the course a worker
is sent (`_keep`, `course_bundle`, `course_digest`), the threads a worker of an existing cluster
takes (`host_threads`), each host's share of its cores (`threads_per_host`, with a stand-in for
the Dask client's answers) and the Dask settings a local cluster is given.
(tests/e2e/test_cluster.py grades a class on real clusters.)"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
from pathlib import Path

import dask
import distributed  # noqa: F401 (on a worker, distributed's defaults are in Dask's configuration)
import pytest

from attention_course.grading import as_data, cluster
from attention_course.grading.cluster import (
    QUIET,
    RETRIES,
    SETTINGS,
    _keep,
    course_bundle,
    course_digest,
    host_threads,
    threads_per_host,
)
from attention_course.model.manifest import load
from conftest import REPO

SENT = [
    "nbgrader_config.py",
    "course.toml",
    "seeds.toml",
    "source/attention/01_scaling_problem.ipynb",
    "source/attention/table.csv",  # only the course root's tables stay home
    "notebooks/attention/01_scaling_problem.ipynb",
    "course_helpers/helpers/cells.py",
    "i18n/zh-CN/messages.po",
]
KEPT_HOME = [
    "gradebook.db",
    "grades.csv",
    "grades_by_cell.csv",
    "canvas_import.csv",
    "submitted/ada/attention/01_scaling_problem.ipynb",
    "autograded/ada/attention/01_scaling_problem.ipynb",
    "feedback/ada/attention/01_scaling_problem.html",
    "build/grading/run.json",
    "exchange/attention-course/inbound/x.ipynb",
    ".git/config",
    "source/attention/.ipynb_checkpoints/01_scaling_problem-checkpoint.ipynb",
    "course_helpers/helpers/__pycache__/cells.cpython-311.pyc",
]


def _course(root: Path, files: list[str], config: str = ""):
    """A course folder with the repository's nbgrader_config.py (plus `config`) and manifest, and `files`."""
    root.mkdir(parents=True)
    (root / "nbgrader_config.py").write_text((REPO / "nbgrader_config.py").read_text() + config)
    shutil.copy(REPO / "course.toml", root / "course.toml")
    for rel in files:
        if rel not in ("nbgrader_config.py", "course.toml"):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(f"the text of {rel}")
    return load(root)


def _sent(bundle: bytes, where: Path) -> list[str]:
    """The files a worker unpacks from the bundle."""
    as_data.untar(bundle, where)
    return sorted(p.relative_to(where).as_posix() for p in where.rglob("*") if p.is_file())


# ------------------------------------------------------------------ what a worker is sent


def test_a_worker_gets_the_course_without_students_work_gradebook_tables_build_or_hidden_files(tmp_path):
    course = _course(tmp_path / "course", SENT + KEPT_HOME)
    assert _sent(course_bundle(course), tmp_path / "worker") == sorted(SENT)
    assert (tmp_path / "worker" / "source/attention/table.csv").read_text() == "the text of source/attention/table.csv"


def test_a_worker_gets_the_teachers_extensions_for_the_late_penalties_it_works_out(tmp_path):
    course = _course(tmp_path / "course", [*SENT, "extensions.csv", "grades.csv"])
    assert _sent(course_bundle(course), tmp_path / "worker") == sorted([*SENT, "extensions.csv"])


def test_the_step_folders_and_gradebook_are_those_nbgrader_config_names(tmp_path):
    config = (
        '\nc.CourseDirectory.submitted_directory = "handed_in"\n'
        'c.CourseDirectory.autograded_directory = "marked"\n'
        'c.CourseDirectory.feedback_directory = "returned"\n'
        'c.CourseDirectory.db_url = "sqlite:///" + os.path.join(c.CourseDirectory.root, "records", "book.sqlite")\n'
    )
    files = [
        "handed_in/ada/attention/a.ipynb",
        "marked/ada/attention/a.ipynb",
        "returned/ada/attention/a.html",
        "records/book.sqlite",
        "records/notes.txt",
        "submitted/readme.txt",  # no longer a step folder here: an ordinary folder of the course
    ]
    course = _course(tmp_path / "course", files, config)
    keep = _keep(course)
    assert not keep(Path("handed_in")) and not keep(Path("marked/ada")) and not keep(Path("returned"))
    assert not keep(Path("records/book.sqlite")) and keep(Path("records/notes.txt"))
    assert _sent(course_bundle(course), tmp_path / "worker") == [
        "course.toml",
        "nbgrader_config.py",
        "records/notes.txt",
        "submitted/readme.txt",
    ]


def test_the_same_course_gives_the_same_bundle_whatever_the_times_and_the_students_work(tmp_path):
    course = _course(tmp_path / "course", SENT + KEPT_HOME)
    bundle = course_bundle(course)
    assert course_digest(bundle) == hashlib.sha256(bundle).hexdigest()
    for rel in SENT:
        os.utime(course.root / rel, (1, 1))
    (course.root / "submitted" / "bo" / "attention").mkdir(parents=True)
    (course.root / "submitted" / "bo" / "attention" / "new.ipynb").write_text("{}")
    (course.root / "gradebook.db").write_text("graded meanwhile")
    (course.root / "grades.csv").write_text("new totals")
    assert course_bundle(course) == bundle


def test_a_change_to_what_a_worker_is_sent_is_a_new_digest(tmp_path):
    course = _course(tmp_path / "course", SENT)
    first = course_digest(course_bundle(course))
    (course.root / "course_helpers/helpers/cells.py").write_text("changed")
    second = course_digest(course_bundle(course))
    (course.root / "source/attention/new.ipynb").write_text("{}")
    third = course_digest(course_bundle(course))
    assert len({first, second, third}) == 3


# ------------------------------------------------------------------ threads on an existing cluster


@pytest.fixture
def no_thread_settings(monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_worker_without_thread_settings_takes_its_hosts_share(no_thread_settings):
    here = socket.gethostname()
    assert host_threads({here: 3, "elsewhere": 7}) == 3
    assert host_threads({"elsewhere": 7}) == 1, "a host nobody counted gets one thread"


def test_the_nannys_own_thread_setting_is_not_the_workers_choice(no_thread_settings):
    no_thread_settings.setenv("OMP_NUM_THREADS", "1")  # what Dask's nanny starts a worker with
    no_thread_settings.setenv("MKL_NUM_THREADS", "1")
    assert host_threads({socket.gethostname(): 4}) == 4
    with dask.config.set({"distributed.nanny.pre-spawn-environ": {"OMP_NUM_THREADS": 8}}):
        no_thread_settings.setenv("OMP_NUM_THREADS", "8")
        no_thread_settings.delenv("MKL_NUM_THREADS")
        assert host_threads({socket.gethostname(): 4}) == 4


@pytest.mark.parametrize(
    "environment, nanny",
    [
        ({"OMP_NUM_THREADS": "4"}, None),
        ({"MKL_NUM_THREADS": "2"}, None),
        ({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "3"}, None),
        ({"OMP_NUM_THREADS": "1"}, {}),  # a nanny that sets nothing: the 1 is the worker's own
    ],
)
def test_a_workers_own_thread_setting_is_kept(no_thread_settings, environment, nanny):
    for name, value in environment.items():
        no_thread_settings.setenv(name, value)
    with dask.config.set({} if nanny is None else {"distributed.nanny.pre-spawn-environ": nanny}):
        assert host_threads({socket.gethostname(): 4}) == 0


class _Client:
    """Answers as a Dask client gives them: `run(f)` is f's result on each worker, by address;
    `hosts` is each worker's (host name, cores, address host, threads)."""

    def __init__(self, hosts: dict[str, tuple[str, int, str, int]], silent: tuple[str, ...] = ()):
        self.hosts, self.silent = hosts, silent  # workers that do not answer `run`

    def run(self, function):
        answering = {a: h for a, h in self.hosts.items() if a not in self.silent}
        if function is socket.gethostname:
            return {a: name for a, (name, *_) in answering.items()}
        assert function is cluster._cores, function
        return {a: (name, cores) for a, (name, cores, *_) in answering.items()}

    def scheduler_info(self, n_workers=5):
        assert n_workers == -1, "every worker, not the first five"
        return {"workers": {a: {"host": ip, "nthreads": n} for a, (_, _, ip, n) in self.hosts.items()}}


def test_each_hosts_cores_are_shared_among_the_worker_threads_it_runs():
    client = _Client(
        {
            "tcp://10.0.0.1:4001": ("node-a", 8, "10.0.0.1", 1),
            "tcp://10.0.0.1:4002": ("node-a", 8, "10.0.0.1", 2),
            "tcp://10.0.0.2:4001": ("node-b", 2, "10.0.0.2", 1),
            "tcp://10.0.0.3:4001": ("node-c", 2, "10.0.0.3", 4),
        }
    )
    assert threads_per_host(client) == {"node-a": 2, "node-b": 2, "node-c": 1}  # never less than one


def test_a_worker_that_does_not_answer_is_counted_under_its_address_with_one_core():
    client = _Client(
        {"tcp://10.0.0.1:4001": ("node-a", 4, "10.0.0.1", 1), "tcp://10.0.0.9:4001": ("node-z", 4, "10.0.0.9", 2)},
        silent=("tcp://10.0.0.9:4001",),
    )
    assert threads_per_host(client) == {"node-a": 4, "10.0.0.9": 1}


def test_on_this_machine_two_workers_share_its_cores():
    class Here(_Client):
        def run(self, function):
            return {a: function() for a in self.hosts}

    here = Here({f"tcp://127.0.0.1:{port}": ("", 0, "127.0.0.1", 1) for port in (4001, 4002)})
    assert threads_per_host(here) == {socket.gethostname(): max(1, len(os.sched_getaffinity(0)) // 2)}


# ------------------------------------------------------------------ a local cluster's settings


def test_a_local_cluster_retries_once_gives_work_to_free_workers_only_and_keeps_quiet():
    assert SETTINGS["distributed.scheduler.allowed-failures"] == RETRIES == 1
    assert SETTINGS["distributed.scheduler.worker-saturation"] == 1.0
    assert QUIET.items() <= SETTINGS.items()
    for key in SETTINGS:
        dask.config.get(key)  # a setting Dask knows (a misspelt one would raise KeyError)
    with dask.config.set(SETTINGS):
        assert dask.config.get("distributed.worker.profile.enabled") is False
