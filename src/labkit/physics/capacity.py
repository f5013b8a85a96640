"""Three-axis capacity planning (paper section 5.2): how many devices a workload needs.

Axis A, weights floor: devices whose memory holds one replica's weights.
Axis B, KV headroom:   devices whose memory also holds the KV of that replica's users.
Axis C, SLO throughput: a replica serves only as many users as fit in one decode step
                        within the TPOT budget; more users need more replicas.

First-order convention, as in the paper's axis formulas: a replica's ``d`` devices pool
their memory and split weights, compute and KV evenly (TP inside the KV heads, CP beyond);
replica sizes are powers of two, as TP x CP degrees are. The parallelism module checks a
concrete layout. Unlike the reference code, the SLO axis is evaluated on the replica's
*own* devices, not on one device, so a 70B model on small PEs is not sized as one replica
per user.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from labkit.core import validation as v
from labkit.core.format import counted
from labkit.core.units import bits_to_bytes
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.roofline import Derating, decode_roofline, get_mode, step_weight_params
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model, get_model, require_transformer

BINDING_AXES = ("weights", "kv", "slo")


@dataclass(frozen=True)
class SloTarget:
    """Latency targets for one workload class, seconds (``None``: not latency-bound)."""

    workload: str
    ttft_s: tuple[float, float] | None
    tpot_s: tuple[float, float] | None
    source: str


SLO_TARGETS: Mapping[str, SloTarget] = MappingProxyType({
    "voice": SloTarget("voice", (0.200, 0.300), (0.010, 0.025), "paper section 5.2, SLO table"),
    "chat": SloTarget("chat", (0.300, 1.000), (0.020, 0.050), "paper section 5.2, SLO table"),
    "batch": SloTarget("batch", None, None, "paper section 5.2: priced on throughput"),
})


def slo_target(workload: str) -> SloTarget:
    """TTFT/TPOT ranges for ``"voice"``, ``"chat"`` or ``"batch"``."""
    return SLO_TARGETS[v.choice("workload", workload, tuple(SLO_TARGETS))]


def weights_floor_devices(hardware: str | Hardware, model: str | Model,
                          weight_bits: int = 16) -> int:
    """Axis A: ceil(weight bytes / usable bytes per device), devices (paper: ceil(N b / HBM))."""
    hw = get_hardware(hardware)
    m = require_transformer(get_model(model))
    b = bits_to_bytes(v.precision_bits("weight_bits", weight_bits))
    return int(np.ceil(m.block_params_total * b / hw.usable_memory_bytes))


def kv_headroom_devices(hardware: str | Hardware, model: str | Model, users: int,
                        context_tokens: float, weight_bits: int = 16, kv_bits: int = 16) -> int:
    """Axis B: ceil((N b + users S kv_bpt) / usable bytes per device), devices."""
    hw = get_hardware(hardware)
    m = require_transformer(get_model(model))
    u = v.positive_int("users", users)
    s = v.positive("context_tokens", context_tokens)
    b = bits_to_bytes(v.precision_bits("weight_bits", weight_bits))
    need = m.block_params_total * b + u * s * kv_bytes_per_token(m, kv_bits)
    return int(np.ceil(need / hw.usable_memory_bytes))


def max_batch_within_slo(hardware: str | Hardware, model: str | Model, context_tokens: float,
                         tpot_s: float, devices: int = 1, weight_bits: int = 16,
                         kv_bits: int = 16, mode: str | Derating = "peak") -> int:
    """Largest batch whose decode step fits the TPOT budget on ``devices`` devices.

    step(B) = weight_step + B x (compute + KV + overhead per sequence) <= TPOT, so
    B_max = floor((TPOT - weight_step) / per_sequence). Returns 0 when even B = 1 misses.
    Dense models solve this in closed form; MoE weight reads grow with B, so the largest
    B is found by bisection on the monotone step time.
    """
    t = float(v.positive("tpot_s", tpot_s))
    return int(_max_batch(hardware, model, context_tokens, t, np.asarray([devices]),
                          weight_bits, kv_bits, mode)[0])


def _max_batch(hardware: str | Hardware, model: str | Model, context_tokens: float,
               tpot_s: float, devices: np.ndarray, weight_bits: int, kv_bits: int,
               mode: str | Derating, cap: int = 1 << 20) -> np.ndarray:
    """Vectorised over ``devices``: largest B <= ``cap`` with step(B) <= tpot_s (0 if none).

    Dense models: the step is linear in B, (W + B (c + k)) / d + o, so
    B = floor((d (T - o) - W) / (c + k)) is taken and checked exactly at B and B + 1 (one
    roofline call); any device count where that check does not settle it -- and every MoE
    model, whose weight read grows with B -- is bisected on the monotone step time.
    """
    m = get_model(model)
    dev = np.asarray(devices, dtype=np.int64)
    out = np.full(dev.shape, -1, dtype=np.int64)
    if not m.is_moe and dev.size:
        out = _dense_max_batch(hardware, m, context_tokens, tpot_s, dev, weight_bits,
                               kv_bits, mode, cap)
    for i in np.flatnonzero(out < 0):  # at most a few dozen device counts
        out[i] = _bisect_max_batch(hardware, m, context_tokens, tpot_s, int(dev[i]),
                                   weight_bits, kv_bits, mode, cap)
    return out


def _dense_max_batch(hardware: str | Hardware, model: Model, context_tokens: float,
                     tpot_s: float, devices: np.ndarray, weight_bits: int, kv_bits: int,
                     mode: str | Derating, cap: int) -> np.ndarray:
    """Closed-form B per device count, -1 where the exact check at B and B + 1 fails."""
    r = decode_roofline(hardware, model, 1, context_tokens, weight_bits, kv_bits, tp=1,
                        mode=mode)
    per_seq = float(r.compute_step_s) + float(r.kv_step_s)
    est = np.floor((devices * (tpot_s - float(r.overhead_step_s)) - float(r.weight_step_s))
                   / per_seq)
    b = np.clip(est, 0, cap).astype(np.int64)
    probe = np.concatenate([np.maximum(b, 1), b + 1]).astype(float)
    q = decode_roofline(hardware, model, probe, context_tokens, weight_bits, kv_bits, tp=1,
                        mode=mode)
    dev2 = np.concatenate([devices, devices]).astype(float)
    step = ((np.asarray(q.weight_step_s) + np.asarray(q.compute_step_s)
             + np.asarray(q.kv_step_s)) / dev2 + np.asarray(q.overhead_step_s))
    ok_b, ok_next = step[:devices.size] <= tpot_s, step[devices.size:] <= tpot_s
    settled = np.where(b == 0, ~ok_next, ok_b & (~ok_next | (b == cap)))
    return np.where(settled, b, -1)


def _bisect_max_batch(hardware: str | Hardware, model: Model, context_tokens: float,
                      tpot_s: float, devices: int, weight_bits: int, kv_bits: int,
                      mode: str | Derating, cap: int) -> int:
    """Largest B <= cap with step(B) <= tpot_s, by doubling then bisection (0 if none)."""
    lo, hi = 0, 1
    while hi <= cap and _step(hardware, model, hi, context_tokens, devices, weight_bits,
                              kv_bits, mode) <= tpot_s:
        lo, hi = hi, hi * 2
    hi = min(hi, cap + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _step(hardware, model, mid, context_tokens, devices, weight_bits, kv_bits,
                 mode) <= tpot_s:
            lo = mid
        else:
            hi = mid
    return lo


def _step(hardware: str | Hardware, model: str | Model, batch: int, context_tokens: float,
          devices: int, weight_bits: int, kv_bits: int, mode: str | Derating) -> float:
    """Step time of one replica of ``devices`` pooled devices, s (even split, no comm)."""
    r = decode_roofline(hardware, model, batch, context_tokens, weight_bits, kv_bits,
                        tp=1, mode=mode)
    split = (r.weight_step_s + r.compute_step_s + r.kv_step_s) / devices
    return float(split + r.overhead_step_s)


@dataclass(frozen=True)
class Sizing:
    """A sized deployment. ``feasible`` is False (and counts 0) when no replica of up to
    ``max_devices_per_replica`` devices meets the TPOT budget; ``reason`` says why."""

    hardware: str
    model: str
    users: int
    context_tokens: float
    tpot_s: float
    weights_floor_devices: int
    kv_headroom_devices: int
    batch_at_slo: int
    users_per_replica: int
    devices_per_replica: int
    replicas: int
    total_devices: int
    binding_axis: str
    feasible: bool
    reason: str

    def as_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def size_deployment(hardware: str | Hardware, model: str | Model, users: int,
                    context_tokens: float, tpot_s: float, weight_bits: int = 16,
                    kv_bits: int = 16, mode: str | Derating = "peak",
                    max_devices_per_replica: int = 64) -> Sizing:
    """Fewest total devices serving ``users`` concurrent sequences within ``tpot_s``.

    For each replica size d: B_d = min(users, B_slo(d), B_kv(d)) where B_kv(d) is how many
    sequences' KV fit beside the per-device weights; replicas = ceil(users / B_d);
    total = d x replicas. The smallest total wins (ties: fewer devices per replica).
    Binding axis: ``weights`` when one replica at the weights floor serves everyone,
    otherwise whichever of ``kv`` or ``slo`` limits the users per replica.
    """
    hw = get_hardware(hardware)
    m = require_transformer(get_model(model))
    u = v.positive_int("users", users)
    s = float(v.positive("context_tokens", context_tokens))
    t = float(v.positive("tpot_s", tpot_s))
    dmax = v.positive_int("max_devices_per_replica", max_devices_per_replica)
    if dmax & (dmax - 1):
        raise ValueError(f"max_devices_per_replica must be a power of two, got {dmax}")
    wbits = v.precision_bits("weight_bits", weight_bits)
    d = get_mode(mode, hw)

    floor_a = weights_floor_devices(hw, m, wbits)
    axis_b = kv_headroom_devices(hw, m, u, s, wbits, kv_bits)
    devices = 2 ** np.arange(0, int(np.log2(dmax)) + 1)
    wb = bits_to_bytes(wbits)
    w_dev = float(step_weight_params(m, 1e9, 1, include_lm_head=d.include_lm_head)) * wb / devices
    kv_seq = s * kv_bytes_per_token(m, kv_bits) / devices
    b_kv = np.floor(np.maximum(hw.usable_memory_bytes - w_dev, 0.0) / kv_seq).astype(np.int64)
    fits = b_kv >= 1
    b_slo = np.zeros_like(b_kv)
    b_slo[fits] = _max_batch(hw, m, s, t, devices[fits], wbits, kv_bits, d)
    per_replica = np.minimum(np.minimum(b_kv, b_slo), u)
    ok = per_replica >= 1
    base: dict[str, Any] = dict(hardware=hw.id, model=m.id, users=u, context_tokens=s,
                                tpot_s=t, weights_floor_devices=floor_a,
                                kv_headroom_devices=axis_b)
    if not ok.any():
        reason = ("weights and one sequence's KV do not fit" if not fits.any() else
                  f"even one sequence misses TPOT {t * 1e3:g} ms")
        return Sizing(**base, batch_at_slo=0, users_per_replica=0, devices_per_replica=0,
                      replicas=0, total_devices=0, binding_axis="kv" if not fits.any() else "slo",
                      feasible=False,
                      reason=f"infeasible up to {dmax} devices per replica: {reason}")
    replicas = np.where(ok, -(-u // np.maximum(per_replica, 1)), np.iinfo(np.int64).max // 4)
    total = np.where(ok, devices * replicas, np.iinfo(np.int64).max // 4)
    i = int(np.argmin(total))  # argmin keeps the first (fewest devices per replica) on ties
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
        why = (f"each replica holds {counted(int(per_replica[i]), 'user')}: limited by "
               + ("KV memory" if binding == "kv" else "the TPOT budget"))
    return Sizing(**base, batch_at_slo=int(b_slo[i]), users_per_replica=int(per_replica[i]),
                  devices_per_replica=dev, replicas=rep, total_devices=dev * rep,
                  binding_axis=binding, feasible=True, reason=why)
