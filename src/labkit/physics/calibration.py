"""Peak and achievable against published measurements (``data/measurements.toml``).

Each case is predicted with the same physics a lab uses: a decode case is one
:func:`~labkit.physics.roofline.decode_roofline` step at the case's batch, context,
precisions and TP degree, plus the prefill the benchmark folded into its steps (its
``batching``); a CNN case is one :func:`~labkit.physics.phases.cnn_inference_time` pass.
Nothing is tuned per case: ``achievable`` resolves to the device class's derating.

Error of a case: ``achievable / measured - 1`` (negative = labkit is fast). Summary:
geometric-mean absolute error ``exp(mean |ln(achievable / measured)|) - 1``, the share of
cases within +-35%, and per class the bias ``exp(mean ln(achievable / measured)) - 1``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from labkit.core import validation as v
from labkit.physics.derating import Derating, device_class_of, get_mode, with_attention
from labkit.physics.phases import cnn_inference_time, prefill_time
from labkit.physics.roofline import decode_roofline
from labkit.registries.hardware import get_hardware
from labkit.registries.measurements import Measurement, all_measurements

TOLERANCE = 0.35  # the acceptance band: achievable within +-35% of measured


def static_step_s(step_s: float, batch_prefill_s: float, output_tokens: int) -> float:
    """A fixed batch timed end to end, per step: step + prefill of every prompt / N, s."""
    return step_s + batch_prefill_s / v.positive_int("output_tokens", output_tokens)


def concurrent_step_s(step_s: float, prefill_s: float, concurrency: int,
                      output_tokens: int) -> float:
    """Inter-token latency of a closed loop of ``concurrency`` requests, s.

    While one request makes its N steps, the other B - 1 requests each start once and
    their prefills stall every sequence's step: ITL = step + (B - 1) x prefill / N.
    """
    b = v.positive_int("concurrency", concurrency)
    return step_s + (b - 1) * prefill_s / v.positive_int("output_tokens", output_tokens)


def decode_precision(m: Measurement) -> str | None:
    """Arithmetic of a decode case: FP8 GEMMs for 8-bit weights where the device has FP8
    tensor cores (TensorRT-LLM's fp8 profiles), else the device default."""
    hw = get_hardware(m.hardware)
    return "fp8" if m.weight_bits == 8 and "fp8" in hw.peak_flops else None


def predict(m: Measurement, mode: str | Derating = "achievable") -> float:
    """labkit's value of ``m``'s metric (s) in ``mode``, with the case's configuration
    (``"achievable"``: with the terms of the case's stack and core)."""
    mode = with_attention(get_mode(mode, m.hardware, m.workload, m.stack), m.stack)
    if m.workload == "cnn":
        return float(cnn_inference_time(m.hardware, m.model, m.weight_bits, m.batch,
                                        mode).latency_s)
    prec = decode_precision(m)
    step = float(decode_roofline(m.hardware, m.model, m.batch, m.context_tokens,
                                 m.weight_bits, m.kv_bits, m.tp, mode, prec).step_s)
    if m.batching == "decode-only":
        return step
    one = prefill_time(m.hardware, m.model, m.prompt_tokens, m.weight_bits, m.kv_bits,
                       m.tp, mode, prec)
    if m.batching == "concurrent":
        return concurrent_step_s(step, one.total_s, m.batch, m.output_tokens)
    fixed = one.weight_s + one.overhead_s
    return static_step_s(step, fixed + m.batch * (one.total_s - fixed), m.output_tokens)


@dataclass(frozen=True)
class CalibrationRow:
    """One case: measured and predicted seconds; ratio = measured / achievable."""

    id: str
    device_class: str
    workload: str
    measured_s: float
    peak_s: float
    achievable_s: float

    @property
    def ratio(self) -> float:
        return self.measured_s / self.achievable_s

    @property
    def error(self) -> float:
        """achievable / measured - 1: negative when labkit is faster than the system."""
        return self.achievable_s / self.measured_s - 1.0

    @property
    def within(self) -> bool:
        return abs(self.error) <= TOLERANCE


@dataclass(frozen=True)
class Calibration:
    """Every case and the summary: geomean |error|, share within +-35%, bias per class."""

    rows: tuple[CalibrationRow, ...]
    geomean_abs_error: float
    within_share: float
    bias: Mapping[str, float]
    class_geomean_abs_error: Mapping[str, float]


def _geomean_abs(rows: Sequence[CalibrationRow]) -> float:
    return math.exp(sum(abs(math.log(r.achievable_s / r.measured_s)) for r in rows)
                    / len(rows)) - 1.0


def _bias(rows: Sequence[CalibrationRow]) -> float:
    return math.exp(sum(math.log(r.achievable_s / r.measured_s) for r in rows)
                    / len(rows)) - 1.0


def calibrate(measurements: Sequence[Measurement] | None = None,
              mode: str | Derating = "achievable") -> Calibration:
    """Predict every case in ``peak`` and ``mode`` and summarise the errors (default: every
    published case)."""
    measurements = all_measurements() if measurements is None else measurements
    if not measurements:
        raise ValueError("measurements must hold at least one case")
    rows = tuple(CalibrationRow(m.id, device_class_of(m.hardware).id, m.workload, m.value,
                                predict(m, "peak"), predict(m, mode))
                 for m in measurements)
    classes = sorted({r.device_class for r in rows})
    by = {c: [r for r in rows if r.device_class == c] for c in classes}
    return Calibration(
        rows=rows, geomean_abs_error=_geomean_abs(rows),
        within_share=sum(r.within for r in rows) / len(rows),
        bias=MappingProxyType({c: _bias(by[c]) for c in classes}),
        class_geomean_abs_error=MappingProxyType({c: _geomean_abs(by[c]) for c in classes}),
    )
