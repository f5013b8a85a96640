"""The course configuration files an instructor deploys: they load, name real settings,
and agree with each other (course id, service name, formgrader group, exchange)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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
    policy = dict(d.strip().split(" ", 1) for d in headers["Content-Security-Policy"].split(";"))
    assert policy["frame-ancestors"] == "'self'"  # the formgrader in the hub's frame only
    # no remote fetch, no plugin, no inline event handler but nbgrader's own (by hash)
    assert policy["img-src"] == "'self' data:" and policy["connect-src"] == "'self'"
    assert policy["object-src"] == "'none'" and policy["default-src"] == "'self'"
    assert "unsafe-inline" not in policy["script-src-attr"]
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


# -- c.LabkitGrade: the one definition of the grade options ------------------------------

def test_grade_options_are_defined_once_by_the_traits():
    import dataclasses
    import re

    from labkit.course.config import LabkitGrade, check_option, option_default, option_names
    from labkit.course.grade import GradeOptions

    fields = {f.name: f.default for f in dataclasses.fields(GradeOptions)}
    assert set(option_names()) == set(fields) - {"isolate", "force", "progress"}
    assert all(fields[n] == option_default(n) for n in option_names())
    assert set(option_names()) == set(LabkitGrade.class_trait_names(config=True))
    assert GradeOptions(cpus=2).cpus == 2.0 and GradeOptions(scheduler="").scheduler is None
    for name, bad, rule in (("cpus", 0, "a number > 0"), ("workers", -1, "an integer >= 0"),
                            ("memory_mb", 1.5, "an integer >= 1"),
                            ("job_timeout", True, "an integer >= 1"),
                            ("checkpoint_credit", "maybe", "one of 'correct', 'commit'")):
        with pytest.raises(ValueError, match=f"{name} must be {rule}"):
            GradeOptions(**{name: bad})
    assert check_option("cpus", 0.25) == 0.25
    # the commented defaults in the course's nbgrader_config.py are the traits'
    text = (COURSE / "nbgrader_config.py").read_text()
    shown = dict(re.findall(r"^# c\.LabkitGrade\.(\w+) = (.+?)\s+#", text, re.MULTILINE))
    assert set(shown) == set(option_names())
    assert {n: eval(v) for n, v in shown.items()} == {n: option_default(n)
                                                      for n in option_names()}


# -- the course's configuration as a grading job receives it ------------------------------

def test_the_course_config_travels_to_a_job_as_json_and_back(tmp_path):
    from nbgrader.plugins import LateSubmissionPlugin
    from nbgrader.preprocessors import LimitOutput

    from labkit.course.config import config_from_json, config_to_json, job_config

    config = Config()
    config.AssignLatePenalties.plugin_class = LateSubmissionPlugin
    config.Autograde.post_convert_hook = json.dumps
    config.GenerateFeedback.preprocessors = [LimitOutput]
    config.LimitOutput.max_lines = 7
    config.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE"}
    config.X.pair, config.X.kinds = (1, "a"), {"b", "c"}
    config.CourseDirectory.ignore.append("*.csv")
    config.CourseDirectory.ignore.insert(0, "scratch")
    config.CourseDirectory.db_url = "postgresql://grader:secret@db/gradebook"
    data = config_to_json(config)
    text = json.dumps(data)
    assert "secret" not in text and "db_url" not in text  # the worker sets its own
    back = config_from_json(json.loads(text))
    # classes and functions travel by name, and arrive as themselves
    assert back.AssignLatePenalties.plugin_class is LateSubmissionPlugin
    assert back.Autograde.post_convert_hook is json.dumps
    assert back.GenerateFeedback.preprocessors == [LimitOutput]
    assert back.LimitOutput.max_lines == 7
    assert back.ClearSolutions.code_stub == {"python": "# YOUR CODE HERE"}
    assert back.X.pair == (1, "a") and back.X.kinds == {"b", "c"}
    assert back.CourseDirectory.ignore.get_value([".git"]) == ["scratch", ".git", "*.csv"]
    # a class the worker cannot import (another labkit version) stays its name: a setting
    # the job never uses costs it nothing, one it uses fails there, naming it
    data["X"]["gone"] = {**data["GenerateFeedback"]["preprocessors"][0], "name": "no.Such"}
    assert config_from_json(data).X.gone == "no.Such"

    root = tmp_path / "course"
    root.mkdir()
    (root / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821\nc.LateSubmissionPlugin.penalty_method = 'zero'\n")
    assert job_config(root)["LateSubmissionPlugin"] == {"penalty_method": "zero"}


def test_a_setting_a_worker_cannot_import_is_refused_by_name(tmp_path):
    from labkit.course.config import job_config

    (tmp_path / "nbgrader_config.py").write_text(
        "from nbgrader.plugins import BasePlugin\n"
        "c = get_config()  # noqa: F821\n"
        "class Mine(BasePlugin):\n    pass\n"
        "c.AssignLatePenalties.plugin_class = Mine\n")
    with pytest.raises(ValueError, match=r"c\.AssignLatePenalties\.plugin_class = .*Mine.* "
                                         r"cannot reach the grading workers"):
        job_config(tmp_path)
