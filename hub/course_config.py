"""The course's part of a JupyterHub configuration: the class, the students' servers, formgrader.

Loaded by hub/jupyterhub_config.py (a hub on one machine); on another hub (The Littlest
JupyterHub, say) put this file among its configuration files as it is. It sets the two groups
and the instructors' role, the students' servers (the course's student JupyterLab, the exchange),
and formgrader as a hub service under the grader account, in the course folder. Its values come
from the environment (docs/jupyterhub.md lists them with their defaults):

    ATTENTION_COURSE_ID       nbgrader's course id                    attention-course
    ATTENTION_GRADER          the account formgrader runs as          grader-attention
    ATTENTION_COURSE_ROOT     the course folder, owned by the grader  /home/<grader>/<course id>
    ATTENTION_EXCHANGE        nbgrader's exchange folder              /srv/nbgrader/exchange
    ATTENTION_INSTRUCTORS     accounts that may open formgrader       (none; comma-separated)
    ATTENTION_STUDENTS        accounts that take the course           (none; comma-separated)
    ATTENTION_ROSTER          a roster CSV (the `id` column: accounts  (none)
                              that take the course), beside or instead of ATTENTION_STUDENTS
    ATTENTION_MEMORY_LIMIT    each student's server's memory limit    2G
                              (enforced by SystemdSpawner, TLJH's, and KubeSpawner; not by the
                              local process spawner of hub/jupyterhub_config.py)
    ATTENTION_SERVICE_PORT    formgrader's port (loopback)            9999
    ATTENTION_STUDENT_BIN     bin/ of the students' Python            the hub's own
    ATTENTION_GRADER_BIN      bin/ of the grader's Python             the hub's own
    ATTENTION_PUBLIC          a copy of binder/ and hub/ that every   this repository
                              account may read (they hold no solution)

In a class the students' Python is built from the student folder (`make student-folder`, then
`pip install -r requirements.txt jupyterhub==6.1.1` in build/student), so it holds neither
solutions nor grading code; this
repository stays in the grader's home (mode 0700), with binder/ and hub/ copied where the
students can read them. The test of this file runs everyone from one environment and this checkout.
"""

import csv
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by JupyterHub when it loads this file)

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent  # the environment the hub runs from


def setting(name: str, default: str) -> str:
    return os.environ.get(name) or default


def accounts(name: str) -> set[str]:
    return {user.strip() for user in setting(name, "").split(",") if user.strip()}


def roster(path: str) -> set[str]:
    """The `id` column of a roster CSV (the file `nbgrader db student import` reads)."""
    if not path:
        return set()
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if "id" not in (reader.fieldnames or []):
            raise ValueError(f"{path}: a roster needs a header line with an `id` column (the account names)")
        return {row["id"].strip() for row in reader if (row["id"] or "").strip()}


COURSE_ID = setting("ATTENTION_COURSE_ID", "attention-course")
GRADER = setting("ATTENTION_GRADER", "grader-attention")
COURSE_ROOT = setting("ATTENTION_COURSE_ROOT", f"/home/{GRADER}/{COURSE_ID}")
EXCHANGE = setting("ATTENTION_EXCHANGE", "/srv/nbgrader/exchange")
INSTRUCTORS = accounts("ATTENTION_INSTRUCTORS")
STUDENTS = accounts("ATTENTION_STUDENTS") | roster(setting("ATTENTION_ROSTER", ""))
STUDENT_BIN = Path(setting("ATTENTION_STUDENT_BIN", str(BIN)))
GRADER_BIN = Path(setting("ATTENTION_GRADER_BIN", str(BIN)))
PUBLIC = Path(setting("ATTENTION_PUBLIC", str(HERE.parent)))

# --- The class ---------------------------------------------------------------------------------
# Only the class may log in (where the hub keeps its own list, as TLJH does, leave both empty).
if INSTRUCTORS | STUDENTS:
    c.Authenticator.allowed_users = INSTRUCTORS | STUDENTS
# The groups nbgrader's conventions name: formgrade-<course> may grade, nbgrader-<course> takes it.
c.JupyterHub.load_groups = {
    f"formgrade-{COURSE_ID}": {"users": sorted(INSTRUCTORS)},
    f"nbgrader-{COURSE_ID}": {"users": sorted(STUDENTS)},
}
# Formgrader is a service; only the instructors' group may open it.
c.JupyterHub.load_roles = [
    {
        "name": f"formgrade-{COURSE_ID}",
        "groups": [f"formgrade-{COURSE_ID}"],
        "scopes": [f"access:services!service={COURSE_ID}"],
    },
]

# --- Each student's server: the course's student JupyterLab, under their own account --------
c.Spawner.cmd = [str(STUDENT_BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
# One kernel of the course peaks near 500 MiB; a server with JupyterLab and two kernels fits in 2G.
c.Spawner.mem_limit = setting("ATTENTION_MEMORY_LIMIT", "2G")
c.Spawner.environment = {
    # hub/students: the exchange and the course id; binder/jupyter: the student JupyterLab
    # (formgrader, course list and create-assignment kept out, the course's links served).
    "JUPYTER_CONFIG_PATH": os.pathsep.join([str(PUBLIC / "hub" / "students"), str(PUBLIC / "binder" / "jupyter")]),
    "PYTHONPATH": str(PUBLIC / "binder"),
    "PATH": f"{STUDENT_BIN}:/usr/local/bin:/usr/bin:/bin",
    "ATTENTION_EXCHANGE": EXCHANGE,
    "ATTENTION_COURSE_ID": COURSE_ID,
}

# --- Formgrader: a hub service run by the grader account, in the course folder ---------------
SERVICE_PORT = setting("ATTENTION_SERVICE_PORT", "9999")
c.JupyterHub.services = [
    {
        "name": COURSE_ID,
        "url": f"http://127.0.0.1:{SERVICE_PORT}",
        "command": [str(GRADER_BIN / "jupyterhub-singleuser"), f"--ServerApp.root_dir={COURSE_ROOT}"],
        "user": GRADER,
        "cwd": COURSE_ROOT,
        "environment": {
            "JUPYTER_CONFIG_PATH": str(HERE / "grader"),
            "JUPYTERHUB_DEFAULT_URL": "/formgrader",
            "PATH": f"{GRADER_BIN}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(Path(COURSE_ROOT).parent),
            "ATTENTION_EXCHANGE": EXCHANGE,
        },
        "oauth_no_confirm": True,
    },
]
