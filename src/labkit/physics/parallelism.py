"""Parallel deployments of one transformer: TP x CP x PP x DP x EP, enumerated and chosen.

Every candidate is a set of power-of-two degrees. The conventions, stated once:

* **Devices.** ``devices = tp * cp * pp * dp``. Expert parallelism adds no devices: inside
  each pipeline stage the ``ep``-way expert group is formed from the ``tp * cp * dp``
  devices that already hold that stage, so ``ep`` must divide both ``tp * cp * dp`` and
  ``experts_total`` (``ep = 1`` for dense models). Rank order, innermost first, is
  tp, cp, dp, pp: a TP group spans ``tp`` consecutive devices, a CP group ``tp * cp``, an
  EP group ``ep``.
* **Weights (per device, elements).** Attention and dense FFN split ``tp`` ways, K/V
  projections replicated once ``tp`` exceeds the KV heads (exactly as
  :func:`labkit.physics.roofline.step_weight_params`). Routed experts are shared by
  ``g = max(tp, ep)`` devices: ``ep`` ranks each own ``experts_total / ep`` experts, each
  split over ``tp / ep`` expert-TP ranks when ``ep < tp``. Shared experts and the router
  split ``tp`` ways. Every stage holds ``ceil(layers / pp)`` layers. The **first** stage
  holds the first layers (an MoE model's leading dense layers) and the input embedding
  table; the **last** stage holds the last layers and the LM head; with ``pp = 1`` the one
  stage holds both tables, as in :func:`labkit.physics.roofline.memory_budget` (one shared table
  when ``model.tied_embeddings``). With ``pp > 1`` a tied table is needed on both end
  stages, so each holds a copy. Both tables are ``hidden x vocab`` split ``tp`` ways.
* **Binding device.** Whichever of the first and last stage uses more memory (their KV
  is equal; only the last stage holds the fp32 logits). Any middle stage holds a mix of
  the layer kinds at the two ends and no table, so it never uses more. The memory fields
  of a config describe that binding device.
* **Batch.** ``batch`` sequences in total; each DP replica serves
  ``batch_per_replica = ceil(batch / dp)``, split into pipeline micro-batches of
  ``microbatch = ceil(batch_per_replica / pp)`` sequences.
* **KV (per device, bytes).** ``batch_per_replica x ceil(context / cp) x kv_bytes_per_token
  x kv_fraction_per_device(tp) x layers_per_stage / layers``. MLA's latent is replicated
  on every TP rank (fraction 1).
* **Context parallelism (decode).** Each CP rank holds a ``1/cp`` slice of every
  sequence's KV and a full copy of its stage's weights (at the given ``tp``). For a new
  token every rank attends over its slice, then the ranks ring-all-reduce the partial
  attention outputs with their softmax statistics (running max and sum, fp32): per layer
  ``2 (cp - 1)/cp x q_heads/tp x (v_dim x 2 B + 2 x 4 B)`` bytes per device. KV blocks
  are never moved: at decode, one query against the whole context makes moving the KV
  the far larger message. CP therefore splits KV memory and KV-read time, not weights.
* **Communication volume, per generated token of one sequence, per device, bytes.** TP
  ring all-reduce twice per layer: ``2 x layers_per_stage x hidden x 2 B x 2 (tp - 1)/tp``.
  PP hand-off: ``hidden x 2 B`` across each stage boundary. EP all-to-all (dispatch and
  combine) per MoE layer: ``2 x moe_layers x hidden x 2 B x experts_active x (ep-1)/ep``.
* **Communication time (alpha-beta).** Each axis is charged on the link it crosses:
  the fast domain (``interconnect_bandwidth``, ``interconnect_latency_s``) when the
  group's span fits inside ``domain_size``, else the scale-out network
  (``scaleout_bandwidth``, ``scaleout_latency_s``). A collective costs
  ``messages x latency + bytes / bandwidth``; one micro-batch step sends each message
  once for all its ``microbatch`` tokens, so the latency is paid per step, the bytes per
  token. Messages per stage step: TP ``2 x layers_per_stage x 2 (tp - 1)`` (two ring
  all-reduces per layer, ``2 (tp - 1)`` ring steps each); CP
  ``layers_per_stage x 2 (cp - 1)`` (one ring all-reduce per layer); EP
  ``2 x moe_layers x (ep - 1)`` (dispatch and combine, ``ep - 1`` messages each); PP one
  message per stage boundary, on the fast link while consecutive stages share a domain
  and on the scale-out link for the boundaries that leave it. A deployment whose traffic
  would cross a link of zero bandwidth (a phone has no peers) is not a candidate at all.
* **Time.** One stage step of a micro-batch is the roofline of the last stage's device
  share: weight fetch + compute + KV read (+ overhead in ``achievable`` mode), added as
  in :mod:`labkit.physics.roofline`, plus the stage's TP/CP/EP communication time. An MoE step
  reads only the experts touched by the distinct tokens its expert group serves
  (:func:`labkit.physics.roofline.expected_experts_touched`), ``1/g`` of them per device; a
  group reaching past ``tp * cp`` devices serves several DP replicas' tokens. A
  sequence's next token waits for all ``pp`` stages in turn and the ``pp - 1`` hand-offs:
  ``per_token_latency_s = pp x (stage + its comm) + hand-offs``. The replica's
  micro-batches (up to ``pp`` of them) are in flight at once, one per stage, so every
  sequence gains one token per ``per_token_latency_s`` and
  ``throughput = batch / per_token_latency_s`` tokens/s for the whole deployment (all
  stages busy once ``batch_per_replica >= pp``).
* **Not modelled.** Hierarchical or tree all-reduce (a TP or CP group that spans domains
  runs one flat ring, every step paying the scale-out latency, so wide TP is charged
  more than NCCL's two-level algorithms would cost); concurrent all-to-all messages (EP
  messages are charged one after another); compute/communication overlap; prefill; link
  contention between groups sharing a NIC; and stage imbalance in time: every stage is
  timed as the last one, although an MoE model's first stage, holding dense layers, can
  be slower when experts are spread over many devices.

:func:`enumerate_configs` and :func:`search` are vectorised with numpy;
:func:`search_loop` is the per-configuration pure-Python reference they are tested
against. :func:`search` skips building the full :class:`ConfigTable` and turns only the
chosen and frontier rows into :class:`ParallelConfig` objects; the degree grid and the
per-``tp`` constants of a model are cached, since a sweep reuses them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from labkit.core import validation as v
from labkit.core.units import bits_to_bytes
from labkit.physics.kvcache import kv_bytes_per_token, kv_fraction_per_device
from labkit.physics.roofline import (
    FLOP_PER_WEIGHT_PER_TOKEN,
    Derating,
    expected_experts_touched,
    get_mode,
)
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model, get_model, require_transformer

ACT_BYTES = 2.0  # bytes per activation element on the wire and in scratch (bf16)
STAT_BYTES = 4.0  # bytes per softmax statistic (fp32 running max and running sum)
LOGIT_BYTES = 4.0  # bytes per fp32 logit (as roofline.memory_budget)
CP_BLOCK_TOKENS = 1024  # fewest tokens of each sequence a CP rank holds: cp <= context/1024
DEFAULT_MAX_DEVICES = 4096  # enumeration cap when max_devices is None
LINKS = ("none", "interconnect", "scaleout")  # link codes 0, 1, 2 in ConfigTable
_NONE, _FAST, _SCALEOUT = 0, 1, 2


# -- inputs ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Inputs:
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
    bandwidth: float  # effective memory bandwidth, bytes/s
    flops: float  # effective FLOP/s
    dense_ffn: float  # elements of one dense FFN layer
    moe_fixed: float  # shared experts + router of one MoE layer, elements
    experts_all: float  # every routed expert of one MoE layer, elements
    lm_head: float  # hidden x vocab, elements (LM head; also one embedding table)
    tables_single: float  # embedding + LM head elements when one stage holds both (pp = 1)
    lm_read: float  # LM head elements read per step (0 in peak mode)
    dense_layers: int  # leading dense layers (all layers of a dense model)
    ffn_width: int  # FFN width whose activations one token holds


def _inputs(hardware: str | Hardware, model: str | Model, context_tokens: object, batch: object,
            weight_bits: object, kv_bits: object, max_devices: object,
            mode: str | Derating) -> _Inputs:
    hw = get_hardware(hardware)
    m = require_transformer(get_model(model), "model")
    context = v.positive_int("context_tokens", context_tokens)
    b = v.positive_int("batch", batch)
    wbits = v.precision_bits("weight_bits", weight_bits)
    kbits = v.precision_bits("kv_bits", kv_bits)
    cap = DEFAULT_MAX_DEVICES if max_devices is None else v.positive_int("max_devices",
                                                                          max_devices)
    d = get_mode(mode)
    experts = m.experts_total if m.is_moe else 0
    lm_head = float(m.lm_head_params)
    return _Inputs(
        hw=hw, m=m, context=context, batch=b, weight_bits=wbits, kv_bits=kbits,
        max_devices=cap, derating=d, weight_bytes=bits_to_bytes(wbits),
        kv_bpt=kv_bytes_per_token(m.id, kbits),  # by id: a registry hit, not a scan
        bandwidth=hw.memory_bandwidth * d.bandwidth_efficiency,
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


def _pow2_upto(limit: int) -> list[int]:
    """Powers of two 1, 2, 4, ... <= limit (just [1] when limit < 2)."""
    out, d = [1], 2
    while d <= limit:
        out.append(d)
        d *= 2
    return out


def _axis_degrees(x: _Inputs) -> tuple[tuple[int, ...], ...]:
    """Candidate degrees per axis: tp <= q_heads, cp <= context/CP_BLOCK_TOKENS,
    pp <= layers, dp <= batch, ep | experts_total (MoE only); all <= max_devices."""
    m, cap = x.m, x.max_devices
    tp = _pow2_upto(min(m.q_heads, cap))
    cp = _pow2_upto(min(x.context // CP_BLOCK_TOKENS, cap))
    pp = _pow2_upto(min(m.layers, cap))
    dp = _pow2_upto(min(x.batch, cap))
    ep = [e for e in _pow2_upto(m.experts_total) if m.experts_total % e == 0] if m.is_moe else [1]
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
    return _attention_params(m, t, kv_fraction_per_device(m, t))


def _attention_params(m: Model, tp: int, kv_fraction: float) -> float:
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
def _layer_params(x: _Inputs, ls_attn: Any, dense_in: Any, tp: Any) -> Any:
    """Attention + dense-FFN elements of a stage's layers on one device (``/tp``)."""
    return ls_attn + dense_in * x.dense_ffn / tp


def _resident_params(x: _Inputs, layer_params: Any, moe_in: Any, tp: Any, g: Any,
                     tables: Any) -> Any:
    """Weight elements one device of a stage holds: attention and dense FFNs
    (``layer_params``), shared experts + router (``/tp``) and every routed expert (``/g``)
    of its MoE layers, and the ``tables`` (embedding and/or LM head elements, ``/tp``)."""
    p = layer_params
    if x.m.is_moe:
        p = p + moe_in * (x.moe_fixed / tp + x.experts_all / g)
    return p + tables / tp


def _read_params(x: _Inputs, layer_params: Any, moe_in: Any, tp: Any, g: Any,
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


def _step_flops(x: _Inputs, ls: Any, dense_in: Any, moe_in: Any, tp: Any, g: Any, mb: Any,
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


def _kv_per_sequence(x: _Inputs, cp: Any, frac: Any, ls: Any) -> Any:
    """KV bytes of one sequence on one device: ``ceil(context/cp) x kv_bpt x kv_fraction x
    layers_per_stage / layers`` (times the sequences held: memory; read: time)."""
    return -(-x.context // cp) * x.kv_bpt * frac * ls / x.m.layers


def _activation_bytes(x: _Inputs, mb: Any, tp: Any) -> Any:
    """Activation scratch of one micro-batch step, bytes: ``mb x (4 h + 2 ffn/tp) x 2 B``."""
    return mb * ((4 * x.m.hidden + 2 * x.ffn_width / tp) * ACT_BYTES)


def _logit_bytes(x: _Inputs, mb: Any, tp: Any) -> Any:
    """fp32 logits of one micro-batch step on the LM-head stage: ``mb x V/tp x 4 B``.
    Activations + logits are the transient of :func:`labkit.physics.roofline.memory_budget`."""
    return mb * (x.m.vocab * LOGIT_BYTES / tp)


def tp_allreduce_bytes(hidden: Any, layers: Any, tp: Any) -> Any:
    """Ring all-reduce bytes one device sends per token: 2 per layer (after attention and
    after the FFN) of ``hidden x 2 B``, each costing ``2 (tp - 1)/tp`` of the message."""
    return layers * (2 * 2 * hidden * ACT_BYTES) * (tp - 1) / tp


def tp_allreduce_messages(layers: Any, tp: Any) -> Any:
    """Ring steps of TP all-reduces per stage step: 2 per layer, ``2 (tp - 1)`` steps each."""
    return 4 * layers * (tp - 1)


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


def _axis_seconds(pp: Any, mb: Any, nbytes: Any, bandwidth: Any, messages: Any,
                  latency: Any) -> Any:
    """Seconds an axis adds to a token: ``pp`` stages, each sending ``messages`` (paying the
    link's per-message ``latency``) that carry ``mb`` tokens' bytes."""
    return pp * (mb * nbytes / bandwidth + messages * latency)


def _hop_seconds(hops: Any, hop_bytes: Any, bandwidth: float, latency: float) -> Any:
    """Seconds of ``hops`` pipeline hand-offs of ``hop_bytes`` each on one link."""
    return hops * (hop_bytes / bandwidth + latency)


def _latency(roofline_s: Any, tp_s: Any, cp_s: Any, ep_s: Any, pp_s: Any) -> Any:
    return roofline_s + tp_s + cp_s + ep_s + pp_s


def _roofline_seconds(x: _Inputs, pp: Any, read_params: Any, flops: Any,
                      kv_read_bytes: Any) -> Any:
    """``pp`` stage steps, each weight fetch + compute + KV read (+ overhead), seconds."""
    stage = (read_params * x.weight_bytes / x.bandwidth + flops / x.flops
             + kv_read_bytes / x.bandwidth)
    if x.derating.step_overhead_s:
        stage = stage + x.derating.step_overhead_s
    return pp * stage


# -- results ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParallelConfig:
    """One deployment. Memory is per device (the binding device: whichever of the first
    and last pipeline stage uses more), bytes.

    ``*_bytes`` (communication): bytes one device sends per generated token of one
    sequence on that axis. ``*_link``: "interconnect", "scaleout" or "none".
    ``*_s``: seconds that axis adds to ``per_token_latency_s`` (per-message latency plus
    bytes over bandwidth); ``roofline_s`` is the weight + compute + KV (+ overhead) part,
    all ``pp`` stages. ``per_token_latency_s``: seconds between one sequence's tokens.
    ``throughput_tokens_per_s``: whole deployment.
    """

    tp: int
    cp: int
    pp: int
    dp: int
    ep: int
    devices: int
    batch_per_replica: int
    microbatch: int
    layers_per_stage: int
    weights_bytes: float
    kv_bytes: float
    transient_bytes: float
    used_bytes: float
    capacity_bytes: float
    fits: bool
    tp_allreduce_bytes: float
    cp_ring_bytes: float
    pp_handoff_bytes: float
    ep_alltoall_bytes: float
    tp_link: str
    cp_link: str
    pp_link: str
    ep_link: str
    tp_allreduce_s: float
    cp_ring_s: float
    pp_handoff_s: float
    ep_alltoall_s: float
    roofline_s: float
    per_token_latency_s: float
    throughput_tokens_per_s: float

    @property
    def degrees(self) -> tuple[int, int, int, int, int]:
        """(tp, cp, pp, dp, ep)."""
        return self.tp, self.cp, self.pp, self.dp, self.ep

    @property
    def comm_s(self) -> float:
        """Seconds of communication in one token's latency, all axes."""
        return self.tp_allreduce_s + self.cp_ring_s + self.ep_alltoall_s + self.pp_handoff_s

    def as_dict(self) -> dict[str, Any]:
        """Plain, JSON-serialisable fields."""
        return asdict(self)


_INT_FIELDS = ("tp", "cp", "pp", "dp", "ep", "devices", "batch_per_replica", "microbatch",
               "layers_per_stage")
_FLOAT_FIELDS = ("weights_bytes", "kv_bytes", "transient_bytes", "used_bytes",
                 "tp_allreduce_bytes", "cp_ring_bytes", "pp_handoff_bytes",
                 "ep_alltoall_bytes", "tp_allreduce_s", "cp_ring_s", "pp_handoff_s",
                 "ep_alltoall_s", "roofline_s", "per_token_latency_s",
                 "throughput_tokens_per_s")
_LINK_FIELDS = ("tp_link", "cp_link", "pp_link", "ep_link")
_NUMBER_FIELDS = (*_INT_FIELDS, *_FLOAT_FIELDS)


def _rows(cols: Any, idx: Any, capacity_bytes: float) -> tuple[ParallelConfig, ...]:
    """Rows ``idx`` of column arrays (a dict, or a :class:`ConfigTable` read by attribute)
    as :class:`ParallelConfig` objects of plain Python values."""
    get = cols.__getitem__ if isinstance(cols, dict) else cols.__getattribute__
    idx = np.asarray(idx, dtype=np.int64).ravel()
    if idx.size <= 16:  # a search's frontier: read cells, skip per-column fancy indexing
        rows = idx.tolist()

        def column(f: str) -> list[Any]:
            a = get(f)
            return [a.item(i) for i in rows]  # plain int / float / bool
    else:
        def column(f: str) -> list[Any]:
            return get(f)[idx].tolist()  # type: ignore[no-any-return]
    values = [column(f) for f in _NUMBER_FIELDS]
    values += [[LINKS[c] for c in column(f)] for f in _LINK_FIELDS]
    values.append([bool(b) for b in column("fits")])
    names = (*_NUMBER_FIELDS, *_LINK_FIELDS, "fits")
    return tuple(ParallelConfig(capacity_bytes=capacity_bytes,
                                **dict(zip(names, row, strict=True)))
                 for row in zip(*values, strict=True))


@dataclass(frozen=True, eq=False)
class ConfigTable:
    """Every realisable candidate as parallel, read-only numpy arrays (one entry each).

    Array fields carry the names and units of :class:`ParallelConfig`; link fields hold
    codes into :data:`LINKS`. ``config(i)`` returns row ``i`` as a :class:`ParallelConfig`.
    """

    hardware: str
    model: str
    context_tokens: int
    batch: int
    weight_bits: int
    kv_bits: int
    max_devices: int
    mode: str
    capacity_bytes: float
    tp: np.ndarray
    cp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    ep: np.ndarray
    devices: np.ndarray
    batch_per_replica: np.ndarray
    microbatch: np.ndarray
    layers_per_stage: np.ndarray
    weights_bytes: np.ndarray
    kv_bytes: np.ndarray
    transient_bytes: np.ndarray
    used_bytes: np.ndarray
    fits: np.ndarray
    tp_allreduce_bytes: np.ndarray
    cp_ring_bytes: np.ndarray
    pp_handoff_bytes: np.ndarray
    ep_alltoall_bytes: np.ndarray
    tp_link: np.ndarray
    cp_link: np.ndarray
    pp_link: np.ndarray
    ep_link: np.ndarray
    tp_allreduce_s: np.ndarray
    cp_ring_s: np.ndarray
    pp_handoff_s: np.ndarray
    ep_alltoall_s: np.ndarray
    roofline_s: np.ndarray
    per_token_latency_s: np.ndarray
    throughput_tokens_per_s: np.ndarray

    def __len__(self) -> int:
        return int(self.tp.size)

    def config(self, i: int) -> ParallelConfig:
        """Row ``i`` as a :class:`ParallelConfig` of plain Python values."""
        return self.configs([i])[0]

    def configs(self, indices: Any = None) -> tuple[ParallelConfig, ...]:
        """Rows at ``indices`` (default: all) as :class:`ParallelConfig` objects."""
        idx = np.arange(len(self)) if indices is None else indices
        return _rows(self, idx, self.capacity_bytes)


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
        "cp_link": np.where(cp == 1, _NONE, np.where(cp_inside, _FAST, _SCALEOUT)
                            ).astype(np.int8),
        "ep_link": np.where(ep == 1, _NONE, np.where(ep_inside, _FAST, _SCALEOUT)
                            ).astype(np.int8),
        "pp_is_1": pp == 1,
    }
    for a in g.values():
        a.setflags(write=False)
    return g


def _link_of(span: int, hw: Hardware) -> tuple[float, float, int]:
    """Bandwidth (bytes/s), per-message latency (s) and link code of a group spanning
    ``span`` consecutive devices: the fast domain when ``span <= domain_size``, else the
    scale-out network."""
    if span <= hw.domain_size:
        return float(hw.interconnect_bandwidth), float(hw.interconnect_latency_s), _FAST
    return float(hw.scaleout_bandwidth), float(hw.scaleout_latency_s), _SCALEOUT


@lru_cache(maxsize=256)
def _tp_constants(model_id: str, hardware_id: str,
                  tps: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Per TP degree: KV fraction, attention elements per device, TP link bandwidth (1 where
    it is 0, to keep the arithmetic finite), latency, link code, and whether the link is
    usable. Keyed by registry ids (only registry objects are accepted as inputs)."""
    m, hw = get_model(model_id), get_hardware(hardware_id)
    fracs = [kv_fraction_per_device(m.id, t) for t in tps]
    attn = [_attention_params(m, t, f) for t, f in zip(tps, fracs, strict=True)]
    links = [_link_of(t, hw) for t in tps]
    out = (np.asarray(fracs, dtype=float), np.asarray(attn, dtype=float),
           np.asarray([bw if bw > 0 else 1.0 for bw, _, _ in links]),
           np.asarray([a for _, a, _ in links], dtype=float),
           np.asarray([c if t > 1 else _NONE for t, (_, _, c) in zip(tps, links, strict=True)],
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
    return ~active | (inside if fast else ~inside if out else np.zeros_like(inside))


def _and(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    return b if a is None else a if b is None else a & b


def _evaluate(x: _Inputs) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Every column of the candidate table over the whole degree grid, and the mask of
    realisable rows (None when all are). Arithmetic runs on float64 copies of the degrees
    (exact for these integers); the count columns stay int64."""
    m, hw = x.m, x.hw
    degrees = _axis_degrees(x)
    grid = _grid(degrees, x.max_devices, hw.domain_size)
    fr_t, attn_t, tp_bw_t, tp_alpha_t, tp_code_t, tp_ok_t = _tp_constants(m.id, hw.id,
                                                                          degrees[0])
    i_tp, pp, tp_f, cp_f, pp_f = grid["i_tp"], grid["pp"], grid["tp_f"], grid["cp_f"], \
        grid["pp_f"]
    n = i_tp.size

    # layout: every stage holds ls layers; the last stage the last ones
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
    frac = fr_t[i_tp]
    ls_attn = ls_f * attn_t[i_tp]
    base = _layer_params(x, ls_attn, dense_in, tp_f)

    # memory, bytes per device: the last stage, and the first where it can hold more
    tables = (np.where(grid["pp_is_1"], x.tables_single, x.lm_head)
              if x.tables_single != x.lm_head else x.lm_head)
    kv_seq = _kv_per_sequence(x, cp_f, frac, ls_f)
    kv = b_rep * kv_seq
    weights = _resident_params(x, base, moe_in, tp_f, g, tables) * x.weight_bytes
    act, logit = _activation_bytes(x, mb_f, tp_f), _logit_bytes(x, mb_f, tp_f)
    transient = act + logit
    used = weights + kv + transient
    if m.is_moe:  # a dense model's first stage holds what its last does, minus the logits
        dense_first = np.minimum(ls_f, x.dense_layers)
        w_first = _resident_params(x, _layer_params(x, ls_attn, dense_first, tp_f),
                                   ls_f - dense_first, tp_f, g, tables) * x.weight_bytes
        tr_first = act + logit * grid["pp_is_1"]
        used_first = w_first + kv + tr_first
        first = used_first > used
        if first.any():
            weights = np.where(first, w_first, weights)
            transient = np.where(first, tr_first, transient)
            used = np.where(first, used_first, used)

    # roofline of one micro-batch step on the last stage, seconds
    if m.is_moe:
        n_tok = mb_f * np.maximum(1.0, g // (tp_f * cp_f))
        touched = _by_value(n_tok, lambda k: expected_experts_touched(m.id, float(k)))
    else:
        n_tok, touched = mb_f, 0.0
    roofline_s = _roofline_seconds(
        x, pp_f, _read_params(x, base, moe_in, tp_f, g, touched),
        _step_flops(x, ls_f, dense_in, moe_in, tp_f, g, mb_f, n_tok), mb_f * kv_seq)

    # traffic (bytes per token per device), messages, links and seconds per axis
    realisable = None if tp_ok_t.all() else tp_ok_t[i_tp]
    tp_b = tp_allreduce_bytes(m.hidden, ls_f, tp_f)
    tp_s = _axis_seconds(pp_f, mb_f, tp_b, tp_bw_t[i_tp], tp_allreduce_messages(ls_f, tp_f),
                         tp_alpha_t[i_tp])
    zeros = np.zeros(n)
    cp_b = cp_s = ep_b = ep_s = zeros
    cp_link, ep_link = grid["cp_link"], grid["ep_link"]  # "none" where cp (ep) is 1
    if len(degrees[1]) > 1:
        cp_b = cp_ring_bytes(m, ls_f, tp_f, cp_f)
        cp_bw, cp_alpha = _group_link(grid["cp_inside"], hw)
        cp_s = _axis_seconds(pp_f, mb_f, cp_b, cp_bw, cp_ring_messages(ls_f, cp_f), cp_alpha)
        realisable = _and(realisable, _group_ok(grid["cp"] > 1, grid["cp_inside"], hw))
    if m.is_moe:
        ep_f = grid["ep_f"]
        ep_b = ep_alltoall_bytes(m, moe_in, ep_f)
        ep_bw, ep_alpha = _group_link(grid["ep_inside"], hw)
        ep_s = _axis_seconds(pp_f, mb_f, ep_b, ep_bw, ep_alltoall_messages(moe_in, ep_f),
                             ep_alpha)
        ep_on = ep_b > 0
        if not ep_on[grid["ep"] > 1].all():  # a last stage without MoE layers
            ep_link = np.where(ep_on, ep_link, np.int8(_NONE))
        realisable = _and(realisable, _group_ok(ep_on, grid["ep_inside"], hw))

    pp_b = pp_handoff_bytes(m.hidden, pp_f)
    hop_bytes = mb_f * pp_b
    in_bw, out_bw = float(hw.interconnect_bandwidth), float(hw.scaleout_bandwidth)
    pp_s = zeros
    if out_bw > 0:
        pp_s = _hop_seconds(grid["hops_out"], hop_bytes, out_bw, float(hw.scaleout_latency_s))
    if in_bw > 0:
        pp_s = pp_s + _hop_seconds(grid["hops_in"], hop_bytes, in_bw,
                                   float(hw.interconnect_latency_s))
    if in_bw <= 0 or out_bw <= 0:
        realisable = _and(realisable, ((grid["hops_in"] == 0) | (in_bw > 0))
                          & ((grid["hops_out"] == 0) | (out_bw > 0)))
    latency = _latency(roofline_s, tp_s, cp_s, ep_s, pp_s)

    cols = {
        "tp": grid["tp"], "cp": grid["cp"], "pp": pp, "dp": grid["dp"], "ep": grid["ep"],
        "devices": grid["devices"], "batch_per_replica": b_rep, "microbatch": mb,
        "layers_per_stage": ls, "weights_bytes": weights, "kv_bytes": kv,
        "transient_bytes": transient, "used_bytes": used,
        "fits": used <= hw.usable_memory_bytes,
        "tp_allreduce_bytes": tp_b, "cp_ring_bytes": cp_b, "pp_handoff_bytes": pp_b,
        "ep_alltoall_bytes": ep_b, "tp_link": tp_code_t[i_tp], "cp_link": cp_link,
        "pp_link": grid["pp_link"], "ep_link": ep_link, "tp_allreduce_s": tp_s,
        "cp_ring_s": cp_s, "pp_handoff_s": pp_s, "ep_alltoall_s": ep_s,
        "roofline_s": roofline_s, "per_token_latency_s": latency,
        "throughput_tokens_per_s": x.batch / latency,
    }
    if realisable is not None and realisable.all():
        realisable = None
    return cols, realisable


def _table(x: _Inputs, cols: dict[str, np.ndarray],
           realisable: np.ndarray | None) -> ConfigTable:
    floats = set(_FLOAT_FIELDS)
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
    x = _inputs(hardware, model, context_tokens, batch, weight_bits, kv_bits, max_devices, mode)
    return _table(x, *_evaluate(x))


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


def _no_fit_error(x: _Inputs, candidates: int, leanest: ParallelConfig | None,
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
    x = _inputs(hardware, model, context_tokens, batch, weight_bits, kv_bits, max_devices, mode)
    cols, realisable = _evaluate(x)
    lat, devices = cols["per_token_latency_s"], cols["devices"]
    ok = cols["fits"] if slo is None else cols["fits"] & (lat <= slo)
    if realisable is not None:
        ok = ok & realisable
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        t = _table(x, cols, realisable)
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
    frontier = _rows(cols, best[best_lat < prior_min], float(x.hw.usable_memory_bytes))
    candidates = devices.size if realisable is None else int(np.count_nonzero(realisable))
    return ParallelismSearch(
        hardware=x.hw.id, model=x.m.id, context_tokens=x.context, batch=x.batch,
        weight_bits=x.weight_bits, kv_bits=x.kv_bits, max_devices=x.max_devices,
        latency_slo_s=slo, mode=x.derating.name, chosen=frontier[0], frontier=frontier,
        feasible_count=int(idx.size), candidate_count=candidates,
    )


# -- pure-Python reference ----------------------------------------------------------------
def _loop_config(x: _Inputs, tp: int, cp: int, pp: int, dp: int,
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
    attn = _attention_params(m, tp, frac)
    touched = expected_experts_touched(m, float(n_tok)) if m.is_moe else 0.0
    ls_attn = ls * attn
    base = _layer_params(x, ls_attn, dense_in, tp)

    # memory: the last stage (last layers, LM head, logits) and the first stage (first
    # layers, embedding); with pp = 1 both tables sit on the one stage
    tables = x.tables_single if pp == 1 else x.lm_head
    kv_seq = _kv_per_sequence(x, cp, frac, ls)
    kv = b_rep * kv_seq
    weights = _resident_params(x, base, moe_in, tp, g, tables) * x.weight_bytes
    act, logit = _activation_bytes(x, mb, tp), _logit_bytes(x, mb, tp)
    transient = act + logit
    used = weights + kv + transient
    dense_first = min(ls, x.dense_layers)
    w_first = _resident_params(x, _layer_params(x, ls_attn, dense_first, tp),
                               ls - dense_first, tp, g, tables) * x.weight_bytes
    tr_first = act + (logit if pp == 1 else 0.0)
    used_first = w_first + kv + tr_first
    if used_first > used:
        weights, transient, used = w_first, tr_first, used_first

    roofline_s = _roofline_seconds(x, pp, _read_params(x, base, moe_in, tp, g, touched),
                                   _step_flops(x, ls, dense_in, moe_in, tp, g, mb, n_tok),
                                   mb * kv_seq)

    tp_b = float(tp_allreduce_bytes(m.hidden, ls, tp))
    cp_b = float(cp_ring_bytes(m, ls, tp, cp))
    pp_b = float(pp_handoff_bytes(m.hidden, pp))
    ep_b = float(ep_alltoall_bytes(m, moe_in, ep))
    seconds, links = {}, {}
    for axis, nbytes, messages, span in (
            ("tp", tp_b, tp_allreduce_messages(ls, tp), tp),
            ("cp", cp_b, cp_ring_messages(ls, cp), tp * cp),
            ("ep", ep_b, ep_alltoall_messages(moe_in, ep), ep)):
        bw, alpha, code = _link_of(span, hw)
        if nbytes > 0 and bw <= 0:
            return None
        seconds[axis] = (_axis_seconds(pp, mb, nbytes, bw, messages, alpha)
                         if nbytes > 0 else 0.0)
        links[axis] = code if nbytes > 0 else _NONE
    stages_per_domain = max(1, hw.domain_size // stage_devices)
    hops_out = -(-pp // stages_per_domain) - 1
    hops_in = pp - 1 - hops_out
    if (hops_in > 0 and hw.interconnect_bandwidth <= 0) or (
            hops_out > 0 and hw.scaleout_bandwidth <= 0):
        return None
    hop_bytes = mb * pp_b
    out_s = (_hop_seconds(hops_out, hop_bytes, float(hw.scaleout_bandwidth),
                          float(hw.scaleout_latency_s)) if hops_out > 0 else 0.0)
    in_s = (_hop_seconds(hops_in, hop_bytes, float(hw.interconnect_bandwidth),
                         float(hw.interconnect_latency_s)) if hops_in > 0 else 0.0)
    pp_s = out_s + in_s
    pp_link = _NONE if pp == 1 else (_SCALEOUT if hops_out > 0 else _FAST)
    latency = _latency(roofline_s, seconds["tp"], seconds["cp"], seconds["ep"], pp_s)
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
    x = _inputs(hardware, model, context_tokens, batch, weight_bits, kv_bits, max_devices, mode)
    tps, cps, pps, dps, eps = _axis_degrees(x)
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
