"""Fleet: a transformer served on rented devices (``cost_unit == "USD"``), e.g. Cloud Fleet.

A design is a precision pair and a TP x CP x PP x DP (x EP) layout; it serves
:func:`~labkit.plans.scenarios.common.fleet_users` concurrent sequences at the track's
context within its TPOT SLO and daily budget. labkit's reference is
:func:`labkit.physics.parallelism.search` at every precision pair that keeps quality.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from labkit.core import validation as v
from labkit.core.format import fmt_count, format_bytes
from labkit.core.units import bits_to_bytes
from labkit.physics.capacity import Sizing, max_batch_within_slo, size_deployment
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.parallelism import ConfigTable, ParallelismSearch, enumerate_configs, search
from labkit.physics.roofline import decode_roofline, get_mode, step_weight_params
from labkit.plans.scenarios.base import (
    Config,
    Constraint,
    Evaluation,
    MetricValue,
    Rank,
    ReferenceDesign,
    Scenario,
)
from labkit.plans.scenarios.common import (
    DESIGN_MAX_DEVICES,
    DESIGN_MODE,
    allowed_precisions,
    constraint,
    context_tokens,
    device_bucket,
    fleet_users,
    quality_check,
)
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model, get_model
from labkit.tracks import Track

AXES = ("tp", "cp", "pp", "dp", "ep")
MOE_OPTIONS = ("mixtral-8x7b", "deepseek-v3")
"""Mixture-of-experts models a fleet's Part C offers beside the track's own model (registry
ids; figures and sources in :mod:`labkit.registries.models`)."""
_TABLES: dict[tuple[str, str, int, int, int, int],
              tuple[ConfigTable, dict[tuple[int, ...], int]]] = {}


def fleet_models(tr: Track) -> tuple[str, ...]:
    """The track's model, then each of :data:`MOE_OPTIONS` that is another model."""
    return (tr.model_id, *(m for m in MOE_OPTIONS if m != tr.model_id))


def fleet_table(tr: Track, weight_bits: int, kv_bits: int, context: int | None = None,
                batch: int | None = None, model: str | None = None,
                ) -> tuple[ConfigTable, dict[tuple[int, ...], int]]:
    """:func:`labkit.physics.parallelism.enumerate_configs` of a fleet track (cached), and
    the row of each (tp, cp, pp, dp, ep); ``model`` (a registry id) replaces the track's."""
    ctx = context_tokens(tr) if context is None else int(context)
    b = fleet_users(tr) if batch is None else int(batch)
    mid = tr.model_id if model is None else get_model(model).id
    key = (tr.hardware_id, mid, ctx, b, weight_bits, kv_bits)
    if key not in _TABLES:
        t = enumerate_configs(tr.hardware_id, mid, ctx, b, weight_bits, kv_bits,
                              max_devices=DESIGN_MAX_DEVICES, mode=DESIGN_MODE)
        rows = zip(t.tp.tolist(), t.cp.tolist(), t.pp.tolist(), t.dp.tolist(), t.ep.tolist(),
                   strict=True)
        index: dict[tuple[int, ...], int] = {k: i for i, k in enumerate(rows)}
        _TABLES[key] = (t, index)
    return _TABLES[key]


def not_candidate_reason(tr: Track, deg: tuple[int, ...], batch: int, context: int,
                         model: str | None = None) -> str:
    """Why a (tp, cp, pp, dp, ep) layout is not among :func:`fleet_table`'s rows
    (``model``: a registry id replacing the track's)."""
    m = get_model(tr.model_id if model is None else model)
    hw = get_hardware(tr.hardware_id)
    tp, cp, pp, dp, ep = deg
    names = dict(zip(AXES, deg, strict=True))
    bad = [k for k, x in names.items() if x & (x - 1)]
    if bad:
        return f"{', '.join(bad)} must be powers of two"
    if tp > m.q_heads:
        return f"TP{tp} exceeds the {m.q_heads} query heads"
    if cp > max(1, context // 1024):
        return (f"CP{cp} would leave under 1,024 tokens of a {context:,}-token sequence per "
                f"rank (CP <= {max(1, context // 1024)})")
    if pp > m.layers:
        return f"PP{pp} exceeds the {m.layers} layers"
    if dp > batch:
        return f"DP{dp} is more replicas than the {batch:,} sequences to serve"
    if ep > 1 and not m.is_moe:
        return f"EP{ep} needs a mixture-of-experts model; {m.name} is dense"
    if m.is_moe and ((tp * cp * dp) % ep or m.experts_total % ep):
        return f"EP{ep} must divide both the stage's devices and the {m.experts_total} experts"
    if tp * cp * pp * dp > DESIGN_MAX_DEVICES:
        return f"{tp * cp * pp * dp} devices exceed the {DESIGN_MAX_DEVICES}-device cap"
    if hw.interconnect_bandwidth <= 0 and hw.scaleout_bandwidth <= 0:
        return f"{hw.name} has no link to a peer"
    return "this layout needs a link the hardware does not have"


def per_replica_limits(hw: Hardware, m: Model, context: float, tpot_s: float, weight_bits: int,
                       kv_bits: int, devices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sequences one replica of ``devices`` pooled devices holds by KV memory and by the TPOT
    budget, as :func:`labkit.physics.capacity.size_deployment` counts them (even split, no
    comm).

    KV: floor((usable - weights/d) / (S kv_bpt / d)). TPOT (dense): the step
    (W + B (c + k)) / d + o <= T gives B = floor((d (T - o) - W) / (c + k)); MoE models
    use :func:`labkit.physics.capacity.max_batch_within_slo` (their weight read grows with B).
    """
    d = get_mode(DESIGN_MODE, hw)
    dev = np.asarray(devices, dtype=float)
    wb = bits_to_bytes(weight_bits)
    w_dev = float(step_weight_params(m, 1e9, 1, include_lm_head=d.include_lm_head)) * wb / dev
    kv_seq = context * kv_bytes_per_token(m, kv_bits) / dev
    b_kv = np.floor(np.maximum(hw.usable_memory_bytes - w_dev, 0.0) / kv_seq)
    if m.is_moe:
        b_slo = np.asarray([max_batch_within_slo(hw, m, context, tpot_s, int(x), weight_bits,
                                                 kv_bits, DESIGN_MODE) for x in devices],
                           dtype=float)
    else:
        r = decode_roofline(hw, m, 1, context, weight_bits, kv_bits, tp=1, mode=DESIGN_MODE)
        per_seq = float(r.compute_step_s) + float(r.kv_step_s)
        b_slo = np.floor(np.maximum((dev * (tpot_s - float(r.overhead_step_s))
                                     - float(r.weight_step_s)) / per_seq, 0.0))
    return b_kv, b_slo


def fleet_sizing(hw: Hardware, m: Model, users: int, context: int, tpot_s: float,
                 weight_bits: int, kv_bits: int, max_devices_per_replica: int = 64) -> Sizing:
    """:func:`labkit.physics.capacity.size_deployment` on the design (achievable) roofline."""
    return size_deployment(hw, m, users, context, tpot_s, weight_bits, kv_bits,
                           mode=DESIGN_MODE, max_devices_per_replica=max_devices_per_replica)


def _layout_constraints(tr: Track, deg: tuple[int, ...], table: ConfigTable,
                        row: int | None, metrics: dict[str, MetricValue]) -> list[Constraint]:
    """layout, memory and TPOT of one layout (metrics gain its latency and memory)."""
    hw = get_hardware(tr.hardware_id)
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
                   f"{devices} device(s): TP{deg[0]} x CP{deg[1]} x PP{deg[2]} x DP{deg[3]}"
                   + (f" (EP{deg[4]})" if deg[4] > 1 else "")),
        constraint("memory", bool(table.fits[row]), used, float(table.capacity_bytes), "bytes",
                   f"binding device holds {format_bytes(c.weights_bytes)} weights + "
                   f"{format_bytes(c.kv_bytes)} KV + {format_bytes(c.transient_bytes)} "
                   f"transient of {format_bytes(table.capacity_bytes)}"),
        Constraint.compare("tpot", lat, tr.slo_s, "s",
                           f"time per output token {lat * 1e3:.3g} ms ({c.comm_s * 1e3:.3g} ms "
                           f"of it communication) vs {tr.slo_s * 1e3:.3g} ms"),
    ]


def _price(tr: Track) -> float:
    if tr.price_per_device_hour is None:
        raise ValueError(f"track {tr.id!r} has no price_per_device_hour")
    return float(tr.price_per_device_hour)


class Fleet(Scenario):
    """Rented devices serving many concurrent conversations; fewest devices win."""

    id = "fleet"
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

    def reference(self, track: Track) -> ReferenceDesign | None:
        """:func:`labkit.physics.parallelism.search` (achievable roofline, batch =
        :func:`fleet_users`, the track's context and TPOT SLO, at most
        :data:`DESIGN_MAX_DEVICES` devices) at every precision pair that keeps quality:
        the fewest devices win, then the lower latency, then the higher precision."""
        tr = track
        users = fleet_users(tr)
        best: tuple[Rank, Config, int, ParallelismSearch] | None = None
        for wb, kb in allowed_precisions(tr):
            if kb is None:  # CNN precisions: not a fleet
                continue
            try:
                s = search(tr.hardware_id, tr.model_id, context_tokens(tr), users, wb, kb,
                           max_devices=DESIGN_MAX_DEVICES, latency_slo_s=tr.slo_s,
                           mode=DESIGN_MODE)
            except ValueError:
                continue
            c = s.chosen
            cfg: Config = {"weight_bits": wb, "kv_bits": kb, "tp": c.tp, "cp": c.cp,
                           "pp": c.pp, "dp": c.dp, "ep": c.ep}
            key = (float(c.devices), c.per_token_latency_s, -wb, -kb)
            if best is None or key < best[0]:
                best = (key, cfg, c.devices, s)
        if best is None:
            return None
        _, cfg, devices, s = best
        return self.finish(tr, cfg, devices, s)

    def answer(self, reference: ReferenceDesign | None) -> str:
        return device_bucket(None if reference is None else reference.devices)
