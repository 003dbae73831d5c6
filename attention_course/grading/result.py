"""What one nbgrader process found about one student beyond the gradebook, as one record: the
faults that kept a notebook from being graded fully, what was wrong with the submission's files,
and which notebooks got their trusted verdict. The plugins keep it and rewrite it whole, as one
JSON file per student under `build/grading/results/`, each time it changes; `make grade`'s slot
reads it once the process has ended, together with the gradebook rows and why the process was
stopped (nbgrader_process.py), and gives all of it back as one `submission.Graded`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

RESULTS = Path("build") / "grading" / "results"


@dataclasses.dataclass
class StudentResult:
    """One student's record of one nbgrader process."""

    student: str
    assignment: str
    faults: list[dict] = dataclasses.field(default_factory=list)  # {"kind", "notebook", "text"}
    problems: list[dict] = dataclasses.field(default_factory=list)  # {"notebook", "text"}
    finished: list[str] = dataclasses.field(default_factory=list)  # notebooks with their trusted verdict

    @staticmethod
    def path(root: Path, student: str, assignment: str) -> Path:
        """Where the record of `student`'s `assignment` is kept in the course folder `root`."""
        return Path(root) / RESULTS / f"{student}--{assignment}.json"

    def save(self, root: Path) -> None:
        """Write the record whole (a reader never sees half of it)."""
        path = self.path(root, self.student, self.assignment)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(dataclasses.asdict(self), indent=1), encoding="utf-8")
        os.replace(temporary, path)

    @classmethod
    def load(cls, root: Path, student: str, assignment: str) -> StudentResult:
        """The record a process left (an empty one when it left none: it never got that far)."""
        try:
            data = json.loads(cls.path(root, student, assignment).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls(student, assignment)
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})

    @classmethod
    def forget(cls, root: Path, student: str, assignment: str) -> None:
        """Remove a record before the student is graded again."""
        cls.path(root, student, assignment).unlink(missing_ok=True)

    def fault_lines(self) -> list[str]:
        """The faults as the grading output and the teacher's table name them."""
        return [f"{f['kind']} fault in {f['notebook']}: {f['text']}" for f in self.faults]

    def problem_lines(self) -> list[str]:
        """The problems with the submission's files, as the student's problems column says them."""
        return [p["text"] for p in self.problems]
