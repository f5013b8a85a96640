"""Lab 2 Part A's computation for a CNN pass: one pass on the classic roofline
(:class:`CnnView`), the roofs and the intensity sweep the chart draws, and why a narrower
weight width is no faster (:func:`precision_floor`). :mod:`labkit.plans.roofline` re-exports
these beside the decode step's views."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from labkit.physics.derating import Derating
from labkit.physics.phases import CnnRoofline as CnnRoofline
from labkit.physics.phases import cnn_compute_precision, cnn_inference_time
from labkit.physics.roofline import MODES
from labkit.plans.stacks import NO_STACK, StackChoice, roof, stack_choice
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model

# -- the CNN pass ----------------------------------------------------------------------------

@dataclass(frozen=True)
class CnnView:
    """One CNN pass of ``batch`` inputs at ``weight_bits`` on the classic roofline in
    ``mode``: the physics' ``pass_``, its datapath ``precision``, FLOP per byte, the ridge
    C/BW, C (``c_flops``) and BW in ``mode``, attainable min(C, AI x BW) and achieved
    FLOP/s, and the compute term's parts the math peek prints (``fp32_flops``, the
    CUDA-core rate; ``layer_tail_flop`` per fused layer)."""

    mode: str
    weight_bits: int
    batch: int
    pass_: CnnRoofline
    precision: str
    ai_flop_per_byte: float
    ridge_flop_per_byte: float
    c_flops: float
    bw_bytes_per_s: float
    attainable_flops: float
    achieved_flops: float
    achievable_over_peak: float
    fp32_flops: float
    layer_tail_flop: float
    kernel_layers: int

    latency_s: float  # the pass, s
    regime: str
    cuda_cores: bool  # the engine kept the CUDA-core (FP32) kernels
    tail: bool  # the pass charges each fused layer's tile tail
    achievable_s: float = float("nan")  # the pass at achievable on the stack, s
    stack: StackChoice | None = None  # the stack achievable runs, its term and band

    @property
    def band_s(self) -> tuple[float, float] | None:
        """(fastest, slowest) pass real systems on the stack take where achievable says
        ``achievable_s``, s (None: no band for the device's class)."""
        if self.stack is None or self.stack.band is None:
            return None
        return self.achievable_s * self.stack.band.low, self.achievable_s * self.stack.band.high

    @property
    def band_flops(self) -> tuple[float, float] | None:
        """The band as FLOP/s achieved (the pass's FLOP over the slowest, the fastest)."""
        b = self.band_s
        f = float(self.pass_.flops)
        return None if b is None else (f / b[1], f / b[0])


def _cnn_rates(hw: Hardware, weight_bits: int, d: Derating) -> tuple[str, float, float]:
    """(precision, C FLOP/s, BW B/s) of a CNN pass at ``weight_bits`` under ``d``."""
    prec = cnn_compute_precision(hw, weight_bits)
    return (prec, hw.flops(prec) * d.cnn_flop_efficiency(prec),
            hw.memory_bandwidth * d.bandwidth_efficiency)


def cnn_view(hw: Hardware, m: Model, weight_bits: int, batch: int, mode: str,
             stack: str = NO_STACK) -> CnnView:
    """One pass and every number Part A (CNN) quotes about it (achievable on ``stack``)."""
    ds = {md: roof(md, hw, "cnn", stack) for md in MODES}
    d = ds[mode]
    r = cnn_inference_time(hw, m, weight_bits, batch, d)
    prec, c, bw = _cnn_rates(hw, weight_bits, d)
    ai = float(r.flops / r.bytes_moved)
    other = {md: float(cnn_inference_time(hw, m, weight_bits, batch, ds[md]).latency_s)
             for md in MODES}
    return CnnView(mode, int(weight_bits), int(batch), r, prec, ai, c / bw, c, bw,
                   min(c, ai * bw), float(r.flops) / float(r.latency_s),
                   other["achievable"] / other["peak"],
                   hw.flops("fp32") * d.cnn_flop_efficiency("fp32"), d.layer_tail_flop,
                   m.kernel_layers, float(r.latency_s), str(r.regime), bool(r.cuda_cores),
                   float(r.tail_flops) > 0, other["achievable"],
                   stack_choice(hw, "cnn", stack))


def cnn_roofs(hw: Hardware, precisions: Sequence[str], ai_grid: np.ndarray,
              mode: str, stack: str = NO_STACK) -> np.ndarray:
    """Attainable FLOP/s along ``ai_grid`` for each precision's roof in ``mode``."""
    d = roof(mode, hw, "cnn", stack)
    bw = hw.memory_bandwidth * d.bandwidth_efficiency
    return np.vstack([np.minimum(hw.peak_flops[p] * d.cnn_flop_efficiency(p), ai_grid * bw)
                      for p in precisions])


def cnn_intensity(hw: Hardware, m: Model, weight_bits: int, batches: np.ndarray,
                  mode: str, stack: str = NO_STACK) -> tuple[np.ndarray, float]:
    """(FLOP per byte of a pass at each batch, the ridge C/BW) at ``weight_bits``."""
    d = roof(mode, hw, "cnn", stack)
    r = cnn_inference_time(hw, m, weight_bits, batches, d)
    _, c, bw = _cnn_rates(hw, weight_bits, d)
    return np.asarray(r.flops) / np.asarray(r.bytes_moved), c / bw


@dataclass(frozen=True)
class PrecisionFloor:
    """A pass at ``bits`` no faster than at the next wider width ``wider_bits``: both on
    the ``precision`` datapath and the pass ``regime`` (compute/memory seconds), so only
    the bytes moved fall (``bytes_wider`` -> ``bytes_here``)."""

    bits: int
    wider_bits: int
    precision: str
    regime: str
    compute_s: float
    memory_s: float
    latency_s: float
    bytes_wider: float
    bytes_here: float


def precision_floor(hw: Hardware, m: Model, bits: int, precisions: Sequence[int],
                    batch: int = 1, mode: str = "achievable",
                    stack: str = NO_STACK) -> PrecisionFloor | None:
    """The floor at ``bits`` (None when it is faster than the next wider width)."""
    wider = sorted(p for p in precisions if p > bits)
    if not wider:
        return None
    d = roof(mode, hw, "cnn", stack)
    here = cnn_inference_time(hw, m, bits, batch, d)
    up = cnn_inference_time(hw, m, wider[0], batch, d)
    if float(here.latency_s) < float(up.latency_s):
        return None
    return PrecisionFloor(bits, wider[0], cnn_compute_precision(hw, bits), str(here.regime),
                          float(here.compute_s), float(here.memory_s), float(here.latency_s),
                          float(up.bytes_moved), float(here.bytes_moved))
