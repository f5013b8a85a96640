"""What every scenario shares: the design-mode constants, Part D's answer buckets,
constraint building, the quality check and the track-derived workload figures."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from labkit.core import validation as v
from labkit.core.format import fmt_pct, fmt_tokens, format_bytes
from labkit.core.grids import PRECISIONS
from labkit.core.units import SECONDS_PER_HOUR
from labkit.physics.capacity import SLO_TARGETS
from labkit.plans.scenarios.base import OFF_SCALE, Constraint, Sense
from labkit.plans.serving import quality_verdict
from labkit.plans.workload import track_phases
from labkit.registries.hardware import Hardware, get_hardware
from labkit.tracks import Track

__all__ = [
    "BATCH_SLO_TPOT_S", "CONTEXT_ABOVE", "CONTEXT_BUCKETS", "DESIGN_MAX_DEVICES", "DESIGN_MODE",
    "DEVICES_ABOVE", "DEVICE_BUCKETS", "DUTY_BUCKETS", "MODES", "OFF_SCALE", "active_seconds",
    "allowed_precisions", "constraint", "context_bucket", "context_tokens", "device_bucket",
    "duty_bucket", "fleet_users", "memory_basis", "quality_check", "serving_device", "slo_class",
    "slo_tpot",
]

MODES = ("peak", "achievable")
DESIGN_MODE = "achievable"     # Parts B-D size real systems: derated roofline
DESIGN_MAX_DEVICES = 512       # largest fleet layout Parts C and D enumerate
BATCH_SLO_TPOT_S = 1.0         # "batch" workloads have no TPOT target: 1 s/token cap
DEVICE_BUCKETS = ((4, "1-4"), (8, "5-8"), (16, "9-16"), (32, "17-32"), (64, "33-64"),
                  (128, "65-128"), (256, "129-256"), (512, "257-512"))
CONTEXT_BUCKETS = ((1024, "under 1k"), (2048, "1k-2k"), (4096, "2k-4k"), (8192, "4k-8k"))
DUTY_BUCKETS = ((0.05, "below 5%"), (0.10, "5-9%"), (0.25, "10-24%"), (0.5, "25-49%"),
                (0.999, "50-99%"))


# -- Part D's answer buckets ----------------------------------------------------------------------

def _bucket(x: float, buckets: Sequence[tuple[float, str]], top: str) -> str:
    for hi, name in buckets:
        if x <= hi:
            return name
    return top


DEVICES_ABOVE = f"more than {DEVICE_BUCKETS[-1][0]}"  # the bucket past the last
CONTEXT_ABOVE = f"{fmt_tokens(CONTEXT_BUCKETS[-1][0])} or more"


def device_bucket(n: int | None) -> str:
    """One of :data:`DEVICE_BUCKETS`' labels ('1-4' ... '257-512'), :data:`DEVICES_ABOVE`
    or 'none fits' (None: no design passes every constraint)."""
    return "none fits" if n is None else _bucket(n, DEVICE_BUCKETS, DEVICES_ABOVE)


def context_bucket(tokens: float | None) -> str:
    """'under 1k' | '1k-2k' | '2k-4k' | '4k-8k' | '8k or more' | 'none fits' (tokens)."""
    if tokens is None:
        return "none fits"
    return _bucket(tokens - 1, CONTEXT_BUCKETS, CONTEXT_ABOVE)


def duty_bucket(duty: float | None) -> str:
    """'every window' (100%) | '50-99%' | '25-49%' | '10-24%' | '5-9%' | 'below 5%' |
    'none fits' (each bucket's upper bound excluded)."""
    if duty is None:
        return "none fits"
    if duty >= 0.999:
        return "every window"
    for hi, name in DUTY_BUCKETS:
        if duty < hi - 1e-9:
            return name
    return DUTY_BUCKETS[-1][1]


# -- constraints ----------------------------------------------------------------------------------

def constraint(name: str, passed: bool, value: float | None, limit: float | None, unit: str,
               detail: str, sense: Sense = "max") -> Constraint:
    """One design constraint: ``value`` vs ``limit`` (``sense`` 'max': value <= limit;
    'min': value >= limit)."""
    return Constraint(name, bool(passed), value, limit, unit, sense, detail)


def quality_check(tr: Track, weight_bits: int, kv_bits: int | None) -> Constraint:
    """Estimated quality loss at ``weight_bits`` within the track's limit, KV at or above
    ``min_kv_bits`` (transformers), as in :func:`labkit.plans.serving.release_guardrails`."""
    ok, loss, detail = quality_verdict(tr, weight_bits, kv_bits)
    return constraint("quality", ok, loss, tr.max_quality_loss_pct, "% points", detail)


def allowed_precisions(tr: Track) -> list[tuple[int, int | None]]:
    """(weight bits, KV bits or None for CNNs) pairs that pass :func:`quality_check`."""
    out: list[tuple[int, int | None]] = []
    kvs: list[int | None] = list(PRECISIONS) if tr.is_transformer else [None]
    for wb in PRECISIONS:
        for kb in kvs:
            if quality_check(tr, wb, kb).passed:
                out.append((wb, kb))
    return out


# -- track-derived workload figures ---------------------------------------------------------------

def context_tokens(tr: Track) -> int:
    """The track's context per sequence (transformer tracks), tokens."""
    if tr.context_tokens is None:
        raise ValueError(f"track {tr.id!r} has no context_tokens")
    return int(tr.context_tokens)


def fleet_users(tr: Track) -> int:
    """Concurrent sequences a fleet track serves: Little's law, demand x request time.

    users = ceil(demand_rate_per_s x (prefill + decode) of one request at the track's
    batch, achievable roofline). Cloud Fleet: 75 requests/s x 15.24 s = 1,143.
    """
    ph = track_phases(tr, mode=DESIGN_MODE)
    return max(1, math.ceil(tr.demand_rate_per_s * ph.latency_s - 1e-9))


def slo_class(tr: Track) -> str:
    """The paper's SLO class whose TPOT range holds the track's SLO (``chat`` otherwise)."""
    for name, t in SLO_TARGETS.items():
        if t.tpot_s is not None and t.tpot_s[0] <= tr.slo_s <= t.tpot_s[1]:
            return name
    return "chat"


def slo_tpot(cls: str) -> float:
    """TPOT budget of an SLO class: the upper end of its range (``batch``: 1 s cap)."""
    t = SLO_TARGETS[v.choice("slo", cls, tuple(SLO_TARGETS))].tpot_s
    return BATCH_SLO_TPOT_S if t is None else float(t[1])


def active_seconds(tr: Track) -> float:
    """Seconds per day the track's device is active."""
    return tr.active_hours_per_day * SECONDS_PER_HOUR


def requests_per_day(tr: Track) -> float:
    """Inferences a day at the track's demand over its active hours (1/s x s)."""
    return tr.demand_rate_per_s * active_seconds(tr)


# -- the served device ----------------------------------------------------------------------------

def serving_device(tr: Track) -> Hardware:
    """The track's device as a served model sees it: usable memory after the serving reserve
    (``Track.memory_reserve_fraction``, the share Lab 1's capacity keeps back), the one
    capacity a fleet layout's weights + KV + transients must fit (the registry's device when
    the track keeps no reserve)."""
    hw = get_hardware(tr.hardware_id)
    res = float(tr.memory_reserve_fraction)
    if res <= 0:
        return hw
    return replace(hw, usable_memory_bytes=hw.usable_memory_bytes * (1.0 - res))


def memory_basis(tr: Track) -> str:
    """What :func:`serving_device`'s memory is, in words: '72 GB per device (80 GB usable
    less the 10% serving reserve)', or 'all 24 GB usable per device' without a reserve."""
    hw, served = get_hardware(tr.hardware_id), serving_device(tr)
    if served.usable_memory_bytes >= hw.usable_memory_bytes:
        return f"all {format_bytes(hw.usable_memory_bytes)} usable per device"
    return (f"{format_bytes(served.usable_memory_bytes)} per device "
            f"({format_bytes(hw.usable_memory_bytes)} usable less the "
            f"{fmt_pct(tr.memory_reserve_fraction, sig=2)} serving reserve)")
