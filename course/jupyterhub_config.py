"""JupyterHub configuration for a labkit course with the nbgrader exchange.

One course (``labkit``, the ``course_id`` in ``course/nbgrader_config.py``), any number of
instructors sharing one grading server, students fetching and submitting through the
nbgrader exchange in JupyterLab. Start the hub with ``jupyterhub -f <this file>``; the
README's "Deploying on JupyterHub" section walks through it, and ``tests/hub`` runs
exactly that on loopback with this file.

Each setting marked ``<-`` is yours: edit it here or set the ``LABKIT_HUB_*`` variable in
the hub's environment (the test does the latter).

Accounts: the Unix users below must exist (``useradd -m``) with passwords (PAM, the hub's
default authenticator). The grader account owns the course repository (a clone of this
repo at ``COURSE_ROOT``), runs the formgrader as a JupyterHub service, and is where
instructors run ``labkit course grade``.

Security: every user's server and the grading service get a subdomain of the hub
(``subdomain_host``), so no student's page shares an origin with the grading service.
That needs a wildcard DNS record (and a wildcard certificate for https) for the hub's
host name.
"""

import os

from labkit.course.hub import GRADING_CONFIG, STUDENT_CONFIG

c = get_config()  # noqa: F821 -- provided by JupyterHub when it loads this file


def _setting(name: str, default: str) -> str:
    return os.environ.get(f"LABKIT_HUB_{name}", default)


COURSE_ID = "labkit"                                    # must equal CourseDirectory.course_id
PUBLIC_URL = _setting("URL", "https://hub.example.org")  # <- the hub's address
GRADER = _setting("GRADER", f"grader-{COURSE_ID}")       # <- the account owning the course
COURSE_ROOT = _setting("COURSE_ROOT", f"/home/{GRADER}/labkit")  # <- the course repository
INSTRUCTORS = _setting("INSTRUCTORS", "instructor1 instructor2").split()  # <- instructors
STUDENTS = _setting("STUDENTS", "student1 student2").split()  # <- roster (or LTI/OAuth)
GRADING_URL = _setting("GRADING_URL", "http://127.0.0.1:9999")  # the grading service
# The exchange (course/global_nbgrader_config.py reads the same variable): passed on to
# every server only when set here.
EXCHANGE_VARIABLE = "LABKIT_EXCHANGE_ROOT"

# Servers at <user>.<host>, the grading service at labkit--service.<host>.
c.JupyterHub.subdomain_host = PUBLIC_URL

c.Authenticator.allowed_users = set(INSTRUCTORS + STUDENTS)
c.Authenticator.admin_users = set(INSTRUCTORS[:1])

# Instructors share the grading server. nbgrader recognises the "formgrade-<course>"
# group; students need no group because the course id is fixed in their nbgrader config.
c.JupyterHub.load_groups = {f"formgrade-{COURSE_ID}": INSTRUCTORS}

c.JupyterHub.load_roles = [
    {
        "name": f"formgrade-{COURSE_ID}",
        "groups": [f"formgrade-{COURSE_ID}"],
        "scopes": [
            f"access:services!service={COURSE_ID}",
            "list:services",
            f"read:services!service={COURSE_ID}",
        ],
    },
    # nbgrader's course list asks the Hub which services exist with the server's token.
    {"name": "server", "scopes": ["inherit"]},
]

_exchange = {EXCHANGE_VARIABLE: os.environ[EXCHANGE_VARIABLE]} \
    if EXCHANGE_VARIABLE in os.environ else {}

# The shared grading server: JupyterLab with nbgrader's formgrader, run as the grader
# account in the course repository. The service name MUST be the course id.
c.JupyterHub.services = [
    {
        "name": COURSE_ID,
        "url": GRADING_URL,
        "command": ["jupyterhub-singleuser", f"--ServerApp.root_dir={COURSE_ROOT}"],
        "user": GRADER,
        "cwd": COURSE_ROOT,
        "oauth_no_confirm": True,  # a service of this hub: no "Authorize access" page
        "environment": {"JUPYTERHUB_DEFAULT_URL": "/lab",
                        "JUPYTER_CONFIG_PATH": str(GRADING_CONFIG), **_exchange},
    }
]

# Students land in JupyterLab with the Assignments list; the formgrader, the course list
# and Create Assignment are turned off in their servers (labkit.course.hub). Their
# servers need labkit, ipywidgets and bqplot in the single-user environment (pip install
# this repository). Each student's design ledger (Lab 2 reads Lab 1's) stays in their
# own ~/.labkit/ledger.json.
c.Spawner.default_url = "/lab"
c.Spawner.environment = {"JUPYTER_CONFIG_PATH": str(STUDENT_CONFIG), **_exchange}
