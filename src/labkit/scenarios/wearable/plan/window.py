"""The wearable scenario's plan, computed once for every view: the ring's flash, SRAM,
energy per window as named parts (front end + model, + radio + link idle when the ring
talks to its phone), duty and battery life, and where it cuts its pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from labkit.core.units import J_PER_MWH
from labkit.physics import edge
from labkit.physics.edge import SPLITS, SplitCost
from labkit.plans.scenarios.common import active_seconds
from labkit.plans.scenarios.common import requests_per_day as daily_requests
from labkit.registries.edge import edge_profile, get_battery
from labkit.registries.models import get_model
from labkit.scenarios.wearable.plan.scenario import Wearable, ring_split, ring_window
from labkit.tracks import Track, get_track

FRONT_END_NAME = "MFCC front end"
"""What the ring computes before its model (the edge profile's ``front_end_ops``)."""
RING_LIMITS = ("flash", "sram", "energy", "coverage")



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
    ms = float(Wearable().defaults(tr)["interval_ms"]) if interval_ms is None else interval_ms
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
    Part B's BLE interval (the scenario's defaults), every window."""
    tr = get_track(track)
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
    tr = get_track(track)
    prof = edge_profile(tr.hardware_id)
    if prof is None or prof.battery is None:
        raise ValueError(f"{tr.hardware_id} needs an edge profile with a battery")
    bat = get_battery(prof.battery)
    rw = ring_window(tr, weight_bits)
    iv = _interval_s(tr, interval_ms)
    sp = ring_split(tr, weight_bits, "on_device", iv, duty)
    per_day = duty * daily_requests(tr)
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
        edge.battery_life_days(bat, daily), bat.target_days, floor, fails, first)


def ring_life_curve(track: str | Track, weight_bits: int, duties: np.ndarray,
                    interval_ms: float | None = None) -> np.ndarray:
    """Days on one charge over ``duties`` (the model on the ring): active energy scales
    with the windows processed, the link's idle power does not."""
    tr = get_track(track)
    d = ring_design(tr, weight_bits, 1.0, 1, interval_ms)
    idle_w = d.energy.idle_j * tr.demand_rate_per_s  # J per window x windows/s at duty 1
    active_j = d.energy.energy_j - d.energy.idle_j
    load = (active_j * np.asarray(duties, dtype=float) * daily_requests(tr)
            + idle_w * active_seconds(tr)) / J_PER_MWH
    return d.battery_mwh / (d.other_mwh_per_day + load)


# -- wearable: Part C (where the ring cuts its pipeline) -------------------------------------

def ring_cuts(track: str | Track, weight_bits: int, interval_ms: float,
              duty: float) -> dict[str, SplitCost]:
    """Every cut of :data:`SPLITS` at one BLE interval and duty: {split: SplitCost}."""
    tr = get_track(track)
    return {sp: ring_split(tr, weight_bits, sp, interval_ms / 1e3, duty) for sp in SPLITS}


def ring_best_cut(track: str | Track, cuts: dict[str, SplitCost]) -> str | None:
    """The cut with the least ring energy per window that meets the deadline (None:
    none does)."""
    slo = get_track(track).slo_s
    ok = {k: c for k, c in cuts.items() if c.latency_s <= slo}
    return min(ok, key=lambda k: ok[k].energy_j) if ok else None


def ring_interval_curves(track: str | Track, weight_bits: int, duty: float,
                         intervals_ms: np.ndarray) -> np.ndarray:
    """Ring mWh per day of each cut (rows: :data:`SPLITS`) over BLE intervals: the link's
    idle share scales with 1 / interval, the rest of a window does not."""
    tr = get_track(track)
    prof = edge_profile(tr.hardware_id)
    link = prof.offload_links[0] if prof is not None and prof.offload_links else "ble-1m"
    ivs = np.asarray(intervals_ms, dtype=float)
    per_day = duty * daily_requests(tr)
    idle = np.asarray([edge.ble_idle_power_w(iv / 1e3, link) for iv in ivs])
    cuts = ring_cuts(tr, weight_bits, float(ivs[0]), duty)
    return np.vstack([(c.energy_j - c.idle_j) * per_day + idle * active_seconds(tr)
                      for c in cuts.values()]) / J_PER_MWH



WEARABLE_INTERVAL_S = 0.100  # Part C's default BLE connection interval


def ring_feature_limit(t: Track, interval_s: float = WEARABLE_INTERVAL_S) -> float:
    """The largest feature payload, bytes, that beats the on-device cut on ring energy
    and still meets the deadline (0 if none), by the closed forms of ``wearable_split``."""
    prof = edge.edge_profile(t.hardware_id)
    if prof is None or not prof.offload_links:
        raise ValueError(f"{t.hardware_id} needs an edge profile with an offload link")
    link = edge.get_link(prof.offload_links[0])
    here = ring_split(t, t.weight_bits, "on_device", interval_s, 1.0)
    base = ring_split(t, t.weight_bits, "features", interval_s, 1.0)
    fixed_j = base.energy_j - base.radio_j  # front end + idle, whatever is sent
    by_energy = (here.energy_j - fixed_j) / link.up_j_per_byte
    fixed_s = base.latency_s - base.transfer_s
    by_deadline = (t.slo_s - fixed_s) * link.up_bytes_per_s
    return max(0.0, min(by_energy, by_deadline))

