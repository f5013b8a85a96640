"""The course's nbgrader settings reach the grading workers: a late submission gets the
late penalty the course configures, the same as stock ``nbgrader autograde`` gives it,
and labkit overlays only what it owns (:func:`labkit.course.worker._autograde`)."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from traitlets.config import Config

from course_helpers import kernel_env, run_nbgrader
from grading_helpers import fixture_course
from labkit.course.config import config_from_json, config_to_json
from labkit.course.grade import GradeOptions, grade
from labkit.course.worker import OPTIONAL_STEPS, _own_layout_and_steps

ASSIGNMENT = "lab1_cloud_fleet"
DUE = datetime(2026, 11, 30, 12, 0)
SUBMITTED = {"ontime": DUE - timedelta(hours=1), "late": DUE + timedelta(hours=2, minutes=30)}

PLUGIN = '''
import math

from nbgrader.plugins import BasePlugin
from traitlets import Float


class PerHourLate(BasePlugin):
    """A penalty of ``points`` per started hour late."""

    points = Float(1.0).tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        return self.points * math.ceil(total_seconds_late / 3600)
'''

CASES = {
    # nbgrader's own plugin: a late notebook scores zero
    "zero": ('c.LateSubmissionPlugin.penalty_method = "zero"\n', None),
    # a course's own plugin, named as a class object (it travels as its import name)
    "per_hour": ("import late_plugin\n"
                 "c.AssignLatePenalties.plugin_class = late_plugin.PerHourLate\n"
                 "c.PerHourLate.points = 2.5\n", 3 * 2.5),
}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """lab1_cloud_fleet generated once, due at DUE, with the honest full submission handed
    in before (``ontime``) and 2.5 hours after (``late``) the due date."""
    base = tmp_path_factory.mktemp("late-course")
    db_url = fixture_course(base, [ASSIGNMENT], students=["full"])
    with Gradebook(db_url, "labkit") as gb:
        gb.update_or_create_assignment(ASSIGNMENT, duedate=DUE)
    full = base / "submitted" / "full"
    for student, when in SUBMITTED.items():
        dest = base / "submitted" / student / ASSIGNMENT
        shutil.copytree(full / ASSIGNMENT, dest)
        (dest / "timestamp.txt").write_text(f"{when:%Y-%m-%d %H:%M:%S}.000000 UTC")
    shutil.rmtree(full)
    return base


def _copy(course: Path, dest: Path, settings: str) -> Path:
    shutil.copytree(course, dest)
    with open(dest / "nbgrader_config.py", "a") as fh:
        fh.write("c = get_config()  # noqa: F821\n" + settings)
    return dest


def _penalties(db: Path) -> dict[str, dict]:
    """Per student: the code cells' scores, the late penalty and the score after it."""
    out = {}
    with Gradebook(f"sqlite:///{db}", "labkit") as gb:
        for sub in gb.find_assignment(ASSIGNMENT).submissions:
            (nb,) = sub.notebooks
            out[sub.student.id] = {
                "cells": {g.name: g.auto_score for g in nb.grades
                          if g.cell.cell_type == "code"},
                "raw": sub.score, "penalty": nb.late_submission_penalty,
                "after": max(0.0, sub.score - sub.late_submission_penalty)}
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_courses_late_penalty_applies_as_in_stock_nbgrader(course, tmp_path, case,
                                                               monkeypatch):
    settings, per_hour = CASES[case]
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "late_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))  # the coordinator reads the config
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "lib"))  # the workers import the plugin

    stock = _copy(course, tmp_path / "stock", settings)
    run_nbgrader(stock, "autograde", ASSIGNMENT, env=kernel_env(tmp_path),
                 db=stock / "gradebook.db")
    ours = _copy(course, tmp_path / "labkit", settings)
    report = grade(ours, [ASSIGNMENT], db_url=f"sqlite:///{ours / 'gradebook.db'}",
                   options=GradeOptions(workers=2, progress=False))
    assert not report.errors, report.summary()

    want, got = _penalties(stock / "gradebook.db"), _penalties(ours / "gradebook.db")
    assert set(want) == set(got) == set(SUBMITTED)
    for student in SUBMITTED:
        assert got[student] == want[student], student
    assert got["ontime"]["penalty"] is None
    late = got["late"]
    assert late["raw"] > 0
    assert late["penalty"] == (late["raw"] if per_hour is None else per_hour)
    assert late["after"] == (0.0 if per_hour is None else late["raw"] - per_hour)


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's autoflush
def test_the_merge_drops_a_penalty_an_extension_cancels(course, tmp_path):
    """The worker grades against a snapshot without the student's rows, so it cannot see an
    extension granted in the course gradebook; the merge applies nbgrader's rule (no
    penalty unless late with the extension) and keeps the worker's penalty otherwise."""
    from labkit.course.gradebook import open_gradebook, write_result

    shutil.copy(course / "gradebook.db", tmp_path / "gradebook.db")
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url, "labkit") as gb:
        (name,) = [nb.name for nb in gb.find_assignment(ASSIGNMENT).notebooks]
        for student in ("late", "extended"):
            gb.update_or_create_student(student)
        gb.add_submission(ASSIGNMENT, "extended", extension=timedelta(hours=3))
    result = {"timestamp": SUBMITTED["late"].isoformat(),
              "notebooks": {name: {"late_penalty": 17.0, "grades": {}, "comments": {}}}}
    with open_gradebook(url, "labkit") as gb:
        for student in ("late", "extended"):
            write_result(gb, ASSIGNMENT, student, result, flagged=False)
        gb.db.commit()
    with Gradebook(url, "labkit") as gb:
        penalty = {s: gb.find_submission_notebook(name, ASSIGNMENT, s).late_submission_penalty
                   for s in ("late", "extended")}
    assert penalty == {"late": 17.0, "extended": None}


def test_the_worker_keeps_the_courses_settings_and_owns_the_grading_steps():
    course = Config()
    course.LimitOutput.max_lines = 7
    course.LimitOutput.enabled = False
    course.LateSubmissionPlugin.penalty_method = "zero"
    course.OverwriteCells.enabled = False
    course.Execute.enabled = False
    course.CourseDirectory.submitted_directory = "collected"
    course.CourseDirectory.ignore = ["*.csv"]
    cfg = config_from_json(config_to_json(course))
    from nbgrader.preprocessors import LimitOutput, OverwriteCells

    from labkit.course.execution import GradingExecute

    cfg.Autograde.sanitize_preprocessors = [OverwriteCells]
    cfg.Autograde.autograde_preprocessors = [GradingExecute, LimitOutput]
    _own_layout_and_steps(cfg)
    # the course's choices that shape feedback or scores as in stock nbgrader stay
    assert cfg.LimitOutput.max_lines == 7 and cfg.LimitOutput.enabled is False
    assert cfg.LateSubmissionPlugin.penalty_method == "zero"
    assert cfg.CourseDirectory.ignore == ["*.csv"]
    # the steps a grade rests on run, and the job folder's layout is labkit's
    assert cfg.OverwriteCells.enabled is True
    assert GradingExecute(config=cfg).enabled  # over the course's c.Execute.enabled = False
    assert cfg.CourseDirectory.submitted_directory == "submitted"
    assert {"LimitOutput", "AssignLatePenalties"} <= OPTIONAL_STEPS
    assert "GradingExecute" not in OPTIONAL_STEPS
