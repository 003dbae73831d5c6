"""The course on a Dask worker: unpacked once per course (by its bundle's digest) and kept by
the worker itself, through Dask's own extension point for state on a worker (a worker plugin),
with the warm nbgrader process of each of the worker's threads."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from distributed.diagnostics.plugin import WorkerPlugin

from attention_course.model.manifest import Course, load

from . import as_data, workspace
from .coursedir import paths
from .nbgrader_process import CLI
from .nbgrader_zygote import Zygote

PLUGIN = "attention-course-copies"


class CourseCopies(WorkerPlugin):
    """A Dask worker plugin (`Client.register_plugin`): the course unpacked once on each worker
    (by the digest of its bundle) in a folder of the worker's own, removed when the worker
    closes. The worker keeps it, so nothing of a run lives in a module of the grader."""

    name = PLUGIN

    def __init__(self):
        self.roots: dict[str, Path] = {}
        self.zygotes: dict[int, Zygote] = {}

    def teardown(self, worker=None) -> None:
        for zygote in self.zygotes.values():
            zygote.close()
        self.zygotes.clear()
        for root in self.roots.values():
            shutil.rmtree(root.parent, ignore_errors=True)
        self.roots.clear()

    def zygote(self) -> Zygote:
        """The warm nbgrader process of the worker's thread that asks (it dies with the thread)."""
        return self.zygotes.setdefault(threading.get_ident(), Zygote(str(CLI)))

    def course(self, bundle: bytes, gradebook: bytes, digest: str) -> Course:
        root = self.roots.get(digest)
        if root is None or not root.exists():
            root = workspace.new_base() / "course"
            as_data.untar(bundle, root)
            db = paths(root).gradebook
            if root not in db.resolve().parents:
                shutil.rmtree(root.parent, ignore_errors=True)
                raise RuntimeError(f"the course's gradebook ({db}) must be inside the course folder to grade on Dask")
            db.write_bytes(gradebook)
            self.roots[digest] = root
        return load(root)
