"""Grading a class on Dask: `make grade SCHEDULER=local` (a local cluster of JOBS worker
processes) or `make grade SCHEDULER=tcp://host:8786` (a cluster that is already running: on
SLURM with dask-jobqueue, on Kubernetes with dask-kubernetes or dask-gateway, or `dask scheduler`
and `dask worker` by hand).

One task per student, handed to the workers as they free up. The course (its files, and the
gradebook as it is when the run starts, for the assignment's cells and the teachers' manual
grades) is sent to every worker once; each task is sent the student's files and sends back what
grading gave (`submission.Graded`: gradebook rows, autograded notebooks, feedback), so no file system
is shared. On the worker the student is graded as `make grade` grades them on one machine (a
private course folder, one nbgrader process within the student's bound, the same confinement);
a worker that cannot apply every confinement layer the teacher's machine chose grades nobody
(the student is named, with the reason). The caller merges each result as it arrives (one
writer). A worker that dies mid-student has that student retried once elsewhere (Dask's
`distributed.scheduler.allowed-failures`, set to 1 on a local cluster; an existing cluster uses
its own setting, which is printed), then the student is reported, never merged twice. A worker
is given a student only when it is free (`worker-saturation` 1.0 on a local cluster; set it on
an existing one too, or the last students can wait behind another on a busy worker). A local
cluster also turns down Dask's own profiler and monitors (`QUIET`); give an existing cluster's
workers the same settings, or they spend a few CPU-seconds of each student's on themselves.
The workers need the course's Python environment (`pip install -r requirements.txt` and this
course's packages), bubblewrap where it is asked for, and the scheduler's address.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import signal
import socket
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

from attention_course.confinement import confine
from attention_course.model.manifest import Course

from . import as_data, workspace
from .coursedir import paths
from .late import EXTENSIONS_FILE
from .slot import Slot
from .submission import Graded, Submission

RETRIES = 1  # times a student whose worker died is graded again
# Dask's own housekeeping, measured on two cores while both grade: its statistical profiler samples
# the running task every 10 ms and its monitors wake every 20-500 ms, about 5 CPU-seconds of the
# scheduler and workers per student graded (1.13x the time of JOBS=2 on a class of 40). Grading
# tasks last tens of seconds and need none of it: with these the cluster spends about a tenth
# (1.02x, JOBS=2 and Dask graded in the order A B B A).
QUIET = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
}


def _keep(course: Course):
    """What of the course root a worker needs: everything but the students' steps, the
    gradebook (sent as it is when the run starts), the tables, build output and hidden folders.
    The teacher's extensions file is kept: the late penalties are worked out on the worker."""
    where = paths(course.root)
    skip = {where.top(step).relative_to(course.root).parts[0] for step in ("submitted", "autograded", "feedback")}
    skip |= {"build", "__pycache__", "exchange"}
    gradebook = where.gradebook.resolve()

    def keep(rel: Path) -> bool:
        if rel.parts[0] in skip or any(p.startswith(".") or p == "__pycache__" for p in rel.parts):
            return False
        if len(rel.parts) == 1 and rel.suffix in (".csv", ".db") and rel.name != EXTENSIONS_FILE:
            return False
        return (course.root / rel).resolve() != gradebook

    return keep


def course_bundle(course: Course) -> bytes:
    """The course's files as one reproducible archive (what every worker unpacks once)."""
    return as_data.tar(course.root, _keep(course))


def course_digest(bundle: bytes) -> str:
    return hashlib.sha256(bundle).hexdigest()


def _copies_here():
    """This worker's CourseCopies plugin: its course and its threads' warm nbgrader processes."""
    from distributed import get_worker

    from .course_copies import PLUGIN

    return get_worker().plugins[PLUGIN]


def host_threads(threads: dict[str, int]) -> int:
    """In a worker of an existing cluster: PyTorch's and OpenMP's threads for the students graded
    here, this host's share (`threads_per_host`). Dask's nanny starts every worker with
    OMP_NUM_THREADS=1 (its `distributed.nanny.pre-spawn-environ`) unless the worker's environment
    had it: a value other than the nanny's is the worker's own choice, and is kept (0: as the
    environment says)."""
    import dask

    nanny = dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if name in os.environ and (nanny.get(name) is None or os.environ[name] != str(nanny[name])):
            return 0
    return threads.get(socket.gethostname(), 1)


def grade_task(
    bundle: bytes, gradebook: bytes, digest: str, sub: Submission, files, overrides: dict, threads
) -> Graded:
    """On a worker: grade one student from their files (`as_data.pack` of their submission)."""
    layers = overrides["Grading"]["layers"]
    if layers != ["none"]:
        why = confine.usable(layers)
        if why:
            sub.faults.append(
                f"confinement: the worker on {socket.gethostname()} cannot apply {'+'.join(layers)} ({why}); not graded"
            )
            return Graded(sub, [])
    if threads:  # an existing cluster: this host's share; a local one has make grade's already
        overrides = {**overrides, "Grading": {**overrides["Grading"], "threads": host_threads(threads)}}
    copies = _copies_here()
    course = copies.course(bundle, gradebook, digest)
    folder = workspace.new_base()
    try:
        slot = Slot(course, folder / "slot", overrides, threading.Lock(), in_place=False, zygote=copies.zygote())
        return slot.run(sub, files)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        workspace.sweep()


def dask_setup(worker=None) -> None:
    """A local cluster's worker (Dask preloads this module): Ctrl-C at the terminal is for
    `make grade`, which stops the cluster itself; the workers ignore it instead of printing
    their tracebacks."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# a worker takes a student only when it is free (Dask's default queues 1.1 tasks per thread, which
# leaves one worker idle at the end while the other has a student waiting); the local cluster's
# workers get these too, an existing cluster keeps its own
SETTINGS = {"distributed.scheduler.allowed-failures": RETRIES, "distributed.scheduler.worker-saturation": 1.0} | QUIET


def local_cluster(jobs: int):
    """A Dask cluster of `jobs` worker processes on this machine, one student at a time each,
    with `SETTINGS` (call it inside `dask.config.set(SETTINGS)`: the workers take the config
    they are started with)."""
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=jobs,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
        preload=[__name__],  # dask_setup above, in each worker
    )


def _cores() -> tuple[str, int]:
    return socket.gethostname(), len(os.sched_getaffinity(0))


def threads_per_host(client) -> dict[str, int]:
    """PyTorch's threads for each student on each host: the host's cores shared among the
    worker threads that run there (each grades one student at a time)."""
    cores = dict(client.run(_cores).values())
    workers = client.run(socket.gethostname)
    share = Counter()
    for address, info in client.scheduler_info(n_workers=-1)["workers"].items():
        share[workers.get(address, info.get("host"))] += info.get("nthreads", 1)
    return {host: max(1, cores.get(host, 1) // max(1, n)) for host, n in share.items()}


def _allowed_failures(dask_scheduler=None) -> int:
    return dask_scheduler.allowed_failures


def grade_class(
    course: Course, subs: list[Submission], overrides: dict, scheduler: str, jobs: int, files, merged, say=print
) -> None:
    """Grade `subs` on Dask and call `merged(graded)` for each student as their result arrives
    (in this thread: the one writer). `files(sub)` gives a student's files as data. A student
    whose task failed gets a fault instead."""
    import dask
    from distributed import Client

    bundle = course_bundle(course)
    digest = course_digest(bundle)
    gradebook = paths(course.root).gradebook.read_bytes()
    start = time.monotonic()
    with dask.config.set(SETTINGS):
        cluster = local_cluster(jobs) if scheduler == "local" else None
        try:
            with Client(cluster if cluster is not None else scheduler) as client:
                if not client.scheduler_info(n_workers=-1)["workers"]:
                    # an existing scheduler whose workers are still starting (Ctrl-C stops the wait)
                    say(f"Dask: no worker at {client.scheduler.address} yet; waiting for the first one to join.")
                    client.wait_for_workers(1)
                _grade_on(
                    client,
                    course,
                    subs,
                    overrides,
                    threads_per_host(client) if cluster is None else None,
                    (bundle, gradebook, digest, start),
                    files,
                    merged,
                    say,
                )
        finally:
            if cluster is not None:
                cluster.close()
                workspace.sweep()  # the workers' folders, if a worker was stopped before it could remove its own


def _grade_on(client, course, subs, overrides, threads, shipped, files, merged, say) -> None:
    from distributed import as_completed

    bundle, gradebook, digest, start = shipped
    workers = client.scheduler_info(n_workers=-1)["workers"]
    retries = client.run_on_scheduler(_allowed_failures)
    from .course_copies import PLUGIN, CourseCopies

    client.register_plugin(CourseCopies(), name=PLUGIN)
    shared = client.scatter([bundle, gradebook], broadcast=True, hash=False)
    say(
        f"Dask: {len(workers)} worker(s) at {client.scheduler.address}, ready in {time.monotonic() - start:.1f} s "
        f"(the course sent to each); a student whose worker dies is graded again {retries} time(s) "
        "(distributed.scheduler.allowed-failures)"
    )
    futures = {}
    for sub in subs:
        if sub.refused:
            merged(Graded(sub, course.graded_notebooks(), shipped=True))  # an earlier run's files go
            continue
        future = client.submit(
            grade_task,
            *shared,
            digest,
            sub,
            files(sub),
            overrides,
            threads,
            key=f"grade-{sub.assignment}-{sub.student}-{uuid.uuid4().hex[:8]}",
            pure=False,
        )
        futures[future] = sub
    for future in as_completed(futures):
        sub = futures.pop(future)
        try:
            graded = future.result()
        except Exception as exc:  # a worker died RETRIES + 1 times, or the task itself failed
            name = type(exc).__name__
            why = "its worker died while grading it, every time it was tried" if name == "KilledWorker" else repr(exc)
            sub.faults.append(f"grading failed on Dask: {why}")
            continue
        sub.problems, sub.faults = graded.sub.problems, graded.sub.faults
        graded.sub = sub
        merged(graded)
