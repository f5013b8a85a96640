"""TODO doc."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from labkit.core import validation as v
from labkit.core.format import (
    fmt_count,
    fmt_energy,
    format_bytes,
    plain,
)
from labkit.core.grids import PRECISIONS, context_options
from labkit.core.units import SECONDS_PER_HOUR, bits_to_bytes
from labkit.physics import edge
from labkit.physics.capacity import SLO_TARGETS, Sizing, size_deployment
from labkit.physics.kvcache import kv_bytes_per_token, weight_bytes
from labkit.physics.memory import resident_weight_bytes
from labkit.physics.parallelism import ConfigTable, enumerate_configs, search
from labkit.physics.phases import (
    cnn_inference_time,
    prefill_time,
    request_phases,
)
from labkit.physics.roofline import (
    decode_roofline,
    get_mode,
)
from labkit.plans.serving import quality_loss
from labkit.plans.workload import track_phases
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model, get_model
from labkit.tracks import TRACKS, Track, get_track

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
    ``min_kv_bits`` (transformers), as in :func:`labkit.plans.serving.release_guardrails`."""
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


def active_seconds(tr: Track) -> float:
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
    """:func:`labkit.physics.parallelism.enumerate_configs` of a fleet track (cached), and the row of
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
    kvs: list[int | None] = list(PRECISIONS) if tr.is_transformer else [None]
    for wb in PRECISIONS:
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
        why = not_candidate_reason(tr, deg, users, int(tr.context_tokens))  # type: ignore[arg-type]
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
                            f"{tr.active_hours_per_day:g} h = {fmt_count(daily)} USD/day vs "
                            f"budget {fmt_count(tr.daily_budget)}"))
    metrics["daily_cost"] = daily
    return cons, metrics, devices


def not_candidate_reason(tr: Track, deg: tuple[int, ...], batch: int, context: int) -> str:
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
    decode) from :func:`labkit.physics.phases.request_phases`; memory = resident weights + KV of
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
    per_day = tr.demand_rate_per_s * active_seconds(tr)
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
                    f"{fmt_count(mt['requests_per_day'])} requests/day x "
                    f"{fmt_energy(mt['energy_j'])} = {fmt_count(mt['daily_mwh'])} mWh/day vs "
                    f"{fmt_count(tr.daily_budget)}"),
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
    """:func:`labkit.physics.edge.wearable_split` for a wearable track at ``duty`` of its windows."""
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
    windows_day = duty * tr.demand_rate_per_s * active_seconds(tr)
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
                    f"{fmt_count(windows_day)} windows/day x {fmt_energy(sc.energy_j)} = "
                    f"{fmt_count(daily)} mWh/day vs {fmt_count(tr.daily_budget)}"),
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
    """:func:`labkit.physics.edge.camera_load` for a vehicle track (defaults: its cameras and fps)."""
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
    daily_wh = cl.energy_j_per_frame * cl.frames_per_s * active_seconds(tr) / edge.J_PER_WH
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
                    "Wh/day", f"{fmt_count(cl.frames_per_s)} frames/s x "
                    f"{fmt_energy(cl.energy_j_per_frame)} x {tr.active_hours_per_day:g} h = "
                    f"{fmt_count(daily_wh)} Wh/day vs {fmt_count(tr.daily_budget)}"),
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
    :func:`labkit.physics.parallelism.search` (achievable roofline, batch = :func:`fleet_users`,
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
    opts = context_options(m.max_context, int(tr.context_tokens), 256)  # type: ignore[arg-type]
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
    return plain(out)  # type: ignore[return-value]


def per_replica_limits(hw: Hardware, m: Model, context: float, tpot_s: float, weight_bits: int,
                       kv_bits: int, devices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sequences one replica of ``devices`` pooled devices holds by KV memory and by the TPOT
    budget, as :func:`labkit.physics.capacity.size_deployment` counts them (even split, no comm).

    KV: floor((usable - weights/d) / (S kv_bpt / d)). TPOT (dense): the step
    (W + B (c + k)) / d + o <= T gives B = floor((d (T - o) - W) / (c + k)); MoE models
    use :func:`labkit.physics.capacity.max_batch_within_slo` (their weight read grows with B).
    """
    from labkit.physics.capacity import max_batch_within_slo
    from labkit.physics.roofline import step_weight_params

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
    """:func:`labkit.physics.capacity.size_deployment` (achievable roofline), fast for dense models.

    Identical result: the same axes, replica sizes, KV limit and choice rules. Only the
    TPOT limit per replica size is found differently: size_deployment bisects the monotone
    step time; for a dense model the step is linear in the batch, so the closed form
    B = floor((d (T - o) - W) / (c + k)) is taken and then checked against the same step
    time at B and B + 1 (one vectorised roofline call). MoE models call size_deployment.
    """
    from labkit.physics.capacity import kv_headroom_devices, weights_floor_devices

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
