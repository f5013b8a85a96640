"""Lab 2's design check: a Part D design against every constraint of its track, and
labkit's reference design.

The deployment kinds (fleet, handheld, wearable, vehicle) are :class:`Scenario` types in
:mod:`labkit.plans.scenarios`; this module resolves a track once, picks its scenario from
the registry and returns typed results (:class:`DesignCheck`, :class:`ReferenceDesign`).
The scenarios' helpers and constants are re-exported here, where the lab parts and older
notebooks import them.

Each scenario judges a design by :meth:`Scenario.check` (its constraints, then those of
serving the demand on it: a fleet's prefill, TTFT and utilisation cap,
:mod:`labkit.scenarios.fleet.plan.serving`) and finds its reference itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

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
from labkit.scenarios.fleet.plan.scenario import (
    MOE_OPTIONS,
    fleet_models,
    fleet_sizing,
    fleet_table,
    not_candidate_reason,
    per_replica_limits,
)
from labkit.scenarios.fleet.plan.serving import (
    FleetServing,
    fleet_serving_constraints,
    replica_slots,
    served_search,
)
from labkit.scenarios.fleet.plan.serving import fleet_serving as serving_of
from labkit.scenarios.handheld.plan.scenario import handheld_curves, handheld_metrics
from labkit.scenarios.vehicle.plan.scenario import (
    VEHICLE_LAYOUTS,
    cameras_and_fps,
    vehicle_frame,
    vehicle_load,
)
from labkit.scenarios.wearable.plan.scenario import (
    DUTY_STEPS,
    INTERVALS_MS,
    ring_split,
    ring_window,
)
from labkit.tracks import TRACKS, Track, get_track

__all__ = [
    "BATCH_SLO_TPOT_S", "CONTEXT_BUCKETS", "DESIGN_KEYS", "DESIGN_MAX_DEVICES", "DESIGN_MODE",
    "DEVICE_BUCKETS", "DUTY_BUCKETS", "DUTY_STEPS", "INTERVALS_MS", "MODES", "MOE_OPTIONS",
    "OFF_SCALE", "PRECISION_ASPECTS", "SCENARIOS", "VEHICLE_LAYOUTS", "Config", "Constraint",
    "DesignCheck", "Evaluation", "FleetServing", "Objective", "PrecisionChange",
    "ReferenceDesign", "Scenario", "active_seconds", "allowed_precisions", "cameras_and_fps",
    "context_bucket", "design_check", "design_defaults", "device_bucket", "duty_bucket",
    "fewest_over_budget", "fleet_models", "fleet_serving", "fleet_serving_constraints",
    "fleet_sizing", "fleet_table", "fleet_users", "handheld_curves", "handheld_metrics",
    "not_candidate_reason", "per_replica_limits", "precision_changes", "quality_check",
    "reference_design", "replica_slots", "ring_split", "ring_window", "scenario",
    "scenario_for", "served_search", "slo_class", "slo_tpot", "vehicle_frame",
    "vehicle_load",
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
    """labkit's reference design, cached for registry tracks."""
    if TRACKS.get(tr.id) is not tr:
        return sc.reference(tr)
    key = (sc.id, tr.id)
    if key not in _REFERENCES:
        _REFERENCES[key] = sc.reference(tr)
    return _REFERENCES[key]


def fleet_serving(track: str | Track, config: Mapping[str, object]) -> FleetServing | None:
    """How a fleet design serves its track's demand (:class:`FleetServing`); None when the
    design's degrees are not a layout."""
    tr = get_track(track)
    return serving_of(tr, scenario_for(tr).normalise(tr, config))


def reference_design(track: str | Track) -> ReferenceDesign | None:
    """labkit's best design for a track's Part D target, or None when none is feasible.

    fleet: :func:`served_search`: every layout of :func:`fleet_table` (achievable
    roofline, batch = :func:`fleet_users`, the track's context, at most
    :data:`DESIGN_MAX_DEVICES` devices) at every precision pair that passes the quality
    check, judged with each request's prefill on its replicas, the TTFT SLO and the
    utilisation cap (:func:`fleet_serving`); the fewest devices win, then the lower TPOT,
    then the higher precision.
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
      :func:`fleet_users` concurrent sequences at the track's context, the demand's
      prefills on the same replicas, TPOT (per-request mean) and TTFT within their SLOs,
      every replica within the utilisation cap (:func:`fleet_serving_constraints`).
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
    ev = sc.check(tr, cfg)
    ref = _reference(tr, sc)
    objective = Objective(name=sc.objective_name(tr), unit=f"{tr.cost_unit}/day",
                          value=ev.daily_cost,
                          reference=None if ref is None else ref.objective)
    return DesignCheck(track=tr.id, scenario=sc.id, config=cfg, constraints=ev.constraints,
                       devices=ev.devices, min_devices=None if ref is None else ref.devices,
                       objective=objective, reference=ref, metrics=ev.metrics)


_OVER_BUDGET: dict[str, ReferenceDesign | None] = {}


def fewest_over_budget(track: str | Track) -> ReferenceDesign | None:
    """When no design fits the daily budget: the fewest-devices design that meets every
    other constraint (:meth:`Scenario.over_budget_reference`; what the budget would have to
    pay for); None when a design fits the budget, the scenario has no budget search, or
    none meets the rest either."""
    tr = get_track(track)
    sc = scenario_for(tr)
    if _reference(tr, sc) is not None:
        return None
    if TRACKS.get(tr.id) is not tr:
        return sc.over_budget_reference(tr)
    if tr.id not in _OVER_BUDGET:
        _OVER_BUDGET[tr.id] = sc.over_budget_reference(tr)
    return _OVER_BUDGET[tr.id]


# -- what the weight precision changes on a track --------------------------------------------------

PRECISION_ASPECTS: Mapping[str, str] = {
    "memory": "memory", "flash": "memory", "sram": "memory", "tpot": "latency",
    "ttft": "latency", "deadline": "latency", "energy": "energy"}
"""Constraint name -> the aspect of a design it measures (memory, latency or energy)."""


@dataclass(frozen=True)
class PrecisionChange:
    """One constraint of a design with ``bits``-bit weights and with ``other_bits``-bit
    weights, everything else equal: ``value`` / ``other_value`` in ``unit`` (None: not
    evaluable); ``aspect``: memory | latency | energy."""

    name: str
    aspect: str
    unit: str
    bits: int
    other_bits: int
    value: float | None
    other_value: float | None

    @property
    def lower(self) -> bool:
        """The value at ``bits`` is lower (by more than 0.5%) than at ``other_bits``."""
        if self.value is None or self.other_value is None:
            return False
        return self.value < self.other_value * (1 - 5e-3)


def precision_changes(track: str | Track, config: Mapping[str, object],
                      other_bits: int) -> tuple[PrecisionChange, ...]:
    """Each memory, latency and energy constraint of ``config`` next to the same design
    with ``other_bits``-bit weights (:data:`PRECISION_ASPECTS`)."""
    here = design_check(track, config)
    there = design_check(track, {**here.config, "weight_bits": other_bits})
    bits = int(here.config["weight_bits"])
    out = []
    for name, c in here.constraints.items():
        aspect = PRECISION_ASPECTS.get(name)
        if aspect is None:
            continue
        o = there.constraints.get(name)
        out.append(PrecisionChange(name, aspect, c.unit, bits, int(other_bits), c.value,
                                   None if o is None else o.value))
    return tuple(out)
