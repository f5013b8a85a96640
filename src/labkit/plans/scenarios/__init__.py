"""Deployment scenarios as types: one :class:`Scenario` subclass per kind of deployment,
held in an ordered :data:`REGISTRY` (the first that applies to a track wins).

    from labkit.plans.scenarios import REGISTRY, scenario_for
    scenario_for(get_track("cloud_fleet")).id      # 'fleet'
    list(REGISTRY)                                 # ['fleet', 'handheld', 'wearable', 'vehicle']

A new kind of deployment is a subclass registered with :func:`register` (``before=`` an
existing id to take precedence); :func:`labkit.plans.design.design_check` and
:func:`~labkit.plans.design.reference_design` pick it up without other changes.
"""

from __future__ import annotations

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
from labkit.plans.scenarios.fleet import Fleet
from labkit.plans.scenarios.handheld import Handheld
from labkit.plans.scenarios.vehicle import Vehicle
from labkit.plans.scenarios.wearable import Wearable
from labkit.tracks import Track

__all__ = [
    "OFF_SCALE", "REGISTRY", "Config", "ConfigValue", "Constraint", "DesignCheck",
    "Evaluation", "Fleet", "Handheld", "MetricValue", "Metrics", "Objective",
    "ReferenceDesign", "Scenario", "ScenarioRegistry", "Vehicle", "Wearable", "register",
    "scenario_for", "unregister",
]

REGISTRY = ScenarioRegistry([Fleet(), Handheld(), Wearable(), Vehicle()])


def register(scenario: Scenario, *, before: str | None = None) -> Scenario:
    """Add a scenario to :data:`REGISTRY` (see :meth:`ScenarioRegistry.register`)."""
    return REGISTRY.register(scenario, before=before)


def unregister(scenario_id: str) -> Scenario:
    """Remove a scenario from :data:`REGISTRY`; returns it."""
    return REGISTRY.unregister(scenario_id)


def scenario_for(track: Track) -> Scenario:
    """The first registered scenario that applies to ``track``."""
    return REGISTRY.for_track(track)
