"""Whether this process is a headless run: one no front end will ever render.

The grading kernel (``labkit course grade``, nbgrader autograde), the papermill smoke run
and ``nbgrader validate`` execute every lab cell, but nobody sees a widget: there the lab
API stays the same and builds no widget views, charts or callout HTML
(:mod:`labkit.ui.headless`). The decision is taken once, from the environment the
process was *started* with (``/proc/self/environ`` where there is one), so a student cell
that sets ``os.environ`` changes nothing; and headless or not, every graded value is the
same (``tests/labs/test_headless.py``), so the flag could not change a score anyway.

* ``LABKIT_HEADLESS=1`` -- set by the runners (the grading box, the smoke run, validate);
  ``LABKIT_HEADLESS=0`` forces views on (the smoke test's one full run per lab).
* ``NBGRADER_EXECUTION=autograde`` / ``validate`` -- nbgrader sets it in the grader's
  environment while it executes a notebook (``nbgrader/converters/autograde.py``,
  ``nbgrader/validator.py``), so the kernel it starts inherits it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache

HEADLESS_ENV = "LABKIT_HEADLESS"
NBGRADER_ENV = "NBGRADER_EXECUTION"
NBGRADER_RUNS = ("autograde", "validate")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def decide(env: Mapping[str, str]) -> bool:
    """Headless for environment ``env``: ``LABKIT_HEADLESS`` when it says yes or no, else
    whether nbgrader is executing the notebook (autograde or validate)."""
    flag = env.get(HEADLESS_ENV, "").strip().lower()
    if flag in _TRUE:
        return True
    if flag in _FALSE:
        return False
    return env.get(NBGRADER_ENV, "") in NBGRADER_RUNS


def start_environ() -> dict[str, str]:
    """The environment this process was started with: ``/proc/self/environ`` (which no
    later ``os.environ`` change touches), else ``os.environ`` where there is no /proc."""
    try:
        with open("/proc/self/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return dict(os.environ)
    out: dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


@cache
def is_headless() -> bool:
    """Whether this process is a headless run (decided once, from its start environment)."""
    return decide(start_environ())
