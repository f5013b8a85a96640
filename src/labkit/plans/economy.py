"""A track's economy: its cost crossover and every default figure in one record."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit.core.format import fmt_amount, fmt_num, fmt_time
from labkit.core.units import DAYS_PER_YEAR
from labkit.physics.batching import POLICY_LABELS
from labkit.physics.economy import Crossover, cost_crossover
from labkit.plans.serving import (
    counted,
    release_guardrails,
    serving_plan,
    state_reason,
    track_capacity,
)
from labkit.plans.workload import track_phases
from labkit.tracks import Track, get_track


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
                          ("latency", s(ph["ttft_s"]))]
        replicas = counted(int(_number(pl["replicas"]) or 0), tr.replica_noun,
                           tr.replica_nouns)
        rows = [
            (f"{t['label']} ({t['id']})", ""),
            ("hardware / model", f"{t['hardware_id']} / {t['model_id']}"),
            ("setup cost", money(t["setup_cost"])),
            ("cost per event", money(t["cost_per_event"])),
            ("events per day", fmt_num(_number(c["events_per_day"]) or 0.0)),
            ("recurring per day", money(c["daily_cost"]) + " (one at a time, no batching)"),
            ("crossover", cross_txt),
            *phase_rows,
            (f"max {tr.state_nouns}", f"{cap['max_sessions']}"),
            ("capacity", str(cap["reason"])),
            ("plan", f"{pl['policy']}, {replicas}, {pl['total_devices']} device(s)"),
            ("plan cost per day", money(pl["daily_cost"]) + " (the plan: "
             + POLICY_LABELS.get(str(pl["policy"]), str(pl["policy"])) + ")"),
            ("daily budget", money(t["daily_budget"])),
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
