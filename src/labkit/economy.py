"""The inference economy: when the recurring serving bill overtakes the one-time setup.

Setup (fine-tuning, compilation, validation) is paid once; every request then costs
``cost_per_event`` (USD on rented devices, mWh or Wh of energy on owned ones). With
``events_per_day`` requests a day, cumulative serving cost grows linearly,

    recurring(t) = cost_per_event x (1 - saving) x events_per_day x t      (t in days)

and passes the setup cost at t* = setup / daily cost. :func:`track_economy` gathers a
track's defaults -- crossover, phase split, state capacity, serving plan and guardrails --
into one JSON-ready record for the notebooks and ``labkit economy --track ID --json``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit import validation as v
from labkit.hardware import Hardware, get_hardware
from labkit.models import Model
from labkit.phases import track_phases
from labkit.roofline import Derating, decode_roofline
from labkit.serving import release_guardrails, serving_plan, track_capacity
from labkit.tracks import Track, get_track
from labkit.units import DAYS_PER_YEAR, SECONDS_PER_HOUR

DAYS_PER_WEEK = 7.0


# -- cost crossover ------------------------------------------------------------------------

@dataclass(frozen=True)
class Crossover:
    """Setup vs recurring cost, in the caller's cost unit (USD, mWh, Wh).

    daily_cost / weekly_cost: recurring cost after the optimisation saving, per day / week.
    crossover_days: days until cumulative recurring cost exceeds ``setup_cost``; None when
    that lies beyond ``horizon_days`` (never inf or NaN). For an array of ``events_per_day``
    it is a tuple with one entry per element, and ``crossover_days_capped`` (min(t*,
    horizon)) with the boolean ``crosses`` is the plottable form.
    annual_savings: what the saving removes over a 365-day year.
    days, cumulative_recurring, cumulative_total: daily curves over the horizon (arrays of
    shape (horizon + 1,) or (len(events_per_day), horizon + 1)).
    """

    setup_cost: float
    cost_per_event: float
    effective_cost_per_event: float
    events_per_day: float | np.ndarray
    optimisation_saving: float
    horizon_days: int
    daily_cost: float | np.ndarray
    weekly_cost: float | np.ndarray
    crossover_days: float | tuple[float | None, ...] | None
    crossover_days_capped: float | np.ndarray
    crosses: bool | np.ndarray
    annual_savings: float | np.ndarray
    days: np.ndarray
    cumulative_recurring: np.ndarray
    cumulative_total: np.ndarray


def crossover_day(setup_cost: float, daily_cost: float) -> float | None:
    """t* = setup_cost / daily_cost, days; None when nothing recurs (daily cost 0)."""
    s = float(v.non_negative("setup_cost", setup_cost))
    d = float(v.non_negative("daily_cost", daily_cost))
    if d == 0.0:
        return None
    t = s / d
    return t if np.isfinite(t) else None


def cost_crossover(setup_cost: object, cost_per_event: object, events_per_day: object,
                   horizon_days: int = 365, optimisation_saving: object = 0.0) -> Crossover:
    """When cumulative serving cost passes the setup cost (vectorised over events_per_day).

    daily = cost_per_event x (1 - optimisation_saving) x events_per_day
    t*    = setup_cost / daily                      (None past the horizon, or if daily = 0)
    annual_savings = cost_per_event x saving x events_per_day x 365
    """
    setup = float(v.non_negative("setup_cost", setup_cost))
    cpe = float(v.non_negative("cost_per_event", cost_per_event))
    events = v.non_negative("events_per_day", events_per_day)
    horizon = v.positive_int("horizon_days", horizon_days)
    saving = float(v.fraction("optimisation_saving", optimisation_saving, allow_one=False))
    effective = cpe * (1.0 - saving)
    ev = np.asarray(events, dtype=float)
    daily = effective * ev
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t_star = np.where(daily > 0, setup / np.where(daily > 0, daily, 1.0), np.inf)
    crosses = np.isfinite(t_star) & (t_star <= horizon)
    capped = np.minimum(t_star, float(horizon))
    days = np.arange(horizon + 1, dtype=float)
    recurring = daily[..., None] * days
    annual = cpe * saving * ev * DAYS_PER_YEAR

    if ev.ndim == 0:
        cross: float | tuple[float | None, ...] | None = (
            float(t_star) if bool(crosses) else None)
        return Crossover(
            setup, cpe, effective, float(ev), saving, horizon, float(daily),
            float(daily) * DAYS_PER_WEEK, cross, float(capped), bool(crosses), float(annual),
            days, recurring, recurring + setup)
    cross = tuple(float(t) if c else None for t, c in zip(t_star.ravel(), crosses.ravel(),
                                                           strict=True))
    return Crossover(
        setup, cpe, effective, ev, saving, horizon, daily, daily * DAYS_PER_WEEK, cross,
        capped, crosses, annual, days, recurring, recurring + setup)


def cost_per_token(hardware: str | Hardware, model: str | Model, batch: object = 1,
                   context_tokens: object = 4096, weight_bits: int = 16, kv_bits: int = 16,
                   tp: int = 1, price_per_device_hour: object = None,
                   mode: str | Derating = "achievable") -> float | np.ndarray:
    """Rented cost of one decoded token, USD: tp x price / 3600 x step_s(batch) / batch.

    In the memory-bound regime the step barely grows with the batch, so the cost per token
    falls almost as 1 / batch; once compute or the KV read dominate it flattens.
    """
    hw = get_hardware(hardware)
    price = hw.price_usd_per_hour if price_per_device_hour is None else price_per_device_hour
    if price is None:
        raise ValueError(f"price_per_device_hour must be given: {hw.id} has no rental price")
    p = float(v.positive("price_per_device_hour", price))
    r = decode_roofline(hw, model, batch=batch, context_tokens=context_tokens,
                        weight_bits=weight_bits, kv_bits=kv_bits, tp=tp, mode=mode)
    return tp * p / SECONDS_PER_HOUR * r.per_token_s


def track_crossover(track: str | Track, *, events_per_day: object = None,
                    cost_per_event: object = None, optimisation_saving: object = 0.0,
                    horizon_days: int | None = None) -> Crossover:
    """:func:`cost_crossover` with the track's setup cost, cost per event and demand."""
    tr = get_track(track)
    return cost_crossover(
        tr.setup_cost, tr.cost_per_event if cost_per_event is None else cost_per_event,
        tr.events_per_day if events_per_day is None else events_per_day,
        tr.horizon_days if horizon_days is None else horizon_days, optimisation_saving)


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
        return _plain({"track": self.track, "crossover": self.crossover,
                       "phases": self.phases, "capacity": self.capacity,
                       "plan": self.plan, "guardrails": self.guardrails})  # type: ignore[return-value]

    def format_table(self) -> str:
        """Readable multi-line summary for terminals and notebook printouts."""
        t, c, ph, cap, pl, g = (self.track, self.crossover, self.phases, self.capacity,
                                self.plan, self.guardrails)
        unit = str(t["cost_unit"])
        cross = c["crossover_days"]
        cross_txt = (f"{cross:,.3g} days" if isinstance(cross, float)
                     else f"not within {c['horizon_days']} days")

        def s(x: object) -> str:
            return "n/a" if x is None else f"{float(x) * 1e3:,.4g} ms"  # type: ignore[arg-type]

        def n(x: object) -> str:
            f = float(x)  # type: ignore[arg-type]
            if abs(f) >= 1e3:
                return f"{f:,.0f}"
            return f"{f:,.2f}" if abs(f) >= 1 else f"{f:.4g}"

        daily = pl["daily_cost"]
        rows = [
            (f"{t['label']} ({t['id']})", ""),
            ("hardware / model", f"{t['hardware_id']} / {t['model_id']}"),
            ("setup cost", f"{n(t['setup_cost'])} {unit}"),
            ("cost per event", f"{n(t['cost_per_event'])} {unit}"),
            ("events per day", n(c["events_per_day"])),
            ("recurring per day", f"{n(c['daily_cost'])} {unit}"),
            ("crossover", cross_txt),
            ("prefill / input pass", s(ph["prefill_s"])),
            ("decode / decision", s(ph["decode_s"])),
            ("TTFT / TPOT", f"{s(ph['ttft_s'])} / {s(ph['tpot_s'])}"),
            ("binding phase", str(ph["binding_label"])),
            ("max sessions", f"{cap['max_sessions']}"),
            ("capacity", str(cap["reason"])),
            ("plan", f"{pl['policy']}, {pl['replicas']} replica(s), "
                     f"{pl['total_devices']} device(s)"),
            ("plan cost per day", "n/a" if daily is None else f"{n(daily)} {unit}"),
            ("daily budget", f"{n(t['daily_budget'])} {unit}"),
            ("guardrails", "all pass" if g["passed"] else f"{g['binding']} binds"),
            ("reason", str(g["reason"])),
        ]
        width = max(len(k) for k, val in rows if val)
        return "\n".join(f"{k:<{width}}  {val}" if val else k for k, val in rows)


def track_economy(track: str | Track) -> TrackEconomy:
    """Every default figure of a track: what ``labkit economy --track ID`` reports."""
    tr = get_track(track)
    cross = track_crossover(tr)
    ph = track_phases(tr)
    cap = track_capacity(tr)
    plan = serving_plan(tr)
    g = release_guardrails(tr, plan)
    r = plan.policy_result
    return TrackEconomy(
        track={
            "id": tr.id, "label": tr.label, "hardware_id": tr.hardware_id,
            "model_id": tr.model_id, "cost_unit": tr.cost_unit, "setup_cost": tr.setup_cost,
            "cost_per_event": tr.cost_per_event, "daily_budget": tr.daily_budget,
            "demand_rate_per_s": tr.demand_rate_per_s, "weight_bits": tr.weight_bits,
            "kv_bits": tr.kv_bits, "devices_per_replica": tr.devices_per_replica,
            "slo_kind": tr.slo_kind, "slo_s": tr.slo_s, "ttft_slo_s": tr.ttft_slo_s,
            "stakeholder": f"{tr.stakeholder.name}, {tr.stakeholder.role}",
        },
        crossover={
            "events_per_day": cross.events_per_day, "daily_cost": cross.daily_cost,
            "weekly_cost": cross.weekly_cost, "crossover_days": cross.crossover_days,
            "horizon_days": cross.horizon_days,
            "annual_recurring_cost": cross.daily_cost * DAYS_PER_YEAR,  # type: ignore[operator]
        },
        phases={
            "kind": ph.kind, "prefill_s": ph.prefill_s, "decode_s": ph.decode_s,
            "ttft_s": ph.ttft_s, "tpot_s": ph.tpot_s, "latency_s": ph.latency_s,
            "binding_phase": ph.binding_phase, "binding_label": ph.binding_label,
            "energy_per_request_j": ph.energy_j,
        },
        capacity=cap.as_dict(),
        plan={
            "policy": plan.policy, "replicas": plan.replicas,
            "total_devices": plan.total_devices, "batch_size": plan.batch_size,
            "utilisation": plan.utilisation, "daily_cost": plan.daily_cost,
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
