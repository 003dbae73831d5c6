"""How a confined run ended, in the supervisor's words: one JSON object beside the policy file
(the outcome, the layer, the reason, the exit code). The grader decides from this file, which the
confined program cannot write, never from the program's stderr or exit code.
"""

from __future__ import annotations

import json
import os
import sys

from .policy import EXIT_LIMIT, EXIT_UNAVAILABLE


def status_path(policy_path: str) -> str:
    """Where the supervisor started with `run --policy policy_path` writes its status."""
    return f"{policy_path}.status.json"


def read_status(policy_path: str) -> dict | None:
    """The status the supervisor of `policy_path` wrote when it ended (see `Report.outcome`), or
    None when it wrote none (it was killed, or has not ended)."""
    try:
        with open(status_path(policy_path)) as handle:
            status = json.load(handle)
    except (OSError, ValueError):
        return None
    return status if isinstance(status, dict) and "outcome" in status else None


class Report:
    """What went wrong in one supervisor's run: each failure said on stderr as it happens (for a
    person reading a log), and the outcome written once, as the status file, when the run ends."""

    def __init__(self) -> None:
        self.failures: list[tuple[str, str, int]] = []  # (layer, reason, exit code)

    def fail(self, layer: str, reason: str, code: int = EXIT_UNAVAILABLE) -> int:
        """Say why on stderr and keep it for the status; returns `code`."""
        sys.stderr.write(f"confine: {layer}: {reason}\n")
        sys.stderr.flush()
        self.failures.append((layer, reason, code))
        return code

    def outcome(self, code: int) -> dict:
        """The status of a run that ended with `code`: what happened ("exited"; "unavailable": a
        layer could not be applied and the program never ran; "limit": a limit was exceeded and the
        tree killed; "exec": the program could not be started; "usage"), with the layer, the
        reason and the exit code."""
        for layer, reason, failed in reversed(self.failures):
            if failed == code:
                kind = {EXIT_UNAVAILABLE: "unavailable", EXIT_LIMIT: "limit", 2: "usage"}.get(code, "exec")
                return {"outcome": kind, "layer": layer, "reason": reason, "exit": code}
        return {"outcome": "exited", "layer": "", "reason": "", "exit": code}

    def write(self, path: str, code: int) -> None:
        """Write the outcome to `path` (mode 0600), whole or not at all."""
        temporary = f"{path}.{os.getpid()}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(json.dumps(self.outcome(code)))
        os.replace(temporary, path)
