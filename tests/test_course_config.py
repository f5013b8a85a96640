"""The course configuration files an instructor deploys: they load, name real settings,
and agree with each other (course id, service name, formgrader group, exchange)."""

from __future__ import annotations

import json
from pathlib import Path

from jupyterhub.app import JupyterHub
from jupyterhub.auth import Authenticator
from jupyterhub.spawner import Spawner
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange.default.exchange import Exchange
from traitlets.config import Config

from course_helpers import ROOT
from labkit.course.hub import GRADING_CONFIG, STUDENT_CONFIG

COURSE = ROOT / "course"


def _load(path: Path) -> Config:
    config = Config()
    code = compile(path.read_text(), str(path), "exec")
    exec(code, {"get_config": lambda: config, "__file__": str(path),
                "load_subconfig": lambda _p: None})
    return config


def _check_traits(config: Config, section: str, cls: type) -> None:
    known = set(cls.class_trait_names())
    unknown = set(config[section]) - known
    assert not unknown, f"{section} has no setting(s) {unknown}"


def test_jupyterhub_config_names_real_settings_and_matches_the_course():
    hub = _load(COURSE / "jupyterhub_config.py")
    course = _load(COURSE / "nbgrader_config.py")
    shared = _load(COURSE / "global_nbgrader_config.py")
    _check_traits(hub, "JupyterHub", JupyterHub)
    _check_traits(hub, "Authenticator", Authenticator)
    _check_traits(hub, "Spawner", Spawner)
    _check_traits(course, "CourseDirectory", CourseDirectory)
    _check_traits(shared, "CourseDirectory", CourseDirectory)
    _check_traits(shared, "Exchange", Exchange)

    course_id = course.CourseDirectory.course_id
    assert shared.CourseDirectory.course_id == course_id == "labkit"
    (service,) = hub.JupyterHub.services
    assert service["name"] == course_id  # nbgrader finds the formgrader by course id
    group = f"formgrade-{course_id}"
    assert set(hub.JupyterHub.load_groups[group]) <= hub.Authenticator.allowed_users
    role = next(r for r in hub.JupyterHub.load_roles if r["name"] == group)
    assert f"access:services!service={course_id}" in role["scopes"]
    assert shared.Exchange.root.startswith("/")


def test_each_server_gets_its_own_origin_and_students_no_formgrader():
    hub = _load(COURSE / "jupyterhub_config.py")
    assert hub.JupyterHub.subdomain_host.startswith("https://")  # the documented default
    (service,) = hub.JupyterHub.services
    assert service["environment"]["JUPYTER_CONFIG_PATH"] == str(GRADING_CONFIG)
    assert service["oauth_no_confirm"] is True
    assert hub.Spawner.environment["JUPYTER_CONFIG_PATH"] == str(STUDENT_CONFIG)
    grading = json.loads((GRADING_CONFIG / "jupyter_server_config.json").read_text())
    headers = grading["ServerApp"]["tornado_settings"]["headers"]
    assert headers["Content-Security-Policy"] == "frame-ancestors 'self'"
    student = json.loads((STUDENT_CONFIG / "jupyter_server_config.json").read_text())
    off = student["ServerApp"]["jpserver_extensions"]
    assert off == {"nbgrader.server_extensions.formgrader": False,
                   "nbgrader.server_extensions.course_list": False}
    page = json.loads((STUDENT_CONFIG / "labconfig" / "page_config.json").read_text())
    assert set(page["disabledExtensions"]) == {
        "@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
        "@jupyter/nbgrader:course-list"}


def test_course_nbgrader_config_points_at_this_repository():
    course = _load(COURSE / "nbgrader_config.py")
    assert Path(course.CourseDirectory.root) == ROOT
    assert course.ClearSolutions.code_stub == {"python": "# YOUR CODE HERE"}
