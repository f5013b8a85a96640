"""Smart ring: an always-on wake-word spotter on a Cortex-M4, paid in mWh per day.

The one-time setup energy (on-device personalisation) is derived by :func:`ring_setup_mwh`.
"""

from __future__ import annotations

from labkit.core.format import format_bytes
from labkit.core.units import J_PER_MWH
from labkit.physics.derating import get_mode
from labkit.physics.phases import decision_time, front_end_ops_per_s, request_phases
from labkit.registries.edge import edge_profile
from labkit.registries.hardware import get_hardware
from labkit.tracks.base import DERIVED_ENERGY_SOURCE, Stakeholder, make_track, narrative

# -- one-time setup energy -----------------------------------------------------------------
PERSONALISATION_FORWARD_PASSES = 20 * 50 * 3  # 20 epochs x 50 windows x (fwd + bwd = 3 fwd)

# Audio window of the ring: 1 s at 16 kHz, 16-bit PCM = 16,000 samples x 2 bytes.
_RING_WINDOW_BYTES = 16_000 * 2
# The output/decision pass: slide the window buffer and write the decision, one read and one
# write of the window at the achievable SRAM bandwidth (labkit.physics.phases.decision_time).
_DECISION_US = decision_time("cortex-m4-ring", _RING_WINDOW_BYTES) * 1e6
# The figures the sources quote, computed (achievable: the MCU class's cycles per MAC).
_PASS = request_phases("cortex-m4-ring", "ds-cnn-kws", weight_bits=8)
_RING = get_hardware("cortex-m4-ring")
# Memory as every screen prints it (decimal units, labkit.core.format.format_bytes): the
# SRAM a model may use and the flash the weights execute from.
_SRAM = format_bytes(_RING.usable_memory_bytes)
_FLASH = format_bytes(_RING.flash_bytes)
# The core's INT8 peak and the share of it MCUs of its class reach on a DS-CNN (the
# achievable derating every Lab 1 time uses; Lab 2's roofline quotes the peak).
_INT8_PEAK = _RING.flops("int8")
_INT8_SHARE = get_mode("achievable", _RING, "cnn").cnn_flop_efficiency("int8")
_INT8_REACH = "only a fraction" if _INT8_SHARE < 0.5 else "most"
_FRONT_END_S = (edge_profile("cortex-m4-ring").front_end_ops  # type: ignore[union-attr]
                / front_end_ops_per_s(_RING))


def ring_setup_mwh(hardware_id: str = "cortex-m4-ring", model_id: str = "ds-cnn-kws",
                   weight_bits: int = 8) -> float:
    """On-device personalisation energy, mWh: forward-pass equivalents x energy per pass."""
    ph = request_phases(hardware_id, model_id, weight_bits=weight_bits)
    if ph.energy_j is None:
        raise ValueError(f"hardware {hardware_id!r} publishes no power; energy unknown")
    return PERSONALISATION_FORWARD_PASSES * ph.energy_j / J_PER_MWH


OURA_RING = make_track(
    id="oura_ring", label="Smart ring: always-on spotter on a Cortex-M4",
    hardware_id="cortex-m4-ring", model_id="ds-cnn-kws",
    stakeholder=Stakeholder(
        "Jonas Berg", "Wearable firmware lead",
        "The ring has to last four days on a charge, and the spotter is only one of its "
        f"jobs. It gets 8 mWh a day and {_SRAM} of RAM. Does it fit, and how often can "
        "it afford to listen?"),
    primary_metric="mWh per day within the battery budget",
    guardrail_metrics=("p99 detection latency <= 330 ms", "weights fit in flash, "
                       "windows in SRAM", "accuracy loss <= 1 point",
                       "energy <= 8 mWh per day"),
    cost_unit="mWh", setup_cost=ring_setup_mwh(), daily_budget=8.0,
    demand_rate_per_s=1.0, min_demand_rate_per_s=0.02,
    active_hours_per_day=24.0, horizon_days=365,
    slo_kind="deadline", slo_s=0.330, slo_quantile=0.99, ttft_slo_s=None,
    prompt_tokens=None, output_tokens=None, output_tokens_cv=0.0,
    input_noun="windows", state_noun="window in flight", state_nouns="windows in flight",
    replica_noun="ring", replica_nouns="rings",
    sensor_window="1 s of 16 kHz 16-bit microphone audio (32,000 bytes) -> 49x10 "
                  "MFCC features; a new window every second",
    window_bytes=float(_RING_WINDOW_BYTES),
    state_bytes_per_request=float(_RING_WINDOW_BYTES) + 16e3,
    devices_per_replica=1, max_replicas=1, price_per_device_hour=None,
    weight_bits=8, kv_bits=8,
    quality_loss_pct={32: 0.0, 16: 0.0, 8: 0.4, 4: 3.0}, max_quality_loss_pct=1.0,
    min_kv_bits=8, memory_reserve_fraction=0.0,
    batch_size=4, default_policy="none", batch_timeout_s=0.020,
    scheduler_overhead_s=0.5e-3, arrival_process="periodic", arrival_streams=1,
    max_utilisation=0.8,
    narrative=narrative(
        "A smart ring listens for a spoken wake word with a 24k-parameter DS-CNN on a 64 MHz "
        "Cortex-M4, powered by a battery smaller than a fingernail.",
        {
            "A": "Each window is one input pass through the "
                 f"model, then a {_DECISION_US:.0f} µs pass that slides the "
                 f"{_RING_WINDOW_BYTES:,}-byte audio buffer and writes the decision (one read "
                 "and one write of the window in SRAM). The core peaks at "
                 f"{_INT8_PEAK / 1e6:.0f} million INT8 operations a second, but MCUs of its "
                 f"class reach {_INT8_REACH} of that on a DS-CNN. How long does the input pass "
                 "take at the rate it reaches, and what does a window cost?",
            "B": f"Weights live in {_FLASH} of flash, windows and activations in {_SRAM} of "
                 "SRAM. How many windows can be in flight?",
            "C": "Windows arrive on a fixed clock. Batching them waits for the next window -- "
                 "what does that do to a 330 ms deadline?",
            "D": "Find a listening schedule and precision that keep the deadline, the accuracy "
                 "floor and the 8 mWh/day budget all at once.",
        },
        "On a ring inference never stops, so its recurring energy overtakes any one-time "
        "setup within the first hour; which guardrail binds depends on the schedule and "
        "precision you choose."),
    sources={
        "setup_cost": "derived (ring_setup_mwh): on-device personalisation, 20 "
                      "epochs over 50 enrolment windows at 3x the forward cost (forward "
                      f"+ backward) = {PERSONALISATION_FORWARD_PASSES:,} forward passes x "
                      f"{_PASS.prefill_s * 1e3:.1f} ms x {(_RING.power_w or 0.0) * 1e3:.1f} mW = "
                      f"{ring_setup_mwh():.2f} mWh (estimate)",
        "cost_per_event": DERIVED_ENERGY_SOURCE.format(unit="mWh (3.6 J)"),
        "daily_budget": "derived: about 77 mWh battery (20 mAh x 3.85 V, estimate for a "
                        "ring-sized Li-ion cell) over a 4-day life = 19 mWh/day, of "
                        "which the spotter may take 8 mWh (assumption)",
        "min_demand_rate_per_s": ("product assumption: the ring listens to at least one "
                                  "1 s window in 50 (about 29 min a day, in bursts); "
                                  "listening to every window costs several times the "
                                  "budget (measured MCU cycles per MAC and board power)"),
        "demand_rate_per_s": "one 1 s window per second, listening continuously",
        "output_tokens_cv": "single-step workload: every inference is one pass",
        "active_hours_per_day": "always listening, 24 h a day",
        "horizon_days": "one year of operation",
        "slo_s": "assumption: a wake word must be acknowledged within 330 ms of the "
                 "window closing (a haptic tick inside a third of a second still "
                 "feels immediate; the MFCC front end and the DS-CNN alone take about "
                 f"{(_FRONT_END_S + _PASS.prefill_s) * 1e3:.0f} ms on the 64 MHz core at the "
                 "cycles per MAC measured MCUs reach on the DS-CNN; the front end's 2 million "
                 "operations are costed at the same rate, an estimate)",
        "slo_quantile": "p99, the usual latency SLO quantile",
        "window_bytes": "derived: 16,000 samples x 2 bytes = 32,000 bytes (decimal, "
                        "exact)",
        "state_bytes_per_request": "derived: audio window 32,000 bytes + peak live INT8 "
                                   "activations 16,000 bytes (model registry "
                                   "activation_bytes_int8)",
        "devices_per_replica": "one microcontroller in the ring",
        "max_replicas": "one ring: no scaling out",
        "price_per_device_hour": "owned by the wearer",
        "weight_bits": "INT8 weights (CMSIS-NN kernels)",
        "kv_bits": "not a transformer: no KV cache (kept for a uniform interface)",
        "quality_loss_pct": "Hello Edge (Zhang et al. 2017): 8-bit DS-CNN within about "
                            "0.4 points of FP32; 4-bit about 3 points (estimate)",
        "max_quality_loss_pct": "assumption: 1 point of wake-word accuracy",
        "min_kv_bits": "not applicable (no KV)",
        "memory_reserve_fraction": "already kept out of the registry's usable SRAM",
        "batch_size": "SRAM holds 4 windows with their activations",
        "batch_timeout_s": "assumption: 20 ms",
        "scheduler_overhead_s": "estimate: 0.5 ms of RTOS work per scheduled pass",
        "arrival_streams": "one periodic window clock",
        "max_utilisation": "assumption: 80% busy at most",
    },
)
