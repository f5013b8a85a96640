"""Decode roofline: where a transformer's token time goes, and what batching can fix.

Conventions (the paper's, section 5.1): one decode step of ``B`` sequences at context
``S`` costs

    step = W_bytes / BW           weight fetch, once per step        (flat in B)
         + 2 N B / C              compute, 2 FLOP per active weight  (linear in B)
         + B S kv_bpt / BW        KV read, every sequence its own    (linear in B)

and per-token cost is ``step / B``. The three terms are *added* (no overlap), exactly as
the paper does, so the published figures reproduce. ``N`` counts decoder-block weights
(embedding and LM head excluded) in ``peak`` mode. ``achievable`` mode resolves to the
device class's derating (:mod:`labkit.physics.derating`): achieved bandwidth (lower for
low-bit weights) and FLOP/s, the LM head, per-step and per-layer overheads and the TP
all-reduce on its link -- the reasons measured latency sits above the roofline.

Every function accepts numpy arrays for ``batch`` and ``context_tokens`` and broadcasts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from labkit.core import validation as v
from labkit.core.units import bits_to_bytes
from labkit.physics.derating import ACHIEVABLE as ACHIEVABLE  # re-exported for callers
from labkit.physics.derating import MODES as MODES
from labkit.physics.derating import PEAK as PEAK
from labkit.physics.derating import Derating as Derating
from labkit.physics.derating import DeratingTerm as DeratingTerm
from labkit.physics.derating import contributions
from labkit.physics.derating import get_mode as get_mode
from labkit.physics.kvcache import kv_bytes_per_token, kv_fraction_per_device
from labkit.physics.links import link_of, tp_allreduce_bytes, tp_allreduce_messages
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model, get_model, require_transformer

FLOP_PER_WEIGHT_PER_TOKEN = 2.0  # one multiply + one add per weight per token
REGIMES = ("memory-bound", "compute-bound", "kv-bound", "overhead-bound")


def _setup(hardware: str | Hardware, model: str | Model, precision: str | None,
           mode: str | Derating) -> tuple[Hardware, Model, float, float, Derating]:
    hw = get_hardware(hardware)
    m = require_transformer(get_model(model))
    d = get_mode(mode, hw)
    flops = hw.flops(precision) * d.flop_efficiency
    bandwidth = hw.memory_bandwidth * d.bandwidth_efficiency
    return hw, m, flops, bandwidth, d


def arithmetic_intensity(hardware: str | Hardware, precision: str | None = None,
                         mode: str | Derating = "peak") -> float:
    """Machine balance AI = C / W, FLOP per byte (H100 BF16: 989.4e12 / 3.35e12 = 295)."""
    hw = get_hardware(hardware)
    d = get_mode(mode, hw)
    return hw.flops(precision) * d.flop_efficiency / (hw.memory_bandwidth * d.bandwidth_efficiency)


def critical_batch(hardware: str | Hardware, model: str | Model, weight_bits: int = 16,
                   precision: str | None = None, mode: str | Derating = "peak") -> float:
    """B* = AI x bytes_per_weight / 2 x sparsity, sequences.

    The batch at which reading the weights once per step takes as long as computing with
    them. MoE: sparsity = total / active block weights, because at large batch every expert
    is read each step but each token computes with only its active ones.
    """
    hw, m, flops, _, d = _setup(hardware, model, precision, mode)
    bits = v.precision_bits("weight_bits", weight_bits)
    bandwidth = hw.memory_bandwidth * d.weight_bandwidth_efficiency(bits)
    return flops / bandwidth * bits_to_bytes(bits) / FLOP_PER_WEIGHT_PER_TOKEN * m.moe_sparsity


def balance_context(hardware: str | Hardware, model: str | Model, kv_bits: int = 16,
                    precision: str | None = None, mode: str | Derating = "peak") -> float:
    """L* = 2 N_active / (AI x kv_bytes_per_token), tokens.

    The context at which one sequence's KV read takes as long as its compute. Past L* the
    KV term dominates and no batch size reaches the compute floor.
    """
    _, m, flops, bandwidth, d = _setup(hardware, model, precision, mode)
    kv_bpt = kv_bytes_per_token(m, kv_bits) * kv_read_factor(m, d)
    return FLOP_PER_WEIGHT_PER_TOKEN * m.block_params_active / (flops / bandwidth * kv_bpt)


def kv_read_factor(model: str | Model, mode: str | Derating = "peak") -> float:
    """Times each KV byte is read per decode step (dimensionless).

    A kernel that runs one thread block per *query* head (``kv_per_query_head``) fetches
    a KV head's cache once for each of the q_heads / kv_heads query heads sharing it:
    Llama 2 70B (64 query, 8 KV heads) reads its KV 8 times. A kernel that packs a group's
    query heads into one block (TensorRT-LLM's XQA, FlashAttention, FlashInfer) reads it
    once. MLA's latent is shared by every head and is read once either way.
    """
    m = require_transformer(get_model(model))
    if not get_mode(mode).kv_per_query_head or m.uses_mla or not m.kv_heads:
        return 1.0
    return m.q_heads / m.kv_heads


def knee_batch(hardware: str | Hardware, model: str | Model, context_tokens: float,
               weight_bits: int = 16, kv_bits: int = 16, precision: str | None = None,
               mode: str | Derating = "peak", tp: int = 1) -> float | None:
    """B_knee = W1 / (C1 - K1) per device, sequences; ``None`` when C1 <= K1 (no knee).

    W1, C1, K1: one device's weight, compute and KV seconds of a one-sequence step (fixed
    overheads, LM head and communication left out). The step turns compute-bound when
    memory traffic (weights + KV) and compute overlap: B C1 = W1 + B K1. At ``tp = 1`` this
    is B* / (1 - S/L*); with ``tp`` devices each still reads its KV heads (all of them past
    ``kv_heads``, the whole MLA latent), so the knee moves out. (The paper describes it as
    the point where the weight term drops below the compute + KV floor; in its own
    additive model that point is :func:`weight_amortised_batch`, B*/(1 + S/L*).)
    """
    s = float(v.non_negative("context_tokens", context_tokens))
    hw = get_hardware(hardware)
    d = replace(get_mode(mode, hw), step_overhead_s=0.0, include_lm_head=False,
                layer_overhead_s=0.0, moe_layer_overhead_s=0.0, tp_allreduce=False)
    one = decode_roofline(hw, model, 1, s, weight_bits, kv_bits, tp=tp, mode=d,
                          precision=precision)
    gap = float(one.compute_step_s) - float(one.kv_step_s)
    return float(one.weight_step_s) / gap if gap > 0.0 else None


def weight_amortised_batch(hardware: str | Hardware, model: str | Model, context_tokens: float,
                           weight_bits: int = 16, kv_bits: int = 16,
                           precision: str | None = None,
                           mode: str | Derating = "peak") -> float:
    """B = B* / (1 + S/L*), sequences: per-token weight time equals the compute + KV floor."""
    s = float(v.non_negative("context_tokens", context_tokens))
    b_star = critical_batch(hardware, model, weight_bits, precision, mode) / _sparsity(model)
    return b_star / (1.0 + s / balance_context(hardware, model, kv_bits, precision, mode))


def _sparsity(model: str | Model) -> float:
    return get_model(model).moe_sparsity


def utilization_at(context_tokens: object, l_star: object) -> float | np.ndarray:
    """Peak compute utilisation past the weight term: 1 / (1 + S/L*) (50% at S = L*)."""
    s = v.non_negative("context_tokens", context_tokens)
    ls = v.positive("l_star", l_star)
    return 1.0 / (1.0 + s / ls)


def expected_experts_touched(model: str | Model, batch: object) -> float | np.ndarray:
    """Routed experts per MoE layer that at least one of ``batch`` tokens uses.

    With top-k of E chosen uniformly: E (1 - (1 - k/E)^B). One token reads k experts;
    a large batch reads them all. Dense models: 0.
    """
    m = get_model(model)
    b = v.positive("batch", batch)
    if not m.is_moe:
        return np.zeros_like(b) if isinstance(b, np.ndarray) else 0.0
    e, k = m.experts_total, m.experts_active
    return e * (1.0 - (1.0 - k / e) ** b)


def step_weight_params(model: str | Model, batch: object, tp: int = 1,
                       include_lm_head: bool = False) -> float | np.ndarray:
    """Weights one device reads in one decode step of ``batch`` sequences, elements.

    Tensor parallelism splits every projection ``tp`` ways, except K/V projections, whose
    heads are replicated once ``tp`` exceeds the KV heads. MoE: only the experts touched.
    """
    m = require_transformer(get_model(model))
    t = v.positive_int("tp", tp)
    b = v.positive("batch", batch)
    attn: float = m.attention_params_per_layer
    if not m.uses_mla:
        kv_proj = 2 * m.hidden * m.kv_heads * m.d_head
        attn = (attn - kv_proj) / t + kv_proj * kv_fraction_per_device(m, t)
    else:
        attn = attn / t
    params: float | np.ndarray = attn * m.layers
    if m.is_moe:
        moe_layers = m.layers - m.dense_layers
        touched = expected_experts_touched(m, b) + m.shared_experts
        params = params + (m.dense_layers * m.dense_ffn_params
                           + moe_layers * (touched * m.expert_params
                                           + m.hidden * m.experts_total)) / t
    else:
        params = params + m.layers * m.dense_ffn_params / t
    if include_lm_head:
        params = params + m.lm_head_params / t
    return params + 0.0 * b


@dataclass(frozen=True)
class DecodeRoofline:
    """One decode step, per device, for every (batch, context) point given.

    ``*_step_s`` are seconds for the whole step of ``batch`` sequences; ``*_s`` are the same
    divided by ``batch`` (time per generated token). ``regime`` names the largest term
    (TP communication counts with the overhead).
    """

    batch: np.ndarray | float
    context_tokens: np.ndarray | float
    tp: int
    mode: str
    weight_step_s: np.ndarray | float
    compute_step_s: np.ndarray | float
    kv_step_s: np.ndarray | float
    overhead_step_s: np.ndarray | float
    step_s: np.ndarray | float
    weight_s: np.ndarray | float
    compute_s: np.ndarray | float
    kv_s: np.ndarray | float
    overhead_s: np.ndarray | float
    per_token_s: np.ndarray | float
    tokens_per_s: np.ndarray | float
    regime: np.ndarray | str
    comm_step_s: np.ndarray | float = 0.0
    comm_s: np.ndarray | float = 0.0


def decode_roofline(hardware: str | Hardware, model: str | Model, batch: object = 1,
                    context_tokens: object = 8192, weight_bits: int = 16, kv_bits: int = 16,
                    tp: int = 1, mode: str | Derating = "peak",
                    precision: str | None = None) -> DecodeRoofline:
    """Split one decode step into weight fetch, compute, KV read, overhead and TP comm, s.

    ``tp`` devices share one replica: weights and compute split ``tp`` ways, KV heads too
    until they run out (then replicated). Weights stream at the derating's bandwidth share
    for ``weight_bits`` (dequantisation), the KV at its plain share. Overhead = per step +
    per layer + per MoE layer. Communication (``comm_step_s``) is charged only when the
    derating asks for it (``achievable``): two ring all-reduces per layer on the link the
    TP group crosses (:mod:`labkit.physics.links`, as the parallelism module charges them).
    """
    hw, m, flops, bandwidth, d = _setup(hardware, model, precision, mode)
    b = v.positive("batch", batch)
    s = v.non_negative("context_tokens", context_tokens)
    t = v.positive_int("tp", tp)
    bits = v.precision_bits("weight_bits", weight_bits)
    wb = bits_to_bytes(bits)
    kv_bpt = kv_bytes_per_token(m, kv_bits) * kv_fraction_per_device(m, t) * kv_read_factor(m, d)
    b, s = np.broadcast_arrays(np.asarray(b, dtype=float), np.asarray(s, dtype=float))

    w_bandwidth = hw.memory_bandwidth * d.weight_bandwidth_efficiency(bits)
    weight_step = step_weight_params(m, b, t, d.include_lm_head) * wb / w_bandwidth
    active = m.block_params_active + (m.lm_head_params if d.include_lm_head else 0)
    compute_step = FLOP_PER_WEIGHT_PER_TOKEN * active / t * b / flops
    kv_step = b * s * kv_bpt / bandwidth
    overhead_step = np.full_like(b, step_overhead_s(d, m))
    comm_step = tp_comm_step_s(hw, m, b, t) if d.tp_allreduce else np.zeros_like(b)
    step = weight_step + compute_step + kv_step + overhead_step + comm_step

    terms = np.stack([weight_step, compute_step, kv_step, overhead_step + comm_step])
    regime = np.asarray(REGIMES)[np.argmax(terms, axis=0)]

    def out(x: float | np.ndarray) -> np.ndarray | float:
        return float(x) if np.ndim(x) == 0 else x

    return DecodeRoofline(
        batch=out(b), context_tokens=out(s), tp=t, mode=d.name,
        weight_step_s=out(weight_step), compute_step_s=out(compute_step),
        kv_step_s=out(kv_step), overhead_step_s=out(overhead_step), step_s=out(step),
        weight_s=out(weight_step / b), compute_s=out(compute_step / b), kv_s=out(kv_step / b),
        overhead_s=out(overhead_step / b), per_token_s=out(step / b),
        tokens_per_s=out(b / step),
        regime=str(regime) if regime.ndim == 0 else regime,
        comm_step_s=out(comm_step), comm_s=out(comm_step / b),
    )


def step_overhead_s(derating: Derating, model: str | Model) -> float:
    """Fixed time of one step, s: per step + layers x per layer + MoE layers x per MoE layer
    (kernel launches, small-GEMM tails, routing; none in ``peak``)."""
    m = get_model(model)
    moe_layers = m.layers - m.dense_layers if m.is_moe else 0
    return (derating.step_overhead_s + m.layers * derating.layer_overhead_s
            + moe_layers * derating.moe_layer_overhead_s)


def tp_comm_step_s(hardware: str | Hardware, model: str | Model, batch: object,
                   tp: int) -> np.ndarray | float:
    """TP all-reduce time of one decode step of ``batch`` sequences, s (alpha-beta):
    ring messages x link latency + batch x all-reduce bytes per token / link bandwidth, on
    the link a ``tp``-device group crosses (0 at tp = 1)."""
    hw = get_hardware(hardware)
    m = require_transformer(get_model(model))
    t = v.positive_int("tp", tp)
    b = np.asarray(v.positive("batch", batch), dtype=float)
    if t == 1:
        return np.zeros_like(b)
    bw, alpha, _ = link_of(t, hw)
    if bw <= 0:
        raise ValueError(f"tp={t}: hardware {hw.id!r} has no link between {t} devices")
    out: np.ndarray = (tp_allreduce_messages(m.layers, t) * alpha
                       + b * tp_allreduce_bytes(m.hidden, m.layers, t) / bw)
    return out


def doubling_saving(hardware: str | Hardware, model: str | Model, batch: object,
                    context_tokens: object, weight_bits: int = 16, kv_bits: int = 16,
                    tp: int = 1, mode: str | Derating = "peak") -> np.ndarray | float:
    """1 - t(2B)/t(B): the share of the time per token that doubling the batch saves.

    Per token, in units of one token's compute 2N/C, the additive peak model reads
    t = B*/B + 1 + S/L*: only the weight share B*/B falls with the batch, so doubling
    saves (B*/2B) / (B*/B + 1 + S/L*) -- under 10% exactly when B > 4 B*/(1 + S/L*),
    whatever S is against L*. Computed here from :func:`decode_roofline` (achievable
    mode's overhead included). Dimensionless, in [0, 0.5].
    """
    b = np.asarray(v.positive("batch", batch), dtype=float)
    one = decode_roofline(hardware, model, b, context_tokens, weight_bits, kv_bits, tp, mode)
    two = decode_roofline(hardware, model, 2.0 * b, context_tokens, weight_bits, kv_bits, tp,
                          mode)
    out = 1.0 - np.asarray(two.per_token_s) / np.asarray(one.per_token_s)
    return float(out) if out.ndim == 0 else out


def bound_regime(hardware: str | Hardware, model: str | Model, batch: float,
                 context_tokens: float, **kwargs: Any) -> str:
    """The largest term at one point: memory-, compute-, kv- or overhead-bound."""
    r = decode_roofline(hardware, model, batch, context_tokens, **kwargs)
    return str(r.regime)


@dataclass(frozen=True)
class MemoryBudget:
    """Per-device memory at each swept point, bytes. ``capacity_bytes``: usable memory
    after the serving reserve; ``over_budget`` where used > that capacity."""

    weights_bytes: np.ndarray | float
    kv_bytes: np.ndarray | float
    transient_bytes: np.ndarray | float
    used_bytes: np.ndarray | float
    capacity_bytes: float
    free_bytes: np.ndarray | float
    over_budget: np.ndarray | bool


def memory_budget(hardware: str | Hardware, model: str | Model, context_tokens: object,
                  batch: object = 1, weight_bits: int = 16, kv_bits: int = 16,
                  tp: int = 1, reserve_fraction: object = 0.0) -> MemoryBudget:
    """Per-device weights + KV + decode activations against usable x (1 - reserve) bytes
    (vectorised).

    Weights include every expert, the LM head and the input embedding table unless tied
    (all must be resident even if a step does not read them; with ``tp`` devices each
    holds its share). Transient: one step's activations and fp32 logits per sequence.
    ``reserve_fraction``: the share of memory the serving software keeps back (the same
    reserve :func:`labkit.physics.memory.state_capacity` keeps).
    """
    hw = get_hardware(hardware)
    m = require_transformer(get_model(model))
    t = v.positive_int("tp", tp)
    s = v.non_negative("context_tokens", context_tokens)
    b = v.positive("batch", batch)
    wb = bits_to_bytes(v.precision_bits("weight_bits", weight_bits))
    b, s = np.broadcast_arrays(np.asarray(b, dtype=float), np.asarray(s, dtype=float))
    all_experts = step_weight_params(m, np.asarray(1e9), t, include_lm_head=True)
    embedding = 0.0 if m.tied_embeddings else m.lm_head_params / t
    weights = np.full_like(b, (float(all_experts) + embedding) * wb)
    kv = b * s * kv_bytes_per_token(m, kv_bits) * kv_fraction_per_device(m, t)
    ffn = m.moe_ffn_dim if m.is_moe else m.ffn_dim
    transient = b * ((4 * m.hidden + 2 * ffn / t) * 2.0 + m.vocab / t * 4.0)
    used = weights + kv + transient
    reserve = float(v.fraction("reserve_fraction", reserve_fraction, allow_one=False))
    cap = hw.usable_memory_bytes * (1.0 - reserve)

    def out(x: float | np.ndarray) -> np.ndarray | float:
        return float(x) if np.ndim(x) == 0 else x

    over = used > cap
    return MemoryBudget(
        weights_bytes=out(weights), kv_bytes=out(kv), transient_bytes=out(transient),
        used_bytes=out(used), capacity_bytes=cap, free_bytes=out(np.maximum(0.0, cap - used)),
        over_budget=bool(over) if over.ndim == 0 else over,
    )


@dataclass(frozen=True)
class AISensitivity:
    """Machine balance and B* as one hardware knob is scaled."""

    axis: str
    multiplier: np.ndarray
    flops: np.ndarray
    bandwidth: np.ndarray
    ai_flop_per_byte: np.ndarray
    critical_batch: np.ndarray


def ai_sensitivity(hardware: str | Hardware, model: str | Model, multipliers: object,
                   axis: str = "flops", weight_bits: int = 16) -> AISensitivity:
    """Scale peak FLOP/s (``axis="flops"``) or bandwidth (``"bandwidth"``) by each multiplier.

    AI grows linearly with FLOP/s and falls inversely with bandwidth; B* follows AI.
    """
    hw = get_hardware(hardware)
    m = require_transformer(get_model(model))
    ax = v.choice("axis", axis, ("flops", "bandwidth"))
    k = np.atleast_1d(np.asarray(v.positive("multipliers", multipliers), dtype=float))
    flops = hw.flops() * (k if ax == "flops" else np.ones_like(k))
    bw = hw.memory_bandwidth * (k if ax == "bandwidth" else np.ones_like(k))
    ai = flops / bw
    b = bits_to_bytes(v.precision_bits("weight_bits", weight_bits))
    return AISensitivity(ax, k, flops, bw, ai, ai * b / FLOP_PER_WEIGHT_PER_TOKEN * m.moe_sparsity)


# -- the paper's worked example and its rules (section 5.1-5.2) --------------------------
PAPER_HARDWARE = "ahbm-pe"
PAPER_MODEL = "llama-3.1-70b"
PAPER_MAX_CONTEXT = 1_048_576  # the paper's long-context point, S_kv = 1M tokens
PAPER_BATCHES = (1, 256)       # the paper's batching example, B = 1 -> 256
SERVING_BATCH_FACTOR = 2.0     # paper section 5.2: short-context batch B ~ 2 B*
EXTREME_CONTEXT = 10.0         # "S >> L*" read as S >= 10 L* (the paper's 1M point is 78 L*)


def serving_batch(hardware: str | Hardware, model: str | Model, weight_bits: int = 16,
                  precision: str | None = None, mode: str | Derating = "peak") -> float:
    """B_serve = 2 B*, sequences: the paper's short-context serving batch (section 5.2).

    Dense, peak: per token t = B*/B + 1 + S/L* token-computes, so at 2B* the weight share
    is 1/2 and a further doubling saves (1/4) / (3/2 + S/L*), at most a sixth, while it
    doubles the step time every sequence waits per token (the TPOT).
    """
    return SERVING_BATCH_FACTOR * critical_batch(hardware, model, weight_bits, precision, mode)


@dataclass(frozen=True)
class RegimeRule:
    """One row of the paper's deployment rules: where a point is, what to do there."""

    key: str
    regime: str
    batch: str
    lever: str
    cost_per_token: str


REGIME_RULES: tuple[RegimeRule, ...] = (
    RegimeRule("weights", "short context (S < L*), B < B*: weight fetch outlasts compute",
               "raise B toward 2B*", "batch: every doubling divides the weight share B*/B",
               "falls with every doubling"),
    RegimeRule("serve", "short context (S < L*), B ≥ B*: weight fetch amortised (≤ compute)",
               "B ≈ 2B*", "more FLOP/s, or more replicas (DP) for throughput", "low"),
    RegimeRule("long", "long context (L* ≤ S < 10 L*): each sequence's KV read outlasts its "
               "compute",
               "smaller B, more CP", "fewer KV bytes (8/4-bit KV, GQA/MLA), context "
               "parallelism", "higher"),
    RegimeRule("extreme", "extreme context (S ≥ 10 L*): the KV floor is 10x the compute or "
               "more",
               "dedicated pool, few sequences", "a long-context pool with CP and "
               "disaggregated prefill", "much higher"),
)


def regime_rule(batch: float, context_tokens: float, b_star: float, l_star: float) -> str:
    """The key of the :data:`REGIME_RULES` row a point falls in (context first, then batch).

    S >= 10 L*: ``extreme``; L* <= S: ``long``; else ``weights`` when B < B*, ``serve``
    otherwise. Dimensionless comparisons of B (sequences) and S (tokens).
    """
    b = float(v.positive("batch", batch))
    s = float(v.non_negative("context_tokens", context_tokens))
    bs, ls = float(v.positive("b_star", b_star)), float(v.positive("l_star", l_star))
    if s >= EXTREME_CONTEXT * ls:
        return "extreme"
    if s >= ls:
        return "long"
    return "weights" if b < bs else "serve"


# -- what each derating term adds (labkit roofline --explain, Lab 2 Part A) ---------------
DERATING_TERMS: tuple[tuple[str, str], ...] = (
    ("bandwidth_efficiency", "achieved memory bandwidth"),
    ("bits_bandwidth", "low-bit weights: dequantisation"),
    ("flop_efficiency", "achieved FLOP/s"),
    ("include_lm_head", "LM head read every step"),
    ("step_overhead_s", "per-step overhead"),
    ("layer_overhead_s", "per-layer kernel overhead"),
    ("moe_layer_overhead_s", "per-MoE-layer routing"),
    ("tp_allreduce", "TP all-reduce on its link"),
    ("kv_per_query_head", "KV fetched once per query head"),
)


def derating_contributions(hardware: str | Hardware, model: str | Model, batch: float = 1,
                           context_tokens: float = 8192, weight_bits: int = 16,
                           kv_bits: int = 16, tp: int = 1, mode: str | Derating = "achievable",
                           precision: str | None = None) -> tuple[DeratingTerm, ...]:
    """Each term of ``mode``'s derating and the step seconds it adds, switched on one after
    another in :data:`DERATING_TERMS` order from the peak step (they sum to achievable -
    peak). Terms that add nothing are left out."""
    hw = get_hardware(hardware)
    return contributions(get_mode(mode, hw), DERATING_TERMS, lambda d: float(decode_roofline(
        hw, model, batch, context_tokens, weight_bits, kv_bits, tp, d, precision).step_s))
