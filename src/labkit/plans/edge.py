"""Lab 2's edge deployments, computed once for every view: the phone's memory, speed and
battery as a conversation grows and its cloud hand-off (handheld), the ring's flash, SRAM,
energy per window as named parts and its pipeline cuts (wearable), and the vehicle's
cameras against every limit and its two-SoC layouts (vehicle).

Every result is a frozen dataclass whose fields carry their unit in the name (``_s``,
``_j``, ``_bytes``, ``_mwh``, ``_wh``) and, where a quantity has more than one reading,
its definition: TPOT is the request's mean time per output token after the first
(``(e2e - TTFT) / (L - 1)``), the slowest single gap is ``last_step_s``; energy per window
is front end + model (+ radio + link idle when the ring talks to its phone); vehicle energy
per day states the batch it is computed at. The lab parts only read these fields.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from labkit.core.units import J_PER_MWH, J_PER_WH
from labkit.physics import edge as _edge
from labkit.physics.edge import SPLITS, CameraLoad, Handoff, SplitCost
from labkit.physics.kvcache import kv_bytes_per_token, weight_bytes
from labkit.physics.memory import resident_weight_bytes
from labkit.physics.phases import cnn_inference_time, decision_time, prefill_time, request_phases
from labkit.physics.roofline import decode_roofline
from labkit.plans.design import (
    DESIGN_MODE,
    VEHICLE_LAYOUTS,
    active_seconds,
    cameras_and_fps,
    design_defaults,
    handheld_curves,
    ring_split,
    ring_window,
    vehicle_frame,
    vehicle_load,
)
from labkit.plans.handoff import server_times
from labkit.registries.edge import edge_profile, get_battery
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track, get_track

__all__ = [
    "FRONT_END_NAME",
    "PHONE_LIMITS",
    "RING_LIMITS",
    "SPLITS",
    "VEHICLE_LAYOUTS",
    "VEHICLE_LIMITS",
    "CameraLoad",
    "CameraPoint",
    "Handoff",
    "PhoneContext",
    "PhoneDevice",
    "PhoneWalls",
    "RingDesign",
    "SplitCost",
    "VehicleBatch",
    "WindowEnergy",
    "camera_first",
    "camera_point",
    "camera_ratios",
    "crossover",
    "layout_loads",
    "layout_sweep",
    "phone_cloud",
    "phone_cloud_curve",
    "phone_context",
    "phone_curves",
    "phone_device",
    "phone_device_curve",
    "phone_device_fits",
    "phone_fit",
    "phone_walls",
    "ring_best_cut",
    "ring_cuts",
    "ring_design",
    "ring_interval_curves",
    "ring_life_curve",
    "server_times",
    "vehicle_batch",
    "window_energy",
]

FRONT_END_NAME = "MFCC front end"
"""What the ring computes before its model (the edge profile's ``front_end_ops``)."""
PHONE_LIMITS = ("memory", "tpot", "ttft", "energy")
RING_LIMITS = ("flash", "sram", "energy", "coverage")
VEHICLE_LIMITS = ("deadline", "throughput", "memory", "energy")


def _tr(track: str | Track) -> Track:
    return get_track(track)


# -- handheld: one conversation length -------------------------------------------------------

@dataclass(frozen=True)
class PhoneContext:
    """One on-device request whose conversation reaches ``context_tokens`` (batch 1,
    achievable roofline).

    TPOT (``tpot_s``) is the glossary's: the request's mean time per output token after
    the first, one decode step at the mean context ``mean_context_tokens``; it is the sum
    of the step's terms ``weight_step_s + compute_step_s + kv_step_s + overhead_step_s``.
    ``last_step_s`` is the slowest inter-token gap (the step at the full context);
    ``request_s`` = TTFT + (L - 1) x TPOT, the request end to end. Energy
    per request = ``power_w`` x (prefill + decode), J; per day at ``requests_per_day``, mWh.
    """

    weight_bits: int
    kv_bits: int
    context_tokens: int
    prompt_tokens: int
    output_tokens: int
    weights_bytes: float
    kv_bytes_per_token: float
    kv_bytes: float
    memory_bytes: float
    usable_bytes: float
    ram_bytes: float
    ttft_s: float
    ttft_limit_s: float
    mean_context_tokens: float
    weight_step_s: float
    compute_step_s: float
    kv_step_s: float
    overhead_step_s: float
    tpot_s: float
    tpot_limit_s: float
    last_step_s: float
    request_s: float
    bandwidth_bytes_per_s: float
    power_w: float
    energy_j: float
    requests_per_day: float
    daily_mwh: float
    budget_mwh: float
    battery_mwh: float | None

    @property
    def battery_share(self) -> float | None:
        """Share of a full battery the day's requests spend (None: no battery)."""
        return None if not self.battery_mwh else self.daily_mwh / self.battery_mwh

    @property
    def fails(self) -> dict[str, bool]:
        return {"memory": self.memory_bytes > self.usable_bytes,
                "tpot": self.tpot_s > self.tpot_limit_s,
                "ttft": self.ttft_s > self.ttft_limit_s,
                "energy": self.daily_mwh > self.budget_mwh}

    @property
    def ratios(self) -> dict[str, float]:
        """Each limit's use (above 1 fails), uncapped."""
        return {"memory": self.memory_bytes / self.usable_bytes,
                "tpot": self.tpot_s / self.tpot_limit_s,
                "ttft": self.ttft_s / self.ttft_limit_s,
                "energy": self.daily_mwh / self.budget_mwh}


def _requests_per_day(tr: Track) -> float:
    return tr.demand_rate_per_s * active_seconds(tr)


def _battery_mwh(hardware_id: str) -> float | None:
    prof = edge_profile(hardware_id)
    return None if prof is None or not prof.battery else get_battery(prof.battery).capacity_mwh


def phone_context(track: str | Track, weight_bits: int, kv_bits: int, context_tokens: int,
                  requests_per_day: float | None = None) -> PhoneContext:
    """The phone at one conversation length (Part B's readout, callouts and math peek)."""
    tr = _tr(track)
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    out = int(tr.output_tokens or 1)
    prompt = max(1, int(context_tokens) - out)
    ph = request_phases(hw, m, prompt_tokens=prompt, output_tokens=out,
                        weight_bits=weight_bits, kv_bits=kv_bits, mode=DESIGN_MODE)
    mean_ctx = prompt + out / 2.0
    dec = decode_roofline(hw, m, 1, mean_ctx, weight_bits, kv_bits, mode=DESIGN_MODE)
    last = decode_roofline(hw, m, 1, context_tokens, weight_bits, kv_bits, mode=DESIGN_MODE)
    kvb = kv_bytes_per_token(m, kv_bits)
    w = resident_weight_bytes(m, weight_bits)
    req = _requests_per_day(tr) if requests_per_day is None else float(requests_per_day)
    energy = float(ph.energy_j or 0.0)
    kv_s = float(dec.kv_step_s)
    return PhoneContext(
        weight_bits=weight_bits, kv_bits=kv_bits, context_tokens=int(context_tokens),
        prompt_tokens=prompt, output_tokens=out, weights_bytes=w, kv_bytes_per_token=kvb,
        kv_bytes=context_tokens * kvb, memory_bytes=w + context_tokens * kvb,
        usable_bytes=hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction),
        ram_bytes=hw.memory_bytes, ttft_s=float(ph.ttft_s),
        ttft_limit_s=float(tr.ttft_slo_s or math.inf), mean_context_tokens=mean_ctx,
        weight_step_s=float(dec.weight_step_s), compute_step_s=float(dec.compute_step_s),
        kv_step_s=kv_s, overhead_step_s=float(dec.overhead_step_s + dec.comm_step_s),
        tpot_s=float(dec.step_s), tpot_limit_s=tr.slo_s, last_step_s=float(last.step_s),
        request_s=float(ph.latency_s),
        bandwidth_bytes_per_s=(mean_ctx * kvb / kv_s if kv_s > 0 else math.inf),
        power_w=float(hw.power_w or 0.0), energy_j=energy, requests_per_day=req,
        daily_mwh=energy * req / J_PER_MWH, budget_mwh=tr.daily_budget,
        battery_mwh=_battery_mwh(hw.id))


def phone_fit(track: str | Track, weight_bits: int, kv_bits: int, contexts: object,
              requests_per_day: float | None = None) -> PhoneContext | None:
    """:func:`phone_context` at the longest of ``contexts`` whose weights + KV fit the
    memory the app may use (None: not even the shortest fits). Numbers quoted at a
    conversation that does not fit are quoted here instead, labelled with its length."""
    tr = _tr(track)
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    usable = hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction)
    room = usable - resident_weight_bytes(m, weight_bits)
    kvb = kv_bytes_per_token(m, kv_bits)
    fits = [int(c) for c in np.asarray(contexts).ravel() if int(c) * kvb <= room]
    if not fits:
        return None
    return phone_context(tr, weight_bits, kv_bits, max(fits), requests_per_day)


def phone_curves(track: str | Track, weight_bits: int, kv_bits: int,
                 contexts: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`phone_context`'s memory (bytes), TPOT (mean, s), last step (s), TTFT (s) and
    energy per request (J) over ``contexts`` (vectorised, for the charts)."""
    return handheld_curves(_tr(track), weight_bits, kv_bits, contexts)


@dataclass(frozen=True)
class PhoneWalls:
    """Where each limit first fails as the conversation grows (None: not within the grid's
    last context ``grid_top_tokens``), and the first of them."""

    walls: tuple[tuple[str, float | None], ...]
    first: str
    first_at: float | None
    grid_top_tokens: float


def phone_walls(track: str | Track, weight_bits: int, kv_bits: int, requests_per_day: float,
                contexts: np.ndarray, curves: dict[str, np.ndarray] | None = None
                ) -> PhoneWalls:
    """The shortest conversation (tokens) at which each limit of :data:`PHONE_LIMITS`
    fails, on the ``contexts`` grid."""
    tr = _tr(track)
    cv = curves if curves is not None else phone_curves(tr, weight_bits, kv_bits, contexts)
    grid = np.asarray(contexts, dtype=float)

    def fails(c: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        hw = get_hardware(tr.hardware_id)
        usable = hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction)
        return {"memory": c["memory_bytes"] > usable, "tpot": c["tpot_s"] > tr.slo_s,
                "ttft": c["ttft_s"] > float(tr.ttft_slo_s or math.inf),
                "energy": c["energy_j"] * requests_per_day / J_PER_MWH > tr.daily_budget}

    def wall(name: str, f: np.ndarray) -> float | None:
        """The first failing context, refined between the grid points around it to the
        token (every limit grows with the context), so a printed formula gives it."""
        if not f.any():
            return None
        i = int(np.flatnonzero(f)[0])
        if i == 0:
            return float(grid[0])
        lo, hi = math.floor(grid[i - 1]), math.ceil(grid[i])   # passes at lo, fails at hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            c = phone_curves(tr, weight_bits, kv_bits, np.asarray([float(mid)]))
            if bool(fails(c)[name][0]):
                hi = mid
            else:
                lo = mid
        return float(hi)

    walls = tuple((k, wall(k, f)) for k, f in fails(cv).items())
    first, at = "none", None
    for name, where in walls:
        if where is not None and (at is None or where < at):
            first, at = name, where
    return PhoneWalls(walls, first, at, float(grid[-1]))


# -- handheld: on the phone or in the cloud ---------------------------------------------------

@dataclass(frozen=True)
class PhoneDevice:
    """One request answered on the phone (batch 1, achievable roofline): ``energy_j`` =
    ``power_w`` x ``busy_s`` (prefill + decode); TPOT is the mean per reply token."""

    prompt_tokens: int
    output_tokens: int
    weight_bits: int
    power_w: float
    busy_s: float
    energy_j: float
    ttft_s: float
    total_s: float
    tpot_s: float
    memory_bytes: float
    usable_bytes: float

    @property
    def oom(self) -> bool:
        return self.memory_bytes > self.usable_bytes


def phone_device(track: str | Track, prompt_tokens: int, output_tokens: int,
                 weight_bits: int) -> PhoneDevice:
    tr = _tr(track)
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    ph = request_phases(hw, m, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                        weight_bits=weight_bits, kv_bits=tr.kv_bits, mode=DESIGN_MODE)
    mem = resident_weight_bytes(m, weight_bits) + (prompt_tokens + output_tokens) * \
        kv_bytes_per_token(m, tr.kv_bits)
    power = float(hw.power_w or 0.0)
    energy = float(ph.energy_j or 0.0)
    return PhoneDevice(prompt_tokens, output_tokens, weight_bits, power,
                       energy / power if power > 0 else float(ph.latency_s), energy,
                       float(ph.ttft_s), float(ph.latency_s), float(ph.tpot_s or 0.0), mem,
                       hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction))


def phone_device_curve(track: str | Track, prompt_tokens: int, weight_bits: int,
                       outputs: np.ndarray) -> np.ndarray:
    """:func:`phone_device`'s energy, J, over reply lengths ``outputs`` (vectorised)."""
    tr = _tr(track)
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    n = np.asarray(outputs, dtype=float)
    pre = prefill_time(hw, m, float(prompt_tokens), weight_bits, tr.kv_bits, 1,
                       DESIGN_MODE).total_s
    step = decode_roofline(hw, m, 1, prompt_tokens + n / 2.0, weight_bits, tr.kv_bits,
                           mode=DESIGN_MODE).step_s
    return np.asarray(float(hw.power_w or 0.0) * (pre + (n - 1) * np.asarray(step)),
                      dtype=float)


def phone_device_fits(track: str | Track, prompt_tokens: int, weight_bits: int,
                      outputs: np.ndarray) -> np.ndarray:
    """Whether weights + the KV of prompt + reply fit the memory the app may use, over
    reply lengths ``outputs`` (numbers are quoted only where they do)."""
    tr = _tr(track)
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    n = np.asarray(outputs, dtype=float)
    mem = resident_weight_bytes(m, weight_bits) + (prompt_tokens + n) * \
        kv_bytes_per_token(m, tr.kv_bits)
    return np.asarray(mem <= hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction))


def phone_cloud(prompt_tokens: int, output_tokens: int, link: str) -> Handoff:
    """The request handed to a cloud service (the fast end of the paper's chat SLOs)."""
    ttft, tpot = server_times()
    return _edge.cloud_handoff(prompt_tokens, output_tokens, link=link, server_ttft_s=ttft,
                               server_tpot_s=tpot)


def phone_cloud_curve(prompt_tokens: int, outputs: np.ndarray, link: str) -> np.ndarray:
    """:func:`phone_cloud`'s phone energy, J, over reply lengths ``outputs``."""
    ttft, tpot = server_times()
    return np.asarray(_edge.cloud_handoff_energy(prompt_tokens, outputs, link=link,
                                                 server_ttft_s=ttft, server_tpot_s=tpot))


def crossover(xs: np.ndarray, a: np.ndarray, b: np.ndarray) -> float | None:
    """Where curves ``a`` and ``b`` over ``xs`` first cross (log-interpolated); None if
    they do not within ``xs``."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    idx = np.flatnonzero(np.diff(np.sign(diff)) != 0)
    if not idx.size:
        return None
    i = int(idx[0])
    x0, x1 = np.log(float(xs[i])), np.log(float(xs[i + 1]))
    f = diff[i] / (diff[i] - diff[i + 1])
    return float(np.exp(x0 + f * (x1 - x0)))


# -- wearable: energy per window, named parts --------------------------------------------------

@dataclass(frozen=True)
class WindowEnergy:
    """The ring's energy per window, J, as named parts: ``front_end_j`` (the MFCC front
    end), ``model_j`` (the CNN on the MCU), ``radio_j`` (payload bytes over BLE) and
    ``idle_j`` (the BLE connection's share of the window at ``interval_s``);
    ``energy_j`` is their sum and ``compute_j`` = front end + model (the MCU's busy
    energy, what a device with its link off spends)."""

    split: str
    weight_bits: int
    interval_s: float
    duty: float
    front_end_j: float
    model_j: float
    radio_j: float
    idle_j: float
    energy_j: float
    model_name: str
    front_end_name: str = FRONT_END_NAME

    @property
    def compute_j(self) -> float:
        return self.front_end_j + self.model_j

    @property
    def named_parts(self) -> tuple[tuple[str, float], ...]:
        """(name, J) of every part, in order; they add up to ``energy_j``."""
        return ((self.front_end_name, self.front_end_j), (self.model_name, self.model_j),
                ("BLE payload", self.radio_j), ("BLE link idle", self.idle_j))


def _interval_s(tr: Track, interval_ms: float | None) -> float:
    ms = float(design_defaults(tr)["interval_ms"]) if interval_ms is None else interval_ms
    return float(ms) / 1e3


def _window_energy(tr: Track, cost: SplitCost, wb: int, interval_s: float,
                   duty: float) -> WindowEnergy:
    return WindowEnergy(cost.split, wb, interval_s, duty, cost.front_end_j, cost.model_j,
                        cost.radio_j, cost.idle_j, cost.energy_j, get_model(tr.model_id).name)


def window_energy(track: str | Track, *, weight_bits: int | None = None,
                  split: str = "on_device", interval_ms: float | None = None,
                  duty: float = 1.0) -> WindowEnergy:
    """A wearable track's energy per window as named parts (front end + model + radio +
    link idle = total). Defaults: the track's weight precision, the model on the ring,
    Part B's BLE interval (:func:`labkit.plans.design.design_defaults`), every window."""
    tr = _tr(track)
    wb = tr.weight_bits if weight_bits is None else int(weight_bits)
    iv = _interval_s(tr, interval_ms)
    return _window_energy(tr, ring_split(tr, wb, split, iv, duty), wb, iv, duty)


# -- wearable: Part B (fit, duty, battery) ---------------------------------------------------

@dataclass(frozen=True)
class RingDesign:
    """The ring at one precision, duty and SRAM buffer, the model on the ring.

    ``flash_share`` / ``sram_share``: use of each memory (above 1 fails). ``daily_mwh`` =
    ``energy.energy_j`` x ``windows_per_day`` / 3.6; ``battery_days`` = capacity / (rest
    of the ring + the spotter). ``duty_floor``: the least share of windows the product
    accepts. ``fails`` and ``first`` follow :data:`RING_LIMITS`."""

    weight_bits: int
    duty: float
    windows_buffered: int
    weights_bytes: float
    flash_bytes: float
    window_bytes: float
    activation_bytes: float
    sram_bytes_used: float
    sram_bytes: float
    model_s: float
    front_end_s: float
    energy: WindowEnergy
    windows_per_day: float
    daily_mwh: float
    budget_mwh: float
    battery_mwh: float
    other_mwh_per_day: float
    battery_days: float
    target_days: float
    duty_floor: float
    fails: dict[str, bool] = field(hash=False)
    first: str

    @property
    def flash_share(self) -> float:
        return self.weights_bytes / self.flash_bytes

    @property
    def sram_share(self) -> float:
        return self.sram_bytes_used / self.sram_bytes

    @property
    def latency_s(self) -> float:
        return self.front_end_s + self.model_s


def ring_design(track: str | Track, weight_bits: int, duty: float,
                windows_buffered: int = 1, interval_ms: float | None = None) -> RingDesign:
    tr = _tr(track)
    prof = edge_profile(tr.hardware_id)
    if prof is None or prof.battery is None:
        raise ValueError(f"{tr.hardware_id} needs an edge profile with a battery")
    bat = get_battery(prof.battery)
    rw = ring_window(tr, weight_bits)
    iv = _interval_s(tr, interval_ms)
    sp = ring_split(tr, weight_bits, "on_device", iv, duty)
    per_day = duty * _requests_per_day(tr)
    daily = sp.energy_j * per_day / J_PER_MWH
    sram = windows_buffered * rw["window_bytes"] + rw["activation_bytes"]
    floor = tr.min_demand_rate_per_s / tr.demand_rate_per_s
    fails = {"flash": rw["weights_bytes"] > rw["flash_bytes"], "sram": sram > rw["sram_bytes"],
             "energy": daily > tr.daily_budget, "coverage": duty < floor - 1e-9}
    first = next((k for k in RING_LIMITS if fails[k]), "none")
    return RingDesign(
        weight_bits, duty, windows_buffered, rw["weights_bytes"], rw["flash_bytes"],
        rw["window_bytes"], rw["activation_bytes"], sram, rw["sram_bytes"], sp.model_s,
        sp.front_end_s, _window_energy(tr, sp, weight_bits, iv, duty), per_day, daily,
        tr.daily_budget, bat.capacity_mwh, bat.other_mwh_per_day,
        _edge.battery_life_days(bat, daily), bat.target_days, floor, fails, first)


def ring_life_curve(track: str | Track, weight_bits: int, duties: np.ndarray,
                    interval_ms: float | None = None) -> np.ndarray:
    """Days on one charge over ``duties`` (the model on the ring): active energy scales
    with the windows processed, the link's idle power does not."""
    tr = _tr(track)
    d = ring_design(tr, weight_bits, 1.0, 1, interval_ms)
    idle_w = d.energy.idle_j * tr.demand_rate_per_s  # J per window x windows/s at duty 1
    active_j = d.energy.energy_j - d.energy.idle_j
    load = (active_j * np.asarray(duties, dtype=float) * _requests_per_day(tr)
            + idle_w * active_seconds(tr)) / J_PER_MWH
    return d.battery_mwh / (d.other_mwh_per_day + load)


# -- wearable: Part C (where the ring cuts its pipeline) -------------------------------------

def ring_cuts(track: str | Track, weight_bits: int, interval_ms: float,
              duty: float) -> dict[str, SplitCost]:
    """Every cut of :data:`SPLITS` at one BLE interval and duty: {split: SplitCost}."""
    tr = _tr(track)
    return {sp: ring_split(tr, weight_bits, sp, interval_ms / 1e3, duty) for sp in SPLITS}


def ring_best_cut(track: str | Track, cuts: dict[str, SplitCost]) -> str | None:
    """The cut with the least ring energy per window that meets the deadline (None:
    none does)."""
    slo = _tr(track).slo_s
    ok = {k: c for k, c in cuts.items() if c.latency_s <= slo}
    return min(ok, key=lambda k: ok[k].energy_j) if ok else None


def ring_interval_curves(track: str | Track, weight_bits: int, duty: float,
                         intervals_ms: np.ndarray) -> np.ndarray:
    """Ring mWh per day of each cut (rows: :data:`SPLITS`) over BLE intervals: the link's
    idle share scales with 1 / interval, the rest of a window does not."""
    tr = _tr(track)
    prof = edge_profile(tr.hardware_id)
    link = prof.offload_links[0] if prof is not None and prof.offload_links else "ble-1m"
    ivs = np.asarray(intervals_ms, dtype=float)
    per_day = duty * _requests_per_day(tr)
    idle = np.asarray([_edge.ble_idle_power_w(iv / 1e3, link) for iv in ivs])
    cuts = ring_cuts(tr, weight_bits, float(ivs[0]), duty)
    return np.vstack([(c.energy_j - c.idle_j) * per_day + idle * active_seconds(tr)
                      for c in cuts.values()]) / J_PER_MWH


# -- vehicle: cameras against every limit ----------------------------------------------------

def camera_ratios(track: str | Track, weight_bits: int, cameras: np.ndarray,
                  fps: float) -> np.ndarray:
    """Use of each limit of :data:`VEHICLE_LIMITS` (rows; above 1 fails; true values, not
    capped) at each camera count, one SoC, batch 1 (each frame its own pass)."""
    tr = _tr(track)
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    t, _ = vehicle_frame(tr, weight_bits)
    cams = np.asarray(cameras, dtype=float)
    deadline = cams * t / tr.slo_s
    busy = cams * fps * t / tr.max_utilisation
    mem = (weight_bytes(m, weight_bits) + cams * tr.state_bytes_per_request) \
        / hw.usable_memory_bytes
    energy = (float(hw.power_w or 0.0) * t * cams * fps * active_seconds(tr)
              / J_PER_WH / tr.daily_budget)
    return np.vstack([deadline, busy, mem, energy])


def camera_first(track: str | Track, weight_bits: int, fps: float,
                 max_cameras: int) -> tuple[tuple[tuple[str, int | None], ...], str, int | None]:
    """((limit, first camera count at which it fails or None), ...), the first limit to
    fail as cameras are added one by one up to ``max_cameras``, and where."""
    cams = np.arange(1, max_cameras + 1)
    r = camera_ratios(track, weight_bits, cams, fps)
    walls = []
    for name, row in zip(VEHICLE_LIMITS, r, strict=True):
        idx = np.flatnonzero(row > 1.0)
        walls.append((name, int(cams[idx[0]]) if idx.size else None))
    first, at = "none", None
    for name, where in walls:
        if where is not None and (at is None or where < at):
            first, at = name, where
    return tuple(walls), first, at


@dataclass(frozen=True)
class CameraPoint:
    """One SoC at ``cameras`` x ``fps``, each frame its own pass (``batch`` = 1: a frame is
    processed as it lands, as the hard deadline requires). ``ratios``: each limit's use
    (true values, uncapped); ``daily_wh`` = power x busy share x active hours, at batch 1."""

    load: CameraLoad
    ratios: dict[str, float] = field(hash=False)
    memory_bytes: float
    usable_bytes: float
    power_w: float
    active_hours: float
    daily_wh: float
    budget_wh: float
    batch: int = 1

    @property
    def closest(self) -> str:
        """The limit nearest (or furthest past) its bound, on the true ratios."""
        return max(self.ratios, key=lambda k: self.ratios[k])


def camera_point(track: str | Track, weight_bits: int, cameras: int, fps: float,
                 layout: str = "single") -> CameraPoint:
    tr = _tr(track)
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    cl = vehicle_load(tr, weight_bits, layout, cameras, fps)
    r = camera_ratios(tr, weight_bits, np.asarray([float(cameras)]), fps)[:, 0]
    mem = weight_bytes(m, weight_bits) + cameras * tr.state_bytes_per_request
    daily = cl.energy_j_per_frame * cl.frames_per_s * active_seconds(tr) / J_PER_WH
    return CameraPoint(cl, dict(zip(VEHICLE_LIMITS, (float(x) for x in r), strict=True)),
                       mem, hw.usable_memory_bytes, float(hw.power_w or 0.0),
                       tr.active_hours_per_day, daily, tr.daily_budget)


def layout_loads(track: str | Track, weight_bits: int, cameras: int,
                 fps: float) -> dict[str, CameraPoint]:
    """Every layout of :data:`VEHICLE_LAYOUTS` at ``cameras`` x ``fps``."""
    return {lay: camera_point(track, weight_bits, cameras, fps, lay) for lay in VEHICLE_LAYOUTS}


def layout_sweep(track: str | Track, weight_bits: int, cameras: np.ndarray) -> np.ndarray:
    """Worst-case latency, s, of each layout (rows) as cameras are added."""
    tr = _tr(track)
    hw = get_hardware(tr.hardware_id)
    t, o = vehicle_frame(tr, weight_bits)
    return np.vstack([np.asarray(_edge.worst_latency(
        t, o, cameras, lay, link_bytes_per_s=hw.interconnect_bandwidth,
        link_latency_s=hw.interconnect_latency_s, frame_bytes=tr.window_bytes))
        for lay in VEHICLE_LAYOUTS])


@dataclass(frozen=True)
class VehicleBatch:
    """The track's frames processed ``batch`` at a time on one SoC: ``pass_s`` per pass,
    ``energy_per_frame_j`` = power x pass / batch, ``daily_wh`` at the track's default
    cameras and fps; ``wait_s``: how long the first frame of a batch waits for the last
    to arrive (batch - 1 frame intervals of the whole rig)."""

    batch: int
    pass_s: float
    energy_per_frame_j: float
    daily_wh: float
    wait_s: float


def vehicle_batch(track: str | Track, weight_bits: int, batch: int) -> VehicleBatch:
    tr = _tr(track)
    hw = get_hardware(tr.hardware_id)
    n, fps = cameras_and_fps(tr)
    c = cnn_inference_time(hw, tr.model_id, weight_bits, batch, DESIGN_MODE)
    # each frame's decision pass too, as a frame is timed everywhere (vehicle_frame, Lab 1)
    pass_s = float(c.latency_s) + batch * float(decision_time(hw, tr.window_bytes,
                                                              DESIGN_MODE))
    e = float(hw.power_w or 0.0) * pass_s / batch
    rate = n * fps
    return VehicleBatch(batch, pass_s, e, e * rate * active_seconds(tr) / J_PER_WH,
                        (batch - 1) / rate)
