"""Open a student's JupyterLab on an edition's start page, in its language: `make lab EDITION=...`.

    python -m helpers.lab zh-CN [jupyter lab arguments ...]
    python -m helpers.lab zh-CN --print        (the command and its settings, nothing started)

Run from the course folder (the repository, or a student folder). Everything comes from the
edition as course.toml declares it: the start page (`notebooks/<assignment>/<first notebook>`)
and JupyterLab's locale, set as a default of the translation plugin in a settings folder written
for the edition. `binder/jupyter` (no instructor panels, no news pop-up) comes first, and
`binder/` is on PYTHONPATH for the course's links (/course/<edition>).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from .course import edition

TRANSLATION = "@jupyterlab/translation-extension:plugin"


def locale_config(name: str, locale: str) -> Path:
    """A Jupyter config folder whose only setting is JupyterLab's locale (written once, in this
    Python environment, or in the user's cache folder where the environment is read-only: the
    course folder stays as it is)."""
    want = json.dumps({TRANSLATION: {"locale": locale}}, indent=1) + "\n"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    for top in (Path(sys.prefix) / "etc", cache):
        folder = top / "attention-course" / f"jupyter-{name}"
        overrides = folder / "labconfig" / "default_setting_overrides.json"
        try:
            if not overrides.exists() or overrides.read_text() != want:
                overrides.parent.mkdir(parents=True, exist_ok=True)
                overrides.write_text(want)
            return folder
        except OSError:
            continue
    raise SystemExit(f"cannot write JupyterLab's language setting under {sys.prefix} or {cache}")


def command(name: str, args: list[str], root: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """The `jupyter lab` command line and the environment variables it adds, for edition `name`."""
    root = root or Path.cwd()
    e = edition(name)
    paths = [str(root / "binder" / "jupyter")]
    if e["lab_locale"] != "en":
        paths.append(str(locale_config(name, e["lab_locale"])))
    extra = {
        "JUPYTER_CONFIG_PATH": os.pathsep.join(paths),
        "PYTHONPATH": os.pathsep.join(p for p in (str(root / "binder"), os.environ.get("PYTHONPATH", "")) if p),
    }
    jupyter = Path(sys.executable).with_name("jupyter")  # this environment's, whatever PATH says
    return [str(jupyter) if jupyter.exists() else "jupyter", "lab", e["start"], *args], extra


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    name, rest = argv[0], argv[1:]
    try:
        cmd, extra = command(name, [a for a in rest if a != "--print"])
    except ValueError as problem:
        print(problem, file=sys.stderr)
        return 2
    if "--print" in rest:
        print(" ".join(f"{k}={shlex.quote(v)}" for k, v in extra.items()), shlex.join(cmd))
        return 0
    os.execvpe(cmd[0], cmd, {**os.environ, **extra})
    return 1  # not reached: the process is JupyterLab's now


if __name__ == "__main__":
    sys.exit(main())
