"""Regenerate everything that is built from the sources: `make outputs`.

1. `helpers/data/course.json` and `helpers/data/check_cases.npz` from the manifest and the solutions, and
   the question cells of the source notebooks (`attention_course.authoring.question_cells`);
2. the stored outputs of every source notebook (executed top to bottom, in its own folder);
3. each other edition's source notebooks from the English ones and the translation catalogue,
   then their stored outputs (`attention_course.authoring.edition`, when the manifest lists other editions);
4. the student releases (`make release`: nbgrader generate_assignment per edition).

    python -m attention_course.authoring.outputs [--no-execute] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from attention_course.model.manifest import Course, load

from .build import build
from .question_cells import render_source_notebooks


def execute(path: Path, timeout: int = 900) -> float:
    """Run a notebook top to bottom in a fresh python3 kernel and store its outputs; seconds taken."""
    start = time.monotonic()
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        for k, output in enumerate(cell.get("outputs", [])):  # a widget's random id: noise in every diff
            view = output.get("data", {}).get("application/vnd.jupyter.widget-view+json")
            if view:
                view["model_id"] = f"{cell.id}-{k}"
    notebook.metadata.pop("widgets", None)  # random model ids: noise in every diff, and not needed
    nbformat.write(notebook, path)
    return time.monotonic() - start


def release(course: Course) -> None:
    """nbgrader generate_assignment for every edition (it deletes and rewrites each release folder)."""
    for edition in course.editions:
        bin_dir = str(Path(sys.executable).parent)
        env = dict(os.environ, PATH=os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))
        subprocess.run(
            [os.path.join(bin_dir, "nbgrader"), "generate_assignment", edition.assignment, "--force"],
            cwd=course.root,
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        for junk in (
            *course.release_dir(edition.name).rglob("__pycache__"),
            *course.release_dir(edition.name).rglob(".ipynb_checkpoints"),
        ):
            shutil.rmtree(junk, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="only these notebooks (default: all)")
    parser.add_argument("--no-execute", action="store_true", help="do not re-run the notebooks")
    args = parser.parse_args(argv)
    course = load(Path.cwd())  # the course this command runs in (a copy of it, in the tests)
    unknown = [name for name in args.notebooks if name not in course.notebooks]
    if unknown:  # before anything is rewritten
        parser.error(f"no notebook called {', '.join(unknown)}; choose from {', '.join(course.notebooks)}")
    build(course)
    render_source_notebooks(course)
    names = args.notebooks or list(course.notebooks)
    if not args.no_execute:
        for name in names:
            print(f"  {name}: {execute(course.source_notebook(name)):.1f} s")
    others = [e for e in course.editions if e.name != "en"]
    if others:
        from .edition import build_edition

        for edition in others:
            build_edition(course, edition.name)
            if not args.no_execute:
                for name in names:
                    print(f"  {edition.name} {name}: {execute(course.source_notebook(name, edition.name)):.1f} s")
    release(course)
    print("Outputs rebuilt; run `make test` (or `make test-fast`) next.")


if __name__ == "__main__":
    sys.exit(main())
