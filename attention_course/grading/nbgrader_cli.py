"""nbgrader as the grader runs it: its own command line, and a group of students graded in one process.

    python attention_course/grading/nbgrader_cli.py autograde attention ...   (the grader's way to run nbgrader)
    python attention_course/grading/nbgrader_cli.py grade-group attention alice bob -- '{"Grading": {...}}'

The second form is how `make grade` grades a group of students in its course folder: one
process runs nbgrader's own API (as formgrader does) to autograde each student and then to
generate their feedback, with the course's nbgrader_config.py and the given settings on top.
A third, `export-tables '[[<nbgrader export arguments>], ...]'`, runs nbgrader's export once for
each list of arguments, in one process (how `make grade` writes its two tables). A fourth,
`zygote`, imports what grading needs once and then forks a child for each command line it is
sent, which goes on as if started with it (`nbgrader_zygote.py`: how `make grade`'s slots start
one process per student without importing nbgrader and PyTorch again for each).

It is nbgrader itself, unpatched: what made nbgrader slow to start here is gone from the
environment instead (jsonschema is pinned below the release whose format checkers compile IRI
grammars on import; see pyproject.toml), and a gradebook that does not exist yet is made by
nbgrader's own `Gradebook`, which asks the `alembic` command on PATH for the migrations' head.
The script is run as a file (not with -m), so nothing is added to the environment that the
student kernels inherit.
"""

import os
import sys


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


def export_tables(runs: list[list[str]]) -> int:
    """`nbgrader export` once for each command line of `runs`, in this one process (each table is
    nbgrader's ExportApp with its own exporter; one interpreter start instead of one a table)."""
    from nbgrader.apps.exportapp import ExportApp

    for argv in runs:
        app = ExportApp()
        app.initialize(argv)
        app.start()
        ExportApp.clear_instance()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["zygote"]:  # a warm process that forks one child per command line
        from attention_course.grading.nbgrader_zygote import serve

        sys.argv[1:] = serve()
    if sys.argv[1:2] == ["export-tables"]:
        import json

        sys.exit(export_tables(json.loads(sys.argv[2])))
    if sys.argv[1:2] == ["grade-group"]:
        import json

        from attention_course.confinement import linux

        linux.not_dumpable()  # make grade's own process: no student process may read it

        args = sys.argv[2:]
        split = args.index("--")
        sys.exit(grade_group(args[0], args[1:split], json.loads(args[split + 1]), sys.stdout))
    from nbgrader.apps.nbgraderapp import main

    sys.argv[0] = "nbgrader"
    sys.exit(main())
