"""nbgrader, started without two slow detours that change nothing about grading.

    python grading/nbgrader_cli.py autograde attention ...   (the grader's way to run nbgrader)
    python grading/nbgrader_cli.py grade-group attention alice bob -- '{"Grading": {...}}'

The second form is how `make grade` grades a group of students in its course folder: one
process runs nbgrader's own API (as formgrader does) to autograde each student and then to
generate their feedback, with the course's nbgrader_config.py and the given settings on top.

`fast_start()` is called by this script and by `grading.grade` before it imports nbgrader:
1. nbgrader imports nbformat, which imports jsonschema, whose format checkers import
   `rfc3987_syntax` when it is installed (it comes with jupyter-events) and compile some forty
   grammars on the spot: about 2 s of every nbgrader process, for IRI formats that no notebook
   schema uses (python-jsonschema/jsonschema#1428). Marking the module as absent makes
   jsonschema skip those two format checks.
2. A new gradebook records the head revision of nbgrader's database migrations, which nbgrader
   asks of the `alembic heads` command: a new Python process that imports nbgrader again
   (4-5 s). The same revision is read here, in this process, from the same migration scripts.
The script is run as a file (not with -m), so nothing is added to the environment that the
student kernels inherit.
"""

import os
import sys


def alembic_head() -> str:
    """The head revision of nbgrader's gradebook migrations, read in this process."""
    import nbgrader
    from alembic.script import ScriptDirectory

    (head,) = ScriptDirectory(os.path.join(os.path.dirname(nbgrader.__file__), "alembic")).get_heads()
    return head


def fast_start() -> None:
    """Skip both detours; call before anything imports nbgrader (calling twice is harmless)."""
    sys.modules.setdefault("rfc3987_syntax", None)  # `import rfc3987_syntax` now raises ImportError
    import nbgrader.api

    if nbgrader.api.get_alembic_version is not alembic_head:
        global nbgrader_alembic_version
        nbgrader_alembic_version = nbgrader.api.get_alembic_version  # kept for the tests
        nbgrader.api.get_alembic_version = alembic_head


nbgrader_alembic_version = None  # nbgrader's own way, once fast_start() has run


def grade_group(assignment: str, students: list[str], settings: dict, log) -> int:
    """Autograde, then generate feedback for, each student with nbgrader's API; 0 if all went well."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = Config()
    config.merge(PyFileConfigLoader("nbgrader_config.py", path=os.getcwd()).load_config())
    config.merge(Config(settings))
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    status = 0
    for step in ("autograde", "generate_feedback"):
        for student in students:
            result = getattr(api, step)(assignment, student, force=True)
            log.write(
                f"$ {step} {assignment} {student}: {'ok' if result['success'] else 'FAILED'}\n"
                f"{result.get('log', '')}{result.get('error', '')}\n"
            )
            log.flush()
            status |= not result["success"]
    return int(status)


if __name__ == "__main__":
    fast_start()
    if sys.argv[1:2] == ["grade-group"]:
        import json

        from grading import linux

        linux.not_dumpable()  # make grade's own process: no student process may read it

        args = sys.argv[2:]
        split = args.index("--")
        sys.exit(grade_group(args[0], args[1:split], json.loads(args[split + 1]), sys.stdout))
    from nbgrader.apps.nbgraderapp import main

    sys.argv[0] = "nbgrader"
    sys.exit(main())
