"""The candidate table, vectorised with numpy over the whole degree grid."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from labkit.physics.kvcache import kv_fraction_per_device
from labkit.physics.links import link_of as link_of  # re-exported (search imports it here)
from labkit.physics.parallelism.formulas import (
    LINK_FAST,
    LINK_NONE,
    LINK_SCALEOUT,
    Inputs,
    activation_bytes,
    attention_params,
    axis_degrees,
    axis_seconds,
    cp_ring_bytes,
    cp_ring_messages,
    ep_alltoall_bytes,
    ep_alltoall_messages,
    hop_seconds,
    kv_per_sequence,
    layer_params,
    logit_bytes,
    pp_handoff_bytes,
    read_inputs,
    read_params,
    resident_params,
    roofline_seconds,
    step_flops,
    token_latency,
    tp_allreduce_bytes,
    tp_allreduce_messages,
)
from labkit.physics.parallelism.results import FLOAT_FIELDS, ConfigTable
from labkit.physics.roofline import Derating, expected_experts_touched
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model, get_model


# -- vectorised enumeration ---------------------------------------------------------------
def _by_value(values: np.ndarray, fn: Any) -> np.ndarray:
    """``fn`` of each element, called once per distinct value (a handful of token counts),
    so a scalar library function gives results bit-identical to the loop's."""
    uniq, inverse = np.unique(values, return_inverse=True)
    return np.array([fn(u) for u in uniq.tolist()], dtype=float)[inverse.reshape(values.shape)]


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@lru_cache(maxsize=128)
def _grid(degrees: tuple[tuple[int, ...], ...], max_devices: int,
          domain_size: int) -> dict[str, np.ndarray]:
    """The degree grid and its topology, as read-only arrays (one entry per candidate).

    Candidates: every degree combination with at most ``max_devices`` devices and ``ep``
    dividing the stage's devices, in lexicographic (tp, cp, pp, dp, ep) order. With them:
    ``i_tp`` (index into ``degrees[0]``), float copies of the degrees, pipeline hops
    leaving / staying inside a ``domain_size`` domain, the PP and CP link codes, and
    whether the CP and EP groups fit inside a domain.
    """
    tps, cps, pps, dps, eps = (np.asarray(a, dtype=np.int64) for a in degrees)
    stage5 = (tps[:, None, None, None, None] * cps[None, :, None, None, None]
              * dps[None, None, None, :, None])
    keep = ((stage5 * pps[None, None, :, None, None] <= max_devices)
            & (stage5 % eps[None, None, None, None, :] == 0))
    i_tp, i_cp, i_pp, i_dp, i_ep = np.nonzero(keep)  # C order: lexicographic
    tp, cp, pp, dp, ep = tps[i_tp], cps[i_cp], pps[i_pp], dps[i_dp], eps[i_ep]
    stage = tp * cp * dp
    stages_per_domain = np.maximum(1, domain_size // stage)
    hops_out = -(-pp // stages_per_domain) - 1
    cp_inside = tp * cp <= domain_size
    ep_inside = ep <= domain_size
    g = {
        "i_tp": i_tp, "tp": tp, "cp": cp, "pp": pp, "dp": dp, "ep": ep,
        "devices": stage * pp, "tp_f": tp.astype(float), "cp_f": cp.astype(float),
        "pp_f": pp.astype(float), "ep_f": ep.astype(float),
        "hops_out": hops_out.astype(float), "hops_in": (pp - 1 - hops_out).astype(float),
        "pp_link": ((pp > 1).astype(np.int8) + (hops_out > 0)).astype(np.int8),
        "cp_inside": cp_inside, "ep_inside": ep_inside,
        "cp_link": np.where(cp == 1, LINK_NONE, np.where(cp_inside, LINK_FAST, LINK_SCALEOUT)
                            ).astype(np.int8),
        "ep_link": np.where(ep == 1, LINK_NONE, np.where(ep_inside, LINK_FAST, LINK_SCALEOUT)
                            ).astype(np.int8),
        "pp_is_1": pp == 1,
    }
    for a in g.values():
        a.setflags(write=False)
    return g


@lru_cache(maxsize=256)
def _tp_constants(model_id: str, hardware_id: str,
                  tps: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Per TP degree: KV fraction, attention elements per device, TP link bandwidth (1 where
    it is 0, to keep the arithmetic finite), latency, link code, and whether the link is
    usable. Keyed by registry ids (only registry objects are accepted as inputs)."""
    m, hw = get_model(model_id), get_hardware(hardware_id)
    fracs = [kv_fraction_per_device(m.id, t) for t in tps]
    attn = [attention_params(m, t, f) for t, f in zip(tps, fracs, strict=True)]
    links = [link_of(t, hw) for t in tps]
    out = (np.asarray(fracs, dtype=float), np.asarray(attn, dtype=float),
           np.asarray([bw if bw > 0 else 1.0 for bw, _, _ in links]),
           np.asarray([a for _, a, _ in links], dtype=float),
           np.asarray([c if t > 1 else LINK_NONE for t, (_, _, c) in zip(tps, links, strict=True)],
                      dtype=np.int8),
           np.asarray([t == 1 or bw > 0 for t, (bw, _, _) in zip(tps, links, strict=True)]))
    for a in out:
        a.setflags(write=False)
    return out


def clear_caches() -> None:
    """Drop the memoised degree grids and per-TP constants (for cold-start timing)."""
    _grid.cache_clear()
    _tp_constants.cache_clear()


def _group_link(inside: np.ndarray, hw: Hardware) -> tuple[np.ndarray, np.ndarray]:
    """Bandwidth (1 where 0, to keep the arithmetic finite) and per-message latency of the
    links of groups inside / outside the fast domain."""
    fast, out = float(hw.interconnect_bandwidth), float(hw.scaleout_bandwidth)
    return (np.where(inside, fast if fast > 0 else 1.0, out if out > 0 else 1.0),
            np.where(inside, float(hw.interconnect_latency_s), float(hw.scaleout_latency_s)))


def _group_ok(active: np.ndarray, inside: np.ndarray, hw: Hardware) -> np.ndarray | None:
    """Rows whose ``active`` group has a link of non-zero bandwidth (None: all of them)."""
    fast, out = hw.interconnect_bandwidth > 0, hw.scaleout_bandwidth > 0
    if fast and out:
        return None
    mask: np.ndarray = ~active | (inside if fast else ~inside if out else np.zeros_like(inside))
    return mask


def _and(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    return b if a is None else a if b is None else a & b


def _layout(x: Inputs, grid: dict[str, np.ndarray], fr_t: np.ndarray,
            attn_t: np.ndarray) -> dict[str, Any]:
    """Per row: layers per stage (``ls``; the last stage holds the last ones), sequences
    per replica and per micro-batch, the stage's dense / MoE layers, the expert-group
    width ``g``, the KV fraction and the attention + dense-FFN elements per device."""
    m, i_tp, pp, tp_f = x.m, grid["i_tp"], grid["pp"], grid["tp_f"]
    ls = -(-m.layers // pp)
    b_rep = -(-x.batch // grid["dp"])
    mb = -(-b_rep // pp)
    ls_f, mb_f = ls.astype(float), mb.astype(float)
    if m.is_moe:
        dense_in = np.minimum(ls_f, np.maximum(0.0, x.dense_layers - (m.layers - ls_f)))
        moe_in = ls_f - dense_in
        g = np.maximum(tp_f, grid["ep_f"])
    else:
        dense_in, moe_in, g = ls_f, 0.0, tp_f
    ls_attn = ls_f * attn_t[i_tp]
    return {"ls": ls, "b_rep": b_rep, "mb": mb, "ls_f": ls_f, "mb_f": mb_f,
            "dense_in": dense_in, "moe_in": moe_in, "g": g, "frac": fr_t[i_tp],
            "ls_attn": ls_attn, "base": layer_params(x, ls_attn, dense_in, tp_f)}


def _memory(x: Inputs, grid: dict[str, np.ndarray], lay: dict[str, Any]) -> dict[str, Any]:
    """Bytes per device: the last stage, and the first where it can hold more."""
    tp_f, ls_f, mb_f, g = grid["tp_f"], lay["ls_f"], lay["mb_f"], lay["g"]
    tables = (np.where(grid["pp_is_1"], x.tables_single, x.lm_head)
              if x.tables_single != x.lm_head else x.lm_head)
    kv_seq = kv_per_sequence(x, grid["cp_f"], lay["frac"], ls_f)
    kv = lay["b_rep"] * kv_seq
    weights = resident_params(x, lay["base"], lay["moe_in"], tp_f, g, tables) * x.weight_bytes
    act, logit = activation_bytes(x, mb_f, tp_f), logit_bytes(x, mb_f, tp_f)
    transient = act + logit
    used = weights + kv + transient
    if x.m.is_moe:  # a dense model's first stage holds what its last does, minus the logits
        dense_first = np.minimum(ls_f, x.dense_layers)
        w_first = resident_params(x, layer_params(x, lay["ls_attn"], dense_first, tp_f),
                                  ls_f - dense_first, tp_f, g, tables) * x.weight_bytes
        tr_first = act + logit * grid["pp_is_1"]
        used_first = w_first + kv + tr_first
        first = used_first > used
        if first.any():
            weights = np.where(first, w_first, weights)
            transient = np.where(first, tr_first, transient)
            used = np.where(first, used_first, used)
    return {"kv_seq": kv_seq, "kv": kv, "weights": weights, "transient": transient,
            "used": used}


def _roofline(x: Inputs, grid: dict[str, np.ndarray], lay: dict[str, Any],
              kv_seq: np.ndarray) -> np.ndarray:
    """Roofline of the ``pp`` micro-batch steps of one token on the last stage, seconds."""
    m, tp_f, mb_f, g = x.m, grid["tp_f"], lay["mb_f"], lay["g"]
    touched: np.ndarray | float
    if m.is_moe:
        n_tok = mb_f * np.maximum(1.0, g // (tp_f * grid["cp_f"]))
        touched = _by_value(n_tok, lambda k: expected_experts_touched(m.id, float(k)))
    else:
        n_tok, touched = mb_f, 0.0
    out: np.ndarray = roofline_seconds(
        x, grid["pp_f"], read_params(x, lay["base"], lay["moe_in"], tp_f, g, touched),
        step_flops(x, lay["ls_f"], lay["dense_in"], lay["moe_in"], tp_f, g, mb_f, n_tok),
        mb_f * kv_seq, lay["ls_f"], lay["moe_in"])
    return out


def _group_traffic(x: Inputs, grid: dict[str, np.ndarray], lay: dict[str, Any],
                   cp_axis: bool) -> tuple[dict[str, Any], np.ndarray | None]:
    """CP and EP bytes per token per device, seconds and link codes (zeros and "none"
    where an axis is absent), and the rows whose groups have a usable link."""
    m, hw, pp_f, mb_f = x.m, x.hw, grid["pp_f"], lay["mb_f"]
    zeros = np.zeros(grid["i_tp"].size)
    out: dict[str, Any] = {"cp_b": zeros, "cp_s": zeros, "ep_b": zeros, "ep_s": zeros,
                           "cp_link": grid["cp_link"], "ep_link": grid["ep_link"]}
    realisable = None
    if cp_axis:
        out["cp_b"] = cp_ring_bytes(m, lay["ls_f"], grid["tp_f"], grid["cp_f"])
        cp_bw, cp_alpha = _group_link(grid["cp_inside"], hw)
        out["cp_s"] = axis_seconds(pp_f, mb_f, out["cp_b"], cp_bw,
                                   cp_ring_messages(lay["ls_f"], grid["cp_f"]), cp_alpha)
        realisable = _group_ok(grid["cp"] > 1, grid["cp_inside"], hw)
    if m.is_moe:
        ep_f, moe_in = grid["ep_f"], lay["moe_in"]
        out["ep_b"] = ep_alltoall_bytes(m, moe_in, ep_f)
        ep_bw, ep_alpha = _group_link(grid["ep_inside"], hw)
        out["ep_s"] = axis_seconds(pp_f, mb_f, out["ep_b"], ep_bw,
                                   ep_alltoall_messages(moe_in, ep_f), ep_alpha)
        ep_on = out["ep_b"] > 0
        if not ep_on[grid["ep"] > 1].all():  # a last stage without MoE layers
            out["ep_link"] = np.where(ep_on, out["ep_link"], np.int8(LINK_NONE))
        realisable = _and(realisable, _group_ok(ep_on, grid["ep_inside"], hw))
    return out, realisable


def _pipeline_traffic(x: Inputs, grid: dict[str, np.ndarray],
                      mb_f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """PP hand-off bytes per token and seconds per token (hops inside the fast domain on
    the interconnect, the rest on the scale-out network), and the rows whose hops have a
    usable link."""
    hw = x.hw
    pp_b = pp_handoff_bytes(x.m.hidden, grid["pp_f"])
    hop_bytes = mb_f * pp_b
    in_bw, out_bw = float(hw.interconnect_bandwidth), float(hw.scaleout_bandwidth)
    pp_s = np.zeros(grid["i_tp"].size)
    if out_bw > 0:
        pp_s = hop_seconds(grid["hops_out"], hop_bytes, out_bw, float(hw.scaleout_latency_s))
    if in_bw > 0:
        pp_s = pp_s + hop_seconds(grid["hops_in"], hop_bytes, in_bw,
                                  float(hw.interconnect_latency_s))
    realisable = None
    if in_bw <= 0 or out_bw <= 0:
        realisable = (((grid["hops_in"] == 0) | (in_bw > 0))
                      & ((grid["hops_out"] == 0) | (out_bw > 0)))
    return pp_b, pp_s, realisable


def evaluate(x: Inputs) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Every column of the candidate table over the whole degree grid, and the mask of
    realisable rows (None when all are). Arithmetic runs on float64 copies of the degrees
    (exact for these integers); the count columns stay int64."""
    m, hw = x.m, x.hw
    degrees = axis_degrees(x)
    grid = _grid(degrees, x.max_devices, hw.domain_size)
    fr_t, attn_t, tp_bw_t, tp_alpha_t, tp_code_t, tp_ok_t = _tp_constants(m.id, hw.id,
                                                                          degrees[0])
    i_tp, tp_f, pp_f = grid["i_tp"], grid["tp_f"], grid["pp_f"]
    lay = _layout(x, grid, fr_t, attn_t)
    mem = _memory(x, grid, lay)
    roofline_s = _roofline(x, grid, lay, mem["kv_seq"])

    # traffic (bytes per token per device), messages, links and seconds per axis
    realisable = None if tp_ok_t.all() else tp_ok_t[i_tp]
    tp_b = tp_allreduce_bytes(m.hidden, lay["ls_f"], tp_f)
    tp_s = axis_seconds(pp_f, lay["mb_f"], tp_b, tp_bw_t[i_tp],
                        tp_allreduce_messages(lay["ls_f"], tp_f), tp_alpha_t[i_tp])
    grp, grp_ok = _group_traffic(x, grid, lay, len(degrees[1]) > 1)
    pp_b, pp_s, pp_ok = _pipeline_traffic(x, grid, lay["mb_f"])
    realisable = _and(_and(realisable, grp_ok), pp_ok)
    latency = token_latency(roofline_s, tp_s, grp["cp_s"], grp["ep_s"], pp_s)

    cols = {
        "tp": grid["tp"], "cp": grid["cp"], "pp": grid["pp"], "dp": grid["dp"],
        "ep": grid["ep"], "devices": grid["devices"], "batch_per_replica": lay["b_rep"],
        "microbatch": lay["mb"], "layers_per_stage": lay["ls"],
        "weights_bytes": mem["weights"], "kv_bytes": mem["kv"],
        "transient_bytes": mem["transient"], "used_bytes": mem["used"],
        "fits": mem["used"] <= hw.usable_memory_bytes,
        "tp_allreduce_bytes": tp_b, "cp_ring_bytes": grp["cp_b"], "pp_handoff_bytes": pp_b,
        "ep_alltoall_bytes": grp["ep_b"], "tp_link": tp_code_t[i_tp],
        "cp_link": grp["cp_link"], "pp_link": grid["pp_link"], "ep_link": grp["ep_link"],
        "tp_allreduce_s": tp_s, "cp_ring_s": grp["cp_s"], "pp_handoff_s": pp_s,
        "ep_alltoall_s": grp["ep_s"], "roofline_s": roofline_s,
        "per_token_latency_s": latency, "throughput_tokens_per_s": x.batch / latency,
    }
    if realisable is not None and realisable.all():
        realisable = None
    return cols, realisable


def config_table(x: Inputs, cols: dict[str, np.ndarray],
                 realisable: np.ndarray | None) -> ConfigTable:
    floats = set(FLOAT_FIELDS)
    pick = slice(None) if realisable is None else realisable
    frozen = {k: _frozen(np.asarray(a, dtype=float)[pick] if k in floats
                         else np.asarray(a)[pick]) for k, a in cols.items()}
    return ConfigTable(
        hardware=x.hw.id, model=x.m.id, context_tokens=x.context, batch=x.batch,
        weight_bits=x.weight_bits, kv_bits=x.kv_bits, max_devices=x.max_devices,
        mode=x.derating.name, capacity_bytes=float(x.hw.usable_memory_bytes), **frozen,
    )


def enumerate_configs(hardware: str | Hardware, model: str | Model, context_tokens: int,
                      batch: int = 1, weight_bits: int = 16, kv_bits: int = 16,
                      max_devices: int | None = None, *,
                      mode: str | Derating = "peak") -> ConfigTable:
    """Every realisable TP x CP x PP x DP x EP deployment of ``model`` on ``hardware``.

    ``context_tokens`` per sequence, ``batch`` concurrent sequences in total, weights and
    KV at ``weight_bits`` / ``kv_bits``, at most ``max_devices`` devices
    (default :data:`DEFAULT_MAX_DEVICES`), roofline ``mode`` "peak" or "achievable".
    Memory, traffic and time are numpy array expressions over the whole degree grid (see
    the module docstring for every formula); candidates whose traffic would need a link of
    zero bandwidth are dropped.
    """
    x = read_inputs(hardware, model, context_tokens, batch, weight_bits, kv_bits, max_devices, mode)
    return config_table(x, *evaluate(x))


