"""The handheld scenario's plan, computed once for every view: the phone's memory, speed
and battery as a conversation grows, and its cloud hand-off. TPOT is the request's mean
time per output token after the first (``(e2e - TTFT) / (L - 1)``); the slowest single
gap is ``last_step_s``. Fields carry their unit in the name."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from labkit.core.units import J_PER_MWH
from labkit.physics import edge
from labkit.physics.capacity import SLO_TARGETS
from labkit.physics.edge import Handoff
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.memory import resident_weight_bytes
from labkit.physics.phases import prefill_time, request_phases
from labkit.physics.roofline import decode_roofline
from labkit.plans.scenarios.common import DESIGN_MODE
from labkit.plans.scenarios.common import requests_per_day as daily_requests
from labkit.registries.edge import edge_profile, get_battery
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.scenarios.handheld.plan.scenario import handheld_curves
from labkit.tracks import Track, get_track

PHONE_LIMITS = ("memory", "tpot", "ttft", "energy")


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


def _battery_mwh(hardware_id: str) -> float | None:
    prof = edge_profile(hardware_id)
    return None if prof is None or not prof.battery else get_battery(prof.battery).capacity_mwh


def phone_context(track: str | Track, weight_bits: int, kv_bits: int, context_tokens: int,
                  requests_per_day: float | None = None) -> PhoneContext:
    """The phone at one conversation length (Part B's readout, callouts and math peek)."""
    tr = get_track(track)
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
    req = daily_requests(tr) if requests_per_day is None else float(requests_per_day)
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
    tr = get_track(track)
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
    return handheld_curves(get_track(track), weight_bits, kv_bits, contexts)


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
    tr = get_track(track)
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
    tr = get_track(track)
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
    tr = get_track(track)
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
    tr = get_track(track)
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    n = np.asarray(outputs, dtype=float)
    mem = resident_weight_bytes(m, weight_bits) + (prompt_tokens + n) * \
        kv_bytes_per_token(m, tr.kv_bits)
    return np.asarray(mem <= hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction))


def phone_cloud(prompt_tokens: int, output_tokens: int, link: str) -> Handoff:
    """The request handed to a cloud service (the fast end of the paper's chat SLOs)."""
    ttft, tpot = server_times()
    return edge.cloud_handoff(prompt_tokens, output_tokens, link=link, server_ttft_s=ttft,
                               server_tpot_s=tpot)


def phone_cloud_curve(prompt_tokens: int, outputs: np.ndarray, link: str) -> np.ndarray:
    """:func:`phone_cloud`'s phone energy, J, over reply lengths ``outputs``."""
    ttft, tpot = server_times()
    return np.asarray(edge.cloud_handoff_energy(prompt_tokens, outputs, link=link,
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



def server_times() -> tuple[float, float]:
    """(TTFT, TPOT) of the cloud service a phone hands off to: the fast end of the paper's
    chat SLO targets, as Part C uses them, seconds."""
    tgt = SLO_TARGETS["chat"]
    if tgt.ttft_s is None or tgt.tpot_s is None:
        raise ValueError("the chat SLO targets must bound TTFT and TPOT")
    return float(tgt.ttft_s[0]), float(tgt.tpot_s[0])


def handheld_handoff(t: Track) -> dict[str, float]:
    """Part C's phone figures: local request time, the cloud's wake, RTT, uplink and server
    time for the track's reply (server TTFT + (output - 1) x server TPOT), seconds."""
    hw, m = get_hardware(t.hardware_id), get_model(t.model_id)
    local = request_phases(hw, m, prompt_tokens=t.prompt_tokens, output_tokens=t.output_tokens,
                           weight_bits=t.weight_bits, kv_bits=t.kv_bits,
                           mode=DESIGN_MODE).latency_s
    prof = edge.edge_profile(hw.id)
    if prof is None or not prof.offload_links:
        raise ValueError(f"{hw.id} needs an edge profile with an offload link")
    lk = edge.get_link(prof.offload_links[0])
    ttft, tpot = server_times()
    server = ttft + (float(t.output_tokens or 1) - 1.0) * tpot
    return {"local": float(local), "wake": lk.wake_s, "rtt": lk.rtt_s,
            "up": lk.up_bytes_per_s, "server": server}
