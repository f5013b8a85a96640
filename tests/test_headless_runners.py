"""The runners that execute a notebook nobody sees start its kernel headless (issue 26):
labkit's grading box sets ``LABKIT_HEADLESS=1``; nbgrader's autograde and validate set
``NBGRADER_EXECUTION``, which :func:`labkit.core.headless.decide` reads too."""

from __future__ import annotations

import inspect

import pytest
from nbgrader import validator
from nbgrader.converters import autograde

from labkit.core.headless import decide
from labkit.course.sandbox import box_env


@pytest.mark.parametrize("mode", ["bwrap+uid", "limits-only"])
def test_the_grading_box_starts_its_kernel_headless(mode, monkeypatch):
    monkeypatch.setenv("LABKIT_HEADLESS", "0")   # the grader's own setting is not inherited
    env = box_env(mode, {})
    assert env["LABKIT_HEADLESS"] == "1" and decide(env)
    assert env["LABKIT_SANDBOX"] == mode


@pytest.mark.parametrize(("module", "value"), [(autograde, "autograde"),
                                               (validator, "validate")])
def test_nbgrader_sets_the_variable_the_flag_reads(module, value):
    """The installed nbgrader still sets ``NBGRADER_EXECUTION`` while it executes."""
    assert f"NBGRADER_EXECUTION='{value}'" in inspect.getsource(module)
    assert decide({"NBGRADER_EXECUTION": value})
