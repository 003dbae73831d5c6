"""`make check-grader`: which confinement layers this machine gives grading, before the first class.

For each layer: on or off, what it needs, and (when off) what is missing here, from the same probe
and the same settings (`c.Grading.layers`, `c.Grading.unconfined`) that `make grade` uses. Exits 0
when grading would go ahead, 2 when it would refuse.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from attention_course.confinement.probe import choose_layers

from . import settings as grading_settings

NEEDS = {
    "landlock": "Linux 5.13 or newer with Landlock in the LSM list (6.7 for the TCP rules, 6.12 for scoping); no root",
    "bwrap": "bubblewrap (apt-get install bubblewrap) and unprivileged user namespaces, or grading as root",
    "user": "grading as root (the account attention-sandbox is created if missing)",
}


def report(root: Path) -> tuple[list[str], int]:
    """The lines to print and the exit status for the course at `root`."""
    settings = grading_settings.load(root)
    try:
        layers, found = choose_layers(settings.layers)
    except RuntimeError as exc:  # layers asked for in nbgrader_config.py that this machine lacks
        return [str(exc), "Grading would refuse: change c.Grading.layers or install what is missing."], 2
    lines = [f"Grading as {'root' if os.geteuid() == 0 else 'uid ' + str(os.geteuid())}, with {sys.executable}"]
    for layer, needs in NEEDS.items():
        why = found.get(layer)
        lines.append(f"  {layer:9} {'on ' if layer in layers else 'off'}  needs: {needs}")
        if why:
            lines.append(f"  {'':9}      missing here: {why}")
    if found.get("user without bwrap") and "user" in layers:
        lines.append(f"  note: {found['user without bwrap']}")
    if layers:
        lines.append("Grading would go ahead with: " + ", ".join(layers) + ".")
        return lines, 0
    if settings.unconfined:
        lines.append("No layer works here; grading would run UNCONFINED (c.Grading.unconfined is set).")
        return lines, 0
    lines.append("No layer works here: grading would refuse (make grade exits 2) unless you pass --unconfined.")
    return lines, 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print the confinement layers grading gets on this machine.")
    parser.add_argument("--course", default=".", help="the course folder (default: here)")
    args = parser.parse_args(argv)
    lines, status = report(Path(args.course))
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(main())
