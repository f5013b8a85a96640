"""Deployment scenarios, one folder each: everything that makes a fleet a fleet (or a phone
a phone) lives in ``labkit/scenarios/<id>/``, and nothing outside that folder (or a
track's own module) compares against the id::

    scenarios/<id>/
        about.py            objectives per lab, reading, shown terms, memo topics (text)
        plan/scenario.py    SCENARIO: the design check's constraints and search (plans layer)
        plan/*.py           the scenario's computations, frozen results (plans layer)
        views/__init__.py   VIEWS: Parts B and C, the stakeholder question and Part D's text
        views/*.py          the parts (labs layer: controls and charts over the plan)
        hooks.py            the question that opens each Lab 2 part (course layer)

Each layer loads only its own piece, on demand, by :func:`piece` (a registry like
nbgrader's preprocessors, not a switch): :data:`labkit.plans.scenarios.REGISTRY` the plans,
:func:`labkit.labs.accelerators.scenario_views.views` the views, ``course/labs/lab2.py`` the
hooks. A new scenario is a new folder on this package's ``__path__``; its instructor-only
exercises (hidden tests never ship in the package) are ``course/labs/scenarios/<id>.py``.

This module imports nothing of labkit: it only finds and loads the folders.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

PIECES = ("about", "plan.scenario", "views", "hooks")
"""The modules every scenario folder holds (:func:`piece` loads one)."""


def ids() -> tuple[str, ...]:
    """The scenario folders on this package's ``__path__``, sorted by name."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg))


def piece(scenario_id: str, name: str) -> ModuleType:
    """The module ``name`` (one of :data:`PIECES`) of scenario ``scenario_id``."""
    if name not in PIECES:
        raise ValueError(f"name must be one of {', '.join(PIECES)}, got {name!r}")
    if scenario_id not in ids():
        raise ValueError(f"scenario_id must be a scenario folder ({', '.join(ids())}), "
                         f"got {scenario_id!r}")
    return importlib.import_module(f"{__name__}.{scenario_id}.{name}")
