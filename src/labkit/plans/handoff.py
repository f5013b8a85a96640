"""The hand-off limits Lab 2 Part C teaches, per deployment, from a track's own data: the
phone's cloud hand-off figures, the largest feature payload the ring can send, and the
largest board hand-off time for which two SoCs splitting the cameras still beat one.
Exercise specs (``course/labs/lab2.py``) write these into the notebooks; hidden tests
recompute them through the same physics."""

from __future__ import annotations

from labkit.physics import edge
from labkit.physics.capacity import SLO_TARGETS
from labkit.physics.phases import request_phases
from labkit.plans.design import DESIGN_MODE, cameras_and_fps, ring_split, vehicle_frame
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track


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


