"""Fleet: a transformer served on rented devices (``cost_unit == "USD"``), e.g. Cloud Fleet.

A design is a precision pair and a TP x CP x PP x DP (x EP) layout; it serves
:func:`~labkit.plans.scenarios.common.fleet_users` concurrent sequences at the track's
context within its TPOT SLO and daily budget, each request's prefill on the same replicas
(:mod:`.fleet_serving`: time to first token, the per-request mean TPOT with prefill
stalls, the utilisation cap). labkit's reference is the fewest design that passes every
constraint (:func:`.fleet_serving.served_search`). The layout tables are
:mod:`.fleet_table`'s (re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labkit.core import validation as v
from labkit.core.format import counted, fmt, fmt_count, format_bytes
from labkit.physics.parallelism import ConfigTable
from labkit.plans.scenarios.base import (
    Config,
    Constraint,
    Evaluation,
    Metrics,
    MetricValue,
    ReferenceDesign,
    Scenario,
)
from labkit.plans.scenarios.common import (
    DESIGN_MAX_DEVICES,
    constraint,
    context_tokens,
    device_bucket,
    fleet_users,
    memory_basis,
    quality_check,
    serving_device,
)
from labkit.scenarios.fleet.plan.serving import fleet_serving_constraints, served_search
from labkit.scenarios.fleet.plan.table import (
    AXES,
    MOE_OPTIONS,
    fleet_models,
    fleet_sizing,
    fleet_table,
    not_candidate_reason,
    per_replica_limits,
)
from labkit.tracks import Track

__all__ = ["AXES", "MOE_OPTIONS", "Fleet", "fleet_models", "fleet_sizing", "fleet_table",
           "not_candidate_reason", "per_replica_limits"]


def _layout_constraints(tr: Track, deg: tuple[int, ...], table: ConfigTable,
                        row: int | None, metrics: dict[str, MetricValue]) -> list[Constraint]:
    """layout, memory and TPOT of one layout (metrics gain its latency and memory)."""
    hw = serving_device(tr)
    devices = deg[0] * deg[1] * deg[2] * deg[3]
    if row is None:
        why = not_candidate_reason(tr, deg, fleet_users(tr), context_tokens(tr))
        return [constraint("layout", False, None, None, "", why),
                constraint("memory", False, None, hw.usable_memory_bytes, "bytes",
                           "not evaluated: no such layout"),
                constraint("tpot", False, None, tr.slo_s, "s", "not evaluated: no such layout")]
    used, lat = float(table.used_bytes[row]), float(table.per_token_latency_s[row])
    c = table.config(row)
    metrics.update(per_token_latency_s=lat, used_bytes=used, comm_s=c.comm_s,
                   roofline_s=c.roofline_s, throughput_tokens_per_s=c.throughput_tokens_per_s)
    return [
        constraint("layout", True, float(devices), float(DESIGN_MAX_DEVICES), "devices",
                   f"{counted(devices, 'device')}: TP{deg[0]} x CP{deg[1]} x PP{deg[2]} x "
                   f"DP{deg[3]}"
                   + (f" (EP{deg[4]})" if deg[4] > 1 else "")),
        constraint("memory", bool(table.fits[row]), used, float(table.capacity_bytes), "bytes",
                   f"binding device holds {format_bytes(c.weights_bytes)} weights + "
                   f"{format_bytes(c.kv_bytes)} KV + {format_bytes(c.transient_bytes)} "
                   f"transient of {memory_basis(tr)}"),
        Constraint.compare("tpot", lat, tr.slo_s, "s",
                           f"time per output token {fmt(lat * 1e3)} ms ({fmt(c.comm_s * 1e3)} ms "
                           f"of it communication) vs {fmt(tr.slo_s * 1e3)} ms"),
    ]


def _price(tr: Track) -> float:
    if tr.price_per_device_hour is None:
        raise ValueError(f"track {tr.id!r} has no price_per_device_hour")
    return float(tr.price_per_device_hour)


class Fleet(Scenario):
    """Rented devices serving many concurrent conversations; fewest devices win."""

    id = "fleet"
    order = 10
    label = "fleet"
    design_keys = ("weight_bits", "kv_bits", *AXES)

    def applies_to(self, track: Track) -> bool:
        return track.is_transformer and track.cost_unit == "USD"

    def defaults(self, track: Track) -> Config:
        return {"weight_bits": track.weight_bits, "kv_bits": track.kv_bits,
                "tp": track.devices_per_replica, "cp": 1, "pp": 1, "dp": 1, "ep": 1}

    def validate(self, track: Track, raw: Mapping[str, object]) -> Config:
        cfg: Config = {"weight_bits": v.precision_bits("weight_bits", raw["weight_bits"]),
                       "kv_bits": v.precision_bits("kv_bits", raw["kv_bits"])}
        for k in AXES:
            cfg[k] = v.positive_int(k, raw[k])
        return cfg

    def evaluate(self, track: Track, config: Config) -> Evaluation:
        tr = track
        wb, kb = int(config["weight_bits"]), int(config["kv_bits"])
        deg = tuple(int(config[k]) for k in AXES)
        devices = deg[0] * deg[1] * deg[2] * deg[3]
        table, index = fleet_table(tr, wb, kb)
        metrics: dict[str, MetricValue] = {
            "users": fleet_users(tr), "context_tokens": context_tokens(tr),
            "tpot_slo_s": tr.slo_s, "degrees": deg}
        cons = _layout_constraints(tr, deg, table, index.get(deg), metrics)
        cons.append(quality_check(tr, wb, kb))
        price = _price(tr)
        daily = devices * price * tr.active_hours_per_day
        cons.append(Constraint.compare(
            "cost", daily, tr.daily_budget, f"{tr.cost_unit}/day",
            f"{devices} x {price:g} USD/h x {tr.active_hours_per_day:g} h = "
            f"{fmt_count(daily)} USD/day vs budget {tr.budget_text}"))
        metrics["daily_cost"] = daily
        return Evaluation.of(cons, metrics, devices)

    def serving_constraints(self, track: Track, config: Config, evaluation: Evaluation
                            ) -> tuple[Sequence[Constraint], Metrics]:
        """Prefill on the design's own replicas: TTFT, the per-request mean TPOT with
        prefill stalls (it replaces the decode-only step check) and the utilisation cap."""
        return fleet_serving_constraints(track, config)

    def reference(self, track: Track) -> ReferenceDesign | None:
        """The fewest devices that pass every constraint, served (:func:`served_search`):
        every layout at every precision pair that keeps quality; ties: the lower TPOT,
        then the higher precision."""
        cfg = served_search(track)
        return None if cfg is None else self._judged(track, cfg, allowed=())

    def over_budget_reference(self, track: Track) -> ReferenceDesign | None:
        """The fewest design that meets every constraint but the daily budget."""
        cfg = served_search(track, within_budget=False)
        return None if cfg is None else self._judged(track, cfg, allowed=("cost",))

    def _judged(self, track: Track, config: Config,
                allowed: tuple[str, ...]) -> ReferenceDesign:
        cfg = self.normalise(track, config)
        ev = self.check(track, cfg)
        if set(ev.failed) - set(allowed):
            raise AssertionError(f"fleet reference {cfg} fails {ev.failed}")
        return ReferenceDesign(cfg, ev.devices, ev.daily_cost, ev, None, self.extras(track))

    def answer(self, reference: ReferenceDesign | None) -> str:
        return device_bucket(None if reference is None else reference.devices)


SCENARIO = Fleet()
