"""A track's economy: the one cost of an event, its crossover, and every default figure.

* :func:`event_cost` -- **the** cost of one request / inference (named parts: front end,
  input pass or prefill, decision or decode), used by every Lab 1 figure and the crossover.
* :func:`crossover_point` -- Lab 1 Part A at one setting: cost, busy-basis daily cost,
  crossover day, phases, TPOT and resident weights (:class:`CrossoverPoint`).
* :func:`precision_floor` -- why a narrower weight saves nothing on a CNN (:class:`PrecisionFloor`).
* :func:`track_economy` -- every default figure of a track (``labkit economy``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit.core.format import counted, fmt_amount, fmt_num, fmt_time
from labkit.core.units import DAYS_PER_YEAR, SECONDS_PER_HOUR
from labkit.physics.batching import POLICIES
from labkit.physics.derating import device_class_of
from labkit.physics.economy import Crossover, cost_crossover, crossover_day
from labkit.physics.memory import resident_weight_bytes
from labkit.physics.phases import RequestPhases, cnn_compute_precision, cnn_inference_time
from labkit.plans.serving import (
    daily_basis,
    release_guardrails,
    serving_plan,
    state_reason,
    track_capacity,
)
from labkit.plans.workload import (
    front_end_label,
    front_end_s,
    policy_label,
    tpot_s,
    track_phases,
)
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track, get_track

__all__ = [
    "BUSY",
    "PROVISIONED",
    "CostPart",
    "Crossover",
    "CrossoverPoint",
    "EventCost",
    "PassBasis",
    "PrecisionFloor",
    "RequestPhases",
    "TrackEconomy",
    "busy_daily_cost",
    "crossover_point",
    "event_cost",
    "pass_basis_figures",
    "precision_floor",
    "track_crossover",
    "track_economy",
]

BUSY = "busy"
"""Daily-cost basis: device-time actually used (100% utilisation), no whole replicas."""
PROVISIONED = "provisioned"
"""Daily-cost basis: whole replicas rented (owned: run) at the utilisation cap, rounded up."""


# -- the cost of one event -----------------------------------------------------------------

@dataclass(frozen=True)
class CostPart:
    """One named part of an event's cost: ``cost`` in the track's cost unit per event,
    ``busy_s`` device-seconds it occupies (per event, shared batch work divided by B)."""

    name: str
    cost: float
    busy_s: float


@dataclass(frozen=True)
class EventCost:
    """The cost of one request / inference in ``cost_unit``: the sum of ``parts``.

    Rented devices (USD): devices x price/h / 3600 x (prefill_s + decode_s / B) at the
    track's batch B. Owned devices (mWh, Wh): energy of the event served one at a time,
    front end (signal features, where the device computes them) + model input pass +
    decision/decode, devices x power x busy time / J per unit. ``energy_j`` is that energy
    in J (None for USD). ``batch`` is the B the cost is counted at; ``basis`` says so.
    """

    cost_unit: str
    parts: tuple[CostPart, ...]
    total: float
    energy_j: float | None
    batch: int
    basis: str

    def part(self, name: str) -> CostPart:
        return {p.name: p for p in self.parts}[name]


def event_cost(track: str | Track, *, weight_bits: int | None = None,
               output_tokens: object = None) -> EventCost:
    """The one definition of the cost of an event (see :class:`EventCost`)."""
    tr = get_track(track)
    usd = tr.cost_unit == "USD"
    batch = tr.batch_size if usd else 1
    ph = track_phases(tr, weight_bits=weight_bits, output_tokens=output_tokens, batch=batch)
    labels = ph.phase_labels
    d = tr.devices_per_replica
    model = get_model(tr.model_id).name
    if usd:
        per_s = d * float(tr.price_per_device_hour or 0.0) / SECONDS_PER_HOUR
        shares = [(labels["prefill"], ph.prefill_s),
                  (f"{labels['decode']}, per request of a batch of {batch}",
                   ph.decode_s / batch)]
        parts = tuple(CostPart(n, per_s * t, t) for n, t in shares)
        return EventCost("USD", parts, sum(p.cost for p in parts), None, batch,
                         f"busy device-time at a batch of {batch}")
    unit_j = float(tr.joules_per_cost_unit or 1.0)
    watts = d * float(tr.power_w or 0.0)
    shares = [(f"{model} {labels['prefill']}", ph.prefill_s),
              (labels["decode"], ph.decode_s)]
    fe = front_end_s(tr)
    if fe > 0:
        shares.insert(0, (front_end_label(tr), fe))
    parts = tuple(CostPart(n, watts * t / unit_j, t) for n, t in shares)
    energy = sum(watts * t for _, t in shares)
    noun = "request" if tr.is_transformer else "inference"
    return EventCost(tr.cost_unit, parts, energy / unit_j, energy, 1,
                     f"energy of one {noun} at a time")


def track_crossover(track: str | Track, *, events_per_day: object = None,
                    cost_per_event: object = None, optimisation_saving: object = 0.0,
                    horizon_days: int | None = None) -> Crossover:
    """:func:`cost_crossover` with the track's setup cost, demand and :func:`event_cost`."""
    tr = get_track(track)
    return cost_crossover(
        tr.setup_cost, event_cost(tr).total if cost_per_event is None else cost_per_event,
        tr.events_per_day if events_per_day is None else events_per_day,
        tr.horizon_days if horizon_days is None else horizon_days, optimisation_saving)


# -- Lab 1 Part A at one setting -----------------------------------------------------------

@dataclass(frozen=True)
class CrossoverPoint:
    """Setup vs recurring cost at one setting (demand, precision, output length, saving).

    Costs in ``event.cost_unit``. ``daily_cost`` is on the **busy** basis
    (:data:`BUSY`: device-time actually used, 100% utilisation; no whole replicas, no cap):
    effective cost per event x events per day; the crossover uses it.
    ``crossover_days``: setup / daily cost, None beyond the horizon. ``tpot_s``: mean time
    per output token after the first, (e2e - TTFT) / (L - 1), s (None for a CNN).
    ``weight_bytes``: resident weights, bytes. ``budget_ratio``: daily cost / budget.
    ``payback_days``: days until the saving repays a second setup spent on the optimisation,
    setup / (cost per event x saving x events per day) (None without a saving);
    ``repay_saving``: the saving (fraction) whose payback is the horizon, setup /
    (cost per event x events per day x horizon) -- above 1 no saving repays it.
    """

    demand_rate_per_s: float
    weight_bits: int
    output_tokens: int | None
    saving: float
    event: EventCost
    effective_cost_per_event: float
    events_per_day: float
    daily_cost: float
    daily_basis: str
    daily_budget: float
    budget_ratio: float
    over_budget: bool
    setup_cost: float
    horizon_days: int
    crossover: Crossover
    crossover_days: float | None
    annual_savings: float
    payback_days: float | None
    repay_saving: float
    phases: RequestPhases
    tpot_s: float | None
    weight_bytes: float


def busy_daily_cost(track: str | Track, cost_per_event: float, demand_rate_per_s: float,
                    saving: float = 0.0) -> float:
    """The busy-basis daily cost (:data:`BUSY`), cost unit/day: cost per event x (1 - saving)
    x demand x active seconds per day."""
    tr = get_track(track)
    return (cost_per_event * (1.0 - saving) * demand_rate_per_s * tr.active_hours_per_day
            * SECONDS_PER_HOUR)


def crossover_point(track: str | Track, *, demand_rate_per_s: object = None,
                    weight_bits: int | None = None, output_tokens: object = None,
                    saving: float = 0.0, event: EventCost | None = None) -> CrossoverPoint:
    """Lab 1 Part A's figures at one setting (``saving``: a fraction of the cost per event;
    ``event``: the :func:`event_cost` at these bits and output length, if already known)."""
    tr = get_track(track)
    demand = float(str(tr.demand_rate_per_s if demand_rate_per_s is None
                       else demand_rate_per_s))
    bits = tr.weight_bits if weight_bits is None else int(weight_bits)
    out = (None if not tr.is_transformer else
           int(tr.output_tokens or 0) if output_tokens is None else int(str(output_tokens)))
    ev = event if event is not None else event_cost(tr, weight_bits=bits, output_tokens=out)
    per_day = demand * tr.active_hours_per_day * SECONDS_PER_HOUR
    cx = cost_crossover(tr.setup_cost, ev.total, per_day, tr.horizon_days, saving)
    t = cx.crossover_days
    if isinstance(t, tuple):
        raise TypeError("expected the crossover of one demand")
    ph = track_phases(tr, weight_bits=bits, output_tokens=out, batch=ev.batch)
    daily = float(cx.daily_cost)
    tpot = (None if out is None or out < 2 else
            tpot_s(ph.prefill_s + ph.decode_s, ph.ttft_s, out))
    return CrossoverPoint(
        demand_rate_per_s=demand, weight_bits=bits, output_tokens=out, saving=float(saving),
        event=ev, effective_cost_per_event=float(cx.effective_cost_per_event),
        events_per_day=per_day, daily_cost=daily, daily_basis=BUSY,
        daily_budget=tr.daily_budget, budget_ratio=daily / tr.daily_budget,
        over_budget=daily > tr.daily_budget, setup_cost=tr.setup_cost,
        horizon_days=tr.horizon_days, crossover=cx, crossover_days=t,
        annual_savings=float(cx.annual_savings),
        payback_days=(crossover_day(tr.setup_cost, ev.total * float(saving) * per_day)
                      if saving > 0 else None),
        repay_saving=(tr.setup_cost / (ev.total * per_day * tr.horizon_days)
                      if ev.total * per_day > 0 else float("inf")),
        phases=ph, tpot_s=tpot,
        weight_bytes=resident_weight_bytes(get_model(tr.model_id), bits))


@dataclass(frozen=True)
class PassBasis:
    """One CNN pass at ``bits`` on a track's device, on both rooflines: the achievable one
    every Lab 1 time uses (``compute_s`` of arithmetic, ``memory_s`` of traffic,
    ``overhead_s``: ``pass_s``, as :func:`event_cost` times it) and the peak one Lab 2's
    roofline quotes (``peak_compute_s``, ``peak_pass_s``: no derating, no overhead).
    ``derating_text`` names where the achievable rate comes from (the device class);
    ``rate_share`` is the achievable share of the peak arithmetic rate."""

    bits: int
    datapath: str
    regime: str
    compute_s: float
    memory_s: float
    overhead_s: float
    pass_s: float
    peak_compute_s: float
    peak_pass_s: float
    device_class: str
    derating_text: str
    rate_share: float


def pass_basis_figures(track: str | Track, bits: int) -> PassBasis:
    """:class:`PassBasis` of one pass of the track's CNN at ``bits`` (ValueError: a
    transformer, whose phases are not one pass)."""
    tr = get_track(track)
    if tr.is_transformer:
        raise ValueError(f"track {tr.id!r}: a language model has no single CNN pass")
    hw = get_hardware(tr.hardware_id)
    r = cnn_inference_time(hw, tr.model_id, bits, 1, "achievable")   # as event_cost times it
    k = cnn_inference_time(hw, tr.model_id, bits, 1, "peak")
    cls = device_class_of(hw).label
    return PassBasis(int(bits), cnn_compute_precision(hw, bits).upper(), str(r.regime),
                     float(r.compute_s), float(r.memory_s), float(r.overhead_s),
                     float(r.latency_s), float(k.compute_s), float(k.latency_s), cls,
                     f"the derating measured for the {cls} class",
                     float(k.compute_s) / float(r.compute_s))


@dataclass(frozen=True)
class PrecisionFloor:
    """A CNN weight precision whose cost per event equals other offered precisions'
    (``peers``): the device runs them all on one ``datapath`` and one pass is ``regime``
    (``compute_s`` of arithmetic vs ``memory_s`` of traffic, plus ``overhead_s``: the
    achievable pass ``pass_s``, as :func:`event_cost` times it), so narrower weights save
    nothing. ``cost_per_event`` in the track's unit (the :func:`event_cost` total)."""

    bits: int
    peers: tuple[int, ...]
    datapath: str
    regime: str
    compute_s: float
    memory_s: float
    cost_per_event: float
    device: str
    overhead_s: float = 0.0
    pass_s: float = 0.0   # the whole pass: max(compute, memory) + overhead, s (achievable)
    basis: PassBasis | None = None   # the same pass on both rooflines (peak beside it)


def precision_floor(track: str | Track, bits: int,
                    options: tuple[int, ...] | list[int]) -> PrecisionFloor | None:
    """The floor at ``bits`` among ``options`` (None: a transformer, or no equal peer)."""
    tr = get_track(track)
    if tr.is_transformer:
        return None
    cost = {b: event_cost(tr, weight_bits=b).total for b in {*options, bits}}
    peers = tuple(b for b in options if b != bits and cost[b] == cost[bits])
    if not peers:
        return None
    b = pass_basis_figures(tr, bits)
    return PrecisionFloor(bits, peers, b.datapath, b.regime, b.compute_s, b.memory_s,
                          cost[bits], get_hardware(tr.hardware_id).name, b.overhead_s,
                          b.pass_s, b)


# -- a track's economy in one record -------------------------------------------------------

def _plain(x: object) -> object:
    """numpy scalars -> Python numbers, so ``json.dumps`` accepts the record."""
    if isinstance(x, dict):
        return {str(k): _plain(val) for k, val in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(val) for val in x]
    if isinstance(x, np.generic):
        return x.item()
    return x


def _number(x: object) -> float | None:
    """A record's number (int, float or numpy scalar) as a float; None stays None."""
    if x is None:
        return None
    if isinstance(x, int | float | np.number):
        return float(x)
    raise ValueError(f"expected a number in the economy record, got {x!r}")


@dataclass(frozen=True)
class TrackEconomy:
    """A track's default economy: crossover, phases, capacity, plan and guardrails."""

    track: dict[str, object]
    crossover: dict[str, object]
    phases: dict[str, object]
    capacity: dict[str, object]
    plan: dict[str, object]
    guardrails: dict[str, object]

    def as_dict(self) -> dict[str, object]:
        """Plain JSON-serialisable dict (str, int, float, bool, None, lists, dicts)."""
        return {"track": _plain(self.track), "crossover": _plain(self.crossover),
                "phases": _plain(self.phases), "capacity": _plain(self.capacity),
                "plan": _plain(self.plan), "guardrails": _plain(self.guardrails)}

    def format_table(self) -> str:
        """Readable multi-line summary for terminals and notebook printouts."""
        t, c, ph, cap, pl, g = (self.track, self.crossover, self.phases, self.capacity,
                                self.plan, self.guardrails)
        unit = str(t["cost_unit"])
        cross = c["crossover_days"]
        cross_txt = (fmt_amount(cross, "days") if isinstance(cross, float)
                     else f"not within {c['horizon_days']} days")

        def money(x: object) -> str:  # as Lab 1 shows money: 12,139 USD, 23.38 USD
            return fmt_amount(_number(x), unit, ledger=True)

        def s(x: object) -> str:
            return fmt_time(_number(x))

        tr = get_track(str(t["id"]))
        if tr.is_transformer:
            phase_rows = [("prefill / decode", f"{s(ph['prefill_s'])} / {s(ph['decode_s'])}"),
                          ("TTFT / TPOT", f"{s(ph['ttft_s'])} / {s(ph['tpot_s'])}")]
        else:
            phase_rows = [("input pass / decision", f"{s(ph['prefill_s'])} / "
                                                    f"{s(ph['decode_s'])}"),
                          ("model latency (no front end)", s(ph["ttft_s"]))]
        replicas = counted(int(_number(pl["replicas"]) or 0), tr.replica_noun,
                           tr.replica_nouns)
        rows = [
            (f"{t['label']} ({t['id']})", ""),
            ("hardware / model", f"{t['hardware_id']} / {t['model_id']}"),
            ("setup cost", money(t["setup_cost"])),
            ("cost per event", money(t["cost_per_event"])),
            ("events per day", fmt_num(_number(c["events_per_day"]) or 0.0)),
            ("cost per event parts", " + ".join(
                f"{k} {money(val)}" for k, val in dict(c["cost_parts"]).items())),  # type: ignore[call-overload]
            ("recurring per day", money(c["daily_cost"]) + f" (busy basis, {c['cost_basis']})"),
            ("crossover", cross_txt),
            *phase_rows,
            (f"max {tr.state_nouns}", f"{cap['max_sessions']}"),
            ("capacity", str(cap["reason"])),
            ("plan", f"{pl['policy']}, {replicas}, "
                     f"{counted(int(_number(pl['total_devices']) or 0), 'device')}"),
            ("plan cost per day", money(pl["daily_cost"]) + " (the plan: "
             + (policy_label(tr, str(pl["policy"])) if str(pl["policy"]) in POLICIES
                else str(pl["policy"])) + "; "
             + str(pl["daily_basis"]) + ")"),
            ("daily budget", money(t["daily_budget"])),
            ("guardrails", "all pass" if g["passed"] else f"{g['binding']} binds"),
            ("reason", str(g["reason"])),
        ]
        width = max(len(k) for k, val in rows if val)
        return "\n".join(f"{k:<{width}}  {val}" if val else k for k, val in rows)


def track_economy(track: str | Track) -> TrackEconomy:
    """Every default figure of a track: what ``labkit economy --track ID`` reports."""
    tr = get_track(track)
    ev = event_cost(tr)
    cross = track_crossover(tr, cost_per_event=ev.total)
    ph = track_phases(tr)
    cap = track_capacity(tr)
    plan = serving_plan(tr)
    g = release_guardrails(tr, plan)
    r = plan.policy_result
    return TrackEconomy(
        track={
            "id": tr.id, "label": tr.label, "hardware_id": tr.hardware_id,
            "model_id": tr.model_id, "cost_unit": tr.cost_unit, "setup_cost": tr.setup_cost,
            "cost_per_event": ev.total, "daily_budget": tr.daily_budget,
            "demand_rate_per_s": tr.demand_rate_per_s, "weight_bits": tr.weight_bits,
            "kv_bits": tr.kv_bits, "devices_per_replica": tr.devices_per_replica,
            "slo_kind": tr.slo_kind, "slo_s": tr.slo_s, "ttft_slo_s": tr.ttft_slo_s,
            "stakeholder": f"{tr.stakeholder.name}, {tr.stakeholder.role}",
        },
        crossover={
            "events_per_day": cross.events_per_day, "daily_cost": cross.daily_cost,
            "daily_basis": BUSY, "cost_basis": ev.basis,
            "cost_parts": {c.name: c.cost for c in ev.parts},
            "weekly_cost": cross.weekly_cost, "crossover_days": cross.crossover_days,
            "horizon_days": cross.horizon_days,
            "annual_recurring_cost": cross.daily_cost * DAYS_PER_YEAR,
        },
        phases={
            "kind": ph.kind, "prefill_s": ph.prefill_s, "decode_s": ph.decode_s,
            "ttft_s": ph.ttft_s, "tpot_s": ph.tpot_s, "latency_s": ph.latency_s,
            "binding_phase": ph.binding_phase, "binding_label": ph.binding_label,
            "energy_per_request_j": ph.energy_j,
        },
        capacity={**cap.as_dict(), "reason": state_reason(tr, cap)},
        plan={
            "policy": plan.policy, "replicas": plan.replicas,
            "total_devices": plan.total_devices, "batch_size": plan.batch_size,
            "utilisation": plan.utilisation, "daily_cost": plan.daily_cost,
            "daily_basis": daily_basis(tr, plan),
            "cost_per_event": plan.cost_per_event,
            "baseline_daily_cost": plan.baseline_daily_cost,
            "replica_capacity_requests_per_s": plan.replica_capacity_requests_per_s,
            "slo_value_s": None if r is None else r.slo_value_s,
            "ttft_p99_s": None if r is None else r.ttft_p99_s,
            "slo_met": None if r is None else r.slo_met, "reason": plan.reason,
        },
        guardrails={
            "passed": g.passed, "binding": g.binding, "reason": g.reason,
            "checks": [{"name": c.name, "passed": c.passed, "value": c.value,
                        "limit": c.limit, "unit": c.unit} for c in g.checks],
        },
    )
