"""Peak vs achievable: how far real systems sit above the roofline, by device class.

``peak`` is the paper's roofline (no utilisation factor). ``achievable`` is not one global
pair of factors: it resolves, from the hardware's ``kind``, to the :class:`DeviceClass` the
device belongs to (datacenter GPU, phone/laptop SoC, automotive/embedded SoC, MCU) and, inside it,
to the derating of the workload (``"decode"``: LLM token generation and prefill; ``"cnn"``:
one CNN pass). Each factor carries its source or the fit that set it in ``sources``;
``tests/test_calibration.py`` checks the result against ``data/measurements.toml``.

Terms a :class:`Derating` adds to the roofline (all zero/one in ``peak``):

* ``bandwidth_efficiency`` x ``bits_bandwidth[weight_bits]``: achieved share of peak
  bandwidth for the weight fetch (low-bit weights pay dequantisation, so halving bytes
  does not halve time); the KV read uses ``bandwidth_efficiency`` alone.
* ``flop_efficiency`` (``fp32_flop_efficiency`` for a CNN run in FP32 on CUDA cores).
* ``step_overhead_s`` once per step + ``layer_overhead_s`` per layer (kernel launches and
  small-GEMM tails; the per-layer form makes deep models pay more, and its share shrinks as
  batch grows the other terms) + ``moe_layer_overhead_s`` per MoE layer (router, top-k,
  token permutation, one grouped GEMM per expert).
* ``layer_tail_flop``: a CNN on tensor cores also computes, per fused layer, the idle tail
  of its last partial wave of tiles (FLOP at the pass's rate, so it shrinks on a bigger GPU).
* ``tp_allreduce``: charge the two ring all-reduces per layer of tensor parallelism on the
  link they cross (:mod:`labkit.physics.links`, the parallelism module's link model).
* ``include_lm_head``: read the hidden x vocab projection every step.
* ``kv_per_query_head``: the attention kernel reads a KV head's cache once for every query
  head that shares it (one thread block per query head: TensorRT-LLM before its XQA kernel,
  vLLM's 2023 PagedAttention), so a GQA model's KV read costs ``q_heads / kv_heads`` times
  its bytes. Set from the stack (:attr:`labkit.registries.stacks.Stack.kv_per_query_head`).

New classes register in :data:`DEVICE_CLASSES` (an extension point: a record per class,
no string switches); :func:`get_mode` resolves ``"achievable"`` through it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from labkit.core import validation as v
from labkit.physics.stacks import SHIPPED
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.stacks import get_stack

WORKLOADS = ("decode", "cnn")


@dataclass(frozen=True)
class Derating:
    """How far a real system sits below the peak roofline (see the module docstring).

    bandwidth_efficiency / flop_efficiency: achieved fraction of peak (0, 1].
    step_overhead_s: fixed CPU/launch/sampling time per step (or CNN pass), s.
    include_lm_head: read the hidden x vocab output projection every step.
    layer_overhead_s: extra time per layer per step, s. moe_layer_overhead_s: per MoE layer.
    bits_bandwidth: weight bits -> achieved share of ``bandwidth_efficiency`` (1 if absent).
    fp32_flop_efficiency: CNN in FP32 (non-tensor datapath); None = ``flop_efficiency``.
    tp_allreduce: charge TP all-reduces on their link in the decode roofline.
    layer_tail_flop: CNN, per fused layer per pass: the idle compute of its last partial
    wave of tiles, in FLOP at the pass's rate (it scales with the device, unlike
    ``layer_overhead_s``).
    kv_per_query_head: the KV cache is read once per query head, not per KV head.
    """

    name: str
    bandwidth_efficiency: float
    flop_efficiency: float
    step_overhead_s: float
    include_lm_head: bool
    sources: Mapping[str, str] = field(default_factory=dict)
    layer_overhead_s: float = 0.0
    moe_layer_overhead_s: float = 0.0
    bits_bandwidth: Mapping[int, float] = field(default_factory=dict)
    fp32_flop_efficiency: float | None = None
    tp_allreduce: bool = False
    layer_tail_flop: float = 0.0
    kv_per_query_head: bool = False

    def weight_bandwidth_efficiency(self, weight_bits: int) -> float:
        """Achieved share of peak bandwidth when streaming ``weight_bits`` weights."""
        return self.bandwidth_efficiency * self.bits_bandwidth.get(int(weight_bits), 1.0)

    def slowed(self, scale: float) -> Derating:
        """This derating with every term it sets taking ``scale`` x the time: shares of
        peak divided by ``scale`` (capped at 1: never faster than peak), overheads times
        ``scale``. A link's all-reduce time is the link's, not the stack's: unchanged."""
        s = float(v.positive("scale", scale))
        if s == 1.0:
            return self
        f32 = self.fp32_flop_efficiency
        return replace(
            self, bandwidth_efficiency=min(1.0, self.bandwidth_efficiency / s),
            flop_efficiency=min(1.0, self.flop_efficiency / s),
            fp32_flop_efficiency=None if f32 is None else min(1.0, f32 / s),
            step_overhead_s=self.step_overhead_s * s, layer_overhead_s=self.layer_overhead_s * s,
            moe_layer_overhead_s=self.moe_layer_overhead_s * s)

    def cnn_flop_efficiency(self, precision: str) -> float:
        """Achieved share of peak FLOP/s of a CNN pass run in ``precision``."""
        if precision in ("fp32", "tf32") and self.fp32_flop_efficiency is not None:
            return self.fp32_flop_efficiency
        return self.flop_efficiency


PEAK = Derating("peak", 1.0, 1.0, 0.0, False, MappingProxyType({
    "all": "paper section 5.1: peak roofline, no utilisation factor, decoder blocks only",
}))

_LM_HEAD = ("the hidden x vocab projection is read every step (about 1.5% of Llama 3.1 70B, "
            "27% of Llama 3.2 1B)")
_FIT_DC = ("fit: the grid value with the least mean |log error| over all 16 datacenter cases "
           "of data/measurements.toml, one value for the class (benchmarks/"
           "bench_calibration.py --fit)")

DATACENTER_DECODE = Derating(
    "achievable", 0.90, 0.60, 0.3e-3, True, MappingProxyType({
        "bandwidth_efficiency": "decode GEMV kernels in vLLM/TensorRT-LLM reach roughly "
                                "80-95% of HBM peak on large weight matrices (public kernel "
                                "benchmarks); 90% used",
        "flop_efficiency": "dense GEMM model-FLOP utilisation of 50-70% is typical in "
                           "serving; 60% used",
        "step_overhead_s": "scheduling and sampling once per step with CUDA graphs "
                           "(estimate: 0.3 ms)",
        "layer_overhead_s": "kernel launches and small-GEMM tails, about 10 kernels per "
                            "layer: " + _FIT_DC + " (issue 14: 0.9-1.5 ms measured gap on "
                            "an 8B model at batch 1)",
        "moe_layer_overhead_s": "router, top-k, token permutation and one GEMM per touched "
                                "expert: " + _FIT_DC + " (the Mixtral cases)",
        "bits_bandwidth": "fp8 decode measured 1.47x faster than bf16, not 2x (issue 14): "
                          "8-bit weights stream at 1.47/2 = 0.735 of the bf16 rate "
                          "(dequantisation/scaling in the GEMV); 4-bit: no measured case, "
                          "the phone class's factor (0.72) used",
        "tp_allreduce": "two ring all-reduces per layer (after attention and after the "
                        "FFN) on the link the TP group crosses (NVLink inside the domain)",
        "include_lm_head": _LM_HEAD,
    }),
    layer_overhead_s=70e-6, moe_layer_overhead_s=60e-6,
    bits_bandwidth=MappingProxyType({8: 0.735, 4: 0.72}), tp_allreduce=True,
)
ACHIEVABLE = DATACENTER_DECODE  # the class "achievable" means when no hardware is given

_PHONE_FIT = ("fit to the 7 ExecuTorch (XNNPACK/KleidiAI, OnePlus 12) cases of "
              "data/measurements.toml")
PHONE_DECODE = Derating(
    "achievable", 0.65, 0.50, 1.0e-3, True, MappingProxyType({
        "bandwidth_efficiency": "bf16 decode on the phone's CPU cores: " + _PHONE_FIT +
                                " (LPDDR5X shared with the OS and GPU; the CPU cluster does "
                                "not saturate the whole memory system)",
        "flop_efficiency": "estimate: NEON/SMMLA GEMV kernels at half of peak",
        "step_overhead_s": "estimate: 1 ms per token of sampling, threadpool sync and "
                           "runtime dispatch",
        "layer_overhead_s": "estimate: 20 us per layer of operator dispatch and thread "
                            "barriers",
        "bits_bandwidth": "4-bit group-wise weights reach 45-50% of the phone's memory "
                          "bandwidth in measured llama.cpp/ExecuTorch decode (issue 14): "
                          "0.47 / 0.65 = 0.72 of the bf16 rate; 8-bit halfway",
        "include_lm_head": _LM_HEAD,
    }),
    layer_overhead_s=20e-6, bits_bandwidth=MappingProxyType({8: 0.86, 4: 0.72}),
)

_ORIN_FIT = ("fit: least mean |log error| over the 6 Jetson Orin TensorRT cases of "
             "data/measurements.toml (ResNet-50 at batch 1 and 8 on the AGX Orin, YOLOv8n in "
             "INT8/FP16/FP32 on the Orin Nano Super and FP16 on the AGX Orin; "
             "benchmarks/bench_calibration.py --fit)")
EDGE_GPU_CNN = Derating(
    "achievable", 0.80, 0.40, 0.0, False, MappingProxyType({
        "bandwidth_efficiency": "estimate: LPDDR5 streaming at 80% of peak",
        "flop_efficiency": "tensor-core share reached on the layers' full waves of tiles: "
                           + _ORIN_FIT,
        "fp32_flop_efficiency": "FP32 runs on the CUDA cores, which small convolutions fill "
                                "far better than tensor cores (no tile tail charged): "
                                + _ORIN_FIT,
        "step_overhead_s": "none: trtexec GPU compute time and MLPerf's latency exclude "
                           "host copies; the fit finds no per-pass term",
        "layer_overhead_s": "per fused layer the engine launches, a fixed launch latency: "
                            + _ORIN_FIT,
        "layer_tail_flop": "per fused layer, the last partial wave of tensor-core tiles "
                           "(few channels, depthwise, tile quantisation), as FLOP at the "
                           "pass's rate, so it shrinks on a bigger GPU: YOLOv8n FP16 runs "
                           "2.1x faster on the AGX Orin than on the Orin Nano Super (2.5x "
                           "the tensor FLOP/s), which a fixed per-layer time cannot give: "
                           + _ORIN_FIT,
        "include_lm_head": "not a transformer",
    }),
    layer_overhead_s=5e-6, fp32_flop_efficiency=0.55, layer_tail_flop=90e6,
)

MCU_CYCLES_PER_MAC = 3.3
MCU_PEAK_MACS_PER_CYCLE = 2.0  # SMLAD: two 16-bit MACs per cycle (the registry's peak)
MCU_CNN = Derating(
    "achievable", 0.50, MCU_PEAK_MACS_PER_CYCLE ** -1 / MCU_CYCLES_PER_MAC, 0.0, False,
    MappingProxyType({
        "flop_efficiency": f"{MCU_CYCLES_PER_MAC} cycles per MAC against the peak of "
                           f"{MCU_PEAK_MACS_PER_CYCLE:g} MACs per cycle (SMLAD) = "
                           f"1/{MCU_PEAK_MACS_PER_CYCLE * MCU_CYCLES_PER_MAC:.1f} of peak: "
                           "fit, the least mean |log error| over the 9 fitted MLPerf Tiny "
                           "v0.5-v1.3 KWS cases on Cortex-M4 boards, the reference core "
                           "(optimised kernels -- X-CUBE-AI 7.3/8.0, Plumerai, ONNC and "
                           "microTVM with CMSIS-NN -- run 3.0-4.5 cycles per MAC, X-CUBE-AI "
                           "10.2 2.0; the TFLM reference and microTVM without CMSIS-NN "
                           "6.5-8.2): im2col, requantisation and loop overhead. The kernel "
                           "library's and other cores' own terms: labkit.physics.stacks",
        "bandwidth_efficiency": "estimate: byte-wise copies over a 32-bit SRAM bus, about "
                                "half of the bus width per cycle",
        "step_overhead_s": "included in the cycles per MAC (whole-inference fit)",
        "include_lm_head": "not a transformer",
    }),
)


@dataclass(frozen=True)
class DeviceClass:
    """One class of devices: the hardware kinds in it and its derating per workload."""

    id: str
    label: str
    kinds: tuple[str, ...]
    decode: Derating
    cnn: Derating
    notes: str = ""

    def derating(self, workload: str) -> Derating:
        """This class's achievable derating for ``workload`` ("decode" or "cnn")."""
        w = v.choice("workload", workload, WORKLOADS)
        return self.decode if w == "decode" else self.cnn


DEVICE_CLASSES: Mapping[str, DeviceClass] = MappingProxyType({c.id: c for c in (
    DeviceClass("datacenter", "datacenter GPU", ("datacenter-gpu", "tpu", "pe"),
                DATACENTER_DECODE, EDGE_GPU_CNN,
                notes="CNN: no datacenter CNN case; the Orin TensorRT fit is carried over"),
    DeviceClass("phone", "phone/laptop SoC", ("phone-soc", "laptop-soc"), PHONE_DECODE,
                EDGE_GPU_CNN,
                notes="CNN: no phone CNN case; the Orin TensorRT fit is carried over"),
    DeviceClass("automotive", "automotive/embedded SoC", ("auto-soc",), PHONE_DECODE,
                EDGE_GPU_CNN,
                notes="decode: no measured case; the phone class (LPDDR SoC) is carried over"),
    DeviceClass("mcu", "microcontroller", ("mcu",), PHONE_DECODE, MCU_CNN,
                notes="decode: no LLM runs on an MCU; the phone class is a placeholder"),
)})


def device_class_of(hardware: str | Hardware) -> DeviceClass:
    """The :class:`DeviceClass` whose ``kinds`` include the hardware's ``kind``."""
    hw = get_hardware(hardware)
    for c in DEVICE_CLASSES.values():
        if hw.kind in c.kinds:
            return c
    raise ValueError(f"hardware {hw.id!r}: kind {hw.kind!r} is in no device class "
                     f"({', '.join(DEVICE_CLASSES)})")


def get_mode(mode: str | Derating, hardware: str | Hardware | None = None,
             workload: str = "decode", stack: str | None = None) -> Derating:
    """``"peak"``, ``"achievable"`` (resolved by the hardware's device class and the
    workload, slowed by the fitted terms of ``stack``'s kernel library and of a
    microcontroller's core (:mod:`labkit.physics.stacks`; none for an unknown stack); the
    datacenter decode derating when no hardware is given) or a custom :class:`Derating`
    (passed through)."""
    if isinstance(mode, Derating):
        return mode
    name = v.choice("mode", mode, ("peak", "achievable"))
    if name == "peak":
        return PEAK
    if hardware is None:
        return ACHIEVABLE
    hw = get_hardware(hardware)
    c = device_class_of(hw)
    return with_attention(c.derating(workload).slowed(SHIPPED.scale(c.id, stack, hw.core)),
                          stack)


def with_attention(d: Derating, stack: str | None) -> Derating:
    """``d`` running ``stack``'s decode attention kernel: with ``kv_per_query_head`` when
    the stack fetches the KV once per query head (a property of its kernel, not a fit;
    ``peak`` and an unknown stack are unchanged)."""
    if d is PEAK or d.kv_per_query_head or not stack or not get_stack(stack).kv_per_query_head:
        return d  # (get_mode's achievable already has it: once is enough)
    return replace(d, kv_per_query_head=True, sources=MappingProxyType(
        {**d.sources, "kv_per_query_head": get_stack(stack).source}))


MODES: Mapping[str, Derating] = MappingProxyType({"peak": PEAK, "achievable": ACHIEVABLE})


# -- what each term adds (labkit roofline --explain, Lab 2 Part A) -------------------------
@dataclass(frozen=True)
class DeratingTerm:
    """What one derating term adds to a decode step or a CNN pass, s (terms switched on
    in order)."""

    key: str
    label: str
    added_step_s: float
    source: str


_OFF: Mapping[str, object] = MappingProxyType({
    "bandwidth_efficiency": 1.0, "flop_efficiency": 1.0, "step_overhead_s": 0.0,
    "include_lm_head": False, "layer_overhead_s": 0.0, "moe_layer_overhead_s": 0.0,
    "bits_bandwidth": MappingProxyType({}), "fp32_flop_efficiency": None,
    "tp_allreduce": False, "layer_tail_flop": 0.0, "kv_per_query_head": False,
})
"""Each term's value in ``peak`` (switched off)."""


def switched_on(d: Derating, keys: set[str]) -> Derating:
    """``d`` with only the terms in ``keys`` on, every other at its peak value."""
    return replace(d, **{f: off for f, off in _OFF.items() if f not in keys})  # type: ignore[arg-type]


def contributions(d: Derating, terms: Sequence[tuple[str, str]],
                  time_s: Callable[[Derating], float]) -> tuple[DeratingTerm, ...]:
    """Each of ``terms`` (key, label) switched on one after another from peak, and the
    seconds it adds to ``time_s``; with every term ``d`` sets among them they sum to
    time_s(d) - time_s(peak). Terms that add nothing are left out."""
    on: set[str] = set()
    prev = time_s(switched_on(d, on))
    out = []
    for key, label in terms:
        on.add(key)
        now = time_s(switched_on(d, on))
        if now != prev:
            out.append(DeratingTerm(key, label, now - prev, str(d.sources.get(key, ""))))
        prev = now
    return tuple(out)
