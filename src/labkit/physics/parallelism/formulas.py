"""Inputs and the formulas shared by the vectorised table and the per-config loop.

Every helper takes Python numbers (the loop, :mod:`.search`) or float64 arrays (the table,
:mod:`.vectorised`); the conventions are stated once in :mod:`labkit.physics.parallelism`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from labkit.core import validation as v
from labkit.core.grids import pow2
from labkit.core.units import bits_to_bytes
from labkit.physics.kvcache import kv_bytes_per_token, kv_fraction_per_device
from labkit.physics.links import ACT_BYTES as ACT_BYTES  # re-exported: the link model
from labkit.physics.links import LINK_FAST as LINK_FAST
from labkit.physics.links import LINK_NONE as LINK_NONE
from labkit.physics.links import LINK_SCALEOUT as LINK_SCALEOUT
from labkit.physics.links import tp_allreduce_bytes as tp_allreduce_bytes
from labkit.physics.links import tp_allreduce_messages as tp_allreduce_messages
from labkit.physics.roofline import FLOP_PER_WEIGHT_PER_TOKEN, Derating, get_mode
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model, get_model, require_transformer

STAT_BYTES = 4.0  # bytes per softmax statistic (fp32 running max and running sum)
LOGIT_BYTES = 4.0  # bytes per fp32 logit (as roofline.memory_budget)
CP_BLOCK_TOKENS = 1024  # fewest tokens of each sequence a CP rank holds: cp <= context/1024
DEFAULT_MAX_DEVICES = 4096  # enumeration cap when max_devices is None
LINKS = ("none", "interconnect", "scaleout")  # link codes 0, 1, 2 in ConfigTable


# -- inputs ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Inputs:
    """Validated inputs and the model constants every formula needs (elements, bytes)."""

    hw: Hardware
    m: Model
    context: int
    batch: int
    weight_bits: int
    kv_bits: int
    max_devices: int
    derating: Derating
    weight_bytes: float  # bytes per weight element
    kv_bpt: float  # KV bytes per token, one sequence, all layers
    bandwidth: float  # effective memory bandwidth (KV read), bytes/s
    weight_bandwidth: float  # effective bandwidth streaming weights at weight_bits, bytes/s
    flops: float  # effective FLOP/s
    dense_ffn: float  # elements of one dense FFN layer
    moe_fixed: float  # shared experts + router of one MoE layer, elements
    experts_all: float  # every routed expert of one MoE layer, elements
    lm_head: float  # hidden x vocab, elements (LM head; also one embedding table)
    tables_single: float  # embedding + LM head elements when one stage holds both (pp = 1)
    lm_read: float  # LM head elements read per step (0 in peak mode)
    dense_layers: int  # leading dense layers (all layers of a dense model)
    ffn_width: int  # FFN width whose activations one token holds


def read_inputs(hardware: str | Hardware, model: str | Model, context_tokens: object, batch: object,
                weight_bits: object, kv_bits: object, max_devices: object,
                mode: str | Derating) -> Inputs:
    hw = get_hardware(hardware)
    m = require_transformer(get_model(model), "model")
    context = v.positive_int("context_tokens", context_tokens)
    b = v.positive_int("batch", batch)
    wbits = v.precision_bits("weight_bits", weight_bits)
    kbits = v.precision_bits("kv_bits", kv_bits)
    cap = DEFAULT_MAX_DEVICES if max_devices is None else v.positive_int("max_devices",
                                                                          max_devices)
    d = get_mode(mode, hw)
    experts = m.experts_total if m.is_moe else 0
    lm_head = float(m.lm_head_params)
    return Inputs(
        hw=hw, m=m, context=context, batch=b, weight_bits=wbits, kv_bits=kbits,
        max_devices=cap, derating=d, weight_bytes=bits_to_bytes(wbits),
        kv_bpt=kv_bytes_per_token(m.id, kbits),  # by id: a registry hit, not a scan
        bandwidth=hw.memory_bandwidth * d.bandwidth_efficiency,
        weight_bandwidth=hw.memory_bandwidth * d.weight_bandwidth_efficiency(wbits),
        flops=hw.flops() * d.flop_efficiency,
        dense_ffn=float(m.dense_ffn_params),
        moe_fixed=float(m.shared_experts * m.expert_params + m.hidden * experts),
        experts_all=float(experts * m.expert_params),
        lm_head=lm_head,
        tables_single=lm_head if m.tied_embeddings else 2.0 * lm_head,
        lm_read=lm_head if d.include_lm_head else 0.0,
        dense_layers=m.dense_layers if m.is_moe else m.layers,
        ffn_width=m.moe_ffn_dim if m.is_moe else m.ffn_dim,
    )


def axis_degrees(x: Inputs) -> tuple[tuple[int, ...], ...]:
    """Candidate degrees per axis: tp <= q_heads, cp <= context/CP_BLOCK_TOKENS,
    pp <= layers, dp <= batch, ep | experts_total (MoE only); all <= max_devices."""
    m, cap = x.m, x.max_devices
    tp = pow2(min(m.q_heads, cap))
    cp = pow2(min(x.context // CP_BLOCK_TOKENS, cap))
    pp = pow2(min(m.layers, cap))
    dp = pow2(min(x.batch, cap))
    ep = [e for e in pow2(m.experts_total) if m.experts_total % e == 0] if m.is_moe else [1]
    return tuple(tp), tuple(cp), tuple(pp), tuple(dp), tuple(ep)


# -- formulas shared by the vectorised table and the loop (plain arithmetic only) ------------
def attention_params_per_device(model: str | Model, tp: int) -> float:
    """Attention projection elements one of ``tp`` TP ranks holds for one layer.

    GQA: ``(A - KV)/tp + KV x kv_fraction_per_device(tp)`` with ``A`` all of Q, K, V, O and
    ``KV = 2 x hidden x kv_heads x d_head`` -- K/V heads stop splitting at ``kv_heads`` and
    are replicated past it. MLA: ``A / tp`` (the convention of
    :func:`labkit.physics.roofline.step_weight_params`).
    """
    m = require_transformer(get_model(model))
    t = v.positive_int("tp", tp)
    return attention_params(m, t, kv_fraction_per_device(m, t))


def attention_params(m: Model, tp: int, kv_fraction: float) -> float:
    attn = m.attention_params_per_layer
    if m.uses_mla:
        return attn / tp
    kv_proj = 2 * m.hidden * m.kv_heads * m.d_head
    return (attn - kv_proj) / tp + kv_proj * kv_fraction


def layers_per_stage(layers: Any, pp: Any) -> Any:
    """``ceil(layers / pp)`` decoder layers on each pipeline stage (integers or int arrays)."""
    return -(-layers // pp)


# The helpers below take Python numbers (the loop) or float64 arrays (the vectorised
# table). Every integer involved is far below 2**53, so both see the same values and the
# same operation order: the two paths agree to the last bit. Terms that are identically
# zero for a model (MoE terms of a dense model, the LM head read in peak mode) are skipped
# rather than added, which changes no value.
def layer_params(x: Inputs, ls_attn: Any, dense_in: Any, tp: Any) -> Any:
    """Attention + dense-FFN elements of a stage's layers on one device (``/tp``)."""
    return ls_attn + dense_in * x.dense_ffn / tp


def resident_params(x: Inputs, layer_params: Any, moe_in: Any, tp: Any, g: Any,
                    tables: Any) -> Any:
    """Weight elements one device of a stage holds: attention and dense FFNs
    (``layer_params``), shared experts + router (``/tp``) and every routed expert (``/g``)
    of its MoE layers, and the ``tables`` (embedding and/or LM head elements, ``/tp``)."""
    p = layer_params
    if x.m.is_moe:
        p = p + moe_in * (x.moe_fixed / tp + x.experts_all / g)
    return p + tables / tp


def read_params(x: Inputs, layer_params: Any, moe_in: Any, tp: Any, g: Any,
                touched: Any) -> Any:
    """Weight elements the last-stage device reads in one micro-batch step: only the
    ``touched`` routed experts of each MoE layer, the LM head only in ``achievable`` mode
    (an embedding lookup reads a few rows: not charged)."""
    p = layer_params
    if x.m.is_moe:
        p = p + moe_in * (x.moe_fixed / tp + touched * x.m.expert_params / g)
    if x.lm_read:
        p = p + x.lm_read / tp
    return p


def step_flops(x: Inputs, ls: Any, dense_in: Any, moe_in: Any, tp: Any, g: Any, mb: Any,
               n_tok: Any) -> Any:
    """FLOP one last-stage device does per micro-batch step: 2 per active weight per token,
    dense parts split ``tp`` ways over ``mb`` tokens, routed experts split ``g`` ways over
    the ``n_tok`` distinct tokens of the expert group."""
    m = x.m
    dense_part = ls * m.attention_params_per_layer + dense_in * x.dense_ffn
    if m.is_moe:
        dense_part = dense_part + moe_in * x.moe_fixed
    if x.lm_read:
        dense_part = dense_part + x.lm_read
    per_device = mb * dense_part / tp
    if m.is_moe:
        per_device = per_device + n_tok * moe_in * (m.experts_active * m.expert_params) / g
    return FLOP_PER_WEIGHT_PER_TOKEN * per_device


def kv_per_sequence(x: Inputs, cp: Any, frac: Any, ls: Any) -> Any:
    """KV bytes of one sequence on one device: ``ceil(context/cp) x kv_bpt x kv_fraction x
    layers_per_stage / layers`` (times the sequences held: memory; read: time)."""
    return -(-x.context // cp) * x.kv_bpt * frac * ls / x.m.layers


def activation_bytes(x: Inputs, mb: Any, tp: Any) -> Any:
    """Activation scratch of one micro-batch step, bytes: ``mb x (4 h + 2 ffn/tp) x 2 B``."""
    return mb * ((4 * x.m.hidden + 2 * x.ffn_width / tp) * ACT_BYTES)


def logit_bytes(x: Inputs, mb: Any, tp: Any) -> Any:
    """fp32 logits of one micro-batch step on the LM-head stage: ``mb x V/tp x 4 B``.
    Activations + logits are the transient of :func:`labkit.physics.roofline.memory_budget`."""
    return mb * (x.m.vocab * LOGIT_BYTES / tp)


def cp_ring_bytes(model: Model, layers: Any, tp: Any, cp: Any) -> Any:
    """CP bytes one device sends per token: per layer a ring all-reduce,
    ``2 (cp - 1)/cp``, of its ``q_heads/tp`` heads' partial outputs (``v_dim x 2 B``) and
    softmax statistics (``2 x 4 B``)."""
    v_dim = model.v_head_dim if model.uses_mla else model.d_head
    per_layer = 2 * model.q_heads * (v_dim * ACT_BYTES + 2 * STAT_BYTES)
    return layers * (cp - 1) / cp * per_layer / tp


def cp_ring_messages(layers: Any, cp: Any) -> Any:
    """Ring steps of CP all-reduces per stage step: 1 per layer, ``2 (cp - 1)`` steps each."""
    return 2 * layers * (cp - 1)


def pp_handoff_bytes(hidden: Any, pp: Any) -> Any:
    """Activation one stage sends the next per token: ``hidden x 2 B`` (0 when pp = 1)."""
    return hidden * ACT_BYTES * (pp > 1)


def ep_alltoall_bytes(model: Model, moe_layers: Any, ep: Any) -> Any:
    """EP bytes one device sends per token: dispatch + combine per MoE layer, each
    ``hidden x 2 B x experts_active`` of which ``(ep - 1)/ep`` leaves the device."""
    return moe_layers * (2 * model.hidden * ACT_BYTES * model.experts_active) * (ep - 1) / ep


def ep_alltoall_messages(moe_layers: Any, ep: Any) -> Any:
    """Messages of EP all-to-alls per stage step: dispatch and combine per MoE layer,
    ``ep - 1`` messages each."""
    return 2 * moe_layers * (ep - 1)


def axis_seconds(pp: Any, mb: Any, nbytes: Any, bandwidth: Any, messages: Any,
                 latency: Any) -> Any:
    """Seconds an axis adds to a token: ``pp`` stages, each sending ``messages`` (paying the
    link's per-message ``latency``) that carry ``mb`` tokens' bytes."""
    return pp * (mb * nbytes / bandwidth + messages * latency)


def hop_seconds(hops: Any, hop_bytes: Any, bandwidth: float, latency: float) -> Any:
    """Seconds of ``hops`` pipeline hand-offs of ``hop_bytes`` each on one link."""
    return hops * (hop_bytes / bandwidth + latency)


def token_latency(roofline_s: Any, tp_s: Any, cp_s: Any, ep_s: Any, pp_s: Any) -> Any:
    return roofline_s + tp_s + cp_s + ep_s + pp_s


def roofline_seconds(x: Inputs, pp: Any, read_params: Any, flops: Any,
                     kv_read_bytes: Any, ls: Any = 0, moe_in: Any = 0) -> Any:
    """``pp`` stage steps, each weight fetch + compute + KV read (+ overhead: per step,
    per each of the stage's ``ls`` layers and ``moe_in`` MoE layers), seconds."""
    stage = (read_params * x.weight_bytes / x.weight_bandwidth + flops / x.flops
             + kv_read_bytes / x.bandwidth)
    d = x.derating
    if d.step_overhead_s:
        stage = stage + d.step_overhead_s
    if d.layer_overhead_s:
        stage = stage + ls * d.layer_overhead_s
    if d.moe_layer_overhead_s and x.m.is_moe:
        stage = stage + moe_in * d.moe_layer_overhead_s
    return pp * stage


