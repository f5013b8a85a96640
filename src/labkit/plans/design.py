"""Lab 2's design check: a Part D design against every constraint of its track, and
labkit's reference design.

The deployment kinds (fleet, handheld, wearable, vehicle) are :class:`Scenario` types in
:mod:`labkit.plans.scenarios`; this module resolves a track once, picks its scenario from
the registry and returns typed results (:class:`DesignCheck`, :class:`ReferenceDesign`).
The scenarios' helpers and constants are re-exported here, where the lab parts and older
notebooks import them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from labkit.plans.scenarios import (
    REGISTRY,
    Config,
    Constraint,
    DesignCheck,
    Evaluation,
    Objective,
    ReferenceDesign,
    Scenario,
    scenario_for,
)
from labkit.plans.scenarios.common import (
    BATCH_SLO_TPOT_S,
    CONTEXT_BUCKETS,
    DESIGN_MAX_DEVICES,
    DESIGN_MODE,
    DEVICE_BUCKETS,
    DUTY_BUCKETS,
    MODES,
    OFF_SCALE,
    active_seconds,
    allowed_precisions,
    context_bucket,
    device_bucket,
    duty_bucket,
    fleet_users,
    quality_check,
    slo_class,
    slo_tpot,
)
from labkit.plans.scenarios.fleet import (
    MOE_OPTIONS,
    fleet_models,
    fleet_sizing,
    fleet_table,
    not_candidate_reason,
    per_replica_limits,
)
from labkit.plans.scenarios.handheld import handheld_curves, handheld_metrics
from labkit.plans.scenarios.vehicle import (
    VEHICLE_LAYOUTS,
    cameras_and_fps,
    vehicle_frame,
    vehicle_load,
)
from labkit.plans.scenarios.wearable import DUTY_STEPS, INTERVALS_MS, ring_split, ring_window
from labkit.tracks import TRACKS, Track, get_track

__all__ = [
    "BATCH_SLO_TPOT_S", "CONTEXT_BUCKETS", "DESIGN_KEYS", "DESIGN_MAX_DEVICES", "DESIGN_MODE",
    "DEVICE_BUCKETS", "DUTY_BUCKETS", "DUTY_STEPS", "INTERVALS_MS", "MODES", "MOE_OPTIONS",
    "OFF_SCALE",
    "SCENARIOS", "VEHICLE_LAYOUTS", "Config", "Constraint", "DesignCheck", "Evaluation",
    "Objective", "ReferenceDesign", "Scenario", "active_seconds", "allowed_precisions",
    "cameras_and_fps", "context_bucket", "design_check", "design_defaults", "device_bucket",
    "duty_bucket", "fleet_models", "fleet_sizing", "fleet_table", "fleet_users", "handheld_curves",
    "handheld_metrics", "not_candidate_reason", "per_replica_limits", "quality_check",
    "reference_design", "ring_split", "ring_window", "scenario", "scenario_for", "slo_class",
    "slo_tpot", "vehicle_frame", "vehicle_load"
]

SCENARIOS = tuple(REGISTRY)   # the built-in scenario ids, in registry order


class _DesignKeys(Mapping[str, tuple[str, ...]]):
    """Scenario id -> its design keys, read live from the registry."""

    def __getitem__(self, key: str) -> tuple[str, ...]:
        return REGISTRY[key].design_keys

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY)

    def __len__(self) -> int:
        return len(REGISTRY)

    def __repr__(self) -> str:
        return repr(dict(self))


DESIGN_KEYS: Mapping[str, tuple[str, ...]] = _DesignKeys()
_REFERENCES: dict[tuple[str, str], ReferenceDesign | None] = {}


def scenario(track: str | Track) -> str:
    """The id of the track's scenario (``fleet`` | ``handheld`` | ``wearable`` |
    ``vehicle`` for the built-ins), from the track's data.

    Transformers: rented devices (``cost_unit == "USD"``) are a fleet, owned ones a
    handheld. CNNs: a device whose weights live in flash (``flash_bytes``) is a wearable
    microcontroller, any other a vehicle SoC serving several camera streams.
    """
    return scenario_for(get_track(track)).id


def design_defaults(track: str | Track) -> Config:
    """The track's starting configuration for Part D (the keys of :data:`DESIGN_KEYS`)."""
    tr = get_track(track)
    return scenario_for(tr).defaults(tr)


def _reference(tr: Track, sc: Scenario) -> ReferenceDesign | None:
    """``sc.reference(tr)``, cached for registry tracks."""
    if TRACKS.get(tr.id) is not tr:
        return sc.reference(tr)
    key = (sc.id, tr.id)
    if key not in _REFERENCES:
        _REFERENCES[key] = sc.reference(tr)
    return _REFERENCES[key]


def reference_design(track: str | Track) -> ReferenceDesign | None:
    """labkit's best design for a track's Part D target, or None when none is feasible.

    fleet: for every precision pair that passes the quality check,
    :func:`labkit.physics.parallelism.search` (achievable roofline, batch = :func:`fleet_users`,
    context = the track's, TPOT SLO, at most :data:`DESIGN_MAX_DEVICES` devices); the
    fewest devices win, then the lower latency, then the higher precision.
    handheld: the target context at every precision pair; the least energy per day wins.
    wearable: every precision, split, interval and duty step; the highest duty wins, then
    the least energy. vehicle: every precision and layout; the fewest SoCs, then the least
    energy. Other scenarios: their :meth:`Scenario.reference`. The result holds
    ``config``, ``devices``, ``objective`` and ``evaluation`` (+ ``search`` for fleets,
    ``extras["max_context"]`` for handhelds).
    """
    tr = get_track(track)
    return _reference(tr, scenario_for(tr))


def design_check(track: str | Track, config: Mapping[str, object]) -> DesignCheck:
    """Check a Part D design against every constraint of the track, and against labkit's.

    ``config`` keys (missing keys take the track's default, unknown keys raise):

    * fleet (e.g. Cloud Fleet): ``weight_bits``, ``kv_bits`` (4/8/16/32), ``tp``, ``cp``,
      ``pp``, ``dp``, ``ep`` (powers of two; ``ep`` only for MoE models). The target:
      :func:`fleet_users` concurrent sequences at the track's context within its TPOT SLO.
    * handheld (e.g. iPhone): ``weight_bits``, ``kv_bits``, ``context_tokens`` (the longest
      conversation the app serves; at least the track's context).
    * wearable (e.g. the smart ring): ``weight_bits``, ``duty`` (share of windows
      processed, (0, 1]), ``split`` ("on_device" | "features" | "raw"), ``interval_ms``
      (BLE connection interval, 7.5-4000 ms).
    * vehicle (e.g. the robotaxi): ``weight_bits``, ``layout`` ("single" SoC, two SoCs
      splitting the "cameras", or two splitting the "model" layers).

    Returns a :class:`DesignCheck`: ``track``, ``scenario``, ``config`` (normalised),
    ``feasible`` (every constraint passes), ``failed`` (names, in order), ``constraints``
    ({name: :class:`Constraint`}), ``devices`` (this design), ``min_devices`` (labkit's
    fewest-devices answer, None when nothing is feasible), ``extra_devices`` (devices -
    min_devices), ``objective`` (:class:`Objective`: cost or energy per day, this design's
    and the reference's), ``reference`` (labkit's :class:`ReferenceDesign`) and
    ``metrics``. ``as_dict()`` gives the JSON-ready dict.
    """
    tr = get_track(track)
    sc = scenario_for(tr)
    cfg = sc.normalise(tr, config)
    ev = sc.evaluate(tr, cfg)
    ref = _reference(tr, sc)
    objective = Objective(name=sc.objective_name(tr), unit=f"{tr.cost_unit}/day",
                          value=ev.daily_cost,
                          reference=None if ref is None else ref.objective)
    return DesignCheck(track=tr.id, scenario=sc.id, config=cfg, constraints=ev.constraints,
                       devices=ev.devices, min_devices=None if ref is None else ref.devices,
                       objective=objective, reference=ref, metrics=ev.metrics)
