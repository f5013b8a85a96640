"""Example JupyterHub configuration for a labkit course with the nbgrader exchange.

One course (``labkit``, the ``course_id`` in ``course/nbgrader_config.py``), any number of
instructors sharing one grading server, students fetching and submitting through the
nbgrader exchange in JupyterLab. Copy to ``/etc/jupyterhub/jupyterhub_config.py`` and
adapt the marked lines; the README's "Deploying on JupyterHub" section walks through it.

Accounts: the Unix users below must exist (``useradd -m``); ``grader-labkit`` owns the
course repository (a clone of this repo at ``/home/grader-labkit/labkit``), runs the
formgrader as a JupyterHub service, and is where instructors run ``labkit course grade``.
"""

c = get_config()  # noqa: F821 -- provided by JupyterHub when it loads this file

COURSE_ID = "labkit"                         # must equal CourseDirectory.course_id
GRADER = f"grader-{COURSE_ID}"               # Unix account that owns the course files
COURSE_ROOT = f"/home/{GRADER}/labkit"       # the course repository (source/, release/)
INSTRUCTORS = ["instructor1", "instructor2"]  # <- your instructors
STUDENTS = ["student1", "student2"]           # <- your roster (or use an LTI/OAuth authenticator)

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

# The shared grading server: JupyterLab with nbgrader's formgrader, run as the grader
# account in the course repository. The service name MUST be the course id.
c.JupyterHub.services = [
    {
        "name": COURSE_ID,
        "url": "http://127.0.0.1:9999",
        "command": ["jupyterhub-singleuser", f"--ServerApp.root_dir={COURSE_ROOT}"],
        "user": GRADER,
        "cwd": COURSE_ROOT,
        "environment": {"JUPYTERHUB_DEFAULT_URL": "/lab"},
    }
]

# Students land in JupyterLab; their servers need labkit, ipywidgets and bqplot installed
# in the single-user environment (pip install labkit from this repository). Each student's
# design ledger (Lab 2 reads Lab 1's) stays in their own ~/.labkit/ledger.json.
c.Spawner.default_url = "/lab"
