"""One model of a track's deployment: every quantity both labs show, computed once.

:func:`deployment` returns a :class:`Deployment` for a track and the settings on screen
(precision, demand, output length, batch). Each entry is a :class:`Quantity`: its value,
unit, the glossary's one definition (:data:`GLOSSARY`) and its *basis* -- the mode (peak or
achievable), the utilisation (busy or provisioned) and what is included -- so two screens
that show the same name show the same number, or say why not. Lab 1, Lab 2, the reports and
the cross-lab test read it; the physics stays below (``labkit.physics``).

    from labkit.plans.deployment import deployment
    d = deployment("oura_ring")
    d["energy_per_inference"].value          # J: front end + model, one window
    d.parts("energy_per_inference")          # the named parts that add to it
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from labkit.core import validation as v
from labkit.core.format import counted
from labkit.core.units import SECONDS_PER_HOUR
from labkit.physics.roofline import balance_context, critical_batch
from labkit.plans.economy import BUSY, PROVISIONED, event_cost
from labkit.plans.serving import serving_plan
from labkit.plans.workload import policy_label, track_phases
from labkit.tracks import Track, get_track

PEAK, ACHIEVABLE = "peak", "achievable"
"""Roofline modes: the datasheet's ceilings, or the ceilings real software reaches."""


@dataclass(frozen=True)
class Definition:
    """A glossary entry: the one ``unit`` and ``meaning`` of a quantity's name."""

    unit: str
    meaning: str


GLOSSARY: Mapping[str, Definition] = {
    "cost_per_event": Definition(
        "cost unit", "what one request or inference costs: rented devices' time (USD) or "
        "owned devices' energy, the sum of its named parts"),
    "energy_per_inference": Definition(
        "J", "energy of one inference or request on an owned device: its signal front end "
        "(where the device computes one) plus the model, one at a time"),
    "cost_per_day_busy": Definition(
        "cost unit/day", "cost per event x events per day: device-time actually used, as if "
        "every device were 100% busy (no whole replicas)"),
    "cost_per_day_provisioned": Definition(
        "cost unit/day", "whole replicas sized to the demand at the utilisation cap, rounded "
        "up: rented devices all the active hours, owned devices their busy energy"),
    "ttft": Definition("s", "time to first token: queueing aside, the prefill of the prompt"),
    "tpot": Definition(
        "s", "time per output token: mean over one request's tokens after the first, "
        "(end-to-end - TTFT) / (L - 1); a single gap between two tokens is an inter-token "
        "gap, not TPOT"),
    "devices": Definition(
        "devices", "devices the plan serves the demand with: whole replicas at the "
        "utilisation cap, prefill and decode both counted by the simulated scheduler"),
    "max_batch_in_memory": Definition(
        "sequences", "sessions one replica's memory holds at the context on screen, after "
        "the weights"),
    "b_star": Definition(
        "sequences", "critical batch B*: the batch at which reading the weights once per "
        "step takes as long as computing with them"),
    "l_star": Definition(
        "tokens", "balance context L*: the context at which one sequence's KV read takes as "
        "long as its compute"),
}


@dataclass(frozen=True)
class Quantity:
    """One number a student sees: ``name`` (a :data:`GLOSSARY` key), ``value`` in ``unit``
    (None: not defined for this track, e.g. TTFT of a CNN), its ``basis`` and named
    ``parts`` that add up to it (empty when it has none)."""

    name: str
    value: float | None
    unit: str
    basis: str
    parts: tuple[tuple[str, float], ...] = ()

    @property
    def definition(self) -> str:
        return GLOSSARY[self.name].meaning

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "unit": self.unit,
                "basis": self.basis, "definition": self.definition,
                "parts": [list(p) for p in self.parts]}


@dataclass(frozen=True)
class Deployment:
    """Every :class:`Quantity` of one track at one set of ``settings`` (by name)."""

    track_id: str
    settings: Mapping[str, object]
    quantities: Mapping[str, Quantity] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Quantity:
        if name not in self.quantities:
            raise KeyError(f"{name!r} is not a quantity of {self.track_id}; it has "
                           f"{', '.join(self.quantities)}")
        return self.quantities[name]

    def __iter__(self) -> Iterator[Quantity]:
        return iter(self.quantities.values())

    def value(self, name: str) -> float | None:
        return self[name].value

    def parts(self, name: str) -> dict[str, float]:
        return dict(self[name].parts)

    def table(self) -> list[dict[str, Any]]:
        """Rows for a report or the cross-lab table: one per quantity."""
        return [q.as_dict() for q in self]


def _economy(tr: Track, weight_bits: int, output_tokens: int | None,
             demand: float) -> list[Quantity]:
    ec = event_cost(tr, weight_bits=weight_bits, output_tokens=output_tokens)
    events = demand * tr.active_hours_per_day * SECONDS_PER_HOUR
    out = [Quantity("cost_per_event", ec.total, tr.cost_unit, ec.basis,
                    tuple((p.name, p.cost) for p in ec.parts)),
           Quantity("cost_per_day_busy", ec.total * events, f"{tr.cost_unit}/day",
                    f"{BUSY}: {ec.basis}")]
    if ec.energy_j is not None:
        unit_j = ec.energy_j / ec.total if ec.total else 1.0
        out.append(Quantity("energy_per_inference", ec.energy_j, "J", ec.basis,
                            tuple((p.name, p.cost * unit_j) for p in ec.parts)))
    return out


def _plan(tr: Track, weight_bits: int, kv_bits: int, demand: float) -> list[Quantity]:
    plan = serving_plan(tr, demand_rate_per_s=demand, weight_bits=weight_bits,
                        kv_bits=kv_bits, with_baseline=False)
    noun = tr.replica_noun if plan.replicas == 1 else tr.replica_nouns
    basis = (f"{PROVISIONED}: {plan.replicas} {noun} at the {tr.max_utilisation:.0%} "
             f"utilisation cap, {policy_label(tr, plan.policy)}"
             + ("" if plan.policy == "none" else f", up to {plan.batch_size} per pass")
             if plan.feasible else f"not feasible: {plan.reason}")
    where = (f"at {plan.capacity.context_tokens or 0:.0f} tokens of context, "
             if tr.is_transformer else "")
    return [Quantity("cost_per_day_provisioned", plan.daily_cost, f"{tr.cost_unit}/day", basis),
            Quantity("devices", float(plan.total_devices) if plan.feasible else None,
                     "devices", basis),
            Quantity("max_batch_in_memory", float(plan.capacity.max_sessions), "sequences",
                     f"{where}{counted(plan.devices_per_replica, 'device')} per "
                     f"{tr.replica_noun}")]


def _phases(tr: Track, weight_bits: int, kv_bits: int,
            output_tokens: int | None) -> list[Quantity]:
    if not tr.is_transformer:
        return []
    ph = track_phases(tr, weight_bits=weight_bits, kv_bits=kv_bits,
                      output_tokens=output_tokens)
    basis = f"{ACHIEVABLE}, batch {ph.batch}"
    ttft = float(ph.prefill_s)
    return [Quantity("ttft", ttft, "s", basis),
            Quantity("tpot", float(ph.tpot_s or 0.0), "s", basis)]


def _roofline(tr: Track, weight_bits: int, kv_bits: int, mode: str) -> list[Quantity]:
    if not tr.is_transformer:
        return []
    b = critical_batch(tr.hardware_id, tr.model_id, weight_bits, mode=mode)
    ell = balance_context(tr.hardware_id, tr.model_id, kv_bits, mode=mode)
    return [Quantity("b_star", float(b), "sequences", f"{mode}, {weight_bits}-bit weights"),
            Quantity("l_star", float(ell), "tokens", f"{mode}, {kv_bits}-bit KV")]


def deployment(track: str | Track, *, weight_bits: int | None = None,
               kv_bits: int | None = None, demand_rate_per_s: float | None = None,
               output_tokens: int | None = None, mode: str = PEAK) -> Deployment:
    """The track's deployment at these settings (defaults: the track's own).

    ``mode`` is the roofline mode B* and L* are quoted in (the mode on screen); every
    serving figure is on the achievable roofline, as the plans size them.
    """
    tr = get_track(track)
    wb = v.precision_bits("weight_bits", tr.weight_bits if weight_bits is None else weight_bits)
    kb = v.precision_bits("kv_bits", tr.kv_bits if kv_bits is None else kv_bits)
    demand = tr.demand_rate_per_s if demand_rate_per_s is None else float(demand_rate_per_s)
    if not (demand > 0 and math.isfinite(demand)):
        raise ValueError(f"demand_rate_per_s must be positive and finite, got {demand!r}")
    if mode not in (PEAK, ACHIEVABLE):
        raise ValueError(f"mode must be {PEAK!r} or {ACHIEVABLE!r}, got {mode!r}")
    qs = [*_economy(tr, wb, output_tokens, demand), *_plan(tr, wb, kb, demand),
          *_phases(tr, wb, kb, output_tokens), *_roofline(tr, wb, kb, mode)]
    settings = {"weight_bits": wb, "kv_bits": kb, "demand_rate_per_s": demand,
                "output_tokens": output_tokens, "mode": mode}
    return Deployment(tr.id, settings, {q.name: q for q in qs})
