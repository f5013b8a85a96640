"""Choosing a deployment: :func:`search` (vectorised) and :func:`search_loop` (reference)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from labkit.core import validation as v
from labkit.physics.kvcache import kv_fraction_per_device
from labkit.physics.parallelism.formulas import (
    LINK_FAST,
    LINK_NONE,
    LINK_SCALEOUT,
    LINKS,
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
    layers_per_stage,
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
from labkit.physics.parallelism.results import ParallelConfig, config_rows
from labkit.physics.parallelism.vectorised import config_table, evaluate, link_of
from labkit.physics.roofline import Derating, expected_experts_touched
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model


# -- search -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParallelismSearch:
    """The chosen deployment and the latency-vs-devices Pareto frontier.

    ``chosen``: fewest devices among feasible configs (fits in memory and meets
    ``latency_slo_s`` when given), then lowest per-token latency, then smallest
    (tp, cp, pp, dp, ep). ``frontier``: feasible configs no other feasible config beats
    with as few devices, sorted by devices (latency strictly falls along it).
    """

    hardware: str
    model: str
    context_tokens: int
    batch: int
    weight_bits: int
    kv_bits: int
    max_devices: int
    latency_slo_s: float | None
    mode: str
    chosen: ParallelConfig
    frontier: tuple[ParallelConfig, ...]
    feasible_count: int
    candidate_count: int

    def as_dict(self) -> dict[str, Any]:
        """Plain, JSON-serialisable fields (``frontier`` as a list of dicts)."""
        d = asdict(self)
        d["frontier"] = [c.as_dict() for c in self.frontier]
        return d


def _slo(latency_slo_s: object) -> float | None:
    return None if latency_slo_s is None else float(v.positive("latency_slo_s", latency_slo_s))


def _gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:.3g} GB"


def _no_fit_error(x: Inputs, candidates: int, leanest: ParallelConfig | None,
                  fastest: ParallelConfig | None, slo: float | None) -> ValueError:
    where = (f"{x.m.id} at context_tokens={x.context}, batch={x.batch} on {x.hw.id} "
             f"({x.weight_bits}-bit weights, {x.kv_bits}-bit KV)")
    if fastest is not None and slo is not None:
        return ValueError(
            f"deployments up to max_devices={x.max_devices} fit {where}, but none meets "
            f"latency_slo_s={slo:g}: the fastest, {fastest.degrees} (tp, cp, pp, dp, ep), "
            f"takes {fastest.per_token_latency_s:.4g} s per token")
    detail = ""
    if leanest is not None:
        detail = (f": the leanest of {candidates} candidates, {leanest.degrees} "
                  f"(tp, cp, pp, dp, ep), needs {_gb(leanest.used_bytes)} per device against "
                  f"{_gb(leanest.capacity_bytes)} usable")
    if x.hw.interconnect_bandwidth <= 0 and x.hw.scaleout_bandwidth <= 0:
        detail += f"; {x.hw.id} has no link to a peer, so only DP replicas are possible"
    return ValueError(f"no deployment up to max_devices={x.max_devices} fits {where}{detail}")


def search(hardware: str | Hardware, model: str | Model, context_tokens: int, batch: int = 1,
           weight_bits: int = 16, kv_bits: int = 16, max_devices: int | None = None,
           latency_slo_s: float | None = None, *,
           mode: str | Derating = "peak") -> ParallelismSearch:
    """Pick the smallest deployment that fits (vectorised, over the columns
    :func:`enumerate_configs` would hold; only the frontier rows become objects).

    Raises ValueError naming the reason when nothing fits in memory, or nothing that fits
    meets ``latency_slo_s`` (seconds per token).
    """
    slo = _slo(latency_slo_s)
    x = read_inputs(hardware, model, context_tokens, batch, weight_bits, kv_bits, max_devices, mode)
    cols, realisable = evaluate(x)
    lat, devices = cols["per_token_latency_s"], cols["devices"]
    ok = cols["fits"] if slo is None else cols["fits"] & (lat <= slo)
    if realisable is not None:
        ok = ok & realisable
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        t = config_table(x, cols, realisable)
        leanest = t.config(int(np.lexsort((t.devices, t.used_bytes))[0])) if len(t) else None
        fits = np.flatnonzero(t.fits)
        fastest = t.config(int(fits[np.argmin(t.per_token_latency_s[fits])])) \
            if fits.size else None
        raise _no_fit_error(x, len(t), leanest, fastest, slo)
    # rows are in lexicographic (tp, cp, pp, dp, ep) order and lexsort is stable, so ties
    # in (devices, latency) fall to the smallest degrees without sorting on them
    order = idx[np.lexsort((lat[idx], devices[idx]))]
    dev, lat_sorted = devices[order], lat[order]
    new_count = np.ones(order.size, dtype=bool)
    new_count[1:] = dev[1:] != dev[:-1]
    best, best_lat = order[new_count], lat_sorted[new_count]
    prior_min = np.minimum.accumulate(np.concatenate(([np.inf], best_lat[:-1])))
    frontier = config_rows(cols, best[best_lat < prior_min], float(x.hw.usable_memory_bytes))
    candidates = devices.size if realisable is None else int(np.count_nonzero(realisable))
    return ParallelismSearch(
        hardware=x.hw.id, model=x.m.id, context_tokens=x.context, batch=x.batch,
        weight_bits=x.weight_bits, kv_bits=x.kv_bits, max_devices=x.max_devices,
        latency_slo_s=slo, mode=x.derating.name, chosen=frontier[0], frontier=frontier,
        feasible_count=int(idx.size), candidate_count=candidates,
    )


# -- pure-Python reference ----------------------------------------------------------------
def _loop_memory(x: Inputs, tp: int, cp: int, pp: int, lay: dict[str, Any]) -> tuple[
                 float, float, float, float, float]:
    """(weights, kv, kv of one sequence, transient, used) bytes on the binding device:
    the last stage (last layers, LM head, logits) or the first stage (first layers,
    embedding); with pp = 1 both tables sit on the one stage."""
    ls, mb, g, base = lay["ls"], lay["mb"], lay["g"], lay["base"]
    tables = x.tables_single if pp == 1 else x.lm_head
    kv_seq = kv_per_sequence(x, cp, lay["frac"], ls)
    kv = lay["b_rep"] * kv_seq
    weights = resident_params(x, base, lay["moe_in"], tp, g, tables) * x.weight_bytes
    act, logit = activation_bytes(x, mb, tp), logit_bytes(x, mb, tp)
    transient = act + logit
    used = weights + kv + transient
    dense_first = min(ls, x.dense_layers)
    w_first = resident_params(x, layer_params(x, lay["ls_attn"], dense_first, tp),
                              ls - dense_first, tp, g, tables) * x.weight_bytes
    tr_first = act + (logit if pp == 1 else 0.0)
    used_first = w_first + kv + tr_first
    if used_first > used:
        weights, transient, used = w_first, tr_first, used_first
    return weights, kv, kv_seq, transient, used


def _loop_pipeline(x: Inputs, pp: int, stage_devices: int, mb: int,
                   pp_b: float) -> tuple[float, int] | None:
    """(seconds, link code) of a token's pp - 1 hand-offs; None when a hop needs a link of
    zero bandwidth."""
    hw = x.hw
    stages_per_domain = max(1, hw.domain_size // stage_devices)
    hops_out = -(-pp // stages_per_domain) - 1
    hops_in = pp - 1 - hops_out
    if (hops_in > 0 and hw.interconnect_bandwidth <= 0) or (
            hops_out > 0 and hw.scaleout_bandwidth <= 0):
        return None
    hop_bytes = mb * pp_b
    out_s = (hop_seconds(hops_out, hop_bytes, float(hw.scaleout_bandwidth),
                         float(hw.scaleout_latency_s)) if hops_out > 0 else 0.0)
    in_s = (hop_seconds(hops_in, hop_bytes, float(hw.interconnect_bandwidth),
                        float(hw.interconnect_latency_s)) if hops_in > 0 else 0.0)
    pp_link = LINK_NONE if pp == 1 else (LINK_SCALEOUT if hops_out > 0 else LINK_FAST)
    return out_s + in_s, pp_link


def _loop_config(x: Inputs, tp: int, cp: int, pp: int, dp: int,
                 ep: int) -> ParallelConfig | None:
    """One deployment, computed with Python scalars; None when a needed link has zero
    bandwidth."""
    m, hw = x.m, x.hw
    stage_devices = tp * cp * dp
    ls = layers_per_stage(m.layers, pp)
    dense_in = min(ls, max(0, x.dense_layers - (m.layers - ls)))
    moe_in = ls - dense_in
    g = max(tp, ep)
    b_rep = -(-x.batch // dp)
    mb = -(-b_rep // pp)
    n_tok = mb * max(1, g // (tp * cp))
    frac = kv_fraction_per_device(m, tp)
    touched = expected_experts_touched(m, float(n_tok)) if m.is_moe else 0.0
    ls_attn = ls * attention_params(m, tp, frac)
    base = layer_params(x, ls_attn, dense_in, tp)
    lay = {"ls": ls, "mb": mb, "b_rep": b_rep, "g": g, "frac": frac, "ls_attn": ls_attn,
           "base": base, "moe_in": moe_in}
    weights, kv, kv_seq, transient, used = _loop_memory(x, tp, cp, pp, lay)
    roofline_s = roofline_seconds(x, pp, read_params(x, base, moe_in, tp, g, touched),
                                  step_flops(x, ls, dense_in, moe_in, tp, g, mb, n_tok),
                                  mb * kv_seq, ls, moe_in)

    tp_b = float(tp_allreduce_bytes(m.hidden, ls, tp))
    cp_b = float(cp_ring_bytes(m, ls, tp, cp))
    pp_b = float(pp_handoff_bytes(m.hidden, pp))
    ep_b = float(ep_alltoall_bytes(m, moe_in, ep))
    seconds, links = {}, {}
    for axis, nbytes, messages, span in (
            ("tp", tp_b, tp_allreduce_messages(ls, tp), tp),
            ("cp", cp_b, cp_ring_messages(ls, cp), tp * cp),
            ("ep", ep_b, ep_alltoall_messages(moe_in, ep), ep)):
        bw, alpha, code = link_of(span, hw)
        if nbytes > 0 and bw <= 0:
            return None
        seconds[axis] = (axis_seconds(pp, mb, nbytes, bw, messages, alpha)
                         if nbytes > 0 else 0.0)
        links[axis] = code if nbytes > 0 else LINK_NONE
    hops = _loop_pipeline(x, pp, stage_devices, mb, pp_b)
    if hops is None:
        return None
    pp_s, pp_link = hops
    latency = token_latency(roofline_s, seconds["tp"], seconds["cp"], seconds["ep"], pp_s)
    return ParallelConfig(
        tp=tp, cp=cp, pp=pp, dp=dp, ep=ep, devices=stage_devices * pp,
        batch_per_replica=b_rep, microbatch=mb, layers_per_stage=ls,
        weights_bytes=float(weights), kv_bytes=float(kv), transient_bytes=float(transient),
        used_bytes=float(used), capacity_bytes=float(hw.usable_memory_bytes),
        fits=bool(used <= hw.usable_memory_bytes),
        tp_allreduce_bytes=tp_b, cp_ring_bytes=cp_b, pp_handoff_bytes=pp_b,
        ep_alltoall_bytes=ep_b, tp_link=LINKS[links["tp"]], cp_link=LINKS[links["cp"]],
        pp_link=LINKS[pp_link], ep_link=LINKS[links["ep"]],
        tp_allreduce_s=float(seconds["tp"]), cp_ring_s=float(seconds["cp"]),
        pp_handoff_s=float(pp_s), ep_alltoall_s=float(seconds["ep"]),
        roofline_s=float(roofline_s), per_token_latency_s=float(latency),
        throughput_tokens_per_s=float(x.batch / latency),
    )


def search_loop(hardware: str | Hardware, model: str | Model, context_tokens: int,
                batch: int = 1, weight_bits: int = 16, kv_bits: int = 16,
                max_devices: int | None = None, latency_slo_s: float | None = None, *,
                mode: str | Derating = "peak") -> ParallelismSearch:
    """:func:`search`, one configuration at a time in plain Python (the reference)."""
    slo = _slo(latency_slo_s)
    x = read_inputs(hardware, model, context_tokens, batch, weight_bits, kv_bits, max_devices, mode)
    tps, cps, pps, dps, eps = axis_degrees(x)
    candidates: list[ParallelConfig] = []
    for tp in tps:
        for cp in cps:
            for pp in pps:
                for dp in dps:
                    for ep in eps:
                        if tp * cp * pp * dp > x.max_devices or (tp * cp * dp) % ep:
                            continue
                        c = _loop_config(x, tp, cp, pp, dp, ep)
                        if c is not None:
                            candidates.append(c)

    def key(c: ParallelConfig) -> tuple[float, ...]:
        return (c.devices, c.per_token_latency_s, *c.degrees)

    feasible = [c for c in candidates
                if c.fits and (slo is None or c.per_token_latency_s <= slo)]
    if not feasible:
        leanest = min(candidates, key=lambda c: (c.used_bytes, c.devices), default=None)
        fitting = [c for c in candidates if c.fits]
        fastest = min(fitting, key=lambda c: c.per_token_latency_s, default=None)
        raise _no_fit_error(x, len(candidates), leanest, fastest, slo)
    best_per_devices: dict[int, ParallelConfig] = {}
    for c in feasible:
        held = best_per_devices.get(c.devices)
        if held is None or key(c) < key(held):
            best_per_devices[c.devices] = c
    frontier: list[ParallelConfig] = []
    for devices in sorted(best_per_devices):
        c = best_per_devices[devices]
        if not frontier or c.per_token_latency_s < frontier[-1].per_token_latency_s:
            frontier.append(c)
    return ParallelismSearch(
        hardware=x.hw.id, model=x.m.id, context_tokens=x.context, batch=x.batch,
        weight_bits=x.weight_bits, kv_bits=x.kv_bits, max_devices=x.max_devices,
        latency_slo_s=slo, mode=x.derating.name, chosen=min(feasible, key=key),
        frontier=tuple(frontier), feasible_count=len(feasible),
        candidate_count=len(candidates),
    )
