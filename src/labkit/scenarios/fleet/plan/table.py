"""The fleet scenario's layout tables: every TP x CP x PP x DP (x EP) layout of a fleet
track at a precision pair (cached), why a layout is not one, and what one replica holds by
KV memory and by the TPOT budget. :mod:`.fleet_serving` serves the demand on them and
:mod:`.fleet` is the scenario."""

from __future__ import annotations

import numpy as np

from labkit.core.units import bits_to_bytes
from labkit.physics.capacity import Sizing, max_batch_within_slo, size_deployment
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.parallelism import ConfigTable, enumerate_configs
from labkit.physics.roofline import decode_roofline, get_mode, step_weight_params
from labkit.plans.scenarios.common import (
    DESIGN_MAX_DEVICES,
    DESIGN_MODE,
    context_tokens,
    fleet_users,
    serving_device,
)
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model, get_model
from labkit.tracks import Track

AXES = ("tp", "cp", "pp", "dp", "ep")
MOE_OPTIONS = ("mixtral-8x7b", "deepseek-v3")
"""Mixture-of-experts models a fleet's Part C offers beside the track's own model (registry
ids; figures and sources in :mod:`labkit.registries.models`)."""
_TABLES: dict[tuple[str, str, int, int, int, int],
              tuple[ConfigTable, dict[tuple[int, ...], int]]] = {}


def fleet_models(tr: Track) -> tuple[str, ...]:
    """The track's model, then each of :data:`MOE_OPTIONS` that is another model."""
    return (tr.model_id, *(m for m in MOE_OPTIONS if m != tr.model_id))


def fleet_table(tr: Track, weight_bits: int, kv_bits: int, context: int | None = None,
                batch: int | None = None, model: str | None = None,
                ) -> tuple[ConfigTable, dict[tuple[int, ...], int]]:
    """:func:`labkit.physics.parallelism.enumerate_configs` of a fleet track (cached), and
    the row of each (tp, cp, pp, dp, ep); ``model`` (a registry id) replaces the track's.
    Memory is :func:`~labkit.plans.scenarios.common.serving_device`'s: usable after the
    track's serving reserve (``capacity_bytes``)."""
    ctx = context_tokens(tr) if context is None else int(context)
    b = fleet_users(tr) if batch is None else int(batch)
    mid = tr.model_id if model is None else get_model(model).id
    key = (tr.hardware_id, mid, ctx, b, weight_bits, kv_bits)
    if key not in _TABLES:
        t = enumerate_configs(serving_device(tr), mid, ctx, b, weight_bits, kv_bits,
                              max_devices=DESIGN_MAX_DEVICES, mode=DESIGN_MODE)
        rows = zip(t.tp.tolist(), t.cp.tolist(), t.pp.tolist(), t.dp.tolist(), t.ep.tolist(),
                   strict=True)
        index: dict[tuple[int, ...], int] = {k: i for i, k in enumerate(rows)}
        _TABLES[key] = (t, index)
    return _TABLES[key]


def not_candidate_reason(tr: Track, deg: tuple[int, ...], batch: int, context: int,
                         model: str | None = None) -> str:
    """Why a (tp, cp, pp, dp, ep) layout is not among :func:`fleet_table`'s rows
    (``model``: a registry id replacing the track's)."""
    m = get_model(tr.model_id if model is None else model)
    hw = get_hardware(tr.hardware_id)
    tp, cp, pp, dp, ep = deg
    names = dict(zip(AXES, deg, strict=True))
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


def per_replica_limits(hw: Hardware, m: Model, context: float, tpot_s: float, weight_bits: int,
                       kv_bits: int, devices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sequences one replica of ``devices`` pooled devices holds by KV memory and by the TPOT
    budget, as :func:`labkit.physics.capacity.size_deployment` counts them (even split, no
    comm).

    KV: floor((usable - weights/d) / (S kv_bpt / d)). TPOT (dense): the step
    (W + B (c + k)) / d + o <= T gives B = floor((d (T - o) - W) / (c + k)); MoE models
    use :func:`labkit.physics.capacity.max_batch_within_slo` (their weight read grows with B).
    """
    d = get_mode(DESIGN_MODE, hw)
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


def fleet_sizing(hw: Hardware, m: Model, users: int, context: int, tpot_s: float,
                 weight_bits: int, kv_bits: int, max_devices_per_replica: int = 64) -> Sizing:
    """:func:`labkit.physics.capacity.size_deployment` on the design (achievable) roofline."""
    return size_deployment(hw, m, users, context, tpot_s, weight_bits, kv_bits,
                           mode=DESIGN_MODE, max_devices_per_replica=max_devices_per_replica)


