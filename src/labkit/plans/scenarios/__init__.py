"""Deployment scenarios as types: one :class:`Scenario` subclass per kind of deployment,
held in an ordered :data:`REGISTRY` (the first that applies to a track wins). Each lives in
its own folder, ``labkit/scenarios/<id>/plan/scenario.py`` (:mod:`labkit.scenarios`), and
the registry finds them there on first use.

    from labkit.plans.scenarios import REGISTRY, scenario_for
    scenario_for(get_track("cloud_fleet")).id      # 'fleet'
    list(REGISTRY)                                 # ['fleet', 'handheld', 'wearable', 'vehicle']

A new kind of deployment is a subclass registered with :func:`register` (``before=`` an
existing id to take precedence); :func:`labkit.plans.design.design_check` and
:func:`~labkit.plans.design.reference_design` pick it up without other changes.
"""

from __future__ import annotations

from labkit import scenarios as folders
from labkit.plans.scenarios.base import (
    OFF_SCALE,
    Config,
    ConfigValue,
    Constraint,
    DesignCheck,
    Evaluation,
    Metrics,
    MetricValue,
    Objective,
    ReferenceDesign,
    Scenario,
    ScenarioRegistry,
)
from labkit.tracks import Track

__all__ = [
    "OFF_SCALE", "REGISTRY", "Config", "ConfigValue", "Constraint", "DesignCheck",
    "Evaluation", "MetricValue", "Metrics", "Objective", "ReferenceDesign", "Scenario",
    "ScenarioRegistry", "register", "scenario_for", "unregister",
]

def _found() -> list[Scenario]:
    """Every scenario folder's ``plan/scenario.py`` ``SCENARIO`` (see :mod:`labkit.scenarios`);
    a folder's name is its scenario's id."""
    out = []
    for sid in folders.ids():
        sc = folders.piece(sid, "plan.scenario").SCENARIO
        if sc.id != sid:
            raise ValueError(f"scenario folder {sid!r} holds scenario {sc.id!r}: the folder "
                             "is named after its scenario's id")
        out.append(sc)
    return out


REGISTRY = ScenarioRegistry(load=_found)


def register(scenario: Scenario, *, before: str | None = None) -> Scenario:
    """Add a scenario to :data:`REGISTRY` (see :meth:`ScenarioRegistry.register`)."""
    return REGISTRY.register(scenario, before=before)


def unregister(scenario_id: str) -> Scenario:
    """Remove a scenario from :data:`REGISTRY`; returns it."""
    return REGISTRY.unregister(scenario_id)


def scenario_for(track: Track) -> Scenario:
    """The first registered scenario that applies to ``track``."""
    return REGISTRY.for_track(track)
