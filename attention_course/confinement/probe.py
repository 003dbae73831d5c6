"""Which confinement layers work on this machine, proved by running ``python -c "import sys"``
confined with each; cached for the life of the process, so a grading run probes once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from . import bubblewrap, linux
from .launch import run
from .policy import LAYERS, Policy, default_read_paths

_PROBE_CACHE: dict = {}


def _try(python: str, layers: list[str]) -> str | None:
    """None when `python` starts confined with `layers`, else why not."""
    with tempfile.TemporaryDirectory(prefix="confine-probe-") as d:
        os.chmod(d, 0o755)
        policy = Policy(
            read=default_read_paths(python), write=[d], cwd=d, env={"PATH": "/usr/bin:/bin", "HOME": d}, layers=layers
        )
        try:
            r = run(policy, [python, "-c", "import sys"], timeout=120)
        except subprocess.TimeoutExpired:
            return f"{'+'.join(layers)}: python -c 'import sys' timed out confined"
        if r.returncode == 0:
            return None
        status = getattr(r, "status", None) or {}
        if status.get("reason"):
            return f"{status['layer']}: {status['reason']}"
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        return (lines[-1] if lines else "") or f"{'+'.join(layers)}: exit status {r.returncode}"


def probe(python: str = sys.executable, layers=LAYERS) -> dict[str, str | None]:
    """For each layer: None when it works here (proved by running ``python -c "import sys"``
    confined with only that layer), else one sentence why not. When "user" works only together
    with bwrap (the interpreter lives under a directory the sandbox user cannot search), "user"
    is None and the extra key "user without bwrap" says why it does not work alone."""
    key = (python, tuple(layers))
    if key in _PROBE_CACHE:
        return dict(_PROBE_CACHE[key])
    result: dict[str, str | None] = {}
    for layer in layers:
        if layer == "landlock":
            result[layer] = linux.landlock_reason(linux.landlock_abi()) or _try(python, ["landlock"])
        elif layer == "bwrap":
            result[layer] = bubblewrap.missing() or _try(python, ["bwrap"])
        elif layer == "user":
            if os.geteuid() != 0:
                result[layer] = "user: only when grading runs as root"
                continue
            alone = _try(python, ["user"])
            if alone is None:
                result[layer] = None
                continue
            with_bwrap = _try(python, ["bwrap", "user"]) if not bubblewrap.missing() else "no bwrap"
            if with_bwrap is None:
                result[layer] = None
                result["user without bwrap"] = f"user: works here only together with bwrap ({alone})"
            else:
                result[layer] = alone
        else:
            result[layer] = f"{layer}: unknown layer"
    _PROBE_CACHE[key] = result
    return dict(result)


def usable(layers, python: str = sys.executable) -> str | None:
    """None when this set of layers works here, else why not (uses the cached probe)."""
    found = probe(python)
    for layer in layers:
        if layer not in found:
            return f"{layer}: unknown layer"
        if found[layer]:
            return found[layer]
    if "user" in layers and "bwrap" not in layers and found.get("user without bwrap"):
        return found["user without bwrap"]
    return None


def choose_layers(asked: list[str], probed: bool = True) -> tuple[list[str], dict[str, str | None]]:
    """The layers to apply for `asked` (the grading setting: layer names, "auto" = every layer
    that works here, "none" = none) and the probe.

    With `probed=False`, layers named explicitly are taken without probing the machine (an
    nbgrader process that `make grade` or a Dask worker started: they probed once for the run,
    and the supervisor refuses a layer it cannot apply); only "auto" probes."""
    if asked == ["none"]:  # `make grade --unconfined` on a machine without any layer
        return [], {} if not probed else probe(sys.executable)
    if not probed and "auto" not in asked:
        return list(asked), {}
    found = probe(sys.executable)
    if "auto" in asked:
        return [layer for layer in LAYERS if found.get(layer) is None], found
    missing = [f"{layer}: {found.get(layer)}" for layer in asked if found.get(layer) is not None]
    if missing:
        raise RuntimeError("Confinement layers asked for but not available here: " + "; ".join(missing))
    return list(asked), found
