"""Notebooks handed in under a name close to a release name (a copy, a changed case, no extension).

JupyterLab saves a copy of `02_x.ipynb` as `02_x-Copy1.ipynb`; a browser download adds ` (1)`;
a student renames with another case or drops `.ipynb`. nbgrader grades release names only, so
such a notebook would be silently missing. `near(name, files)` finds it, so grading can say so
("02_x.ipynb was not submitted; found 02_x-Copy1.ipynb: rename it"), and a teacher can grade
it under the release name (`make grade --take-renamed`); it is never taken without being asked.
"""

from __future__ import annotations

import difflib
import re

# What copies and downloads add to a name: -Copy1, -Copy2, " (1)", "_copy", " copy".
ADDED = re.compile(r"(?:-copy\d*|[ _]copy\d*|\s*\(\d+\))+$", re.IGNORECASE)


def stem(filename: str) -> str:
    """A file name without `.ipynb`, without what copies add, in lower case."""
    base = filename[: -len(".ipynb")] if filename.lower().endswith(".ipynb") else filename
    return ADDED.sub("", base.strip()).strip().casefold()


def near(notebook: str, files: list[str]) -> str | None:
    """The file of `files` that is most likely `notebook` (a release name without `.ipynb`) under
    another name, or None. The release name itself is not "near"."""
    wanted = notebook.casefold()
    candidates = [f for f in sorted(files) if f != f"{notebook}.ipynb" and not f.startswith(".")]
    exact = [f for f in candidates if stem(f) == wanted]
    if exact:
        return exact[0]
    close = difflib.get_close_matches(wanted, [stem(f) for f in candidates], n=1, cutoff=0.9)
    return next((f for f in candidates if close and stem(f) == close[0]), None)
