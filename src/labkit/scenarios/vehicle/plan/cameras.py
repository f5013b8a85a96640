"""The vehicle scenario's plan, computed once for every view: the cameras against every
limit of one SoC, its two-SoC layouts and hand-off, and batches of frames (energy per
day states the batch it is computed at)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from labkit.core.units import J_PER_WH
from labkit.physics import edge
from labkit.physics.edge import CameraLoad
from labkit.physics.kvcache import weight_bytes
from labkit.physics.phases import cnn_inference_time, decision_time
from labkit.plans.scenarios.common import DESIGN_MODE, active_seconds
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.scenarios.vehicle.plan.scenario import (
    VEHICLE_LAYOUTS,
    bytes_in_flight,
    cameras_and_fps,
    vehicle_frame,
    vehicle_load,
)
from labkit.tracks import Track, get_track

VEHICLE_LIMITS = ("deadline", "throughput", "memory", "energy")



# -- vehicle: cameras against every limit ----------------------------------------------------

def camera_ratios(track: str | Track, weight_bits: int, cameras: np.ndarray,
                  fps: float) -> np.ndarray:
    """Use of each limit of :data:`VEHICLE_LIMITS` (rows; above 1 fails; true values, not
    capped) at each camera count, one SoC, batch 1 (each frame its own pass)."""
    tr = get_track(track)
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    t, _ = vehicle_frame(tr, weight_bits)
    cams = np.asarray(cameras, dtype=float)
    deadline = cams * t / tr.slo_s
    busy = cams * fps * t / tr.max_utilisation
    mem = (weight_bytes(m, weight_bits) + cams * bytes_in_flight(tr, weight_bits)) \
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
    tr = get_track(track)
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    cl = vehicle_load(tr, weight_bits, layout, cameras, fps)
    r = camera_ratios(tr, weight_bits, np.asarray([float(cameras)]), fps)[:, 0]
    mem = weight_bytes(m, weight_bits) + cameras * bytes_in_flight(tr, weight_bits)
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
    tr = get_track(track)
    hw = get_hardware(tr.hardware_id)
    t, o = vehicle_frame(tr, weight_bits)
    return np.vstack([np.asarray(edge.worst_latency(
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
    tr = get_track(track)
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



def camera_split_limit(t: Track) -> tuple[float, float, int]:
    """(largest hand-off time x, s, for which splitting the cameras over two SoCs still has
    a lower worst case than one SoC; today's x; cameras), by bisection on Part C's
    ``edge.worst_latency`` -- the second SoC still runs every frame it is handed."""
    hw = get_hardware(t.hardware_id)
    n, _ = cameras_and_fps(t)
    frame_s, over = vehicle_frame(t, t.weight_bits)
    single = float(edge.worst_latency(frame_s, over, n, "single"))

    def split(x: float) -> float:
        return float(edge.worst_latency(frame_s, over, n, "cameras", link_bytes_per_s=1.0,
                                        link_latency_s=x, frame_bytes=0.0))

    today = t.window_bytes / hw.interconnect_bandwidth + hw.interconnect_latency_s
    if split(0.0) >= single:
        return 0.0, today, n
    lo, hi = 0.0, single
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if split(mid) < single else (lo, mid)
    return lo, today, n


