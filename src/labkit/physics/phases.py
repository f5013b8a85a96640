"""Prefill vs decode: where one request's time goes, and which phase binds.

Transformer LMs serve a request in two physically different phases:

* **prefill** reads the weights once and multiplies every prompt token by them. It is
  compute-bound for any realistic prompt: ``2 N_active P / C`` for the projections, plus the
  causal attention score/value products ``layers x P^2 x q_heads x (d_qk + d_v) / C``
  (``2 x layers x P^2 x q_heads x d_head`` for GQA), plus one weight read and the KV write.
  Its end is the time to first token (TTFT).
* **decode** produces the remaining tokens one step at a time; each step re-reads every
  weight and the growing KV cache, so it is memory-bound (:func:`labkit.physics.roofline.
  decode_roofline`). Its per-step time is the time per output token (TPOT).

Edge CNNs have no output loop: one inference is one **input pass** over a sensor window or
camera frame, ``max(FLOP / C, bytes / BW)`` with weights at ``weight_bits``, followed by a
tiny **output/decision** pass that slides the window buffer and writes the decision.

Terms are *added*, never overlapped, exactly like :mod:`labkit.physics.roofline`; ``mode`` selects
peak figures or the device class's achievable derating (:mod:`labkit.physics.derating`:
bandwidth/FLOP efficiency, per-step and per-layer overhead; ``"cnn"`` workload for CNNs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit.core import validation as v
from labkit.physics.derating import contributions
from labkit.physics.kvcache import kv_bytes_per_token, kv_fraction_per_device, weight_bytes
from labkit.physics.roofline import (
    FLOP_PER_WEIGHT_PER_TOKEN,
    Derating,
    DeratingTerm,
    decode_roofline,
    get_mode,
    step_overhead_s,
)
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model, get_model, require_transformer

PHASES = ("prefill", "decode")
LLM_PHASE_LABELS = {"prefill": "prefill (prompt pass)", "decode": "decode (output loop)"}
CNN_PHASE_LABELS = {"prefill": "input pass", "decode": "output/decision"}


# -- transformer prefill -------------------------------------------------------------------

@dataclass(frozen=True)
class PrefillTime:
    """One prompt's prefill on one replica of ``tp`` devices, seconds (per device in parallel).

    ``flops`` is the whole replica's work, FLOP; ``weight_bytes`` is what each device reads.
    """

    prompt_tokens: float
    tp: int
    flops: float
    weight_bytes: float
    compute_s: float
    attention_s: float
    weight_s: float
    kv_write_s: float
    overhead_s: float
    total_s: float


def attention_prefill_flops(model: str | Model, prompt_tokens: object) -> float | np.ndarray:
    """Causal self-attention FLOP of one prompt, all layers: layers x P^2 x q_heads x (d_qk + d_v).

    QK^T costs 2 P^2 d_qk per head and softmax(QK^T)V costs 2 P^2 d_v; the causal mask keeps
    half of each. GQA (d_qk = d_v = d_head): 2 x layers x P^2 x q_heads x d_head. Query heads,
    not KV heads: every query head computes its own scores even when K/V are shared.
    """
    m = require_transformer(get_model(model))
    p = v.positive("prompt_tokens", prompt_tokens)
    if m.uses_mla:
        d_qk, d_v = m.qk_nope_dim + m.qk_rope_dim, m.v_head_dim
    else:
        d_qk = d_v = m.d_head
    return m.layers * np.square(p) * m.q_heads * (d_qk + d_v)


def prefill_time(hardware: str | Hardware, model: str | Model, prompt_tokens: object,
                 weight_bits: int = 16, kv_bits: int = 16, tp: int = 1,
                 mode: str | Derating = "achievable",
                 precision: str | None = None) -> PrefillTime:
    """Prefill seconds = projections + attention + one weight read + KV write (+ overhead).

    projections: 2 x N_active x P / (tp x C)          (LM head once, for the last position)
    attention:   layers x P^2 x q_heads x (d_qk+d_v) / (tp x C)
    weights:     resident weight bytes / tp / BW        (read once for the whole prompt)
    KV write:    P x kv_bytes_per_token x share / BW    (share = this device's KV heads)

    ``C`` and ``BW`` are derated by ``mode``, which also adds one pass's fixed overhead
    (per step + per layer, :func:`labkit.physics.roofline.step_overhead_s`). MoE: every
    expert is read (a long prompt routes tokens to all of them) but each token computes
    with its active experts only.
    """
    hw = get_hardware(hardware)
    m = require_transformer(get_model(model))
    d = get_mode(mode, hw)
    p = float(v.positive("prompt_tokens", prompt_tokens))
    t = v.positive_int("tp", tp)
    flops_per_s = hw.flops(precision) * d.flop_efficiency
    bandwidth = hw.memory_bandwidth * d.bandwidth_efficiency
    w_bandwidth = hw.memory_bandwidth * d.weight_bandwidth_efficiency(weight_bits)
    overhead = step_overhead_s(d, m)

    lm_head_flops = FLOP_PER_WEIGHT_PER_TOKEN * m.lm_head_params if d.include_lm_head else 0.0
    proj_flops = FLOP_PER_WEIGHT_PER_TOKEN * m.block_params_active * p + lm_head_flops
    attn_flops = float(attention_prefill_flops(m, p))
    w_bytes = weight_bytes(m, weight_bits, include_lm_head=d.include_lm_head) / t
    kv_write = p * kv_bytes_per_token(m, kv_bits) * kv_fraction_per_device(m, t)

    compute_s = proj_flops / t / flops_per_s
    attention_s = attn_flops / t / flops_per_s
    weight_s = w_bytes / w_bandwidth
    kv_write_s = kv_write / bandwidth
    total = compute_s + attention_s + weight_s + kv_write_s + overhead
    return PrefillTime(
        prompt_tokens=p, tp=t, flops=proj_flops + attn_flops, weight_bytes=w_bytes,
        compute_s=compute_s, attention_s=attention_s, weight_s=weight_s,
        kv_write_s=kv_write_s, overhead_s=overhead, total_s=total,
    )


# -- CNN input pass --------------------------------------------------------------------------

def cnn_compute_precision(hardware: str | Hardware, weight_bits: int) -> str:
    """Arithmetic the device runs a CNN in at ``weight_bits``: integer kernels at <= 8 bits.

    4-bit weights are unpacked into the INT8 datapath (W4A8); 16-bit weights run in FP16
    (BF16 where there is no FP16, FP32 where there is neither, as on a Cortex-M4F); 32-bit in
    FP32 (TF32, then the 16-bit datapath, where the registry has no FP32 figure). A wider
    weight never falls back to a *narrower, faster* datapath, so time per pass never falls
    as the precision rises. Falls back to the device's default precision.
    """
    hw = get_hardware(hardware)
    bits = v.precision_bits("weight_bits", weight_bits)
    wanted = {4: ("int8", "fp16", "bf16", "fp32"), 8: ("int8", "fp16", "bf16", "fp32"),
              16: ("fp16", "bf16", "fp32", "tf32"), 32: ("fp32", "tf32", "fp16", "bf16")}[bits]
    for p in wanted:
        if p in hw.peak_flops:
            return p
    return hw.default_precision


def _activation_bytes_per_element(precision: str) -> float:
    return {"fp32": 4.0, "tf32": 4.0, "fp16": 2.0, "bf16": 2.0}.get(precision, 1.0)


@dataclass(frozen=True)
class CnnRoofline:
    """``batch`` inferences (frames/windows) run together on one device, seconds.

    ``latency_s`` is the whole pass (every frame of the batch is ready at its end);
    ``per_inference_s`` = latency / batch. ``regime`` names the larger roofline term.
    ``tail_flops``: the tile-tail FLOP charged in ``compute_s`` (0 at peak, in FP32, and
    where ``cuda_cores``: the engine kept the CUDA-core kernels, faster than tensor cores
    with their tails; ``compute_s`` is then the FLOP at the FP32 rate).
    """

    batch: np.ndarray | float
    flops: np.ndarray | float
    bytes_moved: np.ndarray | float
    compute_s: np.ndarray | float
    memory_s: np.ndarray | float
    overhead_s: float
    latency_s: np.ndarray | float
    per_inference_s: np.ndarray | float
    regime: np.ndarray | str
    tail_flops: np.ndarray | float = 0.0
    cuda_cores: np.ndarray | bool = False


def cnn_inference_time(hardware: str | Hardware, model: str | Model, weight_bits: int = 8,
                       batch: object = 1, mode: str | Derating = "achievable",
                       precision: str | None = None) -> CnnRoofline:
    """Roofline of one CNN pass over ``batch`` inputs: max(FLOP / C, bytes / BW) + overhead.

    FLOP = batch x flops_per_inference. Bytes = weights at ``weight_bits`` (read once per
    pass) + batch x peak live activations at the compute precision (INT8 figure x 1, 2 or 4
    bytes). Compute and memory overlap inside a layer-by-layer kernel, hence max, not sum.
    Overhead (achievable): per pass + ``kernel_layers`` x per layer (the launch of each fused
    layer); on tensor cores each layer also computes ``layer_tail_flop`` FLOP of idle tail
    (its last partial wave of tiles) at the pass's rate; FP32 passes use the class's FP32
    efficiency (CUDA cores, no tile tail).
    """
    hw = get_hardware(hardware)
    m = get_model(model)
    if m.is_transformer:
        raise ValueError(f"model must be a CNN for this formula; {m.id!r} is a transformer "
                         "(use prefill_time / decode_roofline)")
    d = get_mode(mode, hw, "cnn")
    b = v.positive("batch", batch)
    prec = precision or cnn_compute_precision(hw, weight_bits)
    bandwidth = hw.memory_bandwidth * d.bandwidth_efficiency
    overhead = d.step_overhead_s + m.kernel_layers * d.layer_overhead_s
    flops = np.asarray(b, dtype=float) * m.flops_per_inference
    act = m.activation_bytes_int8 * _activation_bytes_per_element(prec)
    moved = weight_bytes(m, weight_bits) + np.asarray(b, dtype=float) * act
    compute_s, tail, cuda = _cnn_compute_s(hw, d, prec, flops, m.kernel_layers)
    memory_s = moved / bandwidth
    latency = np.maximum(compute_s, memory_s) + overhead
    regime = np.where(compute_s >= memory_s, "compute-bound", "memory-bound")

    def out(x: np.ndarray) -> np.ndarray | float:
        return float(x) if np.ndim(x) == 0 else x

    return CnnRoofline(
        batch=out(np.asarray(b, dtype=float)), flops=out(flops), bytes_moved=out(moved),
        compute_s=out(compute_s), memory_s=out(memory_s), overhead_s=overhead,
        latency_s=out(latency), per_inference_s=out(latency / np.asarray(b, dtype=float)),
        regime=str(regime) if regime.ndim == 0 else regime,
        tail_flops=out(tail), cuda_cores=bool(cuda) if np.ndim(cuda) == 0 else cuda,
    )


def _cnn_compute_s(hw: Hardware, d: Derating, prec: str, flops: np.ndarray,
                   layers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(compute s, tail FLOP charged, CUDA-core kernels kept) of a CNN pass: FLOP / (peak x
    efficiency) at ``prec``; on tensor cores each of the ``layers`` fused layers adds
    ``d.layer_tail_flop`` of partial-wave tail, and the engine keeps the CUDA-core (FP32)
    kernels instead where those are faster (TensorRT times both tactics), so a tiny model
    never runs slower in FP16 than in FP32."""
    rate = hw.flops(prec) * d.cnn_flop_efficiency(prec)
    none = np.zeros_like(flops)
    if prec in ("fp32", "tf32") or d.layer_tail_flop <= 0 or "fp32" not in hw.peak_flops:
        return flops / rate, none, none.astype(bool)
    tail = layers * d.layer_tail_flop
    tensor = (flops + tail) / rate
    cuda_cores = flops / (hw.flops("fp32") * d.cnn_flop_efficiency("fp32"))
    kept = cuda_cores < tensor
    return np.where(kept, cuda_cores, tensor), np.where(kept, 0.0, tail + none), kept


# -- what each CNN derating term adds (labkit roofline --explain on a CNN) ------------------
CNN_DERATING_TERMS: tuple[tuple[str, str], ...] = (
    ("fp32_flop_efficiency", "achieved FP32 FLOP/s (non-tensor datapath)"),
    ("flop_efficiency", "achieved FLOP/s"),
    ("bandwidth_efficiency", "achieved memory bandwidth"),
    ("layer_tail_flop", "idle tail of each layer's last wave of tiles"),
    ("step_overhead_s", "per-pass overhead"),
    ("layer_overhead_s", "per-layer launch"),
)


def cnn_derating_contributions(hardware: str | Hardware, model: str | Model,
                               weight_bits: int = 8, batch: float = 1,
                               mode: str | Derating = "achievable",
                               precision: str | None = None) -> tuple[DeratingTerm, ...]:
    """Each term of ``mode``'s CNN derating and the pass seconds it adds, switched on one
    after another in :data:`CNN_DERATING_TERMS` order from the peak pass; they sum to
    achievable - peak. FP32's own efficiency comes first: switched on after the general
    one it would read as a negative term (an FP32 pass is derated by it alone). Terms that
    add nothing are left out."""
    hw = get_hardware(hardware)
    return contributions(get_mode(mode, hw, "cnn"), CNN_DERATING_TERMS, lambda d: float(
        cnn_inference_time(hw, model, weight_bits, batch, d, precision).latency_s))


def front_end_ops_per_s(hardware: str | Hardware, mode: str | Derating = "achievable"
                        ) -> float:
    """Operations per second of a device's signal front end (FFT, filter bank, DCT in FP32):
    its FP32 peak x the class's CNN FP32 efficiency in ``mode`` (no separate measured DSP
    figure exists for these devices; an estimate)."""
    hw = get_hardware(hardware)
    return hw.flops("fp32") * get_mode(mode, hw, "cnn").cnn_flop_efficiency("fp32")


def decision_time(hardware: str | Hardware, window_bytes: object,
                  mode: str | Derating = "achievable") -> float:
    """Output/decision pass of a CNN, seconds: 2 x window_bytes / BW.

    After the input pass the device slides its sensor-window (or frame) buffer and writes the
    decision record: one read and one write of the window, memory-bound, no compute to speak
    of. There is no autoregressive loop, so this phase stays tiny.
    """
    hw = get_hardware(hardware)
    d = get_mode(mode, hw, "cnn")
    w = v.non_negative("window_bytes", window_bytes)
    return float(2.0 * w / (hw.memory_bandwidth * d.bandwidth_efficiency))


# -- one request -----------------------------------------------------------------------------

@dataclass(frozen=True)
class RequestPhases:
    """Time (s) and energy (J) of one typical request or inference.

    Transformers: ``prefill_s`` is the prompt pass (= ``ttft_s``); ``decode_s`` covers the
    other ``output_tokens - 1`` tokens at ``tpot_s`` each. CNNs: ``prefill_s`` is the input
    pass, ``decode_s`` the output/decision pass, ``tpot_s`` is None and ``ttft_s`` is the
    per-frame latency. ``energy_j`` is this request's share of replica energy (decode steps
    are shared by ``batch`` sequences), None when the device's power is not published.
    """

    kind: str
    prefill_s: float
    decode_s: float
    ttft_s: float
    tpot_s: float | None
    latency_s: float
    binding_phase: str
    phase_labels: dict[str, str]
    energy_j: float | None
    batch: int
    devices: int
    decode_regime: str
    prefill_detail: PrefillTime | CnnRoofline

    @property
    def binding_label(self) -> str:
        return self.phase_labels[self.binding_phase]


def request_phases(hardware: str | Hardware, model: str | Model, *,
                   prompt_tokens: object = None, output_tokens: object = None,
                   weight_bits: int = 16, kv_bits: int = 16, tp: int = 1, batch: int = 1,
                   window_bytes: object = 0.0, mode: str | Derating = "achievable",
                   precision: str | None = None) -> RequestPhases:
    """Split one request into its two phases and name the one that takes longer.

    Transformer: TTFT = prefill; decode = (output_tokens - 1) x TPOT, TPOT = one decode step
    of ``batch`` sequences at the mean context P + output_tokens / 2 (the KV term is linear
    in context, so the mean context gives the exact sum over the growing cache).
    CNN: the input pass of one frame/window and its decision pass (``window_bytes``).
    Energy = devices x power x (prefill + decode / batch), J.
    """
    hw = get_hardware(hardware)
    m = get_model(model)
    t = v.positive_int("tp", tp)
    b = v.positive_int("batch", batch)
    if m.is_transformer:
        p = float(v.positive("prompt_tokens", prompt_tokens))
        n = v.positive_int("output_tokens", output_tokens)
        pre = prefill_time(hw, m, p, weight_bits, kv_bits, t, mode, precision)
        dec = decode_roofline(hw, m, batch=b, context_tokens=p + n / 2.0,
                              weight_bits=weight_bits, kv_bits=kv_bits, tp=t, mode=mode,
                              precision=precision)
        tpot = float(dec.step_s)
        decode_s = (n - 1) * tpot
        prefill_s, ttft, labels, regime = pre.total_s, pre.total_s, LLM_PHASE_LABELS, dec.regime
        detail: PrefillTime | CnnRoofline = pre
        shared_decode = decode_s / b
        tpot_out: float | None = tpot
    else:
        cnn = cnn_inference_time(hw, m, weight_bits, 1, mode, precision)
        prefill_s = float(cnn.latency_s)
        decode_s = decision_time(hw, window_bytes, mode)
        ttft = prefill_s + decode_s
        labels, regime, detail, tpot_out = CNN_PHASE_LABELS, str(cnn.regime), cnn, None
        shared_decode = decode_s
    latency = prefill_s + decode_s
    energy = None
    if hw.power_w is not None:
        energy = t * hw.power_w * (prefill_s + shared_decode)
    return RequestPhases(
        kind="transformer" if m.is_transformer else "cnn",
        prefill_s=prefill_s, decode_s=decode_s, ttft_s=ttft, tpot_s=tpot_out,
        latency_s=latency, binding_phase="prefill" if prefill_s >= decode_s else "decode",
        phase_labels=dict(labels), energy_j=energy, batch=b, devices=t,
        decode_regime=str(regime), prefill_detail=detail,
    )
