"""Vehicle: a CNN on an SoC (no flash-resident weights) serving several camera streams,
e.g. the robotaxi.

A design is a weight precision and a ``layout``: one SoC, or two splitting the cameras or
the model's layers. labkit's reference: every precision and layout; the fewest SoCs win,
then the least energy.
"""

from __future__ import annotations

from collections.abc import Mapping

from labkit.core import validation as v
from labkit.core.format import counted, fmt, fmt_count, fmt_energy, format_bytes
from labkit.physics import edge
from labkit.physics.kvcache import weight_bytes
from labkit.physics.phases import cnn_inference_time, decision_time
from labkit.plans.scenarios.base import Config, Constraint, Evaluation, MetricValue, Scenario
from labkit.plans.scenarios.common import (
    DESIGN_MODE,
    active_seconds,
    allowed_precisions,
    quality_check,
)
from labkit.plans.workload import activation_bytes
from labkit.registries.edge import backbone_split
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track

VEHICLE_LAYOUTS = ("single", "cameras", "model")
_FRAMES: dict[tuple[str, str, int, float], tuple[float, float]] = {}


def cameras_and_fps(tr: Track) -> tuple[int, float]:
    """Camera streams and frames per second of a vehicle track (streams, demand / streams)."""
    n = max(1, int(tr.arrival_streams))
    return n, tr.demand_rate_per_s / n


def vehicle_frame(tr: Track, weight_bits: int) -> tuple[float, float]:
    """(seconds per frame incl. overhead, overhead) of a vehicle track's CNN at batch 1:
    the input pass and the output/decision pass, as Lab 1 times an inference
    (:func:`labkit.physics.phases.request_phases`)."""
    key = (tr.hardware_id, tr.model_id, weight_bits, tr.window_bytes)
    if key not in _FRAMES:
        c = cnn_inference_time(tr.hardware_id, tr.model_id, weight_bits, 1, DESIGN_MODE)
        decide = decision_time(tr.hardware_id, tr.window_bytes, DESIGN_MODE)
        _FRAMES[key] = (float(c.latency_s) + float(decide), float(c.overhead_s))
    return _FRAMES[key]


def bytes_in_flight(tr: Track, weight_bits: int) -> float:
    """One frame in flight, bytes: the frame + its live activations at the datapath the
    weights run on (Lab 1's state per inference, :func:`labkit.plans.workload.session_capacity`;
    wider weights widen the activations too)."""
    return float(tr.window_bytes) + activation_bytes(tr, weight_bits)


def vehicle_load(tr: Track, weight_bits: int, layout: str, cameras: int | None = None,
                 fps: float | None = None) -> edge.CameraLoad:
    """:func:`labkit.physics.edge.camera_load` for a vehicle track (defaults: its cameras
    and fps)."""
    hw = get_hardware(tr.hardware_id)
    n0, f0 = cameras_and_fps(tr)
    t, o = vehicle_frame(tr, weight_bits)
    return edge.camera_load(t, o, n0 if cameras is None else cameras, f0 if fps is None else fps,
                            layout=layout, power_w=float(hw.power_w or 0.0),
                            link_bytes_per_s=hw.interconnect_bandwidth,
                            link_latency_s=hw.interconnect_latency_s,
                            frame_bytes=tr.window_bytes,
                            split_bytes=backbone_split(tr.model_id)[0])


def _constraints(tr: Track, weight_bits: int, cl: edge.CameraLoad, cams_first: int,
                 mem: float, daily_wh: float) -> list[Constraint]:
    usable = get_hardware(tr.hardware_id).usable_memory_bytes
    board = int(tr.max_replicas or 1)
    return [
        Constraint.compare("socs", float(cl.socs), float(board), "SoCs",
                           f"{counted(cl.socs, 'SoC')} of {tr.max_replicas or 1} on the board"),
        Constraint.compare("deadline", cl.worst_latency_s, tr.slo_s, "s",
                           f"all {cl.cameras} cameras at once: last frame after "
                           f"{fmt(cl.worst_latency_s * 1e3)} ms vs {fmt(tr.slo_s * 1e3)} ms"),
        Constraint.compare("throughput", cl.max_busy, tr.max_utilisation, "busy share",
                           f"busiest SoC {cl.max_busy:.1%} busy "
                           f"(max {tr.max_utilisation:.0%})"),
        Constraint.compare("memory", mem, usable, "bytes",
                           f"weights + {counted(cams_first, 'frame')} with activations "
                           f"{format_bytes(mem)} of {format_bytes(usable)}"),
        quality_check(tr, weight_bits, None),
        Constraint.compare("energy", daily_wh, tr.daily_budget, "Wh/day",
                           f"{fmt_count(cl.frames_per_s)} frames/s x "
                           f"{fmt_energy(cl.energy_j_per_frame)} x "
                           f"{tr.active_hours_per_day:g} h = {fmt_count(daily_wh)} Wh/day "
                           f"(batch 1: each frame its own pass) vs {tr.budget_text}"),
        Constraint.compare("link", cl.link_utilisation, tr.max_utilisation, "share of link",
                           f"inter-SoC traffic {format_bytes(cl.link_bytes_per_s)}/s, "
                           f"{cl.link_utilisation:.2%} of the link"),
    ]


class Vehicle(Scenario):
    """Hard per-frame deadlines from several cameras: the fewest SoCs, then least energy."""

    id = "vehicle"
    order = 40
    label = "vehicle"
    design_keys = ("weight_bits", "layout")
    objective_basis = ("batch 1: each frame its own pass; Lab 1's dynamic batching forms "
                       "slightly larger batches")

    def applies_to(self, track: Track) -> bool:
        return (not track.is_transformer
                and get_hardware(track.hardware_id).flash_bytes is None)

    def defaults(self, track: Track) -> Config:
        return {"weight_bits": track.weight_bits, "layout": "single"}

    def validate(self, track: Track, raw: Mapping[str, object]) -> Config:
        cfg: Config = {"weight_bits": v.precision_bits("weight_bits", raw["weight_bits"])}
        layout = str(v.choice("layout", raw["layout"], VEHICLE_LAYOUTS))
        if layout != "single" and get_hardware(track.hardware_id).domain_size < 2:
            raise ValueError(f"layout {layout!r} needs two SoCs on one board; "
                             f"{track.hardware_id} has no peer")
        cfg["layout"] = layout
        return cfg

    def evaluate(self, track: Track, config: Config) -> Evaluation:
        tr = track
        wb = int(config["weight_bits"])
        layout = str(config["layout"])
        cl = vehicle_load(tr, wb, layout)
        m = get_model(tr.model_id)
        cams_first = -(-cl.cameras // cl.socs) if layout == "cameras" else cl.cameras
        mem = weight_bytes(m, wb) + cams_first * bytes_in_flight(tr, wb)
        daily_wh = cl.energy_j_per_frame * cl.frames_per_s * active_seconds(tr) / edge.J_PER_WH
        metrics: dict[str, MetricValue] = {
            "worst_latency_s": cl.worst_latency_s, "max_busy": cl.max_busy,
            "daily_wh": daily_wh, "daily_cost": daily_wh, "socs": cl.socs,
            "link_bytes_per_s": cl.link_bytes_per_s}
        return Evaluation.of(_constraints(tr, wb, cl, cams_first, mem, daily_wh), metrics,
                             cl.socs)

    def grid(self, track: Track) -> list[list[Config]]:
        """Every allowed precision and layout the board has (one group)."""
        bits = sorted({wb for wb, _ in allowed_precisions(track)})
        two = get_hardware(track.hardware_id).domain_size >= 2
        layouts = VEHICLE_LAYOUTS if two else ("single",)
        return [[{"weight_bits": wb, "layout": lay} for wb in bits for lay in layouts]]


SCENARIO = Vehicle()
