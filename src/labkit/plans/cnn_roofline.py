"""Lab 2 Part A's computation for a CNN pass: one pass on the classic roofline
(:class:`CnnView`), the roofs and the intensity sweep the chart draws, and why a narrower
weight width is no faster (:func:`precision_floor`). :mod:`labkit.plans.roofline` re-exports
these beside the decode step's views."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from labkit.physics.phases import CnnRoofline as CnnRoofline
from labkit.physics.phases import cnn_compute_precision, cnn_inference_time
from labkit.physics.roofline import MODES, get_mode
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


def _cnn_rates(hw: Hardware, weight_bits: int, mode: str) -> tuple[str, float, float]:
    """(precision, C FLOP/s, BW B/s) of a CNN pass at ``weight_bits`` in ``mode``."""
    d = get_mode(mode, hw, "cnn")
    prec = cnn_compute_precision(hw, weight_bits)
    return (prec, hw.flops(prec) * d.cnn_flop_efficiency(prec),
            hw.memory_bandwidth * d.bandwidth_efficiency)


def cnn_view(hw: Hardware, m: Model, weight_bits: int, batch: int, mode: str) -> CnnView:
    """One pass and every number Part A (CNN) quotes about it."""
    r = cnn_inference_time(hw, m, weight_bits, batch, mode)
    prec, c, bw = _cnn_rates(hw, weight_bits, mode)
    ai = float(r.flops / r.bytes_moved)
    other = {md: float(cnn_inference_time(hw, m, weight_bits, batch, md).latency_s)
             for md in MODES}
    d = get_mode(mode, hw, "cnn")
    return CnnView(mode, int(weight_bits), int(batch), r, prec, ai, c / bw, c, bw,
                   min(c, ai * bw), float(r.flops) / float(r.latency_s),
                   other["achievable"] / other["peak"],
                   hw.flops("fp32") * d.cnn_flop_efficiency("fp32"), d.layer_tail_flop,
                   m.kernel_layers, float(r.latency_s), str(r.regime), bool(r.cuda_cores),
                   float(r.tail_flops) > 0)


def cnn_roofs(hw: Hardware, precisions: Sequence[str], ai_grid: np.ndarray,
              mode: str) -> np.ndarray:
    """Attainable FLOP/s along ``ai_grid`` for each precision's roof in ``mode``."""
    d = get_mode(mode, hw, "cnn")
    bw = hw.memory_bandwidth * d.bandwidth_efficiency
    return np.vstack([np.minimum(hw.peak_flops[p] * d.cnn_flop_efficiency(p), ai_grid * bw)
                      for p in precisions])


def cnn_intensity(hw: Hardware, m: Model, weight_bits: int, batches: np.ndarray,
                  mode: str) -> tuple[np.ndarray, float]:
    """(FLOP per byte of a pass at each batch, the ridge C/BW) at ``weight_bits``."""
    r = cnn_inference_time(hw, m, weight_bits, batches, mode)
    _, c, bw = _cnn_rates(hw, weight_bits, mode)
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
                    batch: int = 1, mode: str = "achievable") -> PrecisionFloor | None:
    """The floor at ``bits`` (None when it is faster than the next wider width)."""
    wider = sorted(p for p in precisions if p > bits)
    if not wider:
        return None
    here = cnn_inference_time(hw, m, bits, batch, mode)
    up = cnn_inference_time(hw, m, wider[0], batch, mode)
    if float(here.latency_s) < float(up.latency_s):
        return None
    return PrecisionFloor(bits, wider[0], cnn_compute_precision(hw, bits), str(here.regime),
                          float(here.compute_s), float(here.memory_s), float(here.latency_s),
                          float(up.bytes_moved), float(here.bytes_moved))
