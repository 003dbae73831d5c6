"""What `make grade` has merged, so that a run that stopped (a killed process, a lost cluster, a
closed laptop) is taken up where it stopped, and a student graded with the same submission and
seed is not graded again.

One JSON line per event in `build/grading/journal.jsonl` of the course: a run's start (its seed),
each student merged into the gradebook with nothing wrong on the grader's side (the digest of
their submission, the course and the settings; their confinement and problems, for the tables),
and the run's end. The line of a student is written after the gradebook has them: a run killed in
between grades that student again, and merging the same grading twice changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

PATH = Path("build") / "grading" / "journal.jsonl"


def key(*parts: str) -> str:
    """The digest that decides whether a student's grading can be kept: their submission's, the
    course's files' and the settings' digests (the seed among them)."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class Journal:
    def __init__(self, root: Path):
        self.path = Path(root) / PATH
        self.lines: list[dict] = []
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    self.lines.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line cut short when a run was killed while writing it

    def unfinished_seed(self) -> int | None:
        """The seed of the last run if it never ended (it is taken up with the same seed)."""
        runs = [line for line in self.lines if "start" in line or "end" in line]
        return runs[-1]["seed"] if runs and "start" in runs[-1] else None

    def kept(self, student: str, assignment: str, digest: str) -> dict | None:
        """The last line of this student's grading with this digest, if any."""
        for line in reversed(self.lines):
            if line.get("student") == student and line.get("assignment") == assignment:
                return line if line.get("digest") == digest else None
        return None

    def _write(self, line: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.lines.append(line)

    def start(self, seed: int) -> None:
        self._write({"start": True, "seed": seed})

    def graded(self, student: str, assignment: str, digest: str, seed: int, confinement: str, problems: str) -> None:
        self._write(
            {
                "student": student,
                "assignment": assignment,
                "digest": digest,
                "seed": seed,
                "confinement": confinement,
                "problems": problems,
            }
        )

    def forget(self, student: str, assignment: str) -> None:
        """This student's grading is not kept (graded again next time, whatever the digest)."""
        self._write({"student": student, "assignment": assignment, "digest": None})

    def end(self, seed: int) -> None:
        self._write({"end": True, "seed": seed})
