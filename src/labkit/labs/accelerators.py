"""Lab 2, "Accelerators": rooflines, capacity and parallelism -- parts A-D and the synthesis.

One source for every track. The parts teach the paper's section 5 (roofline B* and L*,
three-axis capacity planning, TP x CP x PP x DP x EP selection) on the track's own device
and model; what each part shows is chosen from the track's *data*, never its id:

* the model's architecture (``model.is_transformer``): the decode roofline (B*, L*, knee)
  or the classic roofline of a CNN pass;
* the deployment (:func:`scenario`): ``fleet`` (rented devices, ``cost_unit == "USD"``):
  :func:`labkit.capacity.size_deployment` and :func:`labkit.parallelism.search`;
  ``handheld`` (an on-device LM): what fits beside the OS and the cloud hand-off;
  ``wearable`` (a CNN whose weights sit in flash, ``hardware.flash_bytes``): SRAM vs
  flash, duty cycle, battery life and the BLE hand-off; ``vehicle`` (any other CNN):
  cameras x fps against a hard deadline on one or two SoCs.

Usage in a notebook::

    from labkit.labs.accelerators import Lab, design_check
    lab = Lab("cloud_fleet")
    lab.header()
    part = lab.part("A")
    part.banner(); part.predict; part.explore; part.reveal; part.math; part.checkpoint
    lab.synthesis()
    design_check("cloud_fleet", {"weight_bits": 8, "kv_bits": 8, "tp": 4, "dp": 4})

Answers are kept in an :class:`~labkit.answers.AnswerStore` under lab id ``"lab2"`` and
keys ``"<track>.<part>.prediction"`` / ``"<track>.<part>.checkpoint"`` / ``"<track>.memo"``.
The synthesis reads the student's Lab 1 entry from the design ledger and records Lab 2's.
Part D's live check is :func:`design_check`, the same function a grader calls.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import ipywidgets as ipw
import numpy as np

from labkit import edge
from labkit import validation as v
from labkit import widgets as lw
from labkit.answers import AnswerStore, now_iso, read_ledger, record_ledger, write_json_atomic
from labkit.capacity import SLO_TARGETS, Sizing, size_deployment
from labkit.hardware import Hardware, get_hardware
from labkit.kvcache import kv_bytes_per_token, weight_bytes
from labkit.labs.common import (
    CheckSpec,
    LabPart,
    Spec,
    _cards,
    _download_link,
    _md_entry,
    _ok,
    _plain,
    _table,
    _tex_num,
    answer_key,
    fmt_time,
)
from labkit.models import Model, get_model
from labkit.parallelism import ConfigTable, ParallelismSearch, enumerate_configs, search
from labkit.phases import (
    cnn_compute_precision,
    cnn_inference_time,
    prefill_time,
    request_phases,
    track_phases,
)
from labkit.roofline import (
    balance_context,
    critical_batch,
    decode_roofline,
    get_mode,
    knee_batch,
    memory_budget,
)
from labkit.serving import format_bytes, quality_loss, resident_weight_bytes
from labkit.tracks import PARTS, TRACKS, Track, get_track
from labkit.units import SECONDS_PER_HOUR, bits_to_bytes

LAB_ID = "lab2"
LAB_TITLE = "Accelerators: Rooflines, Capacity and Parallelism"
TIME_ESTIMATE = "50-60 minutes: four parts of about 10-14 minutes each, then a 5-minute synthesis"
REPORT_MD = "labkit_lab2_report.md"
REPORT_JSON = "labkit_lab2_report.json"
REPORT_SCHEMA = "labkit-report"
REPORT_VERSION = 1
PART_TITLES = {
    "A": "Where the workload sits on the roofline",
    "B": "Capacity planning",
    "C": "Parallelism and hand-off",
    "D": "Design challenge",
}
PART_MINUTES = {"A": "12 min", "B": "12 min", "C": "12-14 min", "D": "12-15 min"}
SCENARIOS = ("fleet", "handheld", "wearable", "vehicle")
MODES = ("peak", "achievable")
DESIGN_MODE = "achievable"     # Parts B-D size real systems: derated roofline
DESIGN_MAX_DEVICES = 512       # largest fleet layout Parts C and D enumerate
OFF_SCALE = 3.0                # constraint ratio shown for "not evaluable" / off the chart
BATCH_SLO_TPOT_S = 1.0         # "batch" workloads have no TPOT target: 1 s/token cap
DEVICE_BUCKETS = ((4, "1-4"), (8, "5-8"), (16, "9-16"), (32, "17-32"), (64, "33-64"))
CONTEXT_BUCKETS = ((1024, "under 1k"), (2048, "1k-2k"), (4096, "2k-4k"), (8192, "4k-8k"))
DUTY_BUCKETS = ((0.25, "below 25%"), (0.5, "25-49%"), (0.999, "50-99%"))


def scenario(track: str | Track) -> str:
    """``fleet`` | ``handheld`` | ``wearable`` | ``vehicle``, from the track's data.

    Transformers: rented devices (``cost_unit == "USD"``) are a fleet, owned ones a
    handheld. CNNs: a device whose weights live in flash (``flash_bytes``) is a wearable
    microcontroller, any other a vehicle SoC serving several camera streams.
    """
    tr = get_track(track)
    if tr.is_transformer:
        return "fleet" if tr.cost_unit == "USD" else "handheld"
    return "wearable" if get_hardware(tr.hardware_id).flash_bytes is not None else "vehicle"


# -- small helpers ------------------------------------------------------------------------------

def _pow2(limit: float) -> list[int]:
    out, d = [1], 2
    while d <= limit:
        out.append(d)
        d *= 2
    return out


def _bucket(x: float, buckets: Sequence[tuple[float, str]], top: str) -> str:
    for hi, name in buckets:
        if x <= hi:
            return name
    return top


def device_bucket(n: int | None) -> str:
    """'1-4' | '5-8' | '9-16' | '17-32' | '33-64' | 'more than 64' | 'none fits'."""
    return "none fits" if n is None else _bucket(n, DEVICE_BUCKETS, "more than 64")


def context_bucket(tokens: float | None) -> str:
    """'under 1k' | '1k-2k' | '2k-4k' | '4k-8k' | '8k or more' | 'none fits' (tokens)."""
    if tokens is None:
        return "none fits"
    return _bucket(tokens - 1, CONTEXT_BUCKETS, "8k or more")


def duty_bucket(duty: float | None) -> str:
    """'every window' (100%) | '50-99%' | '25-49%' | 'below 25%' | 'none fits'."""
    if duty is None:
        return "none fits"
    if duty >= 0.999:
        return "every window"
    return _bucket(duty - 1e-9, DUTY_BUCKETS, "50-99%")


def _num(x: float) -> str:
    """A count or amount for prose: 8 -> '8', 30.0 -> '30', 23.38 -> '23.4', 86400 ->
    '86,400', 1.2e9 -> '1.2e+09'."""
    a = abs(x)
    if a >= 1e6:
        return f"{x:.3g}"
    if a >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def _si(x: float, unit: str) -> str:
    """8.7e9 FLOP -> '8.7 GFLOP', 3.35e12 B/s -> '3.35 TB/s', 256e6 -> '256 MFLOP/s'."""
    for size, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= size:
            return f"{x / size:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def _ms(s: float | None) -> str:
    return fmt_time(s)


def _pct(x: float | None) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{100 * x:.3g}%"


def _energy(j: float) -> str:
    if j >= 3.6:
        return f"{j / 3.6:.3g} mWh" if j < 3600 else f"{j / 3600:.3g} Wh"
    if j >= 1:
        return f"{j:.3g} J"
    return f"{j * 1e3:.3g} mJ" if j >= 1e-3 else f"{j * 1e6:.3g} µJ"


def _cost(x: float | None, unit: str) -> str:
    return "n/a" if x is None else f"{_num(x)} {unit}"


def _log_domain(values: object, pad: float = 1.6) -> tuple[float, float]:
    a = np.asarray(values, dtype=float).ravel()
    a = a[np.isfinite(a) & (a > 0)]
    if a.size == 0:
        return 1e-3, 1.0
    lo, hi = float(a.min()) / pad, float(a.max()) * pad
    return (lo, hi) if hi > lo else (lo / 10, lo * 10)


def _lin_top(values: object, floor: float = 1.0, pad: float = 1.25) -> float:
    a = np.asarray(values, dtype=float).ravel()
    a = a[np.isfinite(a)]
    return max(floor, float(a.max()) * pad if a.size else floor)


def _ratio(c: Mapping[str, object]) -> float:
    """A constraint's use of its limit (> 1 fails), capped at OFF_SCALE for the charts."""
    val, lim = c["value"], c["limit"]
    if val is None or lim is None:
        return OFF_SCALE
    val, lim = float(val), float(lim)  # type: ignore[arg-type]
    if c["sense"] == "max":
        r = val / lim if lim > 0 else (0.0 if val <= 0 else OFF_SCALE)
    else:
        r = lim / val if val > 0 else OFF_SCALE
    return float(min(OFF_SCALE, r))


def _constraint(name: str, passed: bool, value: float | None, limit: float | None, unit: str,
                detail: str, sense: str = "max") -> dict[str, object]:
    """One design constraint: ``value`` vs ``limit`` (``sense`` 'max': value <= limit;
    'min': value >= limit)."""
    return {"name": name, "passed": bool(passed), "value": value, "limit": limit,
            "unit": unit, "sense": sense, "detail": detail}


def quality_check(tr: Track, weight_bits: int, kv_bits: int | None) -> dict[str, object]:
    """Estimated quality loss at ``weight_bits`` within the track's limit, KV at or above
    ``min_kv_bits`` (transformers), as in :func:`labkit.serving.release_guardrails`."""
    loss = quality_loss(tr, weight_bits)
    kv_ok = kv_bits is None or not tr.is_transformer or kv_bits >= tr.min_kv_bits
    detail = (f"{weight_bits}-bit weights: est. {loss:g} points lost vs "
              f"{tr.max_quality_loss_pct:g} allowed (floor {tr.min_weight_bits} bits)")
    if not kv_ok:
        detail += f"; {kv_bits}-bit KV is below the {tr.min_kv_bits}-bit floor"
    return _constraint("quality", loss <= tr.max_quality_loss_pct and kv_ok, loss,
                       tr.max_quality_loss_pct, "% points", detail)


def _is_registry(tr: Track) -> bool:
    return TRACKS.get(tr.id) is tr


# -- track-derived workload figures --------------------------------------------------------------

def fleet_users(track: str | Track) -> int:
    """Concurrent sequences a fleet track serves: Little's law, demand x request time.

    users = ceil(demand_rate_per_s x (prefill + decode) of one request at the track's
    batch, achievable roofline). Cloud Fleet: 100 requests/s x 12.76 s = 1,276.
    """
    tr = get_track(track)
    ph = track_phases(tr, mode=DESIGN_MODE)
    return max(1, math.ceil(tr.demand_rate_per_s * ph.latency_s - 1e-9))


def slo_class(track: str | Track) -> str:
    """The paper's SLO class whose TPOT range holds the track's SLO (``chat`` otherwise)."""
    tr = get_track(track)
    for name, t in SLO_TARGETS.items():
        if t.tpot_s is not None and t.tpot_s[0] <= tr.slo_s <= t.tpot_s[1]:
            return name
    return "chat"


def slo_tpot(cls: str) -> float:
    """TPOT budget of an SLO class: the upper end of its range (``batch``: 1 s cap)."""
    t = SLO_TARGETS[v.choice("slo", cls, tuple(SLO_TARGETS))].tpot_s
    return BATCH_SLO_TPOT_S if t is None else float(t[1])


def cameras_and_fps(tr: Track) -> tuple[int, float]:
    """Camera streams and frames per second of a vehicle track (streams, demand / streams)."""
    n = max(1, int(tr.arrival_streams))
    return n, tr.demand_rate_per_s / n


def _active_s(tr: Track) -> float:
    return tr.active_hours_per_day * SECONDS_PER_HOUR


# -- design check ---------------------------------------------------------------------------------

DESIGN_KEYS: Mapping[str, tuple[str, ...]] = {
    "fleet": ("weight_bits", "kv_bits", "tp", "cp", "pp", "dp", "ep"),
    "handheld": ("weight_bits", "kv_bits", "context_tokens"),
    "wearable": ("weight_bits", "duty", "split", "interval_ms"),
    "vehicle": ("weight_bits", "layout"),
}
INTERVALS_MS = (7.5, 15.0, 30.0, 50.0, 100.0, 150.0, 200.0, 500.0, 1000.0)
DUTY_STEPS = tuple(round(0.05 * k, 2) for k in range(1, 21))
VEHICLE_LAYOUTS = ("single", "cameras", "model")
_TABLES: dict[tuple, tuple[ConfigTable, dict[tuple[int, ...], int]]] = {}
_REFERENCES: dict[str, dict[str, object]] = {}
_DUTY_FREE = {"flash", "sram", "deadline", "quality"}  # wearable checks duty cannot change
_PASS_CACHE: dict[tuple, object] = {}   # one CNN pass per (device, model, bits[, window])


def design_defaults(track: str | Track) -> dict[str, object]:
    """The track's starting configuration for Part D (the keys of :data:`DESIGN_KEYS`)."""
    tr = get_track(track)
    sc = scenario(tr)
    if sc == "fleet":
        return {"weight_bits": tr.weight_bits, "kv_bits": tr.kv_bits,
                "tp": tr.devices_per_replica, "cp": 1, "pp": 1, "dp": 1, "ep": 1}
    if sc == "handheld":
        return {"weight_bits": tr.weight_bits, "kv_bits": tr.kv_bits,
                "context_tokens": int(tr.context_tokens)}  # type: ignore[arg-type]
    if sc == "wearable":
        return {"weight_bits": tr.weight_bits, "duty": 1.0, "split": "on_device",
                "interval_ms": 1000.0}
    return {"weight_bits": tr.weight_bits, "layout": "single"}


def _normalise(tr: Track, sc: str, config: Mapping[str, object]) -> dict[str, object]:
    if not isinstance(config, Mapping):
        raise ValueError(f"config must be a dict with keys {', '.join(DESIGN_KEYS[sc])}; "
                         f"got {type(config).__name__}")
    unknown = sorted(set(config) - set(DESIGN_KEYS[sc]))
    if unknown:
        raise ValueError(f"config has unknown key(s) {', '.join(unknown)}; a {sc} design takes "
                         f"{', '.join(DESIGN_KEYS[sc])}")
    cfg = {**design_defaults(tr), **dict(config)}
    cfg["weight_bits"] = v.precision_bits("weight_bits", cfg["weight_bits"])
    if sc in ("fleet", "handheld"):
        cfg["kv_bits"] = v.precision_bits("kv_bits", cfg["kv_bits"])
    if sc == "fleet":
        for k in ("tp", "cp", "pp", "dp", "ep"):
            cfg[k] = v.positive_int(k, cfg[k])
    elif sc == "handheld":
        cfg["context_tokens"] = v.positive_int("context_tokens", cfg["context_tokens"],
                                               minimum=2)
        m = get_model(tr.model_id)
        if cfg["context_tokens"] > m.max_context:  # type: ignore[operator]
            raise ValueError(f"context_tokens must be <= the model's max_context "
                             f"{m.max_context}, got {cfg['context_tokens']}")
    elif sc == "wearable":
        cfg["duty"] = float(v.fraction("duty", cfg["duty"], allow_zero=False))
        cfg["split"] = v.choice("split", cfg["split"], edge.SPLITS)
        cfg["interval_ms"] = float(v.positive("interval_ms", cfg["interval_ms"]))
        if not 7.5 <= cfg["interval_ms"] <= 4000.0:  # type: ignore[operator]
            raise ValueError("interval_ms must be a BLE connection interval in [7.5, 4000] ms, "
                             f"got {cfg['interval_ms']}")
    else:
        cfg["layout"] = v.choice("layout", cfg["layout"], VEHICLE_LAYOUTS)
        if cfg["layout"] != "single" and get_hardware(tr.hardware_id).domain_size < 2:
            raise ValueError(f"layout {cfg['layout']!r} needs two SoCs on one board; "
                             f"{tr.hardware_id} has no peer")
    return cfg


def fleet_table(tr: Track, weight_bits: int, kv_bits: int, context: int | None = None,
                batch: int | None = None) -> tuple[ConfigTable, dict[tuple[int, ...], int]]:
    """:func:`labkit.parallelism.enumerate_configs` of a fleet track (cached), and the row of
    each (tp, cp, pp, dp, ep)."""
    ctx = int(tr.context_tokens if context is None else context)  # type: ignore[arg-type]
    b = fleet_users(tr) if batch is None else int(batch)
    key = (tr.hardware_id, tr.model_id, ctx, b, weight_bits, kv_bits)
    if key not in _TABLES:
        t = enumerate_configs(tr.hardware_id, tr.model_id, ctx, b, weight_bits, kv_bits,
                              max_devices=DESIGN_MAX_DEVICES, mode=DESIGN_MODE)
        index = {k: i for i, k in enumerate(zip(t.tp.tolist(), t.cp.tolist(), t.pp.tolist(),
                                                t.dp.tolist(), t.ep.tolist(), strict=True))}
        _TABLES[key] = (t, index)
    return _TABLES[key]


def _allowed_precisions(tr: Track) -> list[tuple[int, int | None]]:
    out: list[tuple[int, int | None]] = []
    kvs: list[int | None] = list(lw.PRECISIONS) if tr.is_transformer else [None]
    for wb in lw.PRECISIONS:
        for kb in kvs:
            if quality_check(tr, wb, kb)["passed"]:
                out.append((wb, kb))
    return out


def _fleet_eval(tr: Track, cfg: Mapping[str, object]) -> tuple[list[dict], dict, int]:
    users = fleet_users(tr)
    wb, kb = int(cfg["weight_bits"]), int(cfg["kv_bits"])  # type: ignore[call-overload]
    deg = tuple(int(cfg[k]) for k in ("tp", "cp", "pp", "dp", "ep"))  # type: ignore[call-overload]
    devices = deg[0] * deg[1] * deg[2] * deg[3]
    table, index = fleet_table(tr, wb, kb)
    row = index.get(deg)
    hw = get_hardware(tr.hardware_id)
    metrics: dict[str, object] = {"users": users, "context_tokens": int(tr.context_tokens),  # type: ignore[arg-type]
                                  "tpot_slo_s": tr.slo_s, "degrees": list(deg)}
    cons: list[dict] = []
    if row is None:
        why = _not_candidate_reason(tr, deg, users, int(tr.context_tokens))  # type: ignore[arg-type]
        cons.append(_constraint("layout", False, None, None, "", why))
        cons.append(_constraint("memory", False, None, hw.usable_memory_bytes, "bytes",
                                "not evaluated: no such layout"))
        cons.append(_constraint("tpot", False, None, tr.slo_s, "s",
                                "not evaluated: no such layout"))
    else:
        used, lat = float(table.used_bytes[row]), float(table.per_token_latency_s[row])
        cfg_row = table.config(row)
        cons.append(_constraint("layout", True, float(devices), float(DESIGN_MAX_DEVICES),
                                "devices", f"{devices} device(s): TP{deg[0]} x CP{deg[1]} x "
                                f"PP{deg[2]} x DP{deg[3]}" + (f" (EP{deg[4]})" if deg[4] > 1
                                                               else "")))
        cons.append(_constraint(
            "memory", bool(table.fits[row]), used, float(table.capacity_bytes), "bytes",
            f"binding device holds {format_bytes(cfg_row.weights_bytes)} weights + "
            f"{format_bytes(cfg_row.kv_bytes)} KV + {format_bytes(cfg_row.transient_bytes)} "
            f"transient of {format_bytes(table.capacity_bytes)}"))
        cons.append(_constraint(
            "tpot", lat <= tr.slo_s, lat, tr.slo_s, "s",
            f"time per output token {lat * 1e3:.3g} ms ({cfg_row.comm_s * 1e3:.3g} ms of it "
            f"communication) vs {tr.slo_s * 1e3:.3g} ms"))
        metrics.update(per_token_latency_s=lat, used_bytes=used,
                       comm_s=cfg_row.comm_s, roofline_s=cfg_row.roofline_s,
                       throughput_tokens_per_s=cfg_row.throughput_tokens_per_s)
    cons.append(quality_check(tr, wb, kb))
    daily = devices * float(tr.price_per_device_hour) * tr.active_hours_per_day  # type: ignore[arg-type]
    cons.append(_constraint("cost", daily <= tr.daily_budget, daily, tr.daily_budget,
                            f"{tr.cost_unit}/day",
                            f"{devices} x {tr.price_per_device_hour:g} USD/h x "
                            f"{tr.active_hours_per_day:g} h = {_num(daily)} USD/day vs "
                            f"budget {_num(tr.daily_budget)}"))
    metrics["daily_cost"] = daily
    return cons, metrics, devices


def _not_candidate_reason(tr: Track, deg: tuple[int, ...], batch: int, context: int) -> str:
    m = get_model(tr.model_id)
    hw = get_hardware(tr.hardware_id)
    tp, cp, pp, dp, ep = deg
    names = dict(zip(("tp", "cp", "pp", "dp", "ep"), deg, strict=True))
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


def handheld_metrics(tr: Track, weight_bits: int, kv_bits: int,
                     context_tokens: int) -> dict[str, float]:
    """One on-device request whose conversation reaches ``context_tokens``.

    prompt = context - output tokens (at least 1); TTFT = prefill of the prompt; worst
    TPOT = one decode step at the full context (batch 1); energy = power x (prefill +
    decode) from :func:`labkit.phases.request_phases`; memory = resident weights + KV of
    the context. Achievable roofline.
    """
    hw = get_hardware(tr.hardware_id)
    m = get_model(tr.model_id)
    out = int(tr.output_tokens)  # type: ignore[arg-type]
    prompt = max(1, context_tokens - out)
    ph = request_phases(hw, m, prompt_tokens=prompt, output_tokens=out,
                        weight_bits=weight_bits, kv_bits=kv_bits, mode=DESIGN_MODE)
    step = float(decode_roofline(hw, m, 1, context_tokens, weight_bits, kv_bits,
                                 mode=DESIGN_MODE).step_s)
    w = resident_weight_bytes(m, weight_bits)
    kv = context_tokens * kv_bytes_per_token(m, kv_bits)
    per_day = tr.demand_rate_per_s * _active_s(tr)
    energy = float(ph.energy_j or 0.0)
    return {"prompt_tokens": float(prompt), "ttft_s": ph.ttft_s, "tpot_s": step,
            "request_s": ph.latency_s, "energy_j": energy, "weights_bytes": w,
            "kv_bytes": kv, "memory_bytes": w + kv,
            "usable_bytes": hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction),
            "requests_per_day": per_day,
            "daily_mwh": energy * per_day / edge.J_PER_MWH}


def handheld_curves(tr: Track, weight_bits: int, kv_bits: int,
                    contexts: object) -> dict[str, np.ndarray]:
    """:func:`handheld_metrics` over an array of contexts (the same formulas, vectorised:
    one prefill per prompt length, two roofline calls), for the live charts."""
    hw = get_hardware(tr.hardware_id)
    m = get_model(tr.model_id)
    ctx = np.asarray(contexts, dtype=float)
    out = int(tr.output_tokens)  # type: ignore[arg-type]
    prompts = np.maximum(1.0, ctx - out)
    prefill = np.asarray([prefill_time(hw, m, float(p), weight_bits, kv_bits, 1,
                                       DESIGN_MODE).total_s for p in prompts])
    mean = decode_roofline(hw, m, 1, prompts + out / 2.0, weight_bits, kv_bits,
                           mode=DESIGN_MODE)
    full = decode_roofline(hw, m, 1, ctx, weight_bits, kv_bits, mode=DESIGN_MODE)
    busy = prefill + (out - 1) * np.asarray(mean.step_s)
    energy = float(hw.power_w or 0.0) * busy
    mem = resident_weight_bytes(m, weight_bits) + ctx * kv_bytes_per_token(m, kv_bits)
    return {"memory_bytes": mem, "tpot_s": np.asarray(full.step_s, dtype=float),
            "ttft_s": prefill, "energy_j": energy}


def _handheld_eval(tr: Track, cfg: Mapping[str, object]) -> tuple[list[dict], dict, int]:
    wb, kb, ctx = (int(cfg[k]) for k in ("weight_bits", "kv_bits", "context_tokens"))  # type: ignore[call-overload]
    mt = handheld_metrics(tr, wb, kb, ctx)
    target = int(tr.context_tokens)  # type: ignore[arg-type]
    cons = [
        _constraint("context", ctx >= target, float(ctx), float(target), "tokens",
                    f"serves conversations of {ctx:,} tokens; the product needs {target:,}",
                    sense="min"),
        _constraint("memory", mt["memory_bytes"] <= mt["usable_bytes"], mt["memory_bytes"],
                    mt["usable_bytes"], "bytes",
                    f"{format_bytes(mt['weights_bytes'])} weights + "
                    f"{format_bytes(mt['kv_bytes'])} KV vs {format_bytes(mt['usable_bytes'])} "
                    "the app may use"),
        _constraint("tpot", mt["tpot_s"] <= tr.slo_s, mt["tpot_s"], tr.slo_s, "s",
                    f"time per token at {ctx:,} tokens {mt['tpot_s'] * 1e3:.3g} ms vs "
                    f"{tr.slo_s * 1e3:.3g} ms"),
        _constraint("ttft", mt["ttft_s"] <= float(tr.ttft_slo_s or math.inf), mt["ttft_s"],
                    tr.ttft_slo_s, "s", f"prefill of {int(mt['prompt_tokens']):,} prompt "
                    f"tokens {mt['ttft_s']:.3g} s vs {tr.ttft_slo_s} s"),
        quality_check(tr, wb, kb),
        _constraint("energy", mt["daily_mwh"] <= tr.daily_budget, mt["daily_mwh"],
                    tr.daily_budget, "mWh/day",
                    f"{_num(mt['requests_per_day'])} requests/day x "
                    f"{_energy(mt['energy_j'])} = {_num(mt['daily_mwh'])} mWh/day vs "
                    f"{_num(tr.daily_budget)}"),
    ]
    return cons, {**mt, "daily_cost": mt["daily_mwh"]}, 1


def ring_window(tr: Track, weight_bits: int) -> dict[str, float]:
    """A wearable's per-window figures at ``weight_bits``: model time on the device and on the
    host, SRAM bytes of one window + its activations, weight bytes (achievable roofline).
    Cached per (device, model, bits, window, reserve); treat the dict as read-only."""
    key = (tr.hardware_id, tr.model_id, weight_bits, tr.window_bytes,
           tr.memory_reserve_fraction)
    if key in _PASS_CACHE:
        return _PASS_CACHE[key]  # type: ignore[return-value]
    hw = get_hardware(tr.hardware_id)
    prof = edge.edge_profile(hw.id)
    m = get_model(tr.model_id)
    dev = cnn_inference_time(hw, m, weight_bits, 1, DESIGN_MODE)
    host_s = 0.0
    if prof is not None and prof.host_hardware_id is not None:
        host_s = float(cnn_inference_time(prof.host_hardware_id, m, weight_bits, 1,
                                          DESIGN_MODE).latency_s)
    act = float(dev.bytes_moved) - weight_bytes(m, weight_bits)
    out = {"model_s": float(dev.latency_s), "host_s": host_s,
           "window_bytes": tr.window_bytes, "activation_bytes": act,
           "state_bytes": tr.window_bytes + act, "weights_bytes": weight_bytes(m, weight_bits),
           "flash_bytes": float(hw.flash_bytes or 0.0),
           "sram_bytes": hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction)}
    _PASS_CACHE[key] = out
    return out


def ring_split(tr: Track, weight_bits: int, split: str, interval_s: float,
               duty: float) -> edge.SplitCost:
    """:func:`labkit.edge.wearable_split` for a wearable track at ``duty`` of its windows."""
    hw = get_hardware(tr.hardware_id)
    prof = edge.edge_profile(hw.id)
    if prof is None or not prof.offload_links:
        raise ValueError(f"{hw.id} has no edge profile with an offload link")
    rw = ring_window(tr, weight_bits)
    return edge.wearable_split(
        split, window_bytes=tr.window_bytes, feature_bytes=prof.feature_bytes,
        result_bytes=prof.result_bytes, front_end_ops=prof.front_end_ops,
        front_end_ops_per_s=hw.flops("fp32") * get_mode(DESIGN_MODE).flop_efficiency,
        model_s=rw["model_s"], device_power_w=float(hw.power_w or 0.0), host_s=rw["host_s"],
        interval_s=interval_s, inputs_per_s=duty * tr.demand_rate_per_s,
        link=prof.offload_links[0])


def _wearable_eval(tr: Track, cfg: Mapping[str, object]) -> tuple[list[dict], dict, int]:
    wb = int(cfg["weight_bits"])  # type: ignore[call-overload]
    duty = float(cfg["duty"])  # type: ignore[arg-type]
    interval = float(cfg["interval_ms"]) / 1e3  # type: ignore[arg-type]
    rw = ring_window(tr, wb)
    sc = ring_split(tr, wb, str(cfg["split"]), interval, duty)
    windows_day = duty * tr.demand_rate_per_s * _active_s(tr)
    daily = sc.energy_j * windows_day / edge.J_PER_MWH
    floor = tr.min_demand_rate_per_s / tr.demand_rate_per_s
    cons = [
        _constraint("flash", rw["weights_bytes"] <= rw["flash_bytes"], rw["weights_bytes"],
                    rw["flash_bytes"], "bytes", f"{format_bytes(rw['weights_bytes'])} weights "
                    f"in {format_bytes(rw['flash_bytes'])} flash"),
        _constraint("sram", rw["state_bytes"] <= rw["sram_bytes"], rw["state_bytes"],
                    rw["sram_bytes"], "bytes", f"window {format_bytes(rw['window_bytes'])} + "
                    f"activations {format_bytes(rw['activation_bytes'])} in "
                    f"{format_bytes(rw['sram_bytes'])} SRAM"),
        _constraint("deadline", sc.latency_s <= tr.slo_s, sc.latency_s, tr.slo_s, "s",
                    f"worst case {sc.latency_s * 1e3:.3g} ms (wait for the link "
                    f"{sc.wait_s * 1e3:.3g} ms) vs {tr.slo_s * 1e3:.3g} ms"),
        quality_check(tr, wb, None),
        _constraint("energy", daily <= tr.daily_budget, daily, tr.daily_budget, "mWh/day",
                    f"{_num(windows_day)} windows/day x {_energy(sc.energy_j)} = "
                    f"{_num(daily)} mWh/day vs {_num(tr.daily_budget)}"),
        _constraint("coverage", duty >= floor - 1e-9, duty, floor, "share of windows",
                    f"processes {duty:.0%} of windows; at least {floor:.0%} catch a wake word "
                    "said twice", sense="min"),
        _constraint("link", sc.link_utilisation <= tr.max_utilisation, sc.link_utilisation,
                    tr.max_utilisation, "share of airtime",
                    f"BLE airtime {sc.link_utilisation:.1%} of the link (max "
                    f"{tr.max_utilisation:.0%})"),
    ]
    metrics = {"energy_j": sc.energy_j, "latency_s": sc.latency_s, "daily_mwh": daily,
               "daily_cost": daily, "bytes_sent": sc.bytes_sent, "windows_per_day": windows_day}
    bat = edge.edge_profile(tr.hardware_id)
    if bat is not None and bat.battery is not None:
        metrics["battery_days"] = edge.battery_life_days(bat.battery, daily)
    return cons, metrics, 1


def vehicle_frame(tr: Track, weight_bits: int) -> tuple[float, float]:
    """(seconds per frame incl. overhead, overhead) of a vehicle track's CNN at batch 1."""
    key = (tr.hardware_id, tr.model_id, weight_bits)
    if key not in _PASS_CACHE:
        c = cnn_inference_time(tr.hardware_id, tr.model_id, weight_bits, 1, DESIGN_MODE)
        _PASS_CACHE[key] = (float(c.latency_s), float(c.overhead_s))
    return _PASS_CACHE[key]  # type: ignore[return-value]


def vehicle_load(tr: Track, weight_bits: int, layout: str, cameras: int | None = None,
                 fps: float | None = None) -> edge.CameraLoad:
    """:func:`labkit.edge.camera_load` for a vehicle track (defaults: its cameras and fps)."""
    hw = get_hardware(tr.hardware_id)
    n0, f0 = cameras_and_fps(tr)
    t, o = vehicle_frame(tr, weight_bits)
    return edge.camera_load(t, o, n0 if cameras is None else cameras, f0 if fps is None else fps,
                            layout=layout, power_w=float(hw.power_w or 0.0),
                            link_bytes_per_s=hw.interconnect_bandwidth,
                            link_latency_s=hw.interconnect_latency_s,
                            frame_bytes=tr.window_bytes)


def _vehicle_eval(tr: Track, cfg: Mapping[str, object]) -> tuple[list[dict], dict, int]:
    wb = int(cfg["weight_bits"])  # type: ignore[call-overload]
    layout = str(cfg["layout"])
    cl = vehicle_load(tr, wb, layout)
    hw = get_hardware(tr.hardware_id)
    m = get_model(tr.model_id)
    socs = cl.socs
    cams_first = -(-cl.cameras // socs) if layout == "cameras" else cl.cameras
    mem = weight_bytes(m, wb) + cams_first * tr.state_bytes_per_request
    daily_wh = cl.energy_j_per_frame * cl.frames_per_s * _active_s(tr) / edge.J_PER_WH
    cons = [
        _constraint("socs", socs <= int(tr.max_replicas or 1), float(socs),
                    float(tr.max_replicas or 1), "SoCs", f"{socs} SoC(s) of "
                    f"{tr.max_replicas or 1} on the board"),
        _constraint("deadline", cl.worst_latency_s <= tr.slo_s, cl.worst_latency_s, tr.slo_s,
                    "s", f"all {cl.cameras} cameras at once: last frame after "
                    f"{cl.worst_latency_s * 1e3:.3g} ms vs {tr.slo_s * 1e3:.3g} ms"),
        _constraint("throughput", cl.max_busy <= tr.max_utilisation, cl.max_busy,
                    tr.max_utilisation, "busy share", f"busiest SoC {cl.max_busy:.1%} busy "
                    f"(max {tr.max_utilisation:.0%})"),
        _constraint("memory", mem <= hw.usable_memory_bytes, mem, hw.usable_memory_bytes,
                    "bytes", f"weights + {cams_first} frame(s) with activations "
                    f"{format_bytes(mem)} of {format_bytes(hw.usable_memory_bytes)}"),
        quality_check(tr, wb, None),
        _constraint("energy", daily_wh <= tr.daily_budget, daily_wh, tr.daily_budget,
                    "Wh/day", f"{_num(cl.frames_per_s)} frames/s x "
                    f"{_energy(cl.energy_j_per_frame)} x {tr.active_hours_per_day:g} h = "
                    f"{_num(daily_wh)} Wh/day vs {_num(tr.daily_budget)}"),
        _constraint("link", cl.link_utilisation <= tr.max_utilisation, cl.link_utilisation,
                    tr.max_utilisation, "share of link", f"inter-SoC traffic "
                    f"{format_bytes(cl.link_bytes_per_s)}/s, {cl.link_utilisation:.2%} of the "
                    "link"),
    ]
    metrics = {"worst_latency_s": cl.worst_latency_s, "max_busy": cl.max_busy,
               "daily_wh": daily_wh, "daily_cost": daily_wh, "socs": socs,
               "link_bytes_per_s": cl.link_bytes_per_s}
    return cons, metrics, socs


_EVAL: Mapping[str, Callable[[Track, Mapping[str, object]], tuple[list[dict], dict, int]]] = {
    "fleet": _fleet_eval, "handheld": _handheld_eval, "wearable": _wearable_eval,
    "vehicle": _vehicle_eval,
}


def _evaluate(tr: Track, sc: str, cfg: Mapping[str, object]) -> dict[str, object]:
    cons, metrics, devices = _EVAL[sc](tr, cfg)
    failed = [c["name"] for c in cons if not c["passed"]]
    return {"constraints": {c["name"]: c for c in cons}, "failed": failed,
            "feasible": not failed, "devices": devices, "metrics": metrics}


def reference_design(track: str | Track) -> dict[str, object] | None:
    """labkit's best design for a track's Part D target, or None when none is feasible.

    fleet: for every precision pair that passes the quality check,
    :func:`labkit.parallelism.search` (achievable roofline, batch = :func:`fleet_users`,
    context = the track's, TPOT SLO, at most :data:`DESIGN_MAX_DEVICES` devices); the
    fewest devices win, then the lower latency, then the higher precision.
    handheld: the target context at every precision pair; the least energy per day wins.
    wearable: every precision, split, interval and duty step; the highest duty wins, then
    the least energy. vehicle: every precision and layout; the fewest SoCs, then the least
    energy. Returns {"config", "devices", "objective", "evaluation"} (+ "search" or
    "max_context" where they apply).
    """
    tr = get_track(track)
    if _is_registry(tr) and tr.id in _REFERENCES:
        return _REFERENCES[tr.id]  # type: ignore[return-value]
    sc = scenario(tr)
    best: dict[str, object] | None = None
    best_key: tuple = ()
    if sc == "fleet":
        users = fleet_users(tr)
        for wb, kb in _allowed_precisions(tr):
            try:
                s = search(tr.hardware_id, tr.model_id, int(tr.context_tokens), users,  # type: ignore[arg-type]
                           wb, kb, max_devices=DESIGN_MAX_DEVICES, latency_slo_s=tr.slo_s,
                           mode=DESIGN_MODE)
            except ValueError:
                continue
            c = s.chosen
            cfg = {"weight_bits": wb, "kv_bits": kb, "tp": c.tp, "cp": c.cp, "pp": c.pp,
                   "dp": c.dp, "ep": c.ep}
            key = (c.devices, c.per_token_latency_s, -wb, -int(kb or 0))
            if best is None or key < best_key:
                best, best_key = {"config": cfg, "devices": c.devices, "search": s}, key
    else:
        # wearable: feasibility is an interval in duty (energy and link airtime grow with it,
        # coverage needs a floor), so each group's highest feasible duty is its first hit
        # when duties are scanned from the top; the other grids are tried in full
        for group in _edge_grid(tr, sc):
            for cfg in group:
                ev = _evaluate(tr, sc, _normalise(tr, sc, cfg))
                if not ev["feasible"]:
                    if sc == "wearable" and set(ev["failed"]) & _DUTY_FREE:  # type: ignore[arg-type]
                        break  # fails at every duty
                    continue
                energy = float(ev["metrics"]["daily_cost"])  # type: ignore[index, arg-type]
                if sc == "wearable":
                    key = (-float(cfg["duty"]), energy)  # type: ignore[arg-type]
                else:
                    key = (int(ev["devices"]), energy)  # type: ignore[call-overload]
                if best is None or key < best_key:
                    best, best_key = {"config": dict(cfg), "devices": ev["devices"]}, key
                if sc == "wearable":
                    break
    if best is not None:
        cfg = _normalise(tr, sc, best["config"])  # type: ignore[arg-type]
        best["config"] = cfg
        best["evaluation"] = _evaluate(tr, sc, cfg)
        best["objective"] = best["evaluation"]["metrics"]["daily_cost"]  # type: ignore[index]
        if sc == "handheld":
            best["max_context"] = _handheld_max_context(tr)
    if _is_registry(tr):
        _REFERENCES[tr.id] = best  # type: ignore[assignment]
    return best


def _edge_grid(tr: Track, sc: str) -> list[list[dict[str, object]]]:
    """Part D's edge design space in groups (wearable: one group per precision, cut and
    interval, duties from the highest; otherwise one group holding everything)."""
    bits = sorted({wb for wb, _ in _allowed_precisions(tr)})
    if sc == "handheld":
        kvs = sorted({kb for _, kb in _allowed_precisions(tr) if kb is not None})
        return [[{"weight_bits": wb, "kv_bits": kb, "context_tokens": int(tr.context_tokens)}  # type: ignore[arg-type]
                 for wb in bits for kb in kvs]]
    if sc == "wearable":
        return [[{"weight_bits": wb, "duty": d, "split": s, "interval_ms": iv}
                 for d in sorted(DUTY_STEPS, reverse=True)]
                for wb in bits for s in edge.SPLITS for iv in INTERVALS_MS]
    layouts = VEHICLE_LAYOUTS if get_hardware(tr.hardware_id).domain_size >= 2 else ("single",)
    return [[{"weight_bits": wb, "layout": lay} for wb in bits for lay in layouts]]


def _handheld_max_context(tr: Track) -> int | None:
    """Longest context option (powers of two and the target) any allowed design serves."""
    m = get_model(tr.model_id)
    opts = lw.context_options(m.max_context, int(tr.context_tokens), 256)  # type: ignore[arg-type]
    best = None
    for wb, kb in _allowed_precisions(tr):
        for ctx in opts:
            if ctx <= int(tr.output_tokens or 0):  # type: ignore[arg-type]
                continue
            cfg = {"weight_bits": wb, "kv_bits": kb, "context_tokens": ctx}
            cons, _, _ = _handheld_eval(tr, cfg)
            if all(c["passed"] for c in cons if c["name"] != "context"):
                best = ctx if best is None else max(best, ctx)
    return best


def design_check(track: str | Track, config: Mapping[str, object]) -> dict[str, object]:
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

    Returns a JSON-ready dict: ``track``, ``scenario``, ``config`` (normalised),
    ``feasible`` (every constraint passes), ``failed`` (names, in order),
    ``constraints`` ({name: {passed, value, limit, unit, sense ('max': value <= limit,
    'min': value >= limit), detail}}), ``devices`` (this design), ``min_devices`` (labkit's
    fewest-devices answer, None when nothing is feasible), ``extra_devices`` (devices -
    min_devices), ``objective`` ({name, unit, value, reference}: cost or energy per day),
    ``reference`` (labkit's best config, devices, constraints) and ``metrics``.
    """
    tr = get_track(track)
    sc = scenario(tr)
    cfg = _normalise(tr, sc, config)
    ev = _evaluate(tr, sc, cfg)
    ref = reference_design(tr)
    min_dev = None if ref is None else int(ref["devices"])  # type: ignore[call-overload]
    unit = f"{tr.cost_unit}/day"
    out = {
        "track": tr.id, "scenario": sc, "config": cfg, "feasible": ev["feasible"],
        "failed": ev["failed"], "constraints": ev["constraints"], "devices": ev["devices"],
        "min_devices": min_dev,
        "extra_devices": None if min_dev is None else int(ev["devices"]) - min_dev,  # type: ignore[call-overload]
        "objective": {"name": "daily cost" if tr.cost_unit == "USD" else "daily energy",
                      "unit": unit, "value": ev["metrics"]["daily_cost"],  # type: ignore[index]
                      "reference": None if ref is None else ref["objective"]},
        "reference": None if ref is None else {
            "config": ref["config"], "devices": ref["devices"],
            "feasible": ref["evaluation"]["feasible"],  # type: ignore[index]
            "constraints": ref["evaluation"]["constraints"],  # type: ignore[index]
            "metrics": ref["evaluation"]["metrics"],  # type: ignore[index]
            **({"max_context": ref["max_context"]} if "max_context" in ref else {}),
        },
        "metrics": ev["metrics"],
    }
    return _plain(out)  # type: ignore[return-value]


# -- parts ----------------------------------------------------------------------------------------



def _feedback(opts: Sequence[tuple[str, str]], expected: str, good: str,
              bad: str) -> dict[str, str]:
    return {val: (good if val == expected else bad) for _, val in opts}


class Part(LabPart):
    """A Lab 2 part (the skeleton is :class:`labkit.labs.common.LabPart`); subclasses also
    define ``takeaway``. Controls call :meth:`update`, which recomputes only what depends on
    them."""

    lab_id = LAB_ID
    titles = PART_TITLES
    minutes = PART_MINUTES
    kicker = "Lab 2 · "

    def _init_context(self) -> None:
        self.hw: Hardware = get_hardware(self.track.hardware_id)
        self.model: Model = get_model(self.track.model_id)
        self.scenario = self.lab.scenario

    def _state_extra(self) -> dict[str, object]:
        return {"scenario": self.scenario}

    def takeaway(self) -> str:
        raise NotImplementedError

    def _figure_rows(self) -> list[ipw.Widget]:
        figs = list(self.figures.values())
        rows: list[ipw.Widget] = []
        for i in range(0, len(figs), 2):
            pair = figs[i:i + 2]
            rows.append(ipw.HBox(pair, layout=ipw.Layout(width="100%")) if len(pair) == 2
                        else pair[0])
        return rows

    # -- public ----------------------------------------------------------------------------
    # -- internals -------------------------------------------------------------------------
    def _computed_line(self) -> str:
        return (f"<div>{self._prediction_line()}.</div><div>Computed at the track defaults: "
                f"<b>{lw.esc(self.predict.label_for(self.expected))}</b>.</div>")

    def _callout(self, name: str, kind: str) -> lw.Callout:
        self.callouts[name] = lw.Callout(kind)
        return self.callouts[name]


# -- Part A: the roofline -----------------------------------------------------------------------

_TERMS = ("weight fetch", "compute", "KV read", "overhead")
_TERM_COLORS = [lw.PALETTE["blue"], lw.PALETTE["orange"], lw.PALETTE["purple"],
                lw.PALETTE["grey"], "#222222"]
BATCH_OPTIONS = tuple(_pow2(1024))


class PartALM(Part):
    """Decode roofline of a transformer: weight fetch, compute and KV read vs batch and context,
    with B*, L* and the knee; peak vs achievable side by side."""

    letter = "A"

    def _setup(self) -> None:
        tr, m = self.track, self.model
        self.tp = tr.devices_per_replica
        self.ctx0 = int(tr.context_tokens)  # type: ignore[arg-type]
        self.b0 = int(tr.batch_size)
        opts = sorted(set(BATCH_OPTIONS) | {self.b0})
        c = self.controls
        c["batch"] = lw.selection_control("Batch (sequences per decode step)",
                                          [(str(b), b) for b in opts], self.b0)
        c["context"] = lw.context_control(self.ctx0, m.max_context, 256,
                                          "Context per sequence (tokens)")
        c["mode"] = lw.choice_control("Roofline", [("peak (paper)", "peak"),
                                                   ("achievable (real system)", "achievable")],
                                      "peak", style="toggle")
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["kv_bits"] = lw.precision_control("KV-cache precision", tr.kv_bits,
                                            sorted({4, 8, 16, tr.kv_bits}))
        c["view"] = lw.choice_control("Show time", [("per token", "token"),
                                                    ("per step", "step")], "token",
                                      style="toggle")
        self.bgrid = np.geomspace(1, max(opts), 61)
        self.cgrid = np.geomspace(256, m.max_context, 61)
        d0 = decode_roofline(self.hw, m, self.b0, self.ctx0, tr.weight_bits, tr.kv_bits,
                             tp=self.tp, mode="peak")
        self.default_point = d0
        self._expected = str(d0.regime)

        labels = [*_TERMS, "total"]
        bx, by = lw.make_scale("log", 1, max(opts)), lw.make_scale("log", 1e-4, 1.0)
        self.sb_y = by
        self.m_b = lw.line_mark(self.bgrid, np.ones((5, self.bgrid.size)), bx, by,
                                colors=_TERM_COLORS, labels=labels, legend=True)
        self.m_b_other = lw.line_mark(self.bgrid, np.ones(self.bgrid.size), bx, by,
                                      colors=[lw.PALETTE["light"]], line_style="dashed",
                                      labels=["total, other mode"], legend=True, stroke_width=2)
        self.m_bstar = lw.vline_mark(1.0, bx, color=lw.PALETTE["red"], label="B*", legend=True)
        self.m_knee = lw.vline_mark(1.0, bx, color=lw.PALETTE["green"], line_style="dotted",
                                    label="knee", legend=True)
        self.m_b_pt = lw.scatter_mark([1.0], [1.0], bx, by)
        self.figures["batch"] = lw.figure(
            [self.m_b, self.m_b_other, self.m_bstar, self.m_knee, self.m_b_pt], bx, by,
            x_label="batch B (sequences, log)", y_label="time (ms, log)",
            title="Decode time vs batch at your context", legend=True,
            legend_location="top-right", x_tick_format=".0f", y_tick_format=".2~g")

        cx, cy = lw.make_scale("log", 256, m.max_context), lw.make_scale("log", 1e-4, 1.0)
        self.sc_y = cy
        self.m_c = lw.line_mark(self.cgrid, np.ones((5, self.cgrid.size)), cx, cy,
                                colors=_TERM_COLORS, labels=labels, legend=True)
        self.m_lstar = lw.vline_mark(256.0, cx, color=lw.PALETTE["red"], label="L*",
                                     legend=True)
        self.m_c_pt = lw.scatter_mark([256.0], [1.0], cx, cy)
        self.figures["context"] = lw.figure(
            [self.m_c, self.m_lstar, self.m_c_pt], cx, cy,
            x_label="context S (tokens, log)", y_label="time (ms, log)",
            title="Decode time vs context at your batch", legend=True,
            legend_location="top-left", x_tick_format=".3~s", y_tick_format=".2~g")

        gx, gy = lw.make_scale("log", 256, m.max_context), lw.make_scale("log", 1.0, 10.0)
        self.sg_y = gy
        self.m_gain = lw.line_mark(self.cgrid, np.ones(self.cgrid.size), gx, gy,
                                   colors=[lw.PALETTE["teal"]],
                                   labels=[f"gain B=1 → {max(opts)}"], legend=True)
        self.m_gain_l = lw.vline_mark(256.0, gx, color=lw.PALETTE["red"], label="L*",
                                      legend=True)
        self.m_gain_pt = lw.scatter_mark([256.0], [1.0], gx, gy)
        self.figures["gain"] = lw.figure(
            [self.m_gain, self.m_gain_l, self.m_gain_pt], gx, gy,
            x_label="context S (tokens, log)", y_label="batching gain (x, log)",
            title="Short context: batching pays. Long context: it stalls", legend=True,
            legend_location="bottom-left", x_tick_format=".3~s", y_tick_format=".3~g")

        px, py = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.sp_y = py
        self.m_pk = lw.bar_mark(list(MODES), np.zeros((4, 2)), px, py,
                                colors=_TERM_COLORS[:4], labels=list(_TERMS), legend=True)
        self.m_pk_slo = lw.hline_mark(tr.slo_s * 1e3, py, color=lw.PALETTE["red"],
                                      label="TPOT SLO", legend=True)
        self.figures["modes"] = lw.figure(
            [self.m_pk, self.m_pk_slo], px, py, x_label="roofline",
            y_label="time per step (ms)", title="Peak vs achievable at your point",
            legend=True, legend_location="top-left")
        self._callout("oom", "danger")
        self._callout("slo", "danger")
        self._callout("kv_floor", "warn")
        self._callout("boundary", "success")

    def _hook(self) -> str:
        tr = self.track
        bs = critical_batch(self.hw, self.model, tr.weight_bits, mode="peak")
        ls = balance_context(self.hw, self.model, tr.kv_bits, mode="peak")
        return (f"{self.model.name} decodes on {self.hw.name}. Reading the weights once per "
                f"step pays off only past B* = {bs:,.0f} sequences; past L* = {ls:,.0f} tokens "
                f"each sequence's own KV read outweighs its compute. Where does the track's "
                f"operating point, {self.b0} sequence(s) at {self.ctx0:,} tokens, sit?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: one decode step of {self.b0} sequence(s) at {self.ctx0:,} "
             f"tokens of context, {tr.weight_bits}-bit weights and {tr.kv_bits}-bit KV on "
             f"{self.tp} x {lw.esc(self.hw.name)} (peak roofline). Which term is the largest?")
        return q, [("Memory-bound: fetching the weights dominates", "memory-bound"),
                   ("Compute-bound: the matrix multiplies dominate", "compute-bound"),
                   ("KV-bound: reading every sequence's KV cache dominates", "kv-bound")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = ("Past the balance context L*, what does doubling the batch do to the time per "
             "generated token?")
        opts = [("Almost nothing: each sequence brings its own KV read, a floor batching "
                 "cannot amortise", "kv_floor"),
                ("Halves it: the weights are shared by twice the sequences", "halves"),
                ("Doubles it: twice the work per step", "doubles"),
                ("Makes the step compute-bound", "compute")]
        good = ("Right: per token = W/(B BW) + 2N/C + S kv_bpt/BW. Only the first term falls "
                "with B; past L* the last one dominates, so batching stalls on the KV floor "
                "(the paper: 19x at 8k context, 28% at 1M).")
        bad = ("Not quite: per token = W/(B BW) + 2N/C + S kv_bpt/BW. Only the weight term "
               "falls with B; past L* the per-sequence KV read dominates and stays.")
        return q, opts, "kv_floor", _feedback(opts, "kv_floor", good, bad)

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr, hw, m = self.track, self.hw, self.model
        b, ctx = int(s["batch"]), int(s["context"])  # type: ignore[call-overload]
        mode, view = str(s["mode"]), str(s["view"])
        wb, kb = int(s["weight_bits"]), int(s["kv_bits"])  # type: ignore[call-overload]
        other = "achievable" if mode == "peak" else "peak"
        suf = "_step_s" if view == "step" else "_s"
        rb = decode_roofline(hw, m, self.bgrid, ctx, wb, kb, tp=self.tp, mode=mode)
        rbo = decode_roofline(hw, m, self.bgrid, ctx, wb, kb, tp=self.tp, mode=other)
        rc = decode_roofline(hw, m, b, self.cgrid, wb, kb, tp=self.tp, mode=mode)
        top = float(self.bgrid[-1])
        g1 = decode_roofline(hw, m, 1, self.cgrid, wb, kb, tp=self.tp, mode=mode)
        gn = decode_roofline(hw, m, top, self.cgrid, wb, kb, tp=self.tp, mode=mode)
        gain = np.asarray(g1.per_token_s) / np.asarray(gn.per_token_s)
        here = {md: decode_roofline(hw, m, b, ctx, wb, kb, tp=self.tp, mode=md) for md in MODES}
        pt = here[mode]

        def rows(r: object) -> np.ndarray:
            total = "step_s" if view == "step" else "per_token_s"
            out = np.vstack([np.asarray(getattr(r, k + suf), dtype=float)
                             for k in ("weight", "compute", "kv", "overhead")]
                            + [np.asarray(getattr(r, total), dtype=float)]) * 1e3
            out[3][out[3] <= 0] = np.nan  # peak mode has no overhead term
            return out

        yb, yc = rows(rb), rows(rc)
        yo = np.asarray(rbo.step_s if view == "step" else rbo.per_token_s) * 1e3
        b_star = critical_batch(hw, m, wb, mode=mode)
        l_star = balance_context(hw, m, kb, mode=mode)
        knee = knee_batch(hw, m, ctx, wb, kb, mode=mode)
        total_here = float(pt.step_s if view == "step" else pt.per_token_s) * 1e3
        lo_b, hi_b = _log_domain(np.concatenate([yb.ravel(), yo]))
        lo_c, hi_c = _log_domain(yc)
        bars = np.asarray([[float(here[md].weight_step_s), float(here[md].compute_step_s),
                            float(here[md].kv_step_s), float(here[md].overhead_step_s)]
                           for md in MODES]).T * 1e3
        slo_ms = tr.slo_s * 1e3
        bar_top = _lin_top(bars.sum(axis=0), floor=1e-3, pad=1.3)
        show_slo = tr.slo_kind == "tpot" and slo_ms <= 3.0 * bar_top
        upd: dict = {
            self.m_b: {"y": yb}, self.m_b_other: {"y": yo},
            self.sb_y: {"min": lo_b, "max": hi_b},
            self.m_bstar: {"x": [b_star, b_star], "visible": bool(b_star <= top)},
            self.m_knee: ({"x": [knee, knee], "visible": True} if knee is not None
                          and knee <= top else {"visible": False}),
            self.m_b_pt: {"x": [float(b)], "y": [total_here]},
            self.m_c: {"y": yc}, self.sc_y: {"min": lo_c, "max": hi_c},
            self.m_lstar: {"x": [l_star, l_star],
                           "visible": bool(256 <= l_star <= m.max_context)},
            self.m_c_pt: {"x": [float(ctx)], "y": [float(total_here)]},
            self.m_gain: {"y": gain},
            self.sg_y: dict(zip(("min", "max"), _log_domain(gain, 1.3), strict=True)),
            self.m_gain_l: {"x": [l_star, l_star],
                            "visible": bool(256 <= l_star <= m.max_context)},
            self.m_gain_pt: {"x": [float(ctx)],
                             "y": [float(np.interp(np.log(ctx), np.log(self.cgrid), gain))]},
            self.m_pk: {"y": bars},
            self.sp_y: {"max": max(bar_top, 1.15 * slo_ms if show_slo else 0.0)},
            self.m_pk_slo: {"visible": show_slo},
        }
        lw.update_marks(upd)
        mem = memory_budget(hw, m, ctx, b, wb, kb, tp=self.tp)
        gain_here = float(np.interp(np.log(ctx), np.log(self.cgrid), gain))
        step = float(pt.step_s)
        self.results = {
            "regime": str(pt.regime), "mode": mode, "batch": b, "context_tokens": ctx,
            "weight_bits": wb, "kv_bits": kb, "tp": self.tp,
            "weight_step_s": float(pt.weight_step_s), "compute_step_s": float(pt.compute_step_s),
            "kv_step_s": float(pt.kv_step_s), "overhead_step_s": float(pt.overhead_step_s),
            "step_s": step, "per_token_s": float(pt.per_token_s),
            "tokens_per_s": float(pt.tokens_per_s), "b_star": b_star, "l_star": l_star,
            "knee_batch": knee, "batching_gain": gain_here, "gain_short": float(gain[0]),
            "gain_long": float(gain[-1]), "over_memory": bool(mem.over_budget),
            "used_bytes": float(mem.used_bytes), "capacity_bytes": float(mem.capacity_bytes),
            "achievable_over_peak": float(here["achievable"].step_s / here["peak"].step_s),
            "expected": self._expected,
        }
        self._set_readout(_cards([
            ("regime", str(pt.regime), f"{mode} roofline", lw.PALETTE["red"]),
            ("B* (critical batch)", f"{b_star:,.0f}", f"{wb}-bit weights", lw.PALETTE["blue"]),
            ("L* (balance context)", f"{l_star:,.0f} tokens", f"{kb}-bit KV",
             lw.PALETTE["purple"]),
            ("knee", "none (S ≥ L*)" if knee is None else f"B = {knee:,.0f}",
             "compute-bound from here" if knee is not None else "no batch is compute-bound",
             lw.PALETTE["green"]),
            ("time per token", _ms(float(pt.per_token_s)),
             f"step {_ms(step)} · {_num(float(pt.tokens_per_s))} tokens/s",
             lw.PALETTE["orange"]),
            ("batching gain here", f"{gain_here:.3g}x", f"B = 1 → {int(top)} at {ctx:,} tokens",
             lw.PALETTE["teal"]),
        ]))
        self.callouts["oom"].set(
            bool(mem.over_budget), "Out of memory: this batch does not fit",
            f"{b} sequences x {ctx:,} tokens need {format_bytes(float(mem.used_bytes))} per "
            f"device (weights {format_bytes(float(mem.weights_bytes))}, KV "
            f"{format_bytes(float(mem.kv_bytes))}) of {format_bytes(mem.capacity_bytes)}. The "
            "roofline is only a speed limit; the point is not reachable.",
            "lower the batch or the context, or the KV precision")
        over_slo = tr.slo_kind == "tpot" and step > tr.slo_s
        self.callouts["slo"].set(
            over_slo, "TPOT SLO missed",
            f"One step of {b} sequences takes {_ms(step)} ({mode}); every sequence waits a "
            f"whole step per token, against {_ms(tr.slo_s)}.",
            "a smaller batch or context, lower precision, or more devices per replica")
        self.callouts["kv_floor"].set(
            ctx > l_star, "Past L*: batching stalls on the KV floor",
            f"At {ctx:,} tokens (L* = {l_star:,.0f}) each sequence's KV read "
            f"({_ms(float(pt.kv_s))} per token) outweighs its compute; B = 1 → {int(top)} only "
            f"cuts the per-token time {gain_here:.3g}x here (vs {float(gain[0]):.3g}x at 256 "
            "tokens).",
            "shrink kv_bpt (fewer KV bytes: 8- or 4-bit KV, GQA/MLA) or shard the sequence "
            "(CP); route long contexts to their own pool")
        ok = not mem.over_budget and not over_slo
        self.callouts["boundary"].set(
            ok and ctx <= l_star, f"{str(pt.regime).capitalize()} and within the limits",
            f"Below L*: batching still pays here ({gain_here:.3g}x from B = 1). "
            + ("" if knee is None else f"Past the knee (B ≈ {knee:,.0f}) the step turns "
                                       "compute-bound; ")
            + f"memory {format_bytes(float(mem.used_bytes))} of "
              f"{format_bytes(mem.capacity_bytes)} per device.")
        d = get_mode(mode)
        n_act = self.model.block_params_active
        ai = hw.flops() * d.flop_efficiency / (hw.memory_bandwidth * d.bandwidth_efficiency)
        kvb = kv_bytes_per_token(m, kb)
        self.math.update(
            f"<p>Machine balance ({mode}): $\\mathrm{{AI}} = C/W = {_tex_num(ai)}$ FLOP/byte "
            f"({_tex_num(hw.flops() * d.flop_efficiency)} FLOP/s over "
            f"{_tex_num(hw.memory_bandwidth * d.bandwidth_efficiency)} B/s).</p>"
            f"$$B^* = \\frac{{\\mathrm{{AI}}\\,b}}{{2}} = \\frac{{{_tex_num(ai)} \\times "
            f"{bits_to_bytes(wb):g}}}{{2}}"
            + (f" \\times {m.moe_sparsity:.3g}" if m.is_moe else "")
            + f" = {_tex_num(b_star)}\\ \\text{{sequences}}$$"
            f"$$L^* = \\frac{{2N}}{{\\mathrm{{AI}}\\cdot \\mathrm{{kv\\_bpt}}}} = "
            f"\\frac{{2 \\times {_tex_num(n_act)}}}{{{_tex_num(ai)} \\times {_tex_num(kvb)}}}"
            f" = {_tex_num(l_star)}\\ \\text{{tokens}}$$"
            "<p>One step of B sequences at context S, terms added (no overlap):</p>"
            "$$t_{\\text{step}} = \\frac{W_{\\text{bytes}}}{BW} + \\frac{2NB}{C} + "
            "\\frac{B\\,S\\,\\mathrm{kv\\_bpt}}{BW} = "
            f"{_tex_num(float(pt.weight_step_s) * 1e3)} + "
            f"{_tex_num(float(pt.compute_step_s) * 1e3)} + "
            f"{_tex_num(float(pt.kv_step_s) * 1e3)}"
            + (f" + {_tex_num(float(pt.overhead_step_s) * 1e3)}" if mode == "achievable"
               else "")
            + f" = {_tex_num(step * 1e3)}\\ \\text{{ms}}$$"
            + ("<p>Knee (compute-bound once memory traffic and compute overlap): "
               f"$B_{{\\text{{knee}}}} = B^*/(1 - S/L^*) = {_tex_num(knee)}$.</p>"
               if knee is not None else
               "<p>S ≥ L*: no knee, no batch makes the step compute-bound.</p>")
            + f"<p>Achievable / peak step time here: "
              f"{self.results['achievable_over_peak']:.3g}x (derated bandwidth and FLOP/s, "
              "the LM head, a fixed per-step overhead). Source: "
              "<code>labkit.roofline.decode_roofline</code>, <code>critical_batch</code>, "
              "<code>balance_context</code>, <code>knee_batch</code>.</p>")

    def _reveal_body(self) -> str:
        d = self.default_point
        terms = {"weight fetch": float(d.weight_step_s), "compute": float(d.compute_step_s),
                 "KV read": float(d.kv_step_s)}
        parts = ", ".join(f"{k} {_ms(val)}" for k, val in terms.items())
        r = self.results
        return (f"{self._computed_line()}"
                f"<div>At the defaults one step spends {parts}.</div>"
                f"<div>With your settings: <b>{r['regime']}</b> ({r['mode']}), "
                f"{_ms(r['per_token_s'])} per token.</div>"  # type: ignore[arg-type]
                "<div style='color:#5d6d7e'>Why: the weights are read once per step whatever "
                "the batch, so below B* they dominate; every sequence reads its own KV, so past "
                "L* that floor stays however many sequences share a step. Real systems sit "
                f"above the roofline: {r['achievable_over_peak']:.2g}x the peak step here "
                "(derated bandwidth and FLOP/s, the LM head, per-step overhead).</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Roofline: at {r['batch']} sequence(s) and {r['context_tokens']:,} tokens the "
                f"step is {r['regime']} ({r['mode']}); B* = {r['b_star']:,.0f}, L* = "
                f"{r['l_star']:,.0f} tokens; batching 1 → 1024 cuts the per-token time "
                f"{r['batching_gain']:.3g}x at this context (vs {r['gain_long']:.3g}x at the "
                "longest).")


class PartACNN(Part):
    """The classic roofline of a CNN pass: attainable FLOP/s vs arithmetic intensity, with
    the model's point per precision and batch."""

    letter = "A"

    def _setup(self) -> None:
        tr, hw, m = self.track, self.hw, self.model
        self.bmax = max(16, 4 * tr.batch_size)
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["batch"] = lw.int_control("Inputs per pass (batch)", 1, 1, self.bmax)
        c["mode"] = lw.choice_control("Roofline", [("peak", "peak"),
                                                   ("achievable (real system)", "achievable")],
                                      "peak", style="toggle")
        d0 = cnn_inference_time(hw, m, tr.weight_bits, 1, "peak")
        self.default_point = d0
        self._expected = str(d0.regime)
        self.batches = np.arange(1, self.bmax + 1, dtype=float)
        ais = [float(r.flops / r.bytes_moved) for b in (1, self.bmax)
               for r in (cnn_inference_time(hw, m, wb, b, "peak") for wb in lw.PRECISIONS)]
        ridge = max(hw.peak_flops.values()) / hw.memory_bandwidth
        self.ai_lo = 10 ** math.floor(math.log10(min(min(ais), ridge) / 10))
        self.ai_hi = 10 ** math.ceil(math.log10(max(max(ais), ridge) * 10))
        self.ai_grid = np.geomspace(self.ai_lo, self.ai_hi, 80)
        self.precs = sorted(hw.peak_flops, key=lambda p: hw.peak_flops[p])
        y_hi = 10 ** math.ceil(math.log10(max(hw.peak_flops.values()) * 3))
        y_lo = 10 ** math.floor(math.log10(hw.memory_bandwidth * 0.5 * self.ai_lo))
        xs, ys = lw.make_scale("log", self.ai_lo, self.ai_hi), lw.make_scale("log", y_lo, y_hi)
        self.m_roofs = lw.line_mark(self.ai_grid, np.ones((len(self.precs), 80)), xs, ys,
                                    colors=lw.SERIES[:len(self.precs)],
                                    labels=[f"roof {p}" for p in self.precs], legend=True)
        self.m_ridge = lw.vline_mark(1.0, xs, color=lw.PALETTE["grey"], line_style="dotted",
                                     label="ridge (your precision)", legend=True)
        self.m_att = lw.scatter_mark([1.0], [1.0], xs, ys, color=lw.PALETTE["red"])
        self.m_ach = lw.scatter_mark([1.0], [1.0], xs, ys, color=lw.PALETTE["orange"],
                                     marker="diamond")
        self.figures["roofline"] = lw.figure(
            [self.m_roofs, self.m_ridge, self.m_att, self.m_ach], xs, ys,
            x_label="arithmetic intensity (FLOP per byte, log)",
            y_label="attainable FLOP/s (log)",
            title="The roofline (red: its bound; orange: achieved with overhead)",
            legend=True, legend_location="bottom-right",
            x_tick_format=".2~g", y_tick_format=".2~e")
        tx, ty = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.st_y = ty
        self.m_time = lw.bar_mark(["compute", "memory", "overhead", "latency"], np.zeros(4),
                                  tx, ty, colors=[lw.PALETTE["orange"], lw.PALETTE["blue"],
                                                  lw.PALETTE["grey"], lw.PALETTE["red"]],
                                  color_mode="no_group", label_display=True,
                                  label_display_format=".3~g")
        self.m_dead = lw.hline_mark(tr.slo_s * 1e3, ty, color=lw.PALETTE["red"],
                                    label="deadline", legend=True)
        self.figures["time"] = lw.figure(
            [self.m_time, self.m_dead], tx, ty, x_label="one pass (compute and memory overlap)",
            y_label="time (ms)", title="Where one pass's time goes", height=280)
        ax, ay = lw.make_scale("linear", 1, self.bmax), lw.make_scale("log", 1.0, 10.0)
        self.sa_y = ay
        self.m_ai = lw.line_mark(self.batches, np.ones(self.batches.size), ax, ay,
                                 colors=[lw.PALETTE["blue"]], labels=["model AI"], legend=True)
        self.m_bal = lw.hline_mark(1.0, ay, color=lw.PALETTE["grey"],
                                   label="machine balance", legend=True)
        self.m_ai_pt = lw.scatter_mark([1.0], [1.0], ax, ay)
        self.figures["intensity"] = lw.figure(
            [self.m_ai, self.m_bal, self.m_ai_pt], ax, ay, x_label="inputs per pass",
            y_label="FLOP per byte (log)", title="Batching reads the weights once per pass",
            legend=True, legend_location="top-left", x_tick_format="d", height=280)
        self._callout("deadline", "danger")
        self._callout("memory_bound", "warn")
        self._callout("boundary", "success")

    def _hook(self) -> str:
        d0 = self.default_point
        ai = float(d0.flops / d0.bytes_moved)
        prec = _cnn_precision(self.hw, self.track.weight_bits)
        ridge = self.hw.flops(prec) / self.hw.memory_bandwidth
        return (f"{self.model.name} does {_si(self.model.flops_per_inference, 'FLOP')} per "
                f"input and moves {format_bytes(float(d0.bytes_moved))}: {ai:,.3g} FLOP per "
                f"byte, against the {self.hw.name}'s ridge at {ridge:,.3g}. Which side of the "
                "ridge is it on, and what moves it?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: one {tr.weight_bits}-bit pass over one input on the "
             f"{lw.esc(self.hw.name)} (peak roofline). Is it memory- or compute-bound?")
        return q, [("Memory-bound: moving weights and activations takes longer",
                    "memory-bound"),
                   ("Compute-bound: the arithmetic takes longer", "compute-bound")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "What moves a CNN pass to the right on the roofline (more FLOP per byte moved)?"
        opts = [("Batching inputs (the weights are read once per pass) or lower-precision "
                 "weights (fewer bytes)", "intensity"),
                ("A faster clock", "clock"),
                ("More memory bandwidth", "bandwidth"),
                ("A longer deadline", "deadline")]
        good = ("Right: AI = FLOP / bytes. Batching shares one weight read among several "
                "inputs and lower precision shrinks the bytes; the device's FLOP/s and "
                "bandwidth move the roof, not the point.")
        bad = ("Not quite: the point's x is the model's FLOP per byte. Only what changes the "
               "bytes per FLOP (batching, precision) moves it; hardware moves the roof.")
        return q, opts, "intensity", _feedback(opts, "intensity", good, bad)

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr, hw, m = self.track, self.hw, self.model
        wb, b, mode = int(s["weight_bits"]), int(s["batch"]), str(s["mode"])  # type: ignore[call-overload]
        d = get_mode(mode)
        bw = hw.memory_bandwidth * d.bandwidth_efficiency
        roofs = np.vstack([np.minimum(hw.peak_flops[p] * d.flop_efficiency,
                                      self.ai_grid * bw) for p in self.precs])
        r = cnn_inference_time(hw, m, wb, b, mode)
        ai = float(r.flops / r.bytes_moved)
        prec = _cnn_precision(hw, wb)
        c_eff = hw.flops(prec) * d.flop_efficiency
        ridge = c_eff / bw
        attain = min(c_eff, ai * bw)
        achieved = float(r.flops) / float(r.latency_s)
        sweep = cnn_inference_time(hw, m, wb, self.batches, mode)
        ai_sweep = np.asarray(sweep.flops) / np.asarray(sweep.bytes_moved)
        times = np.asarray([float(r.compute_s), float(r.memory_s), float(r.overhead_s),
                            float(r.latency_s)]) * 1e3
        dead_ms = tr.slo_s * 1e3
        t_top = _lin_top(times, floor=1e-3)
        lo_a, hi_a = _log_domain(np.concatenate([ai_sweep, [ridge]]), 2.0)
        lw.update_marks({
            self.m_roofs: {"y": roofs},
            self.m_ridge: {"x": [ridge, ridge]},
            self.m_att: {"x": [ai], "y": [attain]},
            self.m_ach: {"x": [ai], "y": [achieved]},
            self.m_time: {"y": times},
            self.st_y: {"max": max(t_top, 1.1 * dead_ms if dead_ms <= 3 * t_top else 0.0)},
            self.m_dead: {"visible": dead_ms <= 3 * t_top},
            self.m_ai: {"y": ai_sweep}, self.sa_y: {"min": lo_a, "max": hi_a},
            self.m_bal: {"y": [ridge, ridge]},
            self.m_ai_pt: {"x": [float(b)], "y": [ai]},
        })
        lat = float(r.latency_s)
        self.results = {
            "regime": str(r.regime), "mode": mode, "weight_bits": wb, "batch": b,
            "compute_precision": prec, "ai_flop_per_byte": ai, "ridge_flop_per_byte": ridge,
            "attainable_flops": attain, "achieved_flops": achieved,
            "compute_s": float(r.compute_s), "memory_s": float(r.memory_s),
            "overhead_s": float(r.overhead_s), "latency_s": lat,
            "per_inference_s": float(r.per_inference_s), "bytes_moved": float(r.bytes_moved),
            "deadline_s": tr.slo_s, "expected": self._expected,
        }
        self._set_readout(_cards([
            ("regime", str(r.regime), f"{mode} roofline, {prec} arithmetic",
             lw.PALETTE["red"]),
            ("arithmetic intensity", f"{ai:,.3g} FLOP/B", f"ridge at {ridge:,.3g}",
             lw.PALETTE["blue"]),
            ("attainable", _si(attain, "FLOP/s"), f"achieved {_si(achieved, 'FLOP/s')}",
             lw.PALETTE["orange"]),
            ("pass latency", _ms(lat), f"{b} input(s); {_ms(float(r.per_inference_s))} each",
             lw.PALETTE["purple"]),
            ("deadline", _ms(tr.slo_s), f"{lat / tr.slo_s:.1%} used", lw.PALETTE["grey"]),
        ]))
        self.callouts["deadline"].set(
            lat > tr.slo_s, "Deadline missed",
            f"A pass over {b} input(s) takes {_ms(lat)}; every input in it waits for the whole "
            f"pass, against a {_ms(tr.slo_s)} deadline.",
            "fewer inputs per pass or lower-precision arithmetic")
        self.callouts["memory_bound"].set(
            str(r.regime) == "memory-bound", "Memory-bound: the device waits on bytes",
            f"{format_bytes(float(r.bytes_moved))} per pass at {_num(bw / 1e9)} GB/s "
            f"({_ms(float(r.memory_s))}) outlasts the arithmetic ({_ms(float(r.compute_s))}).",
            "batch more inputs per pass or lower the weight precision")
        self.callouts["boundary"].set(
            lat <= tr.slo_s and str(r.regime) == "compute-bound",
            f"Compute-bound, {lat / tr.slo_s:.1%} of the deadline",
            f"The point is right of the ridge ({ai:,.3g} vs {ridge:,.3g} FLOP/B): only more "
            "FLOP/s or fewer FLOP help now. "
            + (f"A fixed overhead of {_ms(float(r.overhead_s))} per pass and derated FLOP/s "
               "are why real passes sit under the roof." if mode == "achievable" else
               "Switch to the achievable roofline to see why real passes sit under it."))
        self.math.update(
            "<p>One pass over B inputs (weights read once, activations per input):</p>"
            f"$$\\mathrm{{AI}} = \\frac{{B \\cdot F}}{{W_b + B\\,A}} = "
            f"\\frac{{{b} \\times {_tex_num(m.flops_per_inference)}}}"
            f"{{{_tex_num(float(r.bytes_moved))}}} = {_tex_num(ai)}\\ \\text{{FLOP/B}}$$"
            f"$$P = \\min(C, \\mathrm{{AI}}\\cdot BW) = \\min({_tex_num(c_eff)}, "
            f"{_tex_num(ai)} \\times {_tex_num(bw)}) = {_tex_num(attain)}\\ \\text{{FLOP/s}}$$"
            f"$$t = \\max\\left(\\frac{{BF}}{{C}}, \\frac{{W_b + BA}}{{BW}}\\right) + o = "
            f"\\max({_tex_num(float(r.compute_s) * 1e3)}, {_tex_num(float(r.memory_s) * 1e3)})"
            f" + {_tex_num(float(r.overhead_s) * 1e3)} = {_tex_num(lat * 1e3)}\\ \\text{{ms}}$$"
            f"<p>Ridge C/BW = {ridge:,.3g} FLOP/B ({prec}). Source: "
            "<code>labkit.phases.cnn_inference_time</code>.</p>")

    def _reveal_body(self) -> str:
        d = self.default_point
        r = self.results
        return (f"{self._computed_line()}"
                f"<div>At the defaults: compute {_ms(float(d.compute_s))} vs memory "
                f"{_ms(float(d.memory_s))} per pass.</div>"
                f"<div>With your settings: <b>{r['regime']}</b>, {_ms(r['latency_s'])} per "  # type: ignore[arg-type]
                "pass.</div><div style='color:#5d6d7e'>Why: a CNN reuses each weight across "
                "every pixel or frame it slides over, so its FLOP per byte is high; a small "
                "device can still be compute-bound at a tiny absolute FLOP/s, because its "
                "bandwidth is tiny too. Real passes sit under the roof by a fixed overhead.</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Roofline: at {r['weight_bits']}-bit, {r['batch']} input(s) per pass, the "
                f"model sits at {r['ai_flop_per_byte']:,.3g} FLOP/B vs a ridge of "
                f"{r['ridge_flop_per_byte']:,.3g}: {r['regime']}, {_ms(r['latency_s'])} per "  # type: ignore[arg-type]
                f"pass of a {_ms(r['deadline_s'])} deadline.")  # type: ignore[arg-type]


def _cnn_precision(hw: Hardware, weight_bits: int) -> str:
    return cnn_compute_precision(hw, weight_bits)


# -- Part B: capacity planning --------------------------------------------------------------------

PLAYBOOK = {
    "weights": ("A. capacity (weights)", "more TP / PP devices per replica",
                "a bigger-memory device; FP8 / INT4 weights"),
    "kv": ("B. KV headroom", "more CP; fewer sequences per replica",
           "GQA / MQA / MLA; INT4 KV; sparse attention"),
    "slo": ("C. TPOT throughput", "more replicas (DP)",
            "loosen the SLO; a smaller model; speculative decoding"),
}
AXIS_LABELS = {"weights": "A: weights floor", "kv": "B: KV headroom",
               "slo": "C: TPOT throughput"}


def per_replica_limits(hw: Hardware, m: Model, context: float, tpot_s: float, weight_bits: int,
                       kv_bits: int, devices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sequences one replica of ``devices`` pooled devices holds by KV memory and by the TPOT
    budget, as :func:`labkit.capacity.size_deployment` counts them (even split, no comm).

    KV: floor((usable - weights/d) / (S kv_bpt / d)). TPOT (dense): the step
    (W + B (c + k)) / d + o <= T gives B = floor((d (T - o) - W) / (c + k)); MoE models
    use :func:`labkit.capacity.max_batch_within_slo` (their weight read grows with B).
    """
    from labkit.capacity import max_batch_within_slo
    from labkit.roofline import step_weight_params

    d = get_mode(DESIGN_MODE)
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


_SLO_BATCH_CAP = 1 << 20   # capacity._max_batch's cap


def fleet_sizing(hw: Hardware, m: Model, users: int, context: int, tpot_s: float,
                 weight_bits: int, kv_bits: int, max_devices_per_replica: int = 64) -> Sizing:
    """:func:`labkit.capacity.size_deployment` (achievable roofline), fast for dense models.

    Identical result: the same axes, replica sizes, KV limit and choice rules. Only the
    TPOT limit per replica size is found differently: size_deployment bisects the monotone
    step time; for a dense model the step is linear in the batch, so the closed form
    B = floor((d (T - o) - W) / (c + k)) is taken and then checked against the same step
    time at B and B + 1 (one vectorised roofline call). MoE models call size_deployment.
    """
    from labkit.capacity import kv_headroom_devices, weights_floor_devices

    if m.is_moe:
        return size_deployment(hw, m, users, context, tpot_s, weight_bits, kv_bits,
                               mode=DESIGN_MODE, max_devices_per_replica=max_devices_per_replica)
    u, s, t = int(users), float(context), float(tpot_s)
    floor_a = weights_floor_devices(hw, m, weight_bits)
    axis_b = kv_headroom_devices(hw, m, u, s, weight_bits, kv_bits)
    devices = 2 ** np.arange(0, int(np.log2(max_devices_per_replica)) + 1)
    b_kv_f, est = per_replica_limits(hw, m, s, t, weight_bits, kv_bits, devices)
    b_kv = b_kv_f.astype(np.int64)
    fits = b_kv >= 1
    b = np.clip(est, 0, _SLO_BATCH_CAP).astype(np.int64)
    probe = np.concatenate([np.maximum(b, 1), b + 1]).astype(float)
    r = decode_roofline(hw, m, probe, s, weight_bits, kv_bits, tp=1, mode=DESIGN_MODE)
    dev2 = np.concatenate([devices, devices])
    step = (np.asarray(r.weight_step_s) + np.asarray(r.compute_step_s)
            + np.asarray(r.kv_step_s)) / dev2 + np.asarray(r.overhead_step_s)
    ok_b, ok_next = step[:devices.size] <= t, step[devices.size:] <= t
    b = np.where((b >= 1) & ~ok_b, b - 1, b)            # one step too far
    b = np.where(ok_next & (b + 1 <= _SLO_BATCH_CAP), b + 1, b)  # one step short
    b_slo = np.where(fits, b, 0)
    per_replica = np.minimum(np.minimum(b_kv, b_slo), u)
    ok = per_replica >= 1
    base = dict(hardware=hw.id, model=m.id, users=u, context_tokens=s, tpot_s=t,
                weights_floor_devices=floor_a, kv_headroom_devices=axis_b)
    dmax = max_devices_per_replica
    if not ok.any():
        reason = ("weights and one sequence's KV do not fit" if not fits.any() else
                  f"even one sequence misses TPOT {t * 1e3:g} ms")
        return Sizing(**base, batch_at_slo=0, users_per_replica=0, devices_per_replica=0,  # type: ignore[arg-type]
                      replicas=0, total_devices=0, binding_axis="kv" if not fits.any() else "slo",
                      feasible=False,
                      reason=f"infeasible up to {dmax} devices per replica: {reason}")
    big = np.iinfo(np.int64).max // 4
    replicas = np.where(ok, -(-u // np.maximum(per_replica, 1)), big)
    total = np.where(ok, devices * replicas, big)
    i = int(np.argmin(total))
    dev, rep = int(devices[i]), int(replicas[i])
    first_fit = int(np.argmax(fits))
    if rep == 1 and i == first_fit:
        binding, why = "weights", "one replica at the weights floor serves every user"
    elif rep == 1:
        prev = i - 1
        binding = "kv" if b_kv[prev] < min(u, b_slo[prev]) else "slo"
        why = ("the replica grew past the weights floor to fit "
               + ("the users' KV" if binding == "kv" else "the TPOT budget"))
    else:
        binding = "kv" if b_kv[i] < b_slo[i] else "slo"
        why = (f"each replica holds {per_replica[i]} user(s): limited by "
               + ("KV memory" if binding == "kv" else "the TPOT budget"))
    return Sizing(**base, batch_at_slo=int(b_slo[i]), users_per_replica=int(per_replica[i]),  # type: ignore[arg-type]
                  devices_per_replica=dev, replicas=rep, total_devices=dev * rep,
                  binding_axis=binding, feasible=True, reason=why)


class PartBFleet(Part):
    """Three-axis sizing of a fleet: weights floor, KV headroom, TPOT throughput."""

    letter = "B"

    def _setup(self) -> None:
        tr, m = self.track, self.model
        self.u0 = fleet_users(tr)
        self.ctx0 = int(tr.context_tokens)  # type: ignore[arg-type]
        self.cls0 = slo_class(tr)
        c = self.controls
        users = sorted({max(1, round(self.u0 * 2 ** (k / 4))) for k in range(-28, 17)}
                       | {self.u0})
        c["users"] = lw.selection_control("Concurrent users (sequences)",
                                          [(f"{u:,}", u) for u in users], self.u0)
        c["context"] = lw.context_control(self.ctx0, m.max_context, 256,
                                          "Context per user (tokens)")
        c["slo"] = lw.choice_control(
            "Workload (TPOT SLO)",
            [(f"voice ({slo_tpot('voice') * 1e3:g} ms)", "voice"),
             (f"chat ({slo_tpot('chat') * 1e3:g} ms)", "chat"),
             (f"batch (no TPOT; {BATCH_SLO_TPOT_S:g} s cap)", "batch")], self.cls0,
            style="toggle")
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["kv_bits"] = lw.precision_control("KV-cache precision", tr.kv_bits,
                                            sorted({4, 8, 16, tr.kv_bits}))
        self.sizes = np.asarray(_pow2(64), dtype=np.int64)
        self.default_sizing = self._size(self.u0, self.ctx0, slo_tpot(self.cls0),
                                         tr.weight_bits, tr.kv_bits)
        self._expected = self.default_sizing.binding_axis
        ax, ay = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_axes = ay
        self.axis_names = [AXIS_LABELS["weights"], AXIS_LABELS["kv"], AXIS_LABELS["slo"],
                           "sized plan"]
        self.m_axes = lw.bar_mark(self.axis_names, np.zeros(4), ax, ay,
                                  colors=[lw.PALETTE["grey"]] * 4, color_mode="no_group",
                                  label_display=True, label_display_format=",.0f")
        self.figures["axes"] = lw.figure(
            [self.m_axes], ax, ay, x_label="sizing axis (red: the one that binds)",
            y_label=f"devices ({self.hw.name})", title="Three axes: devices each one needs",
            height=300)
        rx, ry = lw.make_scale("ordinal"), lw.make_scale("log", 0.5, 10.0)
        self.s_rep = ry
        self.m_rep = lw.bar_mark([str(x) for x in self.sizes], np.ones((2, self.sizes.size)),
                                 rx, ry, colors=[lw.PALETTE["purple"], lw.PALETTE["orange"]],
                                 labels=["KV memory allows", "TPOT budget allows"],
                                 kind="grouped", legend=True, base=0.5)
        self.m_rep_u = lw.hline_mark(float(self.u0), ry, color=lw.PALETTE["red"],
                                     label="users", legend=True)
        self.figures["replica"] = lw.figure(
            [self.m_rep, self.m_rep_u], rx, ry, x_label="devices per replica",
            y_label="sequences per replica (log)",
            title="What limits one replica, by its size (0 shows as 0.5)", legend=True,
            legend_location="top-left", y_tick_format=",.4~g", height=300)
        self._callout("infeasible", "danger")
        self._callout("budget", "danger")
        self._callout("binding", "info")
        self._callout("boundary", "success")
        self._sizing_cache: dict[tuple, Sizing] = {}

    def _size(self, users: int, ctx: int, tpot: float, wb: int, kb: int) -> Sizing:
        return fleet_sizing(self.hw, self.model, users, ctx, tpot, wb, kb)

    def _hook(self) -> str:
        tr = self.track
        return (f"{self.u0:,} conversations are live at any moment ({_num(tr.demand_rate_per_s)}"
                f" requests/s x {_ms(track_phases(tr, mode=DESIGN_MODE).latency_s)} each, "
                f"Little's law), each holding up to {self.ctx0:,} tokens of KV. Size the "
                f"{self.hw.name} fleet on three axes: weights, KV headroom and TPOT.")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: {self.u0:,} users at {self.ctx0:,} tokens, TPOT within "
             f"{slo_tpot(self.cls0) * 1e3:g} ms, {tr.weight_bits}-bit weights and "
             f"{tr.kv_bits}-bit KV. Which axis decides the fleet size?")
        return q, [("A: the weights floor (devices to hold one copy of the model)",
                    "weights"),
                   ("B: KV headroom (memory for every user's cache)", "kv"),
                   ("C: TPOT throughput (users per replica within the SLO)", "slo")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "The KV axis binds. Which lever does the paper's playbook pull first?"
        opts = [("More CP, fewer sequences per replica; then shrink kv_bpt (GQA/MLA, "
                 "INT4 KV)", "kv_levers"),
                ("FP8 weights", "weights"),
                ("More replicas at the same size, nothing else", "dp_only"),
                ("Loosen the TPOT SLO", "slo")]
        good = ("Right: KV is the axis where algorithms buy the most, because they attack "
                "kv_bpt directly; CP spreads one sequence's cache, fewer sequences per "
                "replica leave room for it.")
        bad = ("Not quite: that lever answers another axis. For KV the paper pulls CP and a "
               "smaller batch per replica first, then GQA/MQA/MLA, INT4 KV or sparse "
               "attention.")
        return q, opts, "kv_levers", _feedback(opts, "kv_levers", good, bad)

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr = self.track
        users = int(s["users"])  # type: ignore[call-overload]
        ctx, cls = int(s["context"]), str(s["slo"])  # type: ignore[call-overload]
        wb, kb = int(s["weight_bits"]), int(s["kv_bits"])  # type: ignore[call-overload]
        tpot = slo_tpot(cls)
        key = (users, ctx, tpot, wb, kb)
        if key not in self._sizing_cache:
            self._sizing_cache[key] = self._size(*key)
        sz = self._sizing_cache[key]
        b_kv, b_slo = per_replica_limits(self.hw, self.model, ctx, tpot, wb, kb, self.sizes)
        c_dev = (math.ceil(users / max(1, sz.batch_at_slo)) * sz.devices_per_replica
                 if sz.feasible else 0)
        vals = np.asarray([sz.weights_floor_devices, sz.kv_headroom_devices, c_dev,
                           sz.total_devices], dtype=float)
        bind = sz.binding_axis
        colors = [lw.PALETTE["red"] if k == bind else lw.PALETTE["grey"]
                  for k in ("weights", "kv", "slo")] + [lw.PALETTE["blue"]]
        rep = np.vstack([np.maximum(b_kv, 0.5), np.maximum(b_slo, 0.5)])
        lo, hi = _log_domain(np.concatenate([rep.ravel(), [users]]), 2.0)
        lw.update_marks({
            self.m_axes: {"y": vals, "colors": colors},
            self.s_axes: {"max": _lin_top(vals, floor=4.0, pad=1.3)},
            self.m_rep: {"y": rep}, self.s_rep: {"min": max(0.5, lo), "max": hi},
            self.m_rep_u: {"y": [float(users), float(users)]},
        })
        daily = sz.total_devices * float(tr.price_per_device_hour) * tr.active_hours_per_day  # type: ignore[arg-type]
        self.results = {
            **sz.as_dict(), "users": users, "context_tokens": ctx, "slo_class": cls,
            "tpot_s": tpot, "weight_bits": wb, "kv_bits": kb,
            "slo_axis_devices": c_dev, "daily_cost": daily, "cost_unit": tr.cost_unit,
            "kv_limit_by_size": b_kv.tolist(), "slo_limit_by_size": b_slo.tolist(),
            "replica_sizes": self.sizes.tolist(), "expected": self._expected,
        }
        first, second = PLAYBOOK[bind][1], PLAYBOOK[bind][2]
        self._set_readout(_cards([
            ("binding axis", AXIS_LABELS[bind] if sz.feasible else "infeasible",
             lw.esc(sz.reason), lw.PALETTE["red"]),
            ("fleet", f"{sz.total_devices:,} devices" if sz.feasible else "—",
             f"{sz.replicas} x {sz.devices_per_replica}-device replicas",
             lw.PALETTE["blue"]),
            ("users per replica", f"{sz.users_per_replica:,}",
             f"TPOT allows {sz.batch_at_slo:,}", lw.PALETTE["orange"]),
            ("daily cost", _cost(daily, "USD"), f"budget {_num(tr.daily_budget)} USD",
             lw.PALETTE["grey"]),
        ]))
        rows = [[("<b>" if k == bind else "") + lw.esc(PLAYBOOK[k][0])
                 + ("</b> ◀ binds" if k == bind else ""),
                 lw.esc(PLAYBOOK[k][1]), lw.esc(PLAYBOOK[k][2])] for k in PLAYBOOK]
        self._set_details("<div><b>The paper's playbook per binding axis</b></div>"
                          + _table(["binding axis", "first lever", "second lever"], rows))
        self.callouts["infeasible"].set(
            not sz.feasible, "Infeasible: no replica of up to 64 devices serves this",
            lw.esc(sz.reason) + ".",
            "lower the precision, shorten the context, or loosen the TPOT SLO")
        over = sz.feasible and daily > tr.daily_budget
        self.callouts["budget"].set(
            over, "Over the daily budget",
            f"{sz.total_devices:,} devices x {tr.price_per_device_hour:g} USD/h x "
            f"{tr.active_hours_per_day:g} h = {_num(daily)} USD/day against "
            f"{_num(tr.daily_budget)}.", f"{first}; then {second}")
        self.callouts["binding"].set(
            sz.feasible, f"{AXIS_LABELS[bind]} binds",
            f"First lever: <b>{lw.esc(first)}</b>. Second: {lw.esc(second)}.")
        self.callouts["boundary"].set(
            sz.feasible and not over,
            f"{sz.total_devices:,} devices serve {users:,} users within {tpot * 1e3:g} ms",
            f"{sz.replicas} replica(s) of {sz.devices_per_replica}; each holds "
            f"{sz.users_per_replica:,} users (KV allows "
            f"{int(b_kv[list(self.sizes).index(sz.devices_per_replica)]):,}, TPOT "
            f"{sz.batch_at_slo:,}).")
        kvb = kv_bytes_per_token(self.model, kb)
        nb = self.model.block_params_total * bits_to_bytes(wb)
        self.math.update(
            "<p>Three axes, all must hold (HBM = usable bytes per device):</p>"
            f"$$A = \\left\\lceil \\frac{{N b}}{{\\mathrm{{HBM}}}} \\right\\rceil = "
            f"\\left\\lceil \\frac{{{_tex_num(nb)}}}{{{_tex_num(self.hw.usable_memory_bytes)}}}"
            f"\\right\\rceil = {sz.weights_floor_devices}$$"
            f"$$B = \\left\\lceil \\frac{{N b + u\\,S\\,\\mathrm{{kv\\_bpt}}}}"
            f"{{\\mathrm{{HBM}}}} \\right\\rceil = \\left\\lceil \\frac{{{_tex_num(nb)} + "
            f"{users} \\times {ctx} \\times {_tex_num(kvb)}}}"
            f"{{{_tex_num(self.hw.usable_memory_bytes)}}} \\right\\rceil = "
            f"{sz.kv_headroom_devices}$$"
            f"$$C:\\ N_{{\\text{{replicas}}}} = \\left\\lceil \\frac{{u}}{{B_{{\\mathrm{{SLO}}}}}}"
            f"\\right\\rceil = \\left\\lceil \\frac{{{users}}}{{{max(1, sz.batch_at_slo)}}}"
            f"\\right\\rceil$$"
            "<p>The sized plan tries every power-of-two replica size d and keeps the fewest "
            "devices: users per replica = min(KV fits, TPOT allows, users), replicas = "
            f"ceil(users / that). Now: {sz.replicas} x {sz.devices_per_replica} = "
            f"{sz.total_devices}. Source: <code>labkit.capacity.size_deployment</code> "
            "(achievable roofline).</p>")

    def _reveal_body(self) -> str:
        d = self.default_sizing
        r = self.results
        return (f"{self._computed_line()}"
                f"<div>At the defaults: {lw.esc(d.reason)}; {d.total_devices} devices "
                f"({d.replicas} x {d.devices_per_replica}).</div>"
                f"<div>With your settings: <b>{AXIS_LABELS.get(str(r['binding_axis']), '')}"
                f"</b>, {r['total_devices']:,} devices.</div>"
                "<div style='color:#5d6d7e'>Why: the weights fit on a couple of devices, but "
                "every live user keeps a KV cache; at chat context the caches outweigh the "
                "model, and memory, not FLOP/s or the TPOT budget, sets the fleet.</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Capacity: {r['users']:,} users at {r['context_tokens']:,} tokens within "
                f"{r['tpot_s'] * 1e3:g} ms need {r['total_devices']:,} devices; the "  # type: ignore[operator]
                f"{AXIS_LABELS.get(str(r['binding_axis']), 'n/a')} axis binds, so the first "
                f"lever is {PLAYBOOK[str(r['binding_axis'])][1]}.")


class PartBHandheld(Part):
    """On-device LM: what fits beside the OS, tokens/s and energy as the context grows."""

    letter = "B"

    def _setup(self) -> None:
        tr, m, hw = self.track, self.model, self.hw
        self.ctx0 = int(tr.context_tokens)  # type: ignore[arg-type]
        self.req0 = tr.demand_rate_per_s * _active_s(tr)
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["kv_bits"] = lw.precision_control("KV-cache precision", tr.kv_bits,
                                            sorted({4, 8, 16, tr.kv_bits}))
        c["context"] = lw.context_control(self.ctx0, m.max_context, 512,
                                          "Conversation length (tokens)")
        c["requests"] = lw.log_control("Requests per day", self.req0, max(1.0, self.req0 / 10),
                                       self.req0 * 10, readout_format=".3g")
        lo = max(int(tr.output_tokens or 0) + 64, 512)  # type: ignore[arg-type]
        self.grid = np.unique(np.concatenate([np.geomspace(lo, m.max_context, 48).round(),
                                              [self.ctx0]])).astype(int)
        self._curves: dict[tuple[int, int], dict[str, np.ndarray]] = {}
        self.usable = hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction)
        first = self._first_failure(tr.weight_bits, tr.kv_bits, self.req0)
        self.default_first = first
        self._expected = first[0]
        gx = lw.make_scale("log", float(self.grid[0]), float(self.grid[-1]))
        my = lw.make_scale("linear", 0.0, 1.0)
        self.s_mem = my
        self.m_mem = lw.line_mark(self.grid, np.ones(self.grid.size), gx, my,
                                  colors=[lw.PALETTE["blue"]], labels=["weights + KV"],
                                  legend=True)
        self.m_usable = lw.hline_mark(self.usable / 1e9, my, color=lw.PALETTE["red"],
                                      label="app may use", legend=True)
        self.m_ram = lw.hline_mark(hw.memory_bytes / 1e9, my, color=lw.PALETTE["grey"],
                                   label="RAM (OS + apps above red)", legend=True)
        self.m_mem_pt = lw.scatter_mark([float(self.ctx0)], [1.0], gx, my)
        self.figures["memory"] = lw.figure(
            [self.m_mem, self.m_usable, self.m_ram, self.m_mem_pt], gx, my,
            x_label="conversation length (tokens, log)", y_label="memory (GB)",
            title="What fits beside the OS", legend=True, legend_location="top-left",
            x_tick_format=".3~s", height=280)
        tx = lw.make_scale("log", float(self.grid[0]), float(self.grid[-1]))
        ty = lw.make_scale("linear", 0.0, 1.0)
        self.s_tps = ty
        self.m_tps = lw.line_mark(self.grid, np.ones((2, self.grid.size)), tx, ty,
                                  colors=[lw.PALETTE["orange"], lw.PALETTE["purple"]],
                                  labels=["tokens/s (1 / TPOT)", "time to first token (s x 10)"],
                                  legend=True)
        self.m_tps_slo = lw.hline_mark(1.0 / tr.slo_s, ty, color=lw.PALETTE["red"],
                                       label="SLO tokens/s (and TTFT limit x 10)", legend=True)
        self.m_tps_pt = lw.scatter_mark([float(self.ctx0)], [1.0], tx, ty)
        self.figures["speed"] = lw.figure(
            [self.m_tps, self.m_tps_slo, self.m_tps_pt], tx, ty,
            x_label="conversation length (tokens, log)", y_label="tokens/s · TTFT (s x 10)",
            title="Streaming speed and first-token delay", legend=True,
            legend_location="top-right", x_tick_format=".3~s", height=280)
        ex, ey = lw.make_scale("log", float(self.grid[0]), float(self.grid[-1])), \
            lw.make_scale("log", 1.0, 10.0)
        self.s_en = ey
        self.m_en = lw.line_mark(self.grid, np.ones(self.grid.size), ex, ey,
                                 colors=[lw.PALETTE["teal"]], labels=["energy per day"],
                                 legend=True)
        self.m_en_b = lw.hline_mark(tr.daily_budget, ey, color=lw.PALETTE["red"],
                                    label="daily budget", legend=True)
        self.m_en_pt = lw.scatter_mark([float(self.ctx0)], [1.0], ex, ey)
        self.figures["energy"] = lw.figure(
            [self.m_en, self.m_en_b, self.m_en_pt], ex, ey,
            x_label="conversation length (tokens, log)", y_label="mWh per day (log)",
            title="Battery spent per day", legend=True, legend_location="top-left",
            x_tick_format=".3~s", y_tick_format=".3~g", height=280)
        for name in ("memory", "tpot", "ttft", "energy"):
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _curves_for(self, wb: int, kb: int) -> dict[str, np.ndarray]:
        key = (wb, kb)
        if key not in self._curves:
            self._curves[key] = handheld_curves(self.track, wb, kb, self.grid)
        return self._curves[key]

    def _first_failure(self, wb: int, kb: int, requests: float) -> tuple[str, float | None]:
        tr = self.track
        cv = self._curves_for(wb, kb)
        fails = {"memory": cv["memory_bytes"] > self.usable, "tpot": cv["tpot_s"] > tr.slo_s,
                 "ttft": cv["ttft_s"] > float(tr.ttft_slo_s or math.inf),
                 "energy": cv["energy_j"] * requests / edge.J_PER_MWH > tr.daily_budget}
        first, at = "none", None
        for name, f in fails.items():
            idx = np.flatnonzero(f)
            if idx.size and (at is None or self.grid[idx[0]] < at):
                first, at = name, float(self.grid[idx[0]])
        return first, at

    def _hook(self) -> str:
        hw = self.hw
        return (f"iOS-class phones leave one app about {format_bytes(self.usable)} of "
                f"{format_bytes(hw.memory_bytes)}. As a conversation grows, its KV cache, "
                "its prompt pass and its battery cost grow with it. Which limit does a longer "
                "conversation hit first?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: {tr.weight_bits}-bit weights, {tr.kv_bits}-bit KV, "
             f"{self.req0:,.0f} requests a day of {tr.output_tokens} output tokens. As the "
             "conversation grows past its default length, which limit fails first?")
        return q, [("Memory: weights + KV no longer fit beside the OS", "memory"),
                   ("TPOT: replies stream slower than the SLO", "tpot"),
                   ("TTFT: the prompt pass takes longer than the first-token limit", "ttft"),
                   ("Energy: the day's requests spend more than the battery budget",
                    "energy")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "Why does an on-device LM's time per token grow with the conversation?"
        opts = [("Every token reads all the weights and the whole KV cache, and the KV "
                 "grows with the context", "bytes"),
                ("The phone's FLOP/s drop as it warms up", "thermal"),
                ("The attention compute is quadratic per token", "quadratic"),
                ("iOS swaps the model out", "swap")]
        good = ("Right: decode is memory-bound; TPOT = (weight bytes + S x kv_bpt) / BW, so "
                "lower-precision weights and KV are the lever.")
        bad = ("Not quite: decode reads the weights plus the whole KV cache for every token; "
               "the KV term grows with the context S.")
        return q, opts, "bytes", _feedback(opts, "bytes", good, bad)

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr = self.track
        wb, kb, ctx = int(s["weight_bits"]), int(s["kv_bits"]), int(s["context"])  # type: ignore[call-overload]
        req = float(s["requests"])  # type: ignore[arg-type]
        cv = self._curves_for(wb, kb)
        here = handheld_metrics(tr, wb, kb, ctx)
        daily_curve = cv["energy_j"] * req / edge.J_PER_MWH
        daily = here["energy_j"] * req / edge.J_PER_MWH
        tps = 1.0 / cv["tpot_s"]
        ttft10 = cv["ttft_s"] * 10
        mem_gb = cv["memory_bytes"] / 1e9
        lo_e, hi_e = _log_domain(np.concatenate([daily_curve, [tr.daily_budget]]), 1.5)
        lw.update_marks({
            self.m_mem: {"y": mem_gb},
            self.s_mem: {"max": max(self.hw.memory_bytes / 1e9 * 1.15,
                                    min(float(mem_gb.max()), 4 * self.hw.memory_bytes / 1e9))},
            self.m_mem_pt: {"x": [float(ctx)], "y": [here["memory_bytes"] / 1e9]},
            self.m_tps: {"y": np.vstack([tps, ttft10])},
            self.s_tps: {"max": _lin_top(np.concatenate([tps, [1.0 / tr.slo_s]]), pad=1.2)},
            self.m_tps_pt: {"x": [float(ctx)], "y": [1.0 / here["tpot_s"]]},
            self.m_en: {"y": daily_curve}, self.s_en: {"min": lo_e, "max": hi_e},
            self.m_en_pt: {"x": [float(ctx)], "y": [daily]},
        })
        first, at = self._first_failure(wb, kb, req)
        prof = edge.edge_profile(self.hw.id)
        battery = (edge.get_battery(prof.battery) if prof is not None and prof.battery
                   else None)
        share = None if battery is None else daily / battery.capacity_mwh
        fails = {"memory": here["memory_bytes"] > self.usable,
                 "tpot": here["tpot_s"] > tr.slo_s,
                 "ttft": here["ttft_s"] > float(tr.ttft_slo_s or math.inf),
                 "energy": daily > tr.daily_budget}
        self.results = {
            "weight_bits": wb, "kv_bits": kb, "context_tokens": ctx, "requests_per_day": req,
            **{k: float(val) for k, val in here.items()}, "daily_mwh": daily,
            "battery_share_per_day": share, "fails": fails, "first_failure": first,
            "first_failure_context": at, "expected": self._expected,
        }
        self._set_readout(_cards([
            ("memory", format_bytes(here["memory_bytes"]), f"of {format_bytes(self.usable)}",
             lw.PALETTE["blue"]),
            ("streaming", f"{1 / here['tpot_s']:.3g} tokens/s",
             f"SLO {1 / tr.slo_s:.3g}", lw.PALETTE["orange"]),
            ("first token", fmt_time(here["ttft_s"]), f"limit {fmt_time(tr.ttft_slo_s)}",
             lw.PALETTE["purple"]),
            ("energy", f"{_num(daily)} mWh/day",
             f"{_pct(share)} of the battery; "
             f"{_energy(here['energy_j'] / max(1, int(tr.output_tokens or 1)))} per output "
             "token", lw.PALETTE["teal"]),
            ("first to fail", first, "as conversations grow" if at is None else
             f"from {int(at):,} tokens", lw.PALETTE["red"]),
        ]))
        self.callouts["memory"].set(
            fails["memory"], "Out of memory beside the OS",
            f"{format_bytes(here['weights_bytes'])} weights + {format_bytes(here['kv_bytes'])} "
            f"KV exceed the {format_bytes(self.usable)} iOS leaves the app.",
            "lower the weight or KV precision, or cap the conversation")
        self.callouts["tpot"].set(
            fails["tpot"], "Streams slower than the SLO",
            f"{here['tpot_s'] * 1e3:.3g} ms per token at {ctx:,} tokens vs "
            f"{tr.slo_s * 1e3:g} ms.", "lower precision (fewer bytes per token) or shorter "
                                       "conversations")
        self.callouts["ttft"].set(
            fails["ttft"], "First token too slow",
            f"The prompt pass over {int(here['prompt_tokens']):,} tokens takes "
            f"{here['ttft_s']:.3g} s vs {tr.ttft_slo_s} s.",
            "cap the prompt (summarise older turns), or reuse a cached prefix")
        self.callouts["energy"].set(
            fails["energy"], "Over the battery budget",
            f"{_num(req)} requests x {_energy(here['energy_j'])} = {_num(daily)} mWh/day "
            f"vs {_num(tr.daily_budget)}.", "lower precision, shorter replies or fewer "
                                                 "requests on the device")
        self.callouts["boundary"].set(
            not any(fails.values()), "Everything fits at this length",
            f"Next wall: {first}" + ("" if at is None else f" from {int(at):,} tokens") + ".")
        kvb = kv_bytes_per_token(self.model, kb)
        bw = self.hw.memory_bandwidth * get_mode(DESIGN_MODE).bandwidth_efficiency
        self.math.update(
            f"$$M(S) = W + S\\,\\mathrm{{kv\\_bpt}} = {_tex_num(here['weights_bytes'])} + "
            f"{ctx} \\times {_tex_num(kvb)} = {_tex_num(here['memory_bytes'])}\\ \\text{{B}}"
            f"\\ \\le {_tex_num(self.usable)}$$"
            f"$$\\mathrm{{TPOT}}(S) \\approx \\frac{{W + S\\,\\mathrm{{kv\\_bpt}}}}{{BW}} + o = "
            f"{here['tpot_s'] * 1e3:.3g}\\ \\text{{ms}}\\quad (BW = {_tex_num(bw)}\\ "
            "\\text{B/s})$$"
            f"$$E_{{\\text{{day}}}} = n \\cdot P\\,(t_{{\\text{{prefill}}}} + "
            f"t_{{\\text{{decode}}}}) = {_num(req)} \\times {_tex_num(here['energy_j'])}\\ "
            f"\\text{{J}} = {_tex_num(daily)}\\ \\text{{mWh}}$$"
            "<p>Source: <code>labkit.phases.request_phases</code>, "
            "<code>labkit.roofline.decode_roofline</code> (achievable), "
            "<code>labkit.serving.resident_weight_bytes</code>.</p>")

    def _reveal_body(self) -> str:
        name, at = self.default_first
        return (f"{self._computed_line()}"
                f"<div>At the defaults, {name} fails first"
                + ("" if at is None else f", from about {int(at):,} tokens") + ".</div>"
                "<div style='color:#5d6d7e'>Why: memory grows by only "
                f"{format_bytes(kv_bytes_per_token(self.model, self.track.kv_bits))} per token, "
                "while the prompt pass grows with every prompt token and the battery pays for "
                "all of it; on a phone the time and energy walls come before the memory wall."
                "</div>")

    def takeaway(self) -> str:
        r = self.results
        where = ("" if r["first_failure_context"] is None
                 else f" from {int(r['first_failure_context']):,} tokens")  # type: ignore[call-overload]
        return (f"Capacity on the phone: at {r['context_tokens']:,} tokens "
                f"({r['weight_bits']}-bit weights, {r['kv_bits']}-bit KV) the model uses "
                f"{format_bytes(r['memory_bytes'])} and {_num(r['daily_mwh'])} mWh/day; "  # type: ignore[arg-type]
                f"{r['first_failure']} is the first wall{where}.")


class PartBWearable(Part):
    """A wearable MCU: weights in flash, windows in SRAM, the duty cycle and battery life."""

    letter = "B"

    def _setup(self) -> None:
        tr = self.track
        prof = edge.edge_profile(self.hw.id)
        if prof is None or prof.battery is None:
            raise ValueError(f"{self.hw.id} needs an edge profile with a battery")
        self.battery = edge.get_battery(prof.battery)
        self.interval_s = float(design_defaults(tr)["interval_ms"]) / 1e3  # type: ignore[arg-type]
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["duty"] = lw.float_control("Share of windows processed (duty)", 1.0, 0.05, 1.0, 0.05,
                                     ".0%")
        c["windows"] = lw.int_control("Windows buffered in SRAM", 1, 1, 8)
        self.duties = np.asarray(DUTY_STEPS)
        d0 = self._evaluate(tr.weight_bits, 1.0, 1)
        self.default_eval = d0
        self._expected = d0["first"]
        fx, fy = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_fit = fy
        self.m_fit = lw.bar_mark(["flash: weights", "SRAM: windows + activations"],
                                 np.zeros(2), fx, fy, colors=[lw.PALETTE["blue"]] * 2,
                                 color_mode="no_group", label_display=True,
                                 label_display_format=".0f")
        self.m_fit_l = lw.hline_mark(100.0, fy, color=lw.PALETTE["red"], label="capacity",
                                     legend=True)
        self.figures["fit"] = lw.figure(
            [self.m_fit, self.m_fit_l], fx, fy, x_label="memory",
            y_label="% of capacity", title="Weights in flash, windows in SRAM", height=280)
        lx = lw.make_scale("linear", 0.0, 1.0)
        ly = lw.make_scale("linear", 0.0, 1.0)
        self.s_life = ly
        self.m_life = lw.line_mark(self.duties, np.ones(self.duties.size), lx, ly,
                                   colors=[lw.PALETTE["teal"]], labels=["battery life"],
                                   legend=True)
        self.m_life_t = lw.hline_mark(self.battery.target_days, ly, color=lw.PALETTE["red"],
                                      label=f"promised {self.battery.target_days:g} days",
                                      legend=True)
        self.m_life_f = lw.vline_mark(tr.min_demand_rate_per_s / tr.demand_rate_per_s, lx,
                                      color=lw.PALETTE["grey"], line_style="dotted",
                                      label="least duty that still hears a repeated word",
                                      legend=True)
        self.m_life_pt = lw.scatter_mark([1.0], [1.0], lx, ly)
        self.figures["life"] = lw.figure(
            [self.m_life, self.m_life_t, self.m_life_f, self.m_life_pt], lx, ly,
            x_label="share of windows processed (duty)", y_label="days on one charge",
            title="Battery life vs how often the ring listens", legend=True,
            legend_location="bottom-left", x_tick_format=".0%", height=280)
        ex, ey = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_day = ey
        self.m_day = lw.bar_mark(["spotter", "rest of the ring"], np.zeros(2), ex, ey,
                                 colors=[lw.PALETTE["orange"], lw.PALETTE["grey"]],
                                 color_mode="no_group", label_display=True,
                                 label_display_format=".3~g")
        self.m_day_b = lw.hline_mark(tr.daily_budget, ey, color=lw.PALETTE["red"],
                                     label="spotter budget", legend=True)
        self.figures["day"] = lw.figure(
            [self.m_day, self.m_day_b], ex, ey, x_label="consumer", y_label="mWh per day",
            title="Energy per day", height=280)
        for name in ("flash", "sram", "energy", "coverage"):
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _evaluate(self, wb: int, duty: float, windows: int) -> dict[str, object]:
        tr = self.track
        rw = ring_window(tr, wb)
        sp = ring_split(tr, wb, "on_device", self.interval_s, duty)
        per_day = duty * tr.demand_rate_per_s * _active_s(tr)
        daily = sp.energy_j * per_day / edge.J_PER_MWH
        sram = windows * rw["window_bytes"] + rw["activation_bytes"]
        floor = tr.min_demand_rate_per_s / tr.demand_rate_per_s
        fails = {"flash": rw["weights_bytes"] > rw["flash_bytes"],
                 "sram": sram > rw["sram_bytes"], "energy": daily > tr.daily_budget,
                 "coverage": duty < floor - 1e-9}
        first = next((k for k in ("flash", "sram", "energy", "coverage") if fails[k]), "none")
        return {"rw": rw, "split": sp, "daily_mwh": daily, "sram_bytes_used": sram,
                "fails": fails, "first": first, "floor": floor,
                "battery_days": edge.battery_life_days(self.battery, daily)}

    def _hook(self) -> str:
        tr = self.track
        return (f"Weights sit in {format_bytes(float(self.hw.flash_bytes or 0))} of flash, each "
                f"window and its activations in {format_bytes(self.hw.usable_memory_bytes)} of "
                f"SRAM, and the spotter may spend {_num(tr.daily_budget)} mWh a day of a "
                f"{_num(self.battery.capacity_mwh)} mWh battery. Does it fit, and how often "
                "can it listen?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: {tr.weight_bits}-bit weights, every window processed on the "
             "ring (front end + model), one window buffered. Which constraint fails first?")
        return q, [("Flash: the weights do not fit", "flash"),
                   ("SRAM: the window and its activations do not fit", "sram"),
                   ("Energy: the spotter's daily budget", "energy"),
                   ("None: it fits and lasts", "none")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "The spotter is over its energy budget. Which lever fixes it without new hardware?"
        opts = [("Process fewer windows (duty cycle) or hand work off to the phone",
                 "duty"),
                ("Buffer more windows in SRAM", "buffer"),
                ("Use 32-bit weights for accuracy", "precision_up"),
                ("Nothing: energy is fixed by the battery", "nothing")]
        good = ("Right: energy per day = energy per window x windows processed per day; the "
                "duty cycle scales it directly (down to the share that still hears a repeated "
                "word), and Part C prices the BLE hand-off.")
        bad = ("Not quite: energy per day = energy per window x windows per day. Buffering "
               "changes SRAM, not energy; higher precision costs more.")
        return q, opts, "duty", _feedback(opts, "duty", good, bad)

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr = self.track
        wb, duty, win = int(s["weight_bits"]), float(s["duty"]), int(s["windows"])  # type: ignore[call-overload, arg-type]
        ev = self._evaluate(wb, duty, win)
        rw, sp = ev["rw"], ev["split"]
        per_window = sp.energy_j  # type: ignore[attr-defined]
        windows_day = tr.demand_rate_per_s * _active_s(tr)
        # energy per day = active energy x windows processed + link idle power x the day
        # (wearable_split's idle share per window times the windows it is spread over)
        active_j = sp.energy_j - sp.idle_j  # type: ignore[attr-defined]
        idle_w = sp.idle_j * duty * tr.demand_rate_per_s  # type: ignore[attr-defined]
        life = self.battery.capacity_mwh / (
            self.battery.other_mwh_per_day
            + (active_j * self.duties * windows_day + idle_w * _active_s(tr)) / edge.J_PER_MWH)
        fit = np.asarray([100 * rw["weights_bytes"] / rw["flash_bytes"],  # type: ignore[index]
                          100 * ev["sram_bytes_used"] / rw["sram_bytes"]])  # type: ignore[index, operator]
        daily = float(ev["daily_mwh"])  # type: ignore[arg-type]
        days = float(ev["battery_days"])  # type: ignore[arg-type]
        lw.update_marks({
            self.m_fit: {"y": fit, "colors": [lw.PALETTE["red"] if x > 100 else
                                              lw.PALETTE["blue"] for x in fit]},
            self.s_fit: {"max": _lin_top(np.concatenate([fit, [100.0]]), pad=1.2)},
            self.m_life: {"y": life},
            self.s_life: {"max": _lin_top(np.concatenate([life, [self.battery.target_days]]),
                                          pad=1.15)},
            self.m_life_pt: {"x": [duty], "y": [days]},
            self.m_day: {"y": [daily, self.battery.other_mwh_per_day]},
            self.s_day: {"max": _lin_top([daily, self.battery.other_mwh_per_day,
                                          tr.daily_budget], pad=1.2)},
        })
        fails = ev["fails"]
        self.results = {
            "weight_bits": wb, "duty": duty, "windows_buffered": win,
            "weights_bytes": rw["weights_bytes"], "flash_bytes": rw["flash_bytes"],  # type: ignore[index]
            "sram_bytes_used": ev["sram_bytes_used"], "sram_bytes": rw["sram_bytes"],  # type: ignore[index]
            "energy_per_window_j": per_window, "front_end_j": sp.front_end_j,  # type: ignore[attr-defined]
            "model_j": sp.model_j, "link_idle_j": sp.idle_j,  # type: ignore[attr-defined]
            "daily_mwh": daily, "battery_days": days, "target_days": self.battery.target_days,
            "fails": fails, "first_failure": ev["first"], "expected": self._expected,
        }
        self._set_readout(_cards([
            ("flash", f"{fit[0]:.3g}%", f"{format_bytes(rw['weights_bytes'])} weights",  # type: ignore[index]
             lw.PALETTE["blue"]),
            ("SRAM", f"{fit[1]:.3g}%", f"{win} window(s) + activations", lw.PALETTE["purple"]),
            ("per window", _energy(per_window), f"front end + model, {_ms(sp.latency_s)}",  # type: ignore[attr-defined]
             lw.PALETTE["orange"]),
            ("spotter", f"{_num(daily)} mWh/day", f"budget {_num(tr.daily_budget)}",
             lw.PALETTE["red"]),
            ("battery life", f"{days:.3g} days", f"promised {self.battery.target_days:g}",
             lw.PALETTE["teal"]),
        ]))
        self.callouts["flash"].set(
            fails["flash"], "Weights do not fit in flash",  # type: ignore[index]
            f"{format_bytes(rw['weights_bytes'])} vs {format_bytes(rw['flash_bytes'])}.",  # type: ignore[index]
            "lower the weight precision")
        self.callouts["sram"].set(
            fails["sram"], "Out of SRAM",  # type: ignore[index]
            f"{win} window(s) of {format_bytes(tr.window_bytes)} + activations "
            f"{format_bytes(rw['activation_bytes'])} = "  # type: ignore[index]
            f"{format_bytes(ev['sram_bytes_used'])} vs {format_bytes(rw['sram_bytes'])}.",  # type: ignore[arg-type, index]
            "buffer fewer windows, or a lower-precision datapath (smaller activations)")
        self.callouts["energy"].set(
            fails["energy"], "Over the energy budget",  # type: ignore[index]
            f"{_num(duty * windows_day)} windows/day x {_energy(per_window)} = "
            f"{_num(daily)} mWh/day vs {_num(tr.daily_budget)}: the battery lasts "
            f"{days:.3g} days, not {self.battery.target_days:g}.",
            "process fewer windows (duty), or hand work to the phone (Part C)")
        self.callouts["coverage"].set(
            fails["coverage"], "Listening too rarely",  # type: ignore[index]
            f"{duty:.0%} of windows is below the {ev['floor']:.0%} that still catches a wake "  # type: ignore[str-format]
            "word said twice.", "raise the duty cycle")
        self.callouts["boundary"].set(
            not any(fails.values()), "Fits and lasts",  # type: ignore[attr-defined]
            f"{days:.3g} days on a charge; the spotter uses {daily / tr.daily_budget:.0%} of "
            "its budget.")
        self.math.update(
            f"$$E_{{\\text{{window}}}} = P\\,(t_{{\\text{{front}}}} + t_{{\\text{{model}}}}) + "
            f"\\frac{{E_{{\\text{{event}}}}}}{{T_{{\\text{{conn}}}}\\,r}} = "
            f"{_tex_num(per_window)}\\ \\text{{J}}$$"
            f"$$E_{{\\text{{day}}}} = d \\cdot r \\cdot 86400 \\cdot E_{{\\text{{window}}}} = "
            f"{duty:.2f} \\times {_num(windows_day)} \\times {_tex_num(per_window)} / 3.6 = "
            f"{_tex_num(daily)}\\ \\text{{mWh}}$$"
            f"$$\\text{{life}} = \\frac{{{_num(self.battery.capacity_mwh)}}}"
            f"{{{_num(self.battery.other_mwh_per_day)} + {_tex_num(daily)}}} = "
            f"{days:.3g}\\ \\text{{days}}$$"
            f"<p>The phone link is kept at a {self.interval_s * 1e3:g} ms connection interval. "
            "Source: <code>labkit.edge.wearable_split</code>, "
            "<code>labkit.edge.battery_life_days</code>, "
            "<code>labkit.phases.cnn_inference_time</code>.</p>")

    def _reveal_body(self) -> str:
        d = self.default_eval
        return (f"{self._computed_line()}"
                f"<div>At the defaults the spotter needs {_num(float(d['daily_mwh']))} "  # type: ignore[arg-type]
                f"mWh/day: the battery lasts {float(d['battery_days']):.3g} days.</div>"  # type: ignore[arg-type]
                "<div style='color:#5d6d7e'>Why: a 38.6k-parameter model fits flash many times "
                "over, and one window fits SRAM; but it runs every second of every day, so its "
                "energy adds up. On a wearable the wall is energy, not memory.</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Capacity on the ring: at {r['weight_bits']}-bit and {r['duty']:.0%} duty the "
                f"spotter spends {_num(r['daily_mwh'])} mWh/day "  # type: ignore[arg-type]
                f"(budget {_num(self.track.daily_budget)}) and the ring lasts "
                f"{r['battery_days']:.3g} days; first failure: {r['first_failure']}.")


class PartBVehicle(Part):
    """Multi-camera perception on one SoC: cameras x fps against the deadline, the SoC's
    throughput, memory and the energy budget."""

    letter = "B"

    def _setup(self) -> None:
        tr = self.track
        self.n0, self.f0 = cameras_and_fps(tr)
        c = self.controls
        c["cameras"] = lw.int_control("Cameras", self.n0, 1, max(64, 2 * self.n0))
        c["fps"] = lw.int_control("Frames per second per camera", round(self.f0), 5,
                                  max(60, round(self.f0)), 5)
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        self.cams = np.arange(1, int(self.controls["cameras"].max) + 1)
        self.names = ["deadline", "throughput", "memory", "energy"]
        first, at = self._first(tr.weight_bits, self.f0)
        self.default_first = (first, at)
        self._expected = first
        rx, ry = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_ratio = ry
        self.m_ratio = lw.bar_mark(self.names, np.zeros(4), rx, ry,
                                   colors=[lw.PALETTE["green"]] * 4, color_mode="no_group",
                                   label_display=True, label_display_format=".2f")
        self.m_ratio_l = lw.hline_mark(1.0, ry, color=lw.PALETTE["red"], label="limit",
                                       legend=True)
        self.figures["limits"] = lw.figure(
            [self.m_ratio, self.m_ratio_l], rx, ry, x_label="constraint",
            y_label="use of the limit (above 1 fails)", title="One SoC against every limit",
            height=280)
        cx = lw.make_scale("linear", 1, float(self.cams[-1]))
        cy = lw.make_scale("linear", 0.0, 1.0)
        self.s_cam = cy
        self.m_cam = lw.line_mark(self.cams, np.ones((4, self.cams.size)), cx, cy,
                                  colors=[lw.PALETTE["red"], lw.PALETTE["orange"],
                                          lw.PALETTE["blue"], lw.PALETTE["teal"]],
                                  labels=self.names, legend=True)
        self.m_cam_l = lw.hline_mark(1.0, cy, color=lw.PALETTE["grey"], label="limit",
                                     legend=True)
        self.m_cam_pt = lw.vline_mark(float(self.n0), cx, color=lw.PALETTE["purple"],
                                      label="your cameras", legend=True)
        self.figures["cameras"] = lw.figure(
            [self.m_cam, self.m_cam_l, self.m_cam_pt], cx, cy, x_label="cameras",
            y_label="use of each limit", title="Adding cameras: which limit comes first",
            legend=True, legend_location="top-left", x_tick_format="d", height=280)
        for name in self.names:
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _ratios(self, wb: int, cams: np.ndarray, fps: float) -> np.ndarray:
        tr = self.track
        t, _ = vehicle_frame(tr, wb)
        m = self.model
        deadline = cams * t / tr.slo_s
        busy = cams * fps * t / tr.max_utilisation
        mem = (weight_bytes(m, wb) + cams * tr.state_bytes_per_request) \
            / self.hw.usable_memory_bytes
        energy = (float(self.hw.power_w or 0.0) * t * cams * fps * _active_s(tr)
                  / edge.J_PER_WH / tr.daily_budget)
        return np.vstack([deadline, busy, mem, energy])

    def _first(self, wb: int, fps: float) -> tuple[str, int | None]:
        r = self._ratios(wb, self.cams.astype(float), fps)
        first, at = "none", None
        for name, row in zip(self.names, r, strict=True):
            idx = np.flatnonzero(row > 1.0)
            if idx.size and (at is None or int(self.cams[idx[0]]) < at):
                first, at = name, int(self.cams[idx[0]])
        return first, at

    def _hook(self) -> str:
        tr = self.track
        t, _ = vehicle_frame(tr, tr.weight_bits)
        return (f"{self.n0} unsynchronised cameras at {self.f0:g} fps feed one "
                f"{self.hw.name}; a frame takes {_ms(t)} and must be done within "
                f"{_ms(tr.slo_s)} even when every camera's frame lands at once. How many "
                "cameras can one SoC carry, and what stops it?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: {tr.weight_bits}-bit {lw.esc(self.model.name)} at "
             f"{self.f0:g} fps per camera on one SoC. Adding cameras one by one, which limit "
             "fails first?")
        return q, [("Deadline: the last of simultaneous frames is late", "deadline"),
                   ("Throughput: the SoC is busier than it may be", "throughput"),
                   ("Memory: frames in flight no longer fit", "memory"),
                   ("Energy: perception exceeds its daily energy budget", "energy")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "Why is the worst-case latency of unsynchronised cameras cameras x frame time?"
        opts = [("All cameras can deliver a frame at the same instant; one SoC serves them "
                 "one after another", "simultaneous"),
                ("Cameras are synchronised by the vehicle", "synced"),
                ("Frames are batched to the largest batch", "batched"),
                ("It is not: latency is one frame time", "one")]
        good = ("Right: a hard deadline must hold in the worst case, when every camera's "
                "frame arrives together and the last one waits for all the others.")
        bad = ("Not quite: unsynchronised cameras can all deliver at once; the last frame "
               "waits for every other frame served before it.")
        return q, opts, "simultaneous", _feedback(opts, "simultaneous", good, bad)

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr = self.track
        n, fps, wb = int(s["cameras"]), float(s["fps"]), int(s["weight_bits"])  # type: ignore[call-overload, arg-type]
        sweep = self._ratios(wb, self.cams.astype(float), fps)
        here = self._ratios(wb, np.asarray([float(n)]), fps)[:, 0]
        cl = vehicle_load(tr, wb, "single", n, fps)
        colors = [lw.PALETTE["red"] if x > 1 else lw.PALETTE["green"] for x in here]
        lw.update_marks({
            self.m_ratio: {"y": here, "colors": colors},
            self.s_ratio: {"max": _lin_top(np.concatenate([here, [1.0]]), pad=1.25)},
            self.m_cam: {"y": sweep},
            self.s_cam: {"max": min(OFF_SCALE, _lin_top(np.concatenate([sweep.ravel(),
                                                                        [1.0]]), pad=1.1))},
            self.m_cam_pt: {"x": [float(n), float(n)]},
        })
        first, at = self._first(wb, fps)
        daily = float(here[3]) * tr.daily_budget
        self.results = {
            "cameras": n, "fps": fps, "weight_bits": wb, "frame_s": cl.frame_s,
            "worst_latency_s": cl.worst_latency_s, "busy": cl.max_busy,
            "daily_wh": daily, "ratios": dict(zip(self.names, here.tolist(), strict=True)),
            "first_failure": first, "first_failure_cameras": at, "expected": self._expected,
        }
        self._set_readout(_cards([
            ("worst-case latency", _ms(cl.worst_latency_s), f"deadline {_ms(tr.slo_s)}",
             lw.PALETTE["red"]),
            ("SoC busy", f"{cl.max_busy:.1%}", f"max {tr.max_utilisation:.0%}",
             lw.PALETTE["orange"]),
            ("energy", f"{_num(daily)} Wh/day", f"budget {_num(tr.daily_budget)}",
             lw.PALETTE["teal"]),
            ("first to fail", first, f"within {int(self.cams[-1])} cameras" if at is None
             else f"at {at} cameras", lw.PALETTE["purple"]),
        ]))
        details = {
            "deadline": (f"{n} frames at once x {_ms(cl.frame_s)} = "
                         f"{_ms(cl.worst_latency_s)} vs {_ms(tr.slo_s)}.",
                         "fewer cameras per SoC (Part C: a second SoC) or faster frames"),
            "throughput": (f"{_num(cl.frames_per_s)} frames/s x {_ms(cl.frame_s)} = "
                           f"{cl.max_busy:.0%} busy vs {tr.max_utilisation:.0%}.",
                           "lower fps or split cameras over two SoCs"),
            "memory": ("Frames in flight with their activations exceed the SoC's memory.",
                       "fewer frames in flight"),
            "energy": (f"{_num(daily)} Wh/day vs {_num(tr.daily_budget)}.",
                       "fewer frames per day (fps), or lower-precision arithmetic"),
        }
        titles = {"deadline": "Hard deadline missed", "throughput": "SoC overloaded",
                  "memory": "Out of memory", "energy": "Over the energy budget"}
        for name, ratio in zip(self.names, here, strict=True):
            self.callouts[name].set(bool(ratio > 1), titles[name], details[name][0],
                                    details[name][1])
        self.callouts["boundary"].set(
            bool(np.all(here <= 1)), f"{n} cameras fit on one SoC",
            f"Closest limit: {self.names[int(np.argmax(here))]} at {float(here.max()):.0%}; "
            f"first to fail as cameras grow: {first}"
            + ("" if at is None else f" at {at}") + ".")
        self.math.update(
            f"$$t_{{\\text{{worst}}}} = N\\,t_{{\\text{{frame}}}} = {n} \\times "
            f"{_tex_num(cl.frame_s * 1e3)}\\ \\text{{ms}} = "
            f"{_tex_num(cl.worst_latency_s * 1e3)}\\ \\text{{ms}}$$"
            f"$$\\rho = N f\\,t_{{\\text{{frame}}}} = {n} \\times {fps:g} \\times "
            f"{_tex_num(cl.frame_s)} = {cl.max_busy:.3g}$$"
            f"$$E_{{\\text{{day}}}} = P\\,\\rho\\,T_{{\\text{{active}}}} = "
            f"{_num(float(self.hw.power_w or 0))} \\times {cl.max_busy:.3g} \\times "
            f"{tr.active_hours_per_day:g}\\ \\text{{h}} = {_tex_num(daily)}\\ \\text{{Wh}}$$"
            "<p>Source: <code>labkit.edge.camera_load</code>, "
            "<code>labkit.phases.cnn_inference_time</code> (achievable).</p>")

    def _reveal_body(self) -> str:
        name, at = self.default_first
        return (f"{self._computed_line()}"
                f"<div>{name.capitalize()} fails first"
                + ("" if at is None else f", at {at} cameras") + ".</div>"
                "<div style='color:#5d6d7e'>Why: a YOLOv8-n frame takes well under a "
                "millisecond, so the deadline and the SoC's throughput have room for dozens of "
                "cameras; memory is plentiful. Energy grows with every frame processed, all "
                "day long.</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Capacity on the SoC: {r['cameras']} cameras x {r['fps']:g} fps take "
                f"{_ms(r['worst_latency_s'])} in the worst case and {_num(r['daily_wh'])} "  # type: ignore[arg-type]
                f"Wh/day; adding cameras, {r['first_failure']} fails first"
                + ("" if r["first_failure_cameras"] is None
                   else f" at {r['first_failure_cameras']}") + ".")


# -- Part C: parallelism and hand-off -------------------------------------------------------------

AXES = ("tp", "cp", "pp", "dp", "ep")


def layout_label(degrees: Sequence[int]) -> str:
    """'TP4', 'TP2 x PP2', 'TP8 x DP4', '1 device' for (tp, cp, pp, dp, ep)."""
    parts = [f"{a.upper()}{d}" for a, d in zip(AXES, degrees, strict=True) if d > 1]
    return " x ".join(parts) if parts else "1 device"


class PartCFleet(Part):
    """Symptom -> axis: TP x CP x PP x DP (x EP) layouts, their per-device memory, the
    communication each axis sends on the link it crosses, the Pareto frontier, and when to
    stop adding an axis."""

    letter = "C"

    def _setup(self) -> None:
        tr, m, hw = self.track, self.model, self.hw
        self.ctx0, self.b0 = int(tr.context_tokens), int(tr.batch_size)  # type: ignore[arg-type]
        long_ctx = m.max_context
        voice = SLO_TARGETS["voice"].tpot_s
        tight = float(voice[0]) if voice is not None else tr.slo_s / 2
        self.presets: dict[str, dict[str, object]] = {}

        def add(key: str, label: str, batch: int, ctx: int, slo: float, axis: str,
                first: str) -> None:
            self.presets[key] = {"label": label, "batch": batch, "context": min(ctx, long_ctx),
                                 "slo": slo, "axis": axis, "first": first}

        add("weights", "Weight memory doesn't fit (the track's own workload)", self.b0,
            self.ctx0, tr.slo_s, "tp", "TP within a fast domain")
        add("long_kv", "KV of ONE long sequence", 1, long_ctx, tr.slo_s, "cp", "CP")
        add("many_kv", "KV for MANY sequences", 4 * self.b0, self.ctx0, tr.slo_s, "dp",
            "DP replicas")
        add("tpot", f"Single-request TPOT ({tight * 1e3:g} ms)", 1, self.ctx0, tight, "tp",
            "TP (up to about 8)")
        add("throughput", "Aggregate throughput", 16 * self.b0, self.ctx0, tr.slo_s, "dp",
            "outer DP")
        add("nodes", "Model spans multiple nodes", self.b0, 8 * self.ctx0, tr.slo_s, "pp",
            "TP inside a node, PP across nodes")
        if m.is_moe:
            add("moe", "MoE expert weight memory", self.b0, self.ctx0, tr.slo_s, "ep", "EP")
        self.opts = {
            "tp": _pow2(min(m.q_heads, 64)), "cp": _pow2(min(long_ctx // 1024, 64)),
            "pp": _pow2(min(m.layers, 64)), "dp": _pow2(256),
            "ep": [e for e in _pow2(m.experts_total) if m.experts_total % e == 0]
            if m.is_moe else [1],
        }
        c = self.controls
        c["symptom"] = lw.choice_control(
            "Dominant problem", [(str(p["label"]), k) for k, p in self.presets.items()],
            "weights")
        dflt = {"tp": tr.devices_per_replica}
        for ax in AXES:
            if ax == "ep" and not m.is_moe:
                continue
            c[ax] = lw.selection_control(f"{ax.upper()} degree",
                                         [(str(x), x) for x in self.opts[ax]],
                                         dflt.get(ax, 1) if dflt.get(ax, 1) in self.opts[ax]
                                         else 1)
        wb, kb = tr.weight_bits, tr.kv_bits
        self.tables = {k: fleet_table(tr, wb, kb, int(p["context"]), int(p["batch"]))  # type: ignore[call-overload]
                       for k, p in self.presets.items()}
        self.searches: dict[str, ParallelismSearch | None] = {}
        for k, p in self.presets.items():
            try:
                self.searches[k] = search(hw, m, int(p["context"]), int(p["batch"]), wb, kb,  # type: ignore[call-overload]
                                          max_devices=DESIGN_MAX_DEVICES,
                                          latency_slo_s=float(p["slo"]), mode=DESIGN_MODE)  # type: ignore[arg-type]
            except ValueError:
                self.searches[k] = None
        try:
            s0 = search(hw, m, self.ctx0, self.b0, wb, kb, max_devices=DESIGN_MAX_DEVICES,
                        latency_slo_s=tr.slo_s, mode=DESIGN_MODE)
            self.default_search: ParallelismSearch | None = s0
            self._expected = layout_label(s0.chosen.degrees)
        except ValueError:
            self.default_search, self._expected = None, "none fits"

        mx, my = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_mem = my
        self.m_mem = lw.bar_mark(["your layout", "next"], np.zeros((3, 2)), mx, my,
                                 colors=[lw.PALETTE["blue"], lw.PALETTE["purple"],
                                         lw.PALETTE["grey"]],
                                 labels=["weights", "KV", "transient"], legend=True)
        self.m_mem_cap = lw.hline_mark(hw.usable_memory_bytes / 1e9, my,
                                       color=lw.PALETTE["red"], label="usable", legend=True)
        self.figures["memory"] = lw.figure(
            [self.m_mem, self.m_mem_cap], mx, my, x_label="layout",
            y_label="GB on the binding device", title="Per-device memory", legend=True,
            legend_location="top-right", height=280)
        tx, ty = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_time = ty
        self.m_time = lw.bar_mark(["your layout", "next"], np.zeros((5, 2)), tx, ty,
                                  colors=[lw.PALETTE["orange"], lw.PALETTE["red"],
                                          lw.PALETTE["purple"], lw.PALETTE["teal"],
                                          lw.PALETTE["green"]],
                                  labels=["roofline", "TP all-reduce", "CP ring", "PP hand-off",
                                          "EP all-to-all"], legend=True)
        self.m_time_slo = lw.hline_mark(tr.slo_s * 1e3, ty, color=lw.PALETTE["red"],
                                        label="TPOT SLO", legend=True)
        self.figures["time"] = lw.figure(
            [self.m_time, self.m_time_slo], tx, ty, x_label="layout",
            y_label="ms per token", title="Time per token: compute vs communication",
            legend=True, legend_location="top-right", height=280)
        px = lw.make_scale("log", 1, DESIGN_MAX_DEVICES)
        py = lw.make_scale("log", 1e-3, 1.0)
        self.s_par = py
        self.m_all = lw.scatter_mark([1.0], [1.0], px, py, color=lw.PALETTE["light"], size=16)
        self.m_front = lw.line_mark([1.0], [1.0], px, py, colors=[lw.PALETTE["blue"]],
                                    labels=["Pareto frontier"], legend=True, marker="circle",
                                    marker_size=30)
        self.m_par_slo = lw.hline_mark(tr.slo_s * 1e3, py, color=lw.PALETTE["red"],
                                       label="SLO", legend=True)
        self.m_par_me = lw.scatter_mark([1.0], [1.0], px, py, color=lw.PALETTE["red"],
                                        size=120)
        self.figures["pareto"] = lw.figure(
            [self.m_all, self.m_front, self.m_par_slo, self.m_par_me], px, py,
            x_label="devices (log)", y_label="ms per token (log)",
            title="Every layout that fits (grey), the frontier (blue), yours (red)",
            legend=True, legend_location="top-right", x_tick_format=".0f",
            y_tick_format=".2~g", height=300)
        sx = lw.make_scale("log", 1, 64)
        sy = lw.make_scale("log", 1e-3, 1.0)
        self.s_stop_x, self.s_stop_y = sx, sy
        self.m_stop = lw.line_mark([1.0, 2.0], np.ones((2, 2)), sx, sy,
                                   colors=[lw.PALETTE["orange"], lw.PALETTE["red"]],
                                   labels=["ms per token", "of which communication"],
                                   legend=True, marker="circle", marker_size=24)
        self.m_stop_kv = lw.vline_mark(float(m.kv_heads or 1), sx, color=lw.PALETTE["purple"],
                                       line_style="dotted", label="KV heads run out",
                                       legend=True)
        self.m_stop_dom = lw.vline_mark(float(hw.domain_size), sx, color=lw.PALETTE["grey"],
                                        line_style="dotted", label="leaves the fast domain",
                                        legend=True)
        self.figures["stop"] = lw.figure(
            [self.m_stop, self.m_stop_kv, self.m_stop_dom], sx, sy,
            x_label="degree of the axis to add (log)", y_label="ms (log)",
            title="When to stop adding the axis", legend=True, legend_location="top-right",
            x_tick_format=".0f", y_tick_format=".2~g", height=300)
        self._callout("diagnosis", "info")
        for name in ("not_candidate", "oom", "slo"):
            self._callout(name, "danger")
        for name in ("comm", "kv_heads", "scaleout"):
            self._callout(name, "warn")
        self._callout("boundary", "success")
        self._last_symptom: str | None = None

    def _hook(self) -> str:
        return ("Memory decides whether a layout fits; after that the question is which "
                "communication is left exposed. Pick the problem you see, add the axis the "
                "paper reaches for first, and watch what each axis sends on which link.")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: {self.b0} sequences at {self.ctx0:,} tokens, "
             f"{tr.weight_bits}-bit weights, TPOT within {tr.slo_s * 1e3:g} ms on "
             f"{lw.esc(self.hw.name)} devices ({self.hw.domain_size} per fast domain). Which "
             "layout uses the fewest devices (labkit's search)?")
        labels = ["TP2", "TP4", "TP8", "PP4", "TP2 x PP2"]
        return q, [(f"{lab}" + (" (the 'always start at TP=8' rule)" if lab == "TP8" else ""),
                    lab) for lab in labels]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "When should you stop adding tensor parallelism?"
        opts = [("When its all-reduces dominate the token time, it would leave the fast "
                 "domain, or past the KV heads", "stop_rule"),
                ("Never: more TP always lowers latency", "never"),
                ("Always at TP = 8", "tp8"),
                ("As soon as the weights fit", "fits")]
        good = ("Right: TP's all-reduce volume per token does not shrink with the degree, only "
                "the compute does; across the slow link or past the KV heads it stops paying. "
                "Start from the smallest TP that fits and meets latency, then measure.")
        bad = ("Not quite: every TP rank all-reduces the full activation twice per layer; "
               "past the fast domain or the KV heads, more TP costs more than it saves.")
        return q, opts, "stop_rule", _feedback(opts, "stop_rule", good, bad)

    def _degrees(self, s: Mapping[str, object]) -> tuple[int, ...]:
        return tuple(int(s.get(a, 1)) for a in AXES)  # type: ignore[call-overload]

    def _refresh(self, s: Mapping[str, object]) -> None:
        m, hw = self.model, self.hw
        key = str(s["symptom"])
        p = self.presets[key]
        table, index = self.tables[key]
        deg = self._degrees(s)
        axis = str(p["axis"])
        ai = AXES.index(axis)
        nxt = list(deg)
        nxt[ai] *= 2
        nxt_t = tuple(nxt)
        row, row2 = index.get(deg), index.get(nxt_t)
        cfg = None if row is None else table.config(row)
        cfg2 = None if row2 is None else table.config(row2)
        slo = float(p["slo"])  # type: ignore[arg-type]
        names = [f"yours: {layout_label(deg)}", f"+{axis.upper()}: {layout_label(nxt_t)}"]

        def mem(c: object) -> list[float]:
            return [0.0, 0.0, 0.0] if c is None else [c.weights_bytes / 1e9, c.kv_bytes / 1e9,  # type: ignore[attr-defined]
                                                      c.transient_bytes / 1e9]  # type: ignore[attr-defined]

        def tim(c: object) -> list[float]:
            if c is None:
                return [0.0] * 5
            return [c.roofline_s * 1e3, c.tp_allreduce_s * 1e3, c.cp_ring_s * 1e3,  # type: ignore[attr-defined]
                    c.pp_handoff_s * 1e3, c.ep_alltoall_s * 1e3]  # type: ignore[attr-defined]

        mem_y = np.asarray([mem(cfg), mem(cfg2)]).T
        tim_y = np.asarray([tim(cfg), tim(cfg2)]).T
        upd: dict = {
            self.m_mem: {"x": names, "y": mem_y},
            self.s_mem: {"max": _lin_top(np.concatenate([mem_y.sum(axis=0),
                                                         [hw.usable_memory_bytes / 1e9]]),
                                         pad=1.25)},
            self.m_time: {"x": names, "y": tim_y},
            self.s_time: {"max": _lin_top(np.concatenate([tim_y.sum(axis=0), [slo * 1e3]]),
                                          floor=1e-3, pad=1.25)},
            self.m_time_slo: {"y": [slo * 1e3, slo * 1e3]},
            self.m_par_slo: {"y": [slo * 1e3, slo * 1e3]},
        }
        if key != self._last_symptom:
            fit = np.flatnonzero(table.fits)
            lat = np.asarray(table.per_token_latency_s) * 1e3
            sr = self.searches[key]
            fx = [float(c.devices) for c in sr.frontier] if sr is not None else [1.0]
            fy = [c.per_token_latency_s * 1e3 for c in sr.frontier] if sr is not None else [1.0]
            pts = lat[fit] if fit.size else np.asarray([1.0])
            lo, hi = _log_domain(np.concatenate([pts, [slo * 1e3]]), 1.6)
            upd[self.m_all] = {"x": np.asarray(table.devices, dtype=float)[fit]
                               if fit.size else np.asarray([1.0]), "y": pts}
            upd[self.m_front] = {"x": fx, "y": fy, "visible": sr is not None}
            upd[self.s_par] = {"min": lo, "max": hi}
            self._last_symptom = key
        upd[self.m_par_me] = ({"x": [float(cfg.devices)], "y": [cfg.per_token_latency_s * 1e3],
                               "visible": True} if cfg is not None else {"visible": False})
        sweep_deg = self.opts[axis]
        lat_s, comm_s = [], []
        for dgr in sweep_deg:
            trial = list(deg)
            trial[ai] = dgr
            r = index.get(tuple(trial))
            if r is None:
                lat_s.append(np.nan)
                comm_s.append(np.nan)
            else:
                lat_s.append(float(table.per_token_latency_s[r]) * 1e3)
                comm = float(table.tp_allreduce_s[r] + table.cp_ring_s[r]
                             + table.pp_handoff_s[r] + table.ep_alltoall_s[r]) * 1e3
                comm_s.append(comm if comm > 0 else np.nan)  # none: off the log axis
        sweep_y = np.asarray([lat_s, comm_s])
        lo_s, hi_s = _log_domain(sweep_y, 2.0)
        span_before = {"tp": 1, "cp": deg[0], "pp": deg[0] * deg[1] * deg[3],
                       "dp": deg[0] * deg[1], "ep": 1}[axis]
        dom_x = hw.domain_size / max(1, span_before)
        upd.update({
            self.m_stop: {"x": np.asarray(sweep_deg, dtype=float), "y": sweep_y},
            self.s_stop_x: {"min": 1.0, "max": float(max(2, sweep_deg[-1]))},
            self.s_stop_y: {"min": lo_s, "max": hi_s},
            self.m_stop_kv: {"visible": axis == "tp" and not m.uses_mla},
            self.m_stop_dom: ({"x": [dom_x, dom_x], "visible": True}
                              if 1 <= dom_x <= sweep_deg[-1] else {"visible": False}),
        })
        lw.update_marks(upd)
        devices = deg[0] * deg[1] * deg[2] * deg[3]
        sr = self.searches[key]
        links = {} if cfg is None else {"tp": cfg.tp_link, "cp": cfg.cp_link,
                                        "pp": cfg.pp_link, "ep": cfg.ep_link}
        self.results = {
            "symptom": key, "first_axis": axis, "preset": dict(p), "degrees": list(deg),
            "layout": layout_label(deg), "devices": devices, "candidate": cfg is not None,
            "config": None if cfg is None else cfg.as_dict(),
            "fits": None if cfg is None else cfg.fits,
            "per_token_latency_s": None if cfg is None else cfg.per_token_latency_s,
            "meets_slo": None if cfg is None else cfg.per_token_latency_s <= slo,
            "comm_s": None if cfg is None else cfg.comm_s, "links": links,
            "search_chosen": None if sr is None else layout_label(sr.chosen.degrees),
            "search_devices": None if sr is None else sr.chosen.devices,
            "next_layout": layout_label(nxt_t), "expected": self._expected,
        }
        self._cards_and_callouts(p, deg, cfg, cfg2, slo, sr, axis, nxt_t)

    def _cards_and_callouts(self, p: Mapping[str, object], deg: tuple[int, ...],
                            cfg: object, cfg2: object, slo: float,
                            sr: ParallelismSearch | None, axis: str,
                            nxt: tuple[int, ...]) -> None:
        tr, m, hw = self.track, self.model, self.hw
        c = cfg
        devices = deg[0] * deg[1] * deg[2] * deg[3]
        lab = layout_label(deg)
        self._set_readout(_cards([
            ("workload", f"{int(p['batch']):,} x {int(p['context']):,} tokens",  # type: ignore[call-overload]
             f"TPOT ≤ {slo * 1e3:g} ms", lw.PALETTE["grey"]),
            ("your layout", lab, f"{devices} device(s)", lw.PALETTE["blue"]),
            ("memory", "—" if c is None else f"{format_bytes(c.used_bytes)}",  # type: ignore[attr-defined]
             f"of {format_bytes(hw.usable_memory_bytes)}", lw.PALETTE["purple"]),
            ("per token", "—" if c is None else _ms(c.per_token_latency_s),  # type: ignore[attr-defined]
             "—" if c is None else f"comm {_ms(c.comm_s)}", lw.PALETTE["orange"]),  # type: ignore[attr-defined]
            ("labkit's fewest", "none fits" if sr is None else layout_label(sr.chosen.degrees),
             "" if sr is None else f"{sr.chosen.devices} device(s)", lw.PALETTE["green"]),
        ]))
        if c is not None:
            rows = []
            for ax_name, deg_i, nbytes, link, secs in (
                    ("TP", c.tp, c.tp_allreduce_bytes, c.tp_link, c.tp_allreduce_s),  # type: ignore[attr-defined]
                    ("CP", c.cp, c.cp_ring_bytes, c.cp_link, c.cp_ring_s),  # type: ignore[attr-defined]
                    ("PP", c.pp, c.pp_handoff_bytes, c.pp_link, c.pp_handoff_s),  # type: ignore[attr-defined]
                    ("EP", c.ep, c.ep_alltoall_bytes, c.ep_link, c.ep_alltoall_s)):  # type: ignore[attr-defined]
                rows.append([ax_name, str(deg_i), format_bytes(nbytes), link, _ms(secs)])
            rows.append(["DP", str(c.dp), "0 B", "none", "0 (independent replicas)"])  # type: ignore[attr-defined]
            self._set_details("<div><b>Communication per generated token, per device</b> "
                              "(each axis is charged on the link it crosses)</div>"
                              + _table(["axis", "degree", "bytes/token", "link", "time/token"],
                                       rows))
        else:
            self._set_details("")
        present = self._symptom_present(p, sr)
        self.callouts["diagnosis"].show(
            f"{lw.esc(str(p['label']))} → first axis: {lw.esc(str(p['first']))}",
            present + f" Adding {axis.upper()} here gives {layout_label(nxt)}"
            + ("" if cfg2 is None else f": {_ms(cfg2.per_token_latency_s)} per token, "  # type: ignore[attr-defined]
                                       f"{format_bytes(cfg2.used_bytes)} per device")  # type: ignore[attr-defined]
            + ".")
        self.callouts["not_candidate"].set(
            c is None, "Not a possible layout",
            lw.esc(_not_candidate_reason(tr, deg, int(p["batch"]), int(p["context"]))) + ".",  # type: ignore[call-overload]
            "change the degrees")
        self.callouts["oom"].set(
            c is not None and not c.fits, "Out of memory on the binding device",  # type: ignore[attr-defined]
            "" if c is None else
            f"{format_bytes(c.weights_bytes)} weights + {format_bytes(c.kv_bytes)} KV + "  # type: ignore[attr-defined]
            f"{format_bytes(c.transient_bytes)} transient = {format_bytes(c.used_bytes)} of "  # type: ignore[attr-defined]
            f"{format_bytes(hw.usable_memory_bytes)}.",
            "TP/PP split the weights, CP one sequence's KV, DP the sequences")
        self.callouts["slo"].set(
            c is not None and c.per_token_latency_s > slo, "TPOT SLO missed",  # type: ignore[attr-defined]
            "" if c is None else f"{_ms(c.per_token_latency_s)} per token vs {_ms(slo)}.",  # type: ignore[attr-defined]
            "more TP inside the fast domain, fewer sequences per replica (DP)")
        comm_dom = c is not None and c.comm_s > c.roofline_s  # type: ignore[attr-defined]
        self.callouts["comm"].set(
            comm_dom, "Communication dominates: stop adding this axis",
            "" if c is None else f"{_ms(c.comm_s)} of communication vs {_ms(c.roofline_s)} "  # type: ignore[attr-defined]
                                 "of compute and memory per token.",
            "keep the chattiest axis (TP) on the fastest link; use PP or DP across nodes")
        kv_out = (not m.uses_mla) and deg[0] > m.kv_heads
        self.callouts["kv_heads"].set(
            kv_out, "Past the KV heads",
            f"TP{deg[0]} > {m.kv_heads} KV heads: each head is replicated, so KV memory per "
            "device stops shrinking (an efficiency limit, not a correctness one).",
            "add CP or DP instead")
        scale = c is not None and "scaleout" in (c.tp_link, c.cp_link, c.pp_link, c.ep_link)  # type: ignore[attr-defined]
        self.callouts["scaleout"].set(
            scale, "A group crosses the slow scale-out link",
            f"Beyond {hw.domain_size} devices traffic leaves the fast domain "
            f"({format_bytes(hw.interconnect_bandwidth)}/s) for the network "
            f"({format_bytes(hw.scaleout_bandwidth)}/s), paying its latency per message.",
            "TP inside a node, PP (or DP) across nodes")
        ok = c is not None and c.fits and c.per_token_latency_s <= slo  # type: ignore[attr-defined]
        extra = "" if sr is None else (
            f"; labkit's fewest-device layout is {layout_label(sr.chosen.degrees)} "
            f"({sr.chosen.devices} device(s))")
        self.callouts["boundary"].set(
            bool(ok) and not comm_dom, f"{lab} fits and meets the SLO",
            f"{devices} device(s){extra}.")
        if c is not None:
            self.math.update(
                "<p>Per-token communication per device (bf16 activations):</p>"
                "$$\\text{TP: } 2 L_s \\cdot 2h \\cdot \\frac{2(t-1)}{t} = "
                f"{_tex_num(c.tp_allreduce_bytes)}\\ \\text{{B}} \\qquad "  # type: ignore[attr-defined]
                "\\text{PP: } 2h = " + f"{_tex_num(c.pp_handoff_bytes)}\\ \\text{{B}}$$"  # type: ignore[attr-defined]
                f"$$\\text{{CP: }} L_s \\frac{{2(c-1)}}{{c}} \\frac{{q}}{{t}} (2 d_v + 8) = "
                f"{_tex_num(c.cp_ring_bytes)}\\ \\text{{B}}$$"  # type: ignore[attr-defined]
                "<p>Each collective costs messages x latency + bytes / bandwidth on the link "
                "its group spans (fast domain or scale-out):</p>"
                f"$$t_{{\\text{{token}}}} = t_{{\\text{{roofline}}}} + t_{{\\text{{TP}}}} + "
                f"t_{{\\text{{CP}}}} + t_{{\\text{{EP}}}} + t_{{\\text{{PP}}}} = "
                f"{_tex_num(c.roofline_s * 1e3)} + {_tex_num(c.tp_allreduce_s * 1e3)} + "  # type: ignore[attr-defined]
                f"{_tex_num(c.cp_ring_s * 1e3)} + {_tex_num(c.ep_alltoall_s * 1e3)} + "  # type: ignore[attr-defined]
                f"{_tex_num(c.pp_handoff_s * 1e3)} = {_tex_num(c.per_token_latency_s * 1e3)}"  # type: ignore[attr-defined]
                "\\ \\text{ms}$$<p>Source: <code>labkit.parallelism.enumerate_configs</code> and "
                "<code>search</code> (achievable roofline).</p>")
        else:
            self.math.update("<p>No such layout: see the failure above. Source: "
                             "<code>labkit.parallelism.enumerate_configs</code>.</p>")

    def _symptom_present(self, p: Mapping[str, object], sr: ParallelismSearch | None) -> str:
        hw = self.hw
        if sr is None:
            return "No layout up to the device cap fixes this workload."
        c = sr.chosen
        return (f"labkit's fewest-device fix is {layout_label(c.degrees)} ({c.devices} "
                f"device(s), {_ms(c.per_token_latency_s)} per token"
                + (", beyond one fast domain" if c.devices > hw.domain_size else "") + ").")

    def _reveal_body(self) -> str:
        s0 = self.default_search
        r = self.results
        frontier = "" if s0 is None else ", ".join(
            f"{layout_label(c.degrees)} {_ms(c.per_token_latency_s)}" for c in s0.frontier[:4])
        return (f"{self._computed_line()}"
                + ("" if s0 is None else
                   f"<div>The frontier: {frontier}.</div>")
                + f"<div>Your layout: <b>{r['layout']}</b> ({r['devices']} device(s)).</div>"
                "<div style='color:#5d6d7e'>Why: the smallest TP that fits memory and meets "
                "latency wins on devices; TP=8 is faster but uses twice the GPUs. Rank axes by "
                "how much they communicate per unit of compute and keep the chattiest on the "
                "fastest link.</div>")

    def takeaway(self) -> str:
        r = self.results
        st = ("not a possible layout" if not r["candidate"] else
              ("fits" if r["fits"] else "does not fit")
              + (" and meets" if r["meets_slo"] else " and misses") + " the TPOT SLO")
        return (f"Parallelism: for '{self.presets[str(r['symptom'])]['label']}' the first axis "
                f"is {str(r['first_axis']).upper()}; your {r['layout']} ({r['devices']} "
                f"device(s)) {st}; labkit's fewest-device layout is {r['search_chosen']}.")


def _chat_server() -> tuple[float, float]:
    """(TTFT, TPOT) of the cloud service a phone hands off to: the fast end of the paper's
    chat SLO targets (a well-provisioned service), seconds."""
    t = SLO_TARGETS["chat"]
    return float(t.ttft_s[0]), float(t.tpot_s[0])  # type: ignore[index]


class PartCHandheld(Part):
    """On the phone or in the cloud: bytes of prompt and reply over the radio vs the energy
    and latency of answering on the device."""

    letter = "C"

    def _setup(self) -> None:
        tr = self.track
        prof = edge.edge_profile(self.hw.id)
        if prof is None or not prof.offload_links:
            raise ValueError(f"{self.hw.id} needs an edge profile with offload links")
        self.links = prof.offload_links
        self.p0, self.n0 = int(tr.prompt_tokens or 1), int(tr.output_tokens or 1)
        self.server_ttft, self.server_tpot = _chat_server()
        c = self.controls
        prompts = sorted({x for x in _pow2(8192) if x >= 128} | {self.p0})
        outs = sorted({x for x in _pow2(2048) if x >= 16} | {self.n0})
        c["prompt"] = lw.selection_control("Prompt (tokens)", [(str(x), x) for x in prompts],
                                           self.p0)
        c["output"] = lw.selection_control("Reply (tokens)", [(str(x), x) for x in outs],
                                           self.n0)
        c["link"] = lw.choice_control("Radio", [(edge.get_link(k).name, k) for k in self.links],
                                      self.links[0], style="toggle")
        c["weight_bits"] = lw.precision_control("On-device weight precision", tr.weight_bits)
        self.out_grid = np.unique(np.geomspace(16, max(outs), 25).round()).astype(int)
        self._dev_cache: dict[tuple[int, int, int], dict[str, float]] = {}
        dev = self._device(self.p0, self.n0, tr.weight_bits)
        cloud = self._cloud(self.p0, self.n0, self.links[0])
        self.default_pair = (dev, cloud)
        self._expected = "on_device" if dev["energy_j"] < cloud.energy_j else "cloud"
        ex, ey = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_e = ey
        self.m_e = lw.bar_mark(["on device", "cloud"], np.zeros((3, 2)), ex, ey,
                               colors=[lw.PALETTE["orange"], lw.PALETTE["red"],
                                       lw.PALETTE["blue"]],
                               labels=["SoC compute", "radio wake + tail",
                                       "radio data + connected"], legend=True)
        self.figures["energy"] = lw.figure(
            [self.m_e], ex, ey, x_label="where the request is answered",
            y_label="phone energy per request (J)", title="Energy per request", legend=True,
            legend_location="top-right", height=280)
        lx, ly = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_l = ly
        self.m_l = lw.bar_mark(["on device", "cloud"], np.zeros((2, 2)), lx, ly,
                               colors=[lw.PALETTE["purple"], lw.PALETTE["grey"]],
                               labels=["first token", "whole reply"], kind="grouped",
                               legend=True)
        self.m_l_slo = lw.hline_mark(float(tr.ttft_slo_s or 1.0), ly, color=lw.PALETTE["red"],
                                     label="TTFT limit", legend=True)
        self.figures["latency"] = lw.figure(
            [self.m_l, self.m_l_slo], lx, ly, x_label="where the request is answered",
            y_label="seconds", title="Latency", legend=True, legend_location="top-left",
            height=280)
        ox = lw.make_scale("log", float(self.out_grid[0]), float(self.out_grid[-1]))
        oy = lw.make_scale("log", 0.1, 10.0)
        self.s_o = oy
        self.m_o = lw.line_mark(self.out_grid, np.ones((2, self.out_grid.size)), ox, oy,
                                colors=[lw.PALETTE["orange"], lw.PALETTE["blue"]],
                                labels=["on device", "cloud"], legend=True)
        self.m_o_x = lw.vline_mark(16.0, ox, color=lw.PALETTE["green"], line_style="dotted",
                                   label="crossover", legend=True)
        self.m_o_pt = lw.vline_mark(float(self.n0), ox, color=lw.PALETTE["grey"],
                                    label="your reply", legend=True)
        self.figures["crossover"] = lw.figure(
            [self.m_o, self.m_o_x, self.m_o_pt], ox, oy, x_label="reply length (tokens, log)",
            y_label="phone energy per request (J, log)",
            title="Short replies: the radio's fixed cost; long ones: the SoC's", legend=True,
            legend_location="top-left", x_tick_format=".0f", y_tick_format=".3~g", height=280)
        for name in ("oom", "device_slo", "cloud_ttft", "energy"):
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _device(self, prompt: int, out: int, wb: int) -> dict[str, float]:
        key = (prompt, out, wb)
        if key not in self._dev_cache:
            tr = self.track
            ph = request_phases(self.hw, self.model, prompt_tokens=prompt, output_tokens=out,
                                weight_bits=wb, kv_bits=tr.kv_bits, mode=DESIGN_MODE)
            mem = resident_weight_bytes(self.model, wb) + (prompt + out) * kv_bytes_per_token(
                self.model, tr.kv_bits)
            self._dev_cache[key] = {"energy_j": float(ph.energy_j or 0.0), "ttft_s": ph.ttft_s,
                                    "total_s": ph.latency_s, "tpot_s": float(ph.tpot_s or 0.0),
                                    "memory_bytes": mem}
        return self._dev_cache[key]

    def _device_curve(self, prompt: int, wb: int) -> np.ndarray:
        """Device energy over ``out_grid`` reply lengths: request_phases' formula at batch 1,
        vectorised (one prefill, one roofline call over the mean contexts)."""
        tr, hw, m = self.track, self.hw, self.model
        n = self.out_grid.astype(float)
        pre = prefill_time(hw, m, float(prompt), wb, tr.kv_bits, 1, DESIGN_MODE).total_s
        step = decode_roofline(hw, m, 1, prompt + n / 2.0, wb, tr.kv_bits,
                               mode=DESIGN_MODE).step_s
        return float(hw.power_w or 0.0) * (pre + (n - 1) * np.asarray(step))

    def _cloud(self, prompt: int, out: int, link: str) -> edge.Handoff:
        return edge.cloud_handoff(prompt, out, link=link, server_ttft_s=self.server_ttft,
                                  server_tpot_s=self.server_tpot)

    def _hook(self) -> str:
        return ("The phone could send the prompt to a cloud model instead: a few kB up, a "
                "streamed reply down. The cellular radio pays a wake-up and a long "
                "high-power tail whatever the size. When does handing off save battery, and "
                "what does it cost in latency?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        lk = edge.get_link(self.links[0])
        q = (f"{lw.esc(tr.label)}: a {self.p0:,}-token prompt and a {self.n0}-token reply. "
             f"Which spends less phone energy: answering on the device ({tr.weight_bits}-bit), "
             f"or handing off to a cloud service over {lw.esc(lk.name)}?")
        return q, [("On the device", "on_device"), ("In the cloud", "cloud")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "Why can a short request cost more phone energy in the cloud than on the device?"
        opts = [("The radio's wake-up and high-power tail cost the same however few bytes "
                 "are sent", "fixed_cost"),
                ("Uploading a prompt takes minutes", "upload"),
                ("The cloud model is bigger", "bigger"),
                ("It cannot: the cloud is always cheaper for the phone", "never")]
        good = ("Right: an LTE transfer pays ~0.3 J to wake and ~12 J of tail after the last "
                "byte; the SoC spends per token. Short replies favour the device, long ones "
                "the cloud (Wi-Fi's tail is tiny).")
        bad = ("Not quite: the bytes are few; the radio's fixed wake + tail energy is what a "
               "short request cannot amortise.")
        return q, opts, "fixed_cost", _feedback(opts, "fixed_cost", good, bad)

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr = self.track
        prompt, out = int(s["prompt"]), int(s["output"])  # type: ignore[call-overload]
        link, wb = str(s["link"]), int(s["weight_bits"])  # type: ignore[call-overload]
        dev = self._device(prompt, out, wb)
        cl = self._cloud(prompt, out, link)
        t = cl.transfer
        e_bars = np.asarray([[dev["energy_j"], 0.0], [0.0, t.wake_j + t.tail_j],
                             [0.0, t.data_j + t.active_j]])
        l_bars = np.asarray([[dev["ttft_s"], cl.ttft_s], [dev["total_s"], cl.total_s]])
        dev_curve = self._device_curve(prompt, wb)
        cloud_curve = edge.cloud_handoff_energy(
            prompt, self.out_grid, link=link, server_ttft_s=self.server_ttft,
            server_tpot_s=self.server_tpot)
        diff = dev_curve - cloud_curve
        cross = None
        idx = np.flatnonzero(np.diff(np.sign(diff)) != 0)
        if idx.size:
            i = int(idx[0])
            x0, x1 = np.log(self.out_grid[i]), np.log(self.out_grid[i + 1])
            f = diff[i] / (diff[i] - diff[i + 1])
            cross = float(np.exp(x0 + f * (x1 - x0)))
        lo, hi = _log_domain(np.concatenate([dev_curve, cloud_curve]), 1.6)
        lw.update_marks({
            self.m_e: {"y": e_bars}, self.s_e: {"max": _lin_top(e_bars.sum(axis=0), pad=1.3)},
            self.m_l: {"y": l_bars},
            self.s_l: {"max": _lin_top(np.concatenate([l_bars.ravel(),
                                                       [float(tr.ttft_slo_s or 1.0)]]),
                                       pad=1.25)},
            self.m_o: {"y": np.vstack([dev_curve, cloud_curve])},
            self.s_o: {"min": lo, "max": hi},
            self.m_o_x: ({"x": [cross, cross], "visible": True} if cross is not None
                         else {"visible": False}),
            self.m_o_pt: {"x": [float(out), float(out)]},
        })
        winner = "on_device" if dev["energy_j"] < cl.energy_j else "cloud"
        per_day = tr.demand_rate_per_s * _active_s(tr)
        dev_daily = dev["energy_j"] * per_day / edge.J_PER_MWH
        usable = self.hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction)
        oom = dev["memory_bytes"] > usable
        self.results = {
            "prompt_tokens": prompt, "output_tokens": out, "link": link, "weight_bits": wb,
            "device_energy_j": dev["energy_j"], "device_ttft_s": dev["ttft_s"],
            "device_total_s": dev["total_s"], "device_tpot_s": dev["tpot_s"],
            "device_oom": oom, "cloud_energy_j": cl.energy_j, "cloud_ttft_s": cl.ttft_s,
            "cloud_total_s": cl.total_s, "up_bytes": cl.up_bytes, "down_bytes": cl.down_bytes,
            "radio_fixed_j": t.wake_j + t.tail_j, "crossover_output_tokens": cross,
            "winner": winner, "server_ttft_s": self.server_ttft,
            "server_tpot_s": self.server_tpot, "expected": self._expected,
        }
        self._set_readout(_cards([
            ("less phone energy", "on the device" if winner == "on_device" else "in the cloud",
             f"{_energy(dev['energy_j'])} vs {_energy(cl.energy_j)}", lw.PALETTE["green"]),
            ("bytes over the radio", f"{format_bytes(cl.up_bytes)} up",
             f"{format_bytes(cl.down_bytes)} down (streamed)", lw.PALETTE["blue"]),
            ("first token", f"{fmt_time(dev['ttft_s'])} vs {fmt_time(cl.ttft_s)}",
             "device vs cloud", lw.PALETTE["purple"]),
            ("crossover", "none in range" if cross is None else f"{cross:,.0f} tokens",
             "reply length where they cost the same", lw.PALETTE["orange"]),
        ]))
        self.callouts["oom"].set(
            oom, "On-device: out of memory",
            f"{format_bytes(dev['memory_bytes'])} vs {format_bytes(usable)} the app may use.",
            "lower the weight precision, or hand this request off")
        self.callouts["device_slo"].set(
            (not oom) and dev["tpot_s"] > tr.slo_s, "On-device reply streams too slowly",
            f"{dev['tpot_s'] * 1e3:.3g} ms per token vs {tr.slo_s * 1e3:g} ms.",
            "lower the weight precision, or hand off long requests")
        self.callouts["cloud_ttft"].set(
            cl.ttft_s > float(tr.ttft_slo_s or math.inf), "Cloud: first token too late",
            f"Radio wake {fmt_time(edge.get_link(link).wake_s)} + round trip + upload + "
            f"server {fmt_time(self.server_ttft)} = {fmt_time(cl.ttft_s)}.",
            "a radio already awake (Wi-Fi), or answer short requests on the device")
        self.callouts["energy"].set(
            dev_daily > tr.daily_budget, "On-device: over the battery budget",
            f"{_num(per_day)} requests like this = {_num(dev_daily)} mWh/day vs "
            f"{_num(tr.daily_budget)}.", "hand long requests to the cloud, or shorten them")
        self.callouts["boundary"].set(
            not oom and dev_daily <= tr.daily_budget,
            f"{'Device' if winner == 'on_device' else 'Cloud'} wins this request",
            "The two cost the same at "
            + ("no reply length in range" if cross is None else f"about {cross:,.0f} tokens")
            + f" over {lw.esc(edge.get_link(link).name)}.")
        lk = edge.get_link(link)
        self.math.update(
            f"$$E_{{\\text{{cloud}}}} = P_w t_w + U e_u + D e_d + P_c\\,t_{{\\text{{stream}}}} + "
            f"P_t t_t = {_tex_num(t.wake_j)} + {_tex_num(t.data_j)} + {_tex_num(t.active_j)} + "
            f"{_tex_num(t.tail_j)} = {_tex_num(cl.energy_j)}\\ \\text{{J}}$$"
            f"$$t_{{\\text{{stream}}}} = \\mathrm{{TTFT}}_s + (n-1)\\,\\mathrm{{TPOT}}_s = "
            f"{self.server_ttft:g} + {out - 1} \\times {self.server_tpot:g} = "
            f"{t.connected_s:.3g}\\ \\text{{s}}$$"
            f"$$E_{{\\text{{device}}}} = P\\,(t_{{\\text{{prefill}}}} + t_{{\\text{{decode}}}}) "
            f"= {_num(float(self.hw.power_w or 0))} \\times {dev['total_s']:.3g} = "
            f"{_tex_num(dev['energy_j'])}\\ \\text{{J}}$$"
            f"<p>{lw.esc(lk.name)}: {lw.esc(lk.sources.get('tail_s', ''))}. Server times: the "
            "fast end of the paper's chat SLO targets. Source: "
            "<code>labkit.edge.cloud_handoff</code>, <code>labkit.phases.request_phases</code>."
            "</p>")

    def _reveal_body(self) -> str:
        dev, cloud = self.default_pair
        r = self.results
        return (f"{self._computed_line()}"
                f"<div>At the defaults: device {_energy(dev['energy_j'])}, cloud "
                f"{_energy(cloud.energy_j)} (of which {_energy(cloud.transfer.tail_j)} is the "
                "radio's tail after the last byte).</div>"
                f"<div>With your settings the <b>{r['winner'].replace('_', ' ')}</b> wins.</div>"  # type: ignore[attr-defined]
                "<div style='color:#5d6d7e'>Why: on the device every token streams the weights "
                "through the SoC at several watts; over the radio the bytes are cheap but every "
                "hand-off pays a fixed wake and tail. The crossover is a reply length.</div>")

    def takeaway(self) -> str:
        r = self.results
        cross = r["crossover_output_tokens"]
        return (f"Hand-off: a {r['prompt_tokens']:,}-token prompt with a {r['output_tokens']}-"
                f"token reply costs {_energy(r['device_energy_j'])} on the device vs "  # type: ignore[arg-type]
                f"{_energy(r['cloud_energy_j'])} over "  # type: ignore[arg-type]
                f"{edge.get_link(str(r['link'])).name}; "
                + ("no crossover in range" if cross is None else
                   f"they cross at about {cross:,.0f} reply tokens") + ".")


class PartCWearable(Part):
    """Where the ring cuts its pipeline: run the model, send features, or send raw audio."""

    letter = "C"

    def _setup(self) -> None:
        tr = self.track
        self.iv0 = 100.0
        prof = edge.edge_profile(self.hw.id)
        if prof is None or not prof.offload_links:
            raise ValueError(f"{self.hw.id} needs an edge profile with an offload link")
        self.link = prof.offload_links[0]
        c = self.controls
        c["split"] = lw.choice_control("Cut the pipeline", [
            ("run the model on the ring", "on_device"), ("send features to the phone",
                                                         "features"),
            ("send raw audio to the phone", "raw")], "on_device", style="toggle")
        c["interval"] = lw.selection_control("BLE connection interval (ms)",
                                             [(f"{x:g}", x) for x in INTERVALS_MS], self.iv0)
        c["duty"] = lw.float_control("Share of windows processed (duty)", 1.0, 0.05, 1.0, 0.05,
                                     ".0%")
        self.wb = tr.weight_bits
        best = self._best(self.iv0 / 1e3, 1.0)
        self._expected = best or "none"
        self.iv_grid = np.asarray(INTERVALS_MS, dtype=float)
        ex, ey = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_e = ey
        self.m_e = lw.bar_mark(list(edge.SPLITS), np.zeros((4, 3)), ex, ey,
                               colors=[lw.PALETTE["purple"], lw.PALETTE["orange"],
                                       lw.PALETTE["blue"], lw.PALETTE["grey"]],
                               labels=["front end (MFCC)", "model", "radio bytes", "link idle"],
                               legend=True)
        self.figures["energy"] = lw.figure(
            [self.m_e], ex, ey, x_label="where the pipeline is cut (◀ yours)",
            y_label="ring energy per window (mJ)", title="Energy per window", legend=True,
            legend_location="top-right", height=280)
        lx, ly = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_l = ly
        self.m_l = lw.bar_mark(list(edge.SPLITS), np.zeros(3), lx, ly,
                               colors=[lw.PALETTE["green"]] * 3, color_mode="no_group",
                               label_display=True, label_display_format=".0f")
        self.m_l_d = lw.hline_mark(tr.slo_s * 1e3, ly, color=lw.PALETTE["red"],
                                   label="deadline", legend=True)
        self.figures["latency"] = lw.figure(
            [self.m_l, self.m_l_d], lx, ly, x_label="where the pipeline is cut",
            y_label="worst-case latency (ms)", title="Decision latency", height=280)
        ix = lw.make_scale("log", float(INTERVALS_MS[0]), float(INTERVALS_MS[-1]))
        iy = lw.make_scale("log", 0.1, 100.0)
        self.s_i = iy
        self.m_i = lw.line_mark(self.iv_grid, np.ones((3, self.iv_grid.size)), ix, iy,
                                colors=[lw.PALETTE["orange"], lw.PALETTE["blue"],
                                        lw.PALETTE["red"]], labels=list(edge.SPLITS),
                                legend=True, marker="circle", marker_size=20)
        self.m_i_b = lw.hline_mark(tr.daily_budget, iy, color=lw.PALETTE["green"],
                                   label="daily budget", legend=True)
        self.m_i_pt = lw.vline_mark(self.iv0, ix, color=lw.PALETTE["grey"],
                                    label="your interval", legend=True)
        self.figures["interval"] = lw.figure(
            [self.m_i, self.m_i_b, self.m_i_pt], ix, iy,
            x_label="BLE connection interval (ms, log)",
            y_label="ring mWh per day (log)", title="Energy per day vs the link's interval",
            legend=True, legend_location="top-right", x_tick_format=".3~g",
            y_tick_format=".3~g", height=280)
        for name in ("deadline", "energy", "link", "coverage"):
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _costs(self, interval_s: float, duty: float) -> dict[str, edge.SplitCost]:
        return {sp: ring_split(self.track, self.wb, sp, interval_s, duty) for sp in edge.SPLITS}

    def _best(self, interval_s: float, duty: float) -> str | None:
        ok = {k: c for k, c in self._costs(interval_s, duty).items()
              if c.latency_s <= self.track.slo_s}
        return min(ok, key=lambda k: ok[k].energy_j) if ok else None

    def _hook(self) -> str:
        prof = edge.edge_profile(self.hw.id)
        lk = edge.get_link(prof.offload_links[0]) if prof else None
        return (f"The phone is never far: over {lk.name if lk else 'BLE'} the ring could send "
                f"a {format_bytes(self.track.window_bytes)} audio window, or "
                f"{format_bytes(prof.feature_bytes if prof else 0)} of features, and let the "
                "phone classify it. Bytes cost radio energy; keeping the link responsive costs "
                "energy too. Where should the ring cut its pipeline?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: every window processed, the phone link at a "
             f"{self.iv0:g} ms connection interval. Which cut spends the least ring energy "
             f"while still deciding within {tr.slo_s * 1e3:g} ms?")
        return q, [("Run the model on the ring, send only the decision", "on_device"),
                   ("Compute features on the ring, send them", "features"),
                   ("Send the raw audio window", "raw"),
                   ("None meets the deadline", "none")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "Why can sending features cost the ring less energy than running the model?"
        opts = [("A few hundred bytes over BLE cost less than tens of milliseconds of MCU "
                 "compute, if the link's idle cost stays small", "bytes_vs_compute"),
                ("Radios use no energy", "free"),
                ("The phone's battery pays for the ring", "phone"),
                ("Features are compressed audio", "compressed")]
        good = ("Right: 490 B x 0.2 uJ/B is about 0.1 mJ, vs about 0.7 mJ of model compute. "
                "But raw audio is 65x more bytes and misses the deadline, and a short "
                "connection interval costs energy every interval.")
        bad = ("Not quite: the ring pays for every byte it sends (about 0.2 uJ/B over BLE) and "
               "for every connection event; a small feature vector is cheaper than the model.")
        return q, opts, "bytes_vs_compute", _feedback(opts, "bytes_vs_compute", good, bad)

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr = self.track
        split, interval, duty = str(s["split"]), float(s["interval"]), float(s["duty"])  # type: ignore[arg-type]
        costs = self._costs(interval / 1e3, duty)
        e_bars = np.asarray([[c.front_end_j, c.model_j, c.radio_j, c.idle_j]
                             for c in costs.values()]).T * 1e3
        lat = np.asarray([c.latency_s for c in costs.values()]) * 1e3
        per_day = duty * tr.demand_rate_per_s * _active_s(tr)
        # the link's idle share scales with 1 / interval; the rest of a window does not
        idle = np.asarray([edge.ble_idle_power_w(iv / 1e3, self.link) for iv in INTERVALS_MS])
        curves = np.vstack([(c.energy_j - c.idle_j) * per_day + idle * _active_s(tr)
                            for c in costs.values()]) / edge.J_PER_MWH
        names = [f"{k} ◀" if k == split else k for k in edge.SPLITS]
        mine = costs[split]
        daily = mine.energy_j * per_day / edge.J_PER_MWH
        lo, hi = _log_domain(np.concatenate([curves.ravel(), [tr.daily_budget]]), 1.6)
        lw.update_marks({
            self.m_e: {"x": names, "y": e_bars},
            self.s_e: {"max": _lin_top(e_bars.sum(axis=0), floor=1e-3, pad=1.3)},
            self.m_l: {"x": names, "y": lat,
                       "colors": [lw.PALETTE["red"] if x > tr.slo_s * 1e3 else
                                  lw.PALETTE["green"] for x in lat]},
            self.s_l: {"max": _lin_top(np.concatenate([lat, [tr.slo_s * 1e3]]), pad=1.2)},
            self.m_i: {"y": curves}, self.s_i: {"min": lo, "max": hi},
            self.m_i_pt: {"x": [interval, interval]},
        })
        best = self._best(interval / 1e3, duty)
        floor = tr.min_demand_rate_per_s / tr.demand_rate_per_s
        fails = {"deadline": mine.latency_s > tr.slo_s, "energy": daily > tr.daily_budget,
                 "link": mine.link_utilisation > tr.max_utilisation,
                 "coverage": duty < floor - 1e-9}
        self.results = {
            "split": split, "interval_ms": interval, "duty": duty, "energy_per_window_j":
            mine.energy_j, "latency_s": mine.latency_s, "bytes_sent": mine.bytes_sent,
            "daily_mwh": daily, "link_utilisation": mine.link_utilisation,
            "best_split": best, "fails": fails, "expected": self._expected,
            "splits": {k: c.as_dict() for k, c in costs.items()},
        }
        self._set_readout(_cards([
            ("your cut", split.replace("_", " "), f"{format_bytes(mine.bytes_sent)} per window",
             lw.PALETTE["blue"]),
            ("per window", _energy(mine.energy_j), f"{_ms(mine.latency_s)} to decide",
             lw.PALETTE["orange"]),
            ("per day", f"{_num(daily)} mWh", f"budget {_num(tr.daily_budget)}",
             lw.PALETTE["teal"]),
            ("cheapest in time", "none" if best is None else best.replace("_", " "),
             f"at {interval:g} ms, {duty:.0%} duty", lw.PALETTE["green"]),
        ]))
        self.callouts["deadline"].set(
            fails["deadline"], "Deadline missed",
            f"{_ms(mine.latency_s)} = device {_ms(mine.front_end_s + mine.model_s)} + wait for "
            f"the link {_ms(mine.wait_s)} + airtime {_ms(mine.transfer_s)} + phone "
            f"{_ms(mine.host_s)}, vs {_ms(tr.slo_s)}.",
            "a shorter connection interval, fewer bytes, or decide on the ring")
        self.callouts["energy"].set(
            fails["energy"], "Over the energy budget",
            f"{_num(per_day)} windows x {_energy(mine.energy_j)} = {_num(daily)} mWh/day "
            f"vs {_num(tr.daily_budget)}.", "a longer interval, a cheaper cut, or lower duty")
        self.callouts["link"].set(
            fails["link"], "The BLE link is saturated",
            f"{format_bytes(mine.bytes_sent * duty * tr.demand_rate_per_s)}/s needs "
            f"{mine.link_utilisation:.0%} of the link's airtime (max "
            f"{tr.max_utilisation:.0%}).", "send features, not raw audio")
        self.callouts["coverage"].set(
            fails["coverage"], "Listening too rarely",
            f"{duty:.0%} of windows is below {floor:.0%}.", "raise the duty cycle")
        self.callouts["boundary"].set(
            not any(fails.values()), "Meets the deadline within budget",
            f"{_num(daily)} mWh/day of {_num(tr.daily_budget)}; "
            + ("the cheapest cut that meets the deadline here is "
               f"{best.replace('_', ' ')}" if best else "no cut meets the deadline here") + ".")
        lk = edge.get_link(self.link)
        self.math.update(
            "$$E_{\\text{window}} = P\\,(t_{\\text{front}} + t_{\\text{model}}) + "
            "n_{\\text{bytes}}\\,e_{\\text{byte}} + \\frac{E_{\\text{event}}}{T\\,r}$$"
            f"$$= {_tex_num(mine.front_end_j)} + {_tex_num(mine.model_j)} + "
            f"{_tex_num(mine.bytes_sent)} \\times {_tex_num(lk.up_j_per_byte)} + "
            f"{_tex_num(mine.idle_j)} = {_tex_num(mine.energy_j)}\\ \\text{{J}}$$"
            "$$t_{\\text{worst}} = t_{\\text{front}} + t_{\\text{model}} + "
            "[T + n/\\text{goodput} + t_{\\text{phone}}]_{\\text{offloaded}} = "
            f"{_tex_num(mine.latency_s * 1e3)}\\ \\text{{ms}}$$"
            f"<p>BLE: {lw.esc(lk.sources['up_j_per_byte'])}. Source: "
            "<code>labkit.edge.wearable_split</code>.</p>")

    def _reveal_body(self) -> str:
        r = self.results
        return (f"{self._computed_line()}"
                f"<div>With your settings the cheapest cut in time is "
                f"<b>{str(r['best_split'] or 'none').replace('_', ' ')}</b>.</div>"
                "<div style='color:#5d6d7e'>Why: the model costs ~70 ms of a 10 mW MCU per "
                "window; 490 bytes of features cost a fraction of that over BLE. Raw audio is "
                "32 kB: too much energy and too much airtime for the deadline. A shorter "
                "connection interval answers sooner but pays an empty event every interval."
                "</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Hand-off: cutting at '{str(r['split']).replace('_', ' ')}' with a "
                f"{r['interval_ms']:g} ms interval costs {_energy(r['energy_per_window_j'])} per "  # type: ignore[arg-type]
                f"window and {_ms(r['latency_s'])} to decide ({_num(r['daily_mwh'])} "  # type: ignore[arg-type]
                f"mWh/day); the cheapest cut that meets the deadline there is "
                f"{str(r['best_split'] or 'none').replace('_', ' ')}.")


class PartCVehicle(Part):
    """Splitting cameras or the model across the board's two SoCs."""

    letter = "C"

    def _setup(self) -> None:
        tr = self.track
        self.n0, self.f0 = cameras_and_fps(tr)
        c = self.controls
        c["layout"] = lw.choice_control("Layout", [
            ("one SoC", "single"), ("two SoCs: split the cameras", "cameras"),
            ("two SoCs: split the model", "model")], "single", style="toggle")
        c["cameras"] = lw.int_control("Cameras", self.n0, 1, max(64, 2 * self.n0))
        c["fps"] = lw.int_control("Frames per second per camera", round(self.f0), 5,
                                  max(60, round(self.f0)), 5)
        self.wb = tr.weight_bits
        self.cams = np.arange(1, int(c["cameras"].max) + 1)
        loads = {lay: vehicle_load(tr, self.wb, lay) for lay in VEHICLE_LAYOUTS}
        self.default_loads = loads
        self._expected = min(loads, key=lambda k: loads[k].worst_latency_s)
        bx, by = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_b = by
        self.m_b = lw.bar_mark(["SoC 1", "SoC 2"], np.zeros(2), bx, by,
                               colors=[lw.PALETTE["blue"]] * 2, color_mode="no_group",
                               label_display=True, label_display_format=".0%")
        self.m_b_l = lw.hline_mark(tr.max_utilisation, by, color=lw.PALETTE["red"],
                                   label="max busy", legend=True)
        self.figures["busy"] = lw.figure(
            [self.m_b, self.m_b_l], bx, by, x_label="SoC", y_label="busy share",
            title="Load per SoC", y_tick_format=".0%", height=280)
        lx, ly = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_l = ly
        self.m_l = lw.bar_mark(list(VEHICLE_LAYOUTS), np.zeros(3), lx, ly,
                               colors=[lw.PALETTE["grey"]] * 3, color_mode="no_group",
                               label_display=True, label_display_format=".3~g")
        self.m_l_d = lw.hline_mark(tr.slo_s * 1e3, ly, color=lw.PALETTE["red"],
                                   label="deadline", legend=True)
        self.figures["latency"] = lw.figure(
            [self.m_l, self.m_l_d], lx, ly, x_label="layout (blue: yours)",
            y_label="worst-case latency (ms)", title="Worst case: every camera at once",
            height=280)
        cx = lw.make_scale("linear", 1, float(self.cams[-1]))
        cy = lw.make_scale("linear", 0.0, 1.0)
        self.s_c = cy
        self.m_c = lw.line_mark(self.cams, np.ones((3, self.cams.size)), cx, cy,
                                colors=[lw.PALETTE["grey"], lw.PALETTE["blue"],
                                        lw.PALETTE["purple"]], labels=list(VEHICLE_LAYOUTS),
                                legend=True)
        self.m_c_d = lw.hline_mark(tr.slo_s * 1e3, cy, color=lw.PALETTE["red"],
                                   label="deadline", legend=True)
        self.m_c_pt = lw.vline_mark(float(self.n0), cx, color=lw.PALETTE["green"],
                                    label="your cameras", legend=True)
        self.figures["cameras"] = lw.figure(
            [self.m_c, self.m_c_d, self.m_c_pt], cx, cy, x_label="cameras",
            y_label="worst-case latency (ms)", title="Latency as cameras are added",
            legend=True, legend_location="top-left", x_tick_format="d", height=280)
        for name in ("deadline", "throughput", "link", "energy"):
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _hook(self) -> str:
        hw = self.hw
        return (f"The board carries {hw.domain_size} SoCs joined by "
                f"{format_bytes(hw.interconnect_bandwidth)}/s. A second SoC can take half "
                f"the cameras (their frames cross the link) or the second half of the model "
                f"(every frame's activations cross it). Which split helps the hard deadline?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: {self.n0} cameras at {self.f0:g} fps, "
             f"{tr.weight_bits}-bit. Which layout has the lowest worst-case frame latency?")
        return q, [("One SoC", "single"), ("Two SoCs, cameras split between them", "cameras"),
                   ("Two SoCs, the model split between them", "model")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "Why does splitting the model's layers across two SoCs not cut a frame's latency?"
        opts = [("Every frame still passes both halves, plus the hand-off and a second fixed "
                 "overhead: the split adds throughput, not speed", "pipeline"),
                ("The link is too slow for any data", "link"),
                ("The second SoC is idle", "idle"),
                ("It does: it halves the latency", "halves")]
        good = ("Right: a pipeline overlaps different frames; one frame sees stage A + "
                "transfer + stage B. Splitting cameras instead shortens the queue each frame "
                "waits in.")
        bad = ("Not quite: one frame still goes through both stages in turn, plus the "
               "activations' hand-off and each stage's overhead.")
        return q, opts, "pipeline", _feedback(opts, "pipeline", good, bad)

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr = self.track
        layout, n, fps = str(s["layout"]), int(s["cameras"]), float(s["fps"])  # type: ignore[call-overload, arg-type]
        loads = {lay: vehicle_load(tr, self.wb, lay, n, fps) for lay in VEHICLE_LAYOUTS}
        mine = loads[layout]
        busy = list(mine.busy) + [0.0] * (2 - len(mine.busy))
        lat = np.asarray([loads[k].worst_latency_s for k in VEHICLE_LAYOUTS]) * 1e3
        t, o = vehicle_frame(tr, self.wb)
        sweep = np.vstack([edge.worst_latency(
            t, o, self.cams, lay, link_bytes_per_s=self.hw.interconnect_bandwidth,
            link_latency_s=self.hw.interconnect_latency_s, frame_bytes=tr.window_bytes)
            for lay in VEHICLE_LAYOUTS]) * 1e3
        daily = mine.energy_j_per_frame * mine.frames_per_s * _active_s(tr) / edge.J_PER_WH
        lw.update_marks({
            self.m_b: {"y": busy, "colors": [lw.PALETTE["red"] if b > tr.max_utilisation
                                             else lw.PALETTE["blue"] for b in busy]},
            self.s_b: {"max": _lin_top([*busy, tr.max_utilisation], pad=1.25)},
            self.m_l: {"y": lat, "colors": [lw.PALETTE["blue"] if k == layout else
                                            lw.PALETTE["grey"] for k in VEHICLE_LAYOUTS]},
            self.s_l: {"max": _lin_top(np.concatenate([lat, [tr.slo_s * 1e3]]), pad=1.2)},
            self.m_c: {"y": sweep},
            self.s_c: {"max": _lin_top(np.concatenate([sweep.ravel(), [tr.slo_s * 1e3]]),
                                       pad=1.1)},
            self.m_c_pt: {"x": [float(n), float(n)]},
        })
        best = min(loads, key=lambda k: loads[k].worst_latency_s)
        fails = {"deadline": mine.worst_latency_s > tr.slo_s,
                 "throughput": mine.max_busy > tr.max_utilisation,
                 "link": mine.link_utilisation > tr.max_utilisation,
                 "energy": daily > tr.daily_budget}
        self.results = {
            "layout": layout, "cameras": n, "fps": fps, "socs": mine.socs,
            "worst_latency_s": mine.worst_latency_s, "busy": list(mine.busy),
            "link_bytes_per_s": mine.link_bytes_per_s,
            "link_utilisation": mine.link_utilisation, "transfer_s": mine.transfer_s,
            "daily_wh": daily, "lowest_latency_layout": best, "fails": fails,
            "expected": self._expected,
        }
        self._set_readout(_cards([
            ("worst-case latency", _ms(mine.worst_latency_s), f"deadline {_ms(tr.slo_s)}",
             lw.PALETTE["red"]),
            ("busiest SoC", f"{mine.max_busy:.1%}", f"{mine.socs} SoC(s)", lw.PALETTE["blue"]),
            ("inter-SoC traffic", f"{format_bytes(mine.link_bytes_per_s)}/s",
             f"{mine.link_utilisation:.2%} of the link; {_ms(mine.transfer_s)} per hand-off",
             lw.PALETTE["purple"]),
            ("energy", f"{_num(daily)} Wh/day", f"budget {_num(tr.daily_budget)}",
             lw.PALETTE["teal"]),
        ]))
        self.callouts["deadline"].set(
            fails["deadline"], "Hard deadline missed",
            f"The last of {n} simultaneous frames is done after {_ms(mine.worst_latency_s)} vs "
            f"{_ms(tr.slo_s)}.", "split the cameras over two SoCs, or fewer cameras per SoC")
        self.callouts["throughput"].set(
            fails["throughput"], "SoC overloaded",
            f"Busiest SoC {mine.max_busy:.0%} vs {tr.max_utilisation:.0%}.",
            "lower fps, or a second SoC")
        self.callouts["link"].set(
            fails["link"], "Inter-SoC link saturated",
            f"{format_bytes(mine.link_bytes_per_s)}/s vs "
            f"{format_bytes(self.hw.interconnect_bandwidth)}/s.", "send fewer bytes per frame")
        self.callouts["energy"].set(
            fails["energy"], "Over the energy budget",
            f"{_num(daily)} Wh/day vs {_num(tr.daily_budget)}.",
            "fewer frames, or one pass per frame (not two half-passes)")
        self.callouts["boundary"].set(
            not any(fails.values()), f"{layout} meets every limit",
            f"Lowest worst-case latency here: {best} ({_ms(loads[best].worst_latency_s)}).")
        self.math.update(
            "$$\\text{single: } N t \\qquad \\text{cameras: } \\max(\\lceil N/2\\rceil t,\\ "
            "x + \\lfloor N/2 \\rfloor \\max(t, x)) \\qquad \\text{model: } a + x + b + "
            "(N-1)\\max(a, x, b)$$"
            f"<p>t = {_ms(mine.frame_s)} per frame; hand-off x = bytes / "
            f"{format_bytes(self.hw.interconnect_bandwidth)}/s + "
            f"{_ms(self.hw.interconnect_latency_s)} = {_ms(mine.transfer_s)}; stages "
            + ", ".join(_ms(x) for x in mine.stage_s) + ". Split bytes: "
            f"{lw.esc(edge.CAMERA_SOURCES['YOLOV8N_SPLIT_BYTES'])}. Source: "
            "<code>labkit.edge.camera_load</code>.</p>")

    def _reveal_body(self) -> str:
        loads = self.default_loads
        txt = ", ".join(f"{k} {_ms(v_.worst_latency_s)}" for k, v_ in loads.items())
        return (f"{self._computed_line()}"
                f"<div>At the defaults: {txt}.</div>"
                "<div style='color:#5d6d7e'>Why: splitting cameras halves the queue of "
                "simultaneous frames each SoC works through, for one short frame transfer; "
                "splitting the model makes every frame cross the link and pay the per-pass "
                "overhead twice.</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Split: '{r['layout']}' with {r['cameras']} cameras at {r['fps']:g} fps has a "
                f"worst case of {_ms(r['worst_latency_s'])} and moves "  # type: ignore[arg-type]
                f"{format_bytes(r['link_bytes_per_s'])}/s between SoCs; the lowest-latency "  # type: ignore[arg-type]
                f"layout there is {r['lowest_latency_layout']}.")


# -- Part D: design challenge ---------------------------------------------------------------------

_CONSTRAINT_TITLES = {
    "layout": "Not a possible layout", "memory": "Out of memory (OOM)",
    "tpot": "TPOT SLO missed", "ttft": "First token too late", "quality": "Below the quality floor",
    "cost": "Over the daily budget", "energy": "Over the energy budget",
    "context": "Conversation shorter than the product needs", "flash": "Weights exceed flash",
    "sram": "Out of SRAM", "deadline": "Deadline missed", "coverage": "Listening too rarely",
    "link": "Link saturated", "throughput": "SoC overloaded", "socs": "More SoCs than the board",
}
_CONSTRAINT_FIX = {
    "layout": "pick degrees that exist (powers of two within the model's heads, layers and "
              "the sequences)",
    "memory": "split weights (TP/PP), one sequence's KV (CP) or the sequences (DP); lower "
              "the precision",
    "tpot": "more TP inside the fast domain; fewer sequences per replica (more DP); lower "
            "precision",
    "ttft": "a shorter prompt or faster prefill", "quality": "raise the precision to the floor",
    "cost": "fewer devices: lower precision frees memory for more sequences per device",
    "energy": "lower precision, less work per day, or a cheaper place to do it",
    "context": "serve longer conversations", "flash": "lower the weight precision",
    "sram": "a lower-precision datapath", "deadline": "shorten the path to a decision",
    "coverage": "process more windows", "link": "send fewer bytes",
    "throughput": "spread the load over a second SoC", "socs": "use the SoCs the board has",
}


class PartD(Part):
    """Design challenge: every constraint of the track at once, checked by
    :func:`design_check`, against labkit's fewest-devices (then cheapest) design."""

    letter = "D"

    def _setup(self) -> None:
        tr, m, sc = self.track, self.model, self.scenario
        d0 = design_defaults(tr)
        self.reference = reference_design(tr)
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", int(d0["weight_bits"]))  # type: ignore[call-overload]
        if sc in ("fleet", "handheld"):
            c["kv_bits"] = lw.precision_control("KV-cache precision", int(d0["kv_bits"]),  # type: ignore[call-overload]
                                                sorted({4, 8, 16, int(d0["kv_bits"])}))  # type: ignore[call-overload]
        if sc == "fleet":
            users = fleet_users(tr)
            opts = {"tp": _pow2(min(m.q_heads, 64)),
                    "cp": _pow2(max(1, int(tr.context_tokens) // 1024)),  # type: ignore[arg-type]
                    "pp": _pow2(min(m.layers, 64)), "dp": _pow2(min(users, 256))}
            if m.is_moe:
                opts["ep"] = [e for e in _pow2(m.experts_total) if m.experts_total % e == 0]
            for ax, vals in opts.items():
                val = int(d0[ax]) if int(d0[ax]) in vals else 1  # type: ignore[call-overload]
                c[ax] = lw.selection_control(f"{ax.upper()} degree",
                                             [(str(x), x) for x in vals], val)
        elif sc == "handheld":
            c["context_tokens"] = lw.context_control(int(d0["context_tokens"]), m.max_context,  # type: ignore[call-overload]
                                                     512, "Longest conversation (tokens)")
        elif sc == "wearable":
            c["duty"] = lw.float_control("Share of windows processed (duty)",
                                         float(d0["duty"]), 0.05, 1.0, 0.05, ".0%")  # type: ignore[arg-type]
            c["split"] = lw.choice_control("Cut the pipeline", [
                ("model on the ring", "on_device"), ("features to the phone", "features"),
                ("raw audio to the phone", "raw")], d0["split"], style="toggle")
            c["interval_ms"] = lw.selection_control(
                "BLE connection interval (ms)", [(f"{x:g}", x) for x in INTERVALS_MS],
                float(d0["interval_ms"]))  # type: ignore[arg-type]
        else:
            layouts = [("one SoC", "single")]
            if self.hw.domain_size >= 2:
                layouts += [("two SoCs: split cameras", "cameras"),
                            ("two SoCs: split the model", "model")]
            c["layout"] = lw.choice_control("Layout", layouts, "single", style="toggle")
        self.default_check = design_check(tr, d0)
        self.names = list(self.default_check["constraints"])  # type: ignore[arg-type]
        self._expected = self._computed_answer()
        gx, gy = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_g = gy
        self.m_g = lw.bar_mark(self.names, np.zeros(len(self.names)), gx, gy,
                               colors=[lw.PALETTE["green"]] * len(self.names),
                               color_mode="no_group", label_display=True,
                               label_display_format=".2f")
        self.m_g_l = lw.hline_mark(1.0, gy, color=lw.PALETTE["red"], label="limit",
                                   legend=True)
        self.figures["constraints"] = lw.figure(
            [self.m_g, self.m_g_l], gx, gy, x_label="constraint",
            y_label=f"use of the limit (above 1 fails; {OFF_SCALE:g} = n/a)",
            title="Your design against every constraint", height=300)
        ox, oy = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_o = oy
        self.unit = f"{tr.cost_unit}/day"
        # rented fleets: the objective is devices (cost is devices x price); owned: energy
        self.per_device_day = (float(tr.price_per_device_hour) * tr.active_hours_per_day  # type: ignore[arg-type]
                               if tr.cost_unit == "USD" else None)
        rented = self.per_device_day is not None
        budget = tr.daily_budget / self.per_device_day if rented else tr.daily_budget  # type: ignore[operator]
        self.m_o = lw.bar_mark(["your design", "labkit's best"], np.zeros(2), ox, oy,
                               colors=[lw.PALETTE["blue"], lw.PALETTE["green"]],
                               color_mode="no_group", label_display=True,
                               label_display_format=",.4~g")
        self.m_o_b = lw.hline_mark(budget, oy, color=lw.PALETTE["red"],
                                   label="what the budget pays for" if rented else "budget",
                                   legend=True)
        self.figures["objective"] = lw.figure(
            [self.m_o, self.m_o_b], ox, oy, x_label="design",
            y_label="devices" if rented else f"energy ({self.unit})",
            title="Devices: yours vs labkit's fewest" if rented else "Energy per day",
            height=300)
        for n in self.names:
            self._callout(n, "danger")
        self._callout("boundary", "success")

    def check(self, config: Mapping[str, object]) -> dict[str, object]:
        """:func:`design_check` for this part's track (the grader calls the same function)."""
        return design_check(self.track, config)

    def _computed_answer(self) -> str:
        ref = self.reference
        sc = self.scenario
        if sc == "fleet":
            return device_bucket(None if ref is None else int(ref["devices"]))  # type: ignore[call-overload]
        if sc == "handheld":
            return context_bucket(None if ref is None else ref.get("max_context"))  # type: ignore[arg-type]
        if sc == "wearable":
            return duty_bucket(None if ref is None else float(ref["config"]["duty"]))  # type: ignore[index]
        return "none fits" if ref is None else str(ref["devices"])

    def _hook(self) -> str:
        tr = self.track
        sc = self.scenario
        if sc == "fleet":
            return (f"The target: {fleet_users(tr):,} concurrent conversations at "
                    f"{int(tr.context_tokens):,} tokens, TPOT within {tr.slo_s * 1e3:g} ms, "  # type: ignore[arg-type]
                    f"quality loss within {tr.max_quality_loss_pct:g} point(s), inside "
                    f"{_num(tr.daily_budget)} USD/day. Meet it with the fewest "
                    f"{self.hw.name} devices.")
        if sc == "handheld":
            return (f"Serve {int(tr.context_tokens):,}-token conversations on the phone "  # type: ignore[arg-type]
                    "within its memory, TPOT, TTFT, quality and battery budgets, spending as "
                    "little energy as possible.")
        if sc == "wearable":
            return ("Listen as often as the ring can afford: every constraint (flash, SRAM, "
                    "deadline, accuracy, energy, coverage, link) at once, with the highest "
                    "duty.")
        return ("Never miss a frame: deadline, throughput, memory, accuracy and energy at "
                "once, with the fewest SoCs.")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        sc = self.scenario
        if sc == "fleet":
            q = (f"{lw.esc(tr.label)}: {fleet_users(tr):,} users at "
                 f"{int(tr.context_tokens):,} tokens within {tr.slo_s * 1e3:g} ms per token, "  # type: ignore[arg-type]
                 f"at any precision that keeps quality. How many {lw.esc(self.hw.name)} "
                 "devices does the smallest design need?")
            return q, [(f"{lab} devices" if lab[0].isdigit() else lab.capitalize(), lab)
                       for lab in [b for _, b in DEVICE_BUCKETS] + ["more than 64"]]
        if sc == "handheld":
            q = (f"{lw.esc(tr.label)}: at any precision that keeps quality, what is the "
                 "longest conversation the phone can serve within memory, TPOT, TTFT and the "
                 "battery budget?")
            return q, [(lab, lab) for lab in
                       [b for _, b in CONTEXT_BUCKETS] + ["8k or more", "none fits"]]
        if sc == "wearable":
            q = (f"{lw.esc(tr.label)}: using any precision, cut point and BLE interval, what "
                 "share of the windows can the ring afford to process within every "
                 "constraint?")
            return q, [(lab, lab) for lab in ("every window", "50-99%", "25-49%",
                                              "below 25%", "none fits")]
        q = (f"{lw.esc(tr.label)}: with any precision and layout, how many SoCs does the "
             "smallest design that meets every constraint use?")
        return q, [("One SoC", "1"), ("Two SoCs", "2"), ("None fits", "none fits")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "What objective should the design review enforce?"
        opts = [("The fewest devices (then the least cost or energy) among designs that pass "
                 "every constraint", "constrained"),
                ("The lowest latency, whatever it costs", "latency"),
                ("The largest parallelism degree available", "largest"),
                ("The cheapest design, even if one constraint fails", "cheapest")]
        good = ("Right: feasibility first (every constraint at once), then the objective. A "
                "design that fails one constraint is not a cheaper design; it is no design.")
        bad = ("Not quite: a design ships only when every constraint passes; among those, "
               "the fewest devices (then the least cost or energy) wins.")
        return q, opts, "constrained", _feedback(opts, "constrained", good, bad)

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr = self.track
        chk = self.check(s)
        cons = chk["constraints"]
        ratios = np.asarray([_ratio(cons[n]) for n in self.names])  # type: ignore[index]
        colors = [lw.PALETTE["green"] if cons[n]["passed"] else lw.PALETTE["red"]  # type: ignore[index]
                  for n in self.names]
        obj = chk["objective"]
        mine = obj["value"]  # type: ignore[index]
        ref = obj["reference"]  # type: ignore[index]
        if self.per_device_day is not None:
            vals = np.asarray([float(chk["devices"]), float(chk["min_devices"] or 0)])  # type: ignore[arg-type]
            budget = tr.daily_budget / self.per_device_day
        else:
            vals = np.asarray([float(mine or 0.0), float(ref or 0.0)])
            budget = tr.daily_budget
        top = _lin_top(vals, pad=1.3)
        lw.update_marks({
            self.m_g: {"y": ratios, "colors": colors},
            self.s_g: {"max": _lin_top(np.concatenate([ratios, [1.0]]), pad=1.25)},
            self.m_o: {"y": vals},
            self.s_o: {"max": max(top, 1.1 * budget) if budget <= 3 * top else top},
            self.m_o_b: {"visible": bool(budget <= 3 * top)},
        })
        self.results = dict(chk)
        self.results["expected"] = self._expected
        feasible = bool(chk["feasible"])
        min_dev = chk["min_devices"]
        ref_cfg = None if chk["reference"] is None else chk["reference"]["config"]  # type: ignore[index]
        self._set_readout(_cards([
            ("verdict", "feasible" if feasible else f"{len(chk['failed'])} constraint(s) fail",  # type: ignore[arg-type]
             ", ".join(chk["failed"]) or "every constraint passes",  # type: ignore[arg-type]
             lw.PALETTE["green"] if feasible else lw.PALETTE["red"]),
            ("devices", f"{chk['devices']}", "labkit's fewest: "
             + ("none fits" if min_dev is None else str(min_dev)), lw.PALETTE["blue"]),
            (str(obj["name"]), _cost(mine, self.unit),  # type: ignore[index, arg-type]
             "labkit's best: " + _cost(ref, self.unit), lw.PALETTE["orange"]),  # type: ignore[arg-type]
        ]))
        rows = [[lw.esc(n), _ok(bool(cons[n]["passed"])), lw.esc(cons[n]["detail"])]  # type: ignore[index]
                for n in self.names]
        ref_txt = ("" if ref_cfg is None else "<div><b>labkit's best design:</b> "
                   + lw.esc(", ".join(f"{k} = {v_}" for k, v_ in ref_cfg.items())) + "</div>")
        self._set_details(_table(["constraint", "check", "detail"], rows) + ref_txt)
        for n in self.names:
            c = cons[n]  # type: ignore[index]
            self.callouts[n].set(not c["passed"], _CONSTRAINT_TITLES.get(n, n),
                                 lw.esc(c["detail"]), _CONSTRAINT_FIX.get(n))
        extra = chk["extra_devices"]
        self.callouts["boundary"].set(
            feasible, "Feasible: every constraint passes",
            f"{chk['devices']} device(s)"
            + ("" if extra is None else
               (" = labkit's fewest" if extra == 0 else f", {extra} more than labkit's fewest"))
            + f"; {obj['name']} {_cost(mine, self.unit)} vs labkit's "  # type: ignore[index, arg-type]
              f"{_cost(ref, self.unit)}.")  # type: ignore[arg-type]
        closest = self.names[int(np.argmax(ratios))]
        self.math.update(
            "<p>A design is feasible when every constraint holds at once:</p>"
            "$$\\text{feasible} = \\bigwedge_i \\left(\\frac{\\text{value}_i}{\\text{limit}_i} "
            "\\le 1\\right)$$"
            f"<p>Closest to its limit now: <b>{closest}</b> ({ratios.max():.2f}). labkit's "
            "answer: " + ("the fewest devices from <code>labkit.parallelism.search</code> over "
                          "every precision pair that keeps quality (ties: lower latency)"
                          if self.scenario == "fleet" else
                          "an exhaustive search of the same controls") + ". The grader calls "
            "the same check: <code>labkit.labs.accelerators.design_check(track, config)"
            "</code>.</p>")

    def _reveal_body(self) -> str:
        ref = self.reference
        r = self.results
        cfg = "none" if ref is None else ", ".join(f"{k} = {v_}"
                                                   for k, v_ in ref["config"].items())  # type: ignore[attr-defined]
        return (f"{self._computed_line()}"
                f"<div>labkit's best design: {lw.esc(cfg)}.</div>"
                f"<div>Yours: <b>{'feasible' if r['feasible'] else 'infeasible'}</b> with "
                f"{r['devices']} device(s).</div>"
                "<div style='color:#5d6d7e'>Why: each constraint alone is easy; together they "
                "pin the design. The cheapest feasible design usually lowers precision to the "
                "quality floor, because fewer bytes per weight and per token relax memory, "
                "latency and energy at once.</div>")

    def takeaway(self) -> str:
        r = self.results
        st = ("passes every constraint" if r["feasible"] else
              f"fails {', '.join(r['failed'])}")  # type: ignore[arg-type]
        extra = r["extra_devices"]
        return (f"Design: your {self.scenario} design {st} with {r['devices']} device(s)"
                + ("" if extra is None else f" (labkit's fewest: {r['min_devices']})") + "; "
                f"{r['objective']['name']} {_cost(r['objective']['value'], self.unit)}.")  # type: ignore[index, arg-type]


PART_CLASSES: Mapping[str, Mapping[str, type[Part]]] = {
    "A": {"fleet": PartALM, "handheld": PartALM, "wearable": PartACNN, "vehicle": PartACNN},
    "B": {"fleet": PartBFleet, "handheld": PartBHandheld, "wearable": PartBWearable,
          "vehicle": PartBVehicle},
    "C": {"fleet": PartCFleet, "handheld": PartCHandheld, "wearable": PartCWearable,
          "vehicle": PartCVehicle},
    "D": {sc: PartD for sc in SCENARIOS},
}


# -- the lab --------------------------------------------------------------------------------------

_OBJECTIVES = {
    "fleet": ["Place decode on the roofline: B*, L*, the knee, and why real systems sit above "
              "the peak roofline.",
              "Size a fleet on three axes (weights, KV headroom, TPOT throughput), name the "
              "one that binds and the paper's first lever for it.",
              "Choose TP x CP x PP x DP from the symptom, see what each axis sends on which "
              "link, and when to stop adding it.",
              "Meet the target with the fewest devices, every constraint at once."],
    "handheld": ["Place on-device decode on the roofline: B*, L* and why a phone is "
                 "memory-bound.",
                 "Find what fits beside the OS and which limit a longer conversation hits "
                 "first: memory, TPOT, TTFT or the battery.",
                 "Price the cloud hand-off: bytes over the radio against energy and latency.",
                 "Design within the memory, latency and battery budgets."],
    "wearable": ["Place the model on the classic roofline: compute-bound at a tiny FLOP/s.",
                 "Fit weights in flash and windows in SRAM; trade duty cycle for battery life.",
                 "Cut the pipeline between ring and phone: compute vs BLE bytes vs the "
                 "deadline.",
                 "Design within the energy, memory, deadline and coverage budgets."],
    "vehicle": ["Place the model on the classic roofline per precision and batch.",
                "Load one SoC with cameras x fps against a hard deadline, memory and energy.",
                "Split cameras or the model across two SoCs: interconnect bytes vs the "
                "deadline.",
                "Design with the fewest SoCs that never miss a frame."],
}


class Lab:
    """Lab 2 for one track. ``store`` defaults to ``AnswerStore()`` (labkit_answers.json).

    ``gate_explore`` (default True) keeps each part's controls and charts behind its
    prediction; parts are built on first use and cached.
    """

    def __init__(self, track_id: str, store: AnswerStore | None = None, *,
                 gate_explore: bool = True) -> None:
        self.track = get_track(track_id)
        self.track_id = self.track.id
        self.scenario = scenario(self.track)
        self.store = store if store is not None else AnswerStore()
        self.gate_explore = gate_explore
        self._parts: dict[str, Part] = {}
        self._synthesis: ipw.VBox | None = None

    def __repr__(self) -> str:
        return f"Lab({self.track_id!r}, store={self.store!r})"

    def part(self, letter: str) -> Part:
        key = str(letter).upper()
        if key not in PART_CLASSES:
            raise ValueError(f"part must be one of {', '.join(PARTS)}; got {letter!r}")
        if key not in self._parts:
            self._parts[key] = PART_CLASSES[key][self.scenario](self)
        return self._parts[key]

    def parts(self) -> list[Part]:
        return [self.part(p) for p in PARTS]

    def check(self, config: Mapping[str, object]) -> dict[str, object]:
        """:func:`design_check` for this lab's track."""
        return design_check(self.track, config)

    # -- header ------------------------------------------------------------------------------
    def header(self) -> ipw.HTML:
        tr = self.track
        hw = get_hardware(tr.hardware_id)
        m = get_model(tr.model_id)
        st = tr.stakeholder
        n = m.params_total
        params = (f"{n / 1e9:.3g}B" if n >= 1e9 else f"{n / 1e6:.3g}M" if n >= 1e6
                  else f"{n / 1e3:.3g}k")
        prec = hw.default_precision
        ask = {
            "fleet": f"How many {hw.name} devices do {fleet_users(tr):,} live conversations need, "
                     "which axis sets that number, and how should each replica be sharded?",
            "handheld": "Where does the phone's time go per token, what limits a longer "
                        "conversation, and when should a request go to the cloud instead?",
            "wearable": "Is the spotter compute- or memory-bound, how often can it listen on "
                        "this battery, and should the ring hand work to the phone?",
            "vehicle": "How much headroom does one SoC have for cameras, and does a second SoC "
                       "help the hard deadline?",
        }[self.scenario]
        objs = "".join(f"<li>{lw.esc(o)}</li>" for o in _OBJECTIVES[self.scenario])
        return ipw.HTML(
            f"<div class='labkit-header' style='border:1px solid #d5d8dc;border-radius:6px;"
            f"padding:12px 16px'>"
            f"<div style='font-size:0.8em;color:#5d6d7e;text-transform:uppercase'>Lab 2 · "
            f"{lw.esc(LAB_TITLE)} · {lw.esc(TIME_ESTIMATE)}</div>"
            f"<div style='font-size:1.5em;font-weight:700;margin:4px 0'>{lw.esc(tr.label)}</div>"
            f"<div><b>Hardware:</b> {lw.esc(hw.name)} ({format_bytes(hw.usable_memory_bytes)} "
            f"usable, {_si(hw.memory_bandwidth, 'B/s')}, {_si(hw.flops(), 'FLOP/s')} "
            f"{prec}; machine balance {hw.arithmetic_intensity:,.3g} FLOP/B) · "
            f"<b>Model:</b> {lw.esc(m.name)} ({params} parameters) · <b>Unit:</b> "
            f"{tr.cost_unit}</div>"
            f"<div style='margin:8px 0;padding:8px 12px;background:#f4f6f7;border-left:4px "
            f"solid #7d3c98'><b>{lw.esc(st.name)}</b>, {lw.esc(st.role)}: "
            f"<i>“{lw.esc(ask)}”</i></div>"
            f"<div><b>You will:</b><ol style='margin:2px 0'>{objs}</ol></div></div>")

    # -- Lab 1 connection, synthesis and report ---------------------------------------------
    def lab1_entry(self) -> dict[str, object] | None:
        """The latest Lab 1 design-ledger entry for this track, or None."""
        try:
            entries = read_ledger(self.track_id, lab="lab1")
        except ValueError:
            return None
        return entries[-1] if entries else None

    def lab1_connection(self) -> str:
        """One or two sentences tying the student's Lab 1 release to this lab's physics."""
        e = self.lab1_entry()
        tr = self.track
        if e is None:
            return ("No Lab 1 design for this track was found in the design ledger "
                    "($LABKIT_LEDGER or ~/.labkit/ledger.json): finish Lab 1's synthesis to "
                    "connect its release candidate to these numbers.")
        ch = e.get("choices") or {}
        if not isinstance(ch, Mapping):
            return "The Lab 1 ledger entry for this track has no design choices."
        try:
            wb = v.precision_bits("weight_bits", ch.get("weight_bits", tr.weight_bits))
        except ValueError:
            return "The Lab 1 ledger entry for this track has an unreadable precision."
        hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
        status = "shipped" if ch.get("passed") else "proposed"
        if tr.is_transformer:
            b16 = critical_batch(hw, m, 16, mode="peak")
            bx = critical_batch(hw, m, wb, mode="peak")
            text = (f"In Lab 1 you {status} {wb}-bit weights; here that moves B* from "
                    f"{b16:,.0f} (16-bit) to {bx:,.0f} sequences")
            kb = ch.get("kv_bits")
            if isinstance(kb, int) and kb in lw.PRECISIONS:
                text += (f", and your {kb}-bit KV puts L* at "
                         f"{balance_context(hw, m, kb, mode='peak'):,.0f} tokens "
                         f"(16-bit: {balance_context(hw, m, 16, mode='peak'):,.0f})")
        else:
            r16 = cnn_inference_time(hw, m, 16, 1, "peak")
            rx = cnn_inference_time(hw, m, wb, 1, "peak")
            text = (f"In Lab 1 you {status} {wb}-bit weights; here that puts the model at "
                    f"{float(rx.flops / rx.bytes_moved):,.3g} FLOP/B (16-bit: "
                    f"{float(r16.flops / r16.bytes_moved):,.3g}) and {_ms(float(rx.latency_s))} "
                    f"per pass (16-bit: {_ms(float(r16.latency_s))})")
        dpr = ch.get("devices_per_replica")
        if isinstance(dpr, int):
            text += f". Lab 1 ran {dpr} device(s) per replica"
            if "D" in self._parts:
                text += f"; your Part D design uses {self._parts['D'].results['devices']}"
        return text + "."

    def takeaways(self) -> list[str]:
        """One takeaway per part from the student's own settings, then the Lab 1 link."""
        return [p.takeaway() for p in self.parts()] + [self.lab1_connection()]

    def ledger_choices(self) -> dict[str, object]:
        """What Lab 2 hands to later labs: the Part D design and the key findings."""
        a, b, c, d = self.parts()
        rd = d.results
        return _plain({
            "scenario": self.scenario, "design": rd["config"], "feasible": rd["feasible"],
            "failed": rd["failed"], "devices": rd["devices"], "min_devices": rd["min_devices"],
            "objective": rd["objective"], "regime": a.results.get("regime"),
            "capacity_binding": b.results.get("binding_axis", b.results.get("first_failure")),
            "part_c": {k: c.results.get(k) for k in ("layout", "split", "winner", "symptom",
                                                     "search_chosen") if k in c.results},
            "lab1_found": self.lab1_entry() is not None,
        })  # type: ignore[return-value]

    def report(self) -> tuple[str, dict[str, object]]:
        """(Markdown, JSON-ready dict): settings, predictions and results of every part."""
        tr = self.track
        hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
        parts = {p.letter: p.state() for p in self.parts()}
        memo = self.store.get(LAB_ID, answer_key(tr.id, "", "memo"))
        takeaways = self.takeaways()
        choices = self.ledger_choices()
        lab1 = self.lab1_entry()
        data: dict[str, object] = _plain({  # type: ignore[assignment]
            "schema": REPORT_SCHEMA, "version": REPORT_VERSION, "lab": LAB_ID,
            "title": LAB_TITLE, "generated_at": now_iso(),
            "track": {"id": tr.id, "label": tr.label, "hardware": hw.name, "model": m.name,
                      "cost_unit": tr.cost_unit, "stakeholder": tr.stakeholder.name,
                      "scenario": self.scenario},
            "parts": parts, "takeaways": takeaways,
            "memo": None if memo is None else memo.to_dict(), "ledger_choices": choices,
            "lab1": None if lab1 is None else lab1.get("choices"),
        })
        lines = [f"# Lab 2: {LAB_TITLE} ({tr.label})", "",
                 f"Generated {data['generated_at']}. Track `{tr.id}` ({self.scenario}): "
                 f"{hw.name}, {m.name}. Stakeholder: {tr.stakeholder.name}, "
                 f"{tr.stakeholder.role}.", ""]
        for p in self.parts():
            st = parts[p.letter]
            lines += [f"## Part {p.letter}: {p.title}", ""]
            lines.append("- Prediction: " + _md_entry(p.predict, p.predict.entry))
            lines.append(f"- Computed answer at the track defaults: "
                         f"{p.predict.label_for(p.expected)}")
            settings = ", ".join(f"{k} = {v_}" for k, v_ in st["settings"].items())  # type: ignore[index, union-attr]
            lines.append(f"- Your settings: {settings}")
            lines.append("- Checkpoint: " + _md_entry(p.checkpoint, p.checkpoint.entry))
            lines.append("")
        lines += ["## Takeaways", "", *(f"{i}. {t}" for i, t in enumerate(takeaways, 1)), "",
                  "## Memo", "", memo.current if memo is not None else "(not saved yet)", "",  # type: ignore[list-item]
                  "## Design ledger entry", "", "```json",
                  json.dumps(choices, indent=2, sort_keys=True), "```", ""]
        return "\n".join(str(x) for x in lines), data

    def write_report(self, directory: str | os.PathLike[str] = ".", *,
                     overwrite: bool = True) -> tuple[Path, Path]:
        """Write ``labkit_lab2_report.md`` and ``.json`` (atomic) into ``directory``."""
        md, data = self.report()
        d = Path(directory)
        md_path, json_path = d / REPORT_MD, d / REPORT_JSON
        if overwrite or not md_path.exists():
            tmp = md_path.with_name(f".{md_path.name}.tmp")
            tmp.write_text(md, encoding="utf-8")
            os.replace(tmp, md_path)
        if overwrite or not json_path.exists():
            write_json_atomic(json_path, data)
        return md_path, json_path

    def synthesis(self, *, write: bool | None = None) -> ipw.VBox:
        """Takeaways (with the Lab 1 link), memo prompt, report downloads; writes the report
        files and the design ledger.

        ``write`` None: write the report to the working directory and record the ledger,
        except under nbgrader autograde (``NBGRADER_EXECUTION=autograde``), where existing
        report files are kept and the ledger is not touched. True/False force it.
        """
        tr = self.track
        st = tr.stakeholder
        takeaways_html, links_html, status = ipw.HTML(), ipw.HTML(), ipw.HTML()
        lab1_html = ipw.HTML()
        refresh = ipw.Button(description="Refresh report", icon="refresh")
        autograde = os.environ.get("NBGRADER_EXECUTION") == "autograde"

        def render(do_write: bool) -> None:
            items = "".join(f"<li style='margin-bottom:4px'>{lw.esc(t)}</li>"
                            for t in self.takeaways()[:-1])
            takeaways_html.value = (f"<div class='labkit-takeaways'><b>Key takeaways from your "
                                    f"own settings</b><ol>{items}</ol></div>")
            found = self.lab1_entry() is not None
            lab1_html.value = (
                f"<div class='labkit-lab1' style='margin:6px 0;padding:6px 10px;border-left:4px "
                f"solid {'#1f6fb2' if found else '#b9770e'};background:#f4f8fb'><b>From Lab 1:"
                f"</b> {lw.esc(self.lab1_connection())}</div>")
            md, data = self.report()
            links_html.value = (
                "<div class='labkit-downloads'><b>Download your report:</b> "
                + _download_link(md, f"labkit_lab2_report_{tr.id}.md", "text/markdown",
                                 "Markdown report")
                + " · "
                + _download_link(json.dumps(data, indent=2, sort_keys=True),
                                 f"labkit_lab2_report_{tr.id}.json", "application/json",
                                 "JSON snapshot") + "</div>")
            notes = []
            if do_write:
                self.write_report(".", overwrite=not autograde)
                notes.append(f"wrote {REPORT_MD} and {REPORT_JSON}")
                if not autograde:
                    record_ledger(LAB_ID, tr.id, self.ledger_choices())
                    notes.append("recorded your design in the ledger")
            status.value = f"<span style='color:#5d6d7e'>{'; '.join(notes)}</span>"

        refresh.on_click(lambda _b: render(write is not False))
        render(write is not False)
        prompt = ipw.HTML(
            f"<div style='margin-top:8px'><b>Memo to {lw.esc(st.name)}</b> "
            f"({lw.esc(st.role)}). Recommend your Part D design with its numbers: where the "
            "workload sits on the roofline, which capacity axis binds, how you split or hand "
            "off the work, and how far you are from labkit's fewest-devices design. Write it "
            "in the graded memo cell below; <b>Refresh report</b> after you change any "
            "setting above.</div>")
        box = ipw.VBox([
            ipw.HTML(f"<div style='font-size:1.3em;font-weight:700;margin-top:12px'>Synthesis: "
                     f"{lw.esc(tr.label)}</div>"),
            takeaways_html, lab1_html, prompt, refresh, links_html, status,
        ])
        box.add_class("labkit-synthesis")
        self._synthesis = box
        return box
