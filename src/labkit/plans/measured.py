"""Where real systems sit: the published measurements
(:data:`labkit.registries.measurements.MEASUREMENTS`) against labkit's peak and achievable
for each case's own configuration (:func:`labkit.physics.calibration.calibrate`), and
which cases a device (or its device class) has. Lab 2 Part A's measured points read
these; the view never calls the physics.

* :func:`calibration_row` -- measured, peak and achievable seconds of one case.
* :func:`device_cases` / :func:`class_cases_elsewhere` -- a device's own cases, or its
  class's cases on other devices.
* :func:`device_class` -- the label and notes of a device's class.
* :func:`cnn_case_point` -- where a CNN case sits on the classic roofline (FLOP/byte,
  achieved FLOP/s).
* the band real systems span around achievable, per stack: :mod:`labkit.plans.stacks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from labkit.physics.calibration import CalibrationRow, calibrate
from labkit.physics.derating import device_class_of
from labkit.physics.phases import cnn_inference_time
from labkit.registries.hardware import HARDWARE, Hardware
from labkit.registries.measurements import Measurement, all_measurements

__all__ = ["CalibrationRow", "DeviceClassInfo", "calibration_row",
           "class_cases_elsewhere", "cnn_case_point", "device_cases",
           "device_class", "device_class_label"]


@cache
def _calibration() -> Mapping[str, CalibrationRow]:
    """labkit's peak and achievable for every published case, by case id (computed once)."""
    return {r.id: r for r in calibrate(all_measurements()).rows}


def calibration_row(m: Measurement) -> CalibrationRow:
    """Measured, peak and achievable seconds of case ``m`` (ratio: measured / achievable)."""
    return _calibration()[m.id]


@dataclass(frozen=True)
class DeviceClassInfo:
    """A device class: its id, label (``datacenter GPU``) and notes."""

    id: str
    label: str
    notes: str


def device_class(hw: Hardware | str) -> DeviceClassInfo:
    """The class ``hw`` belongs to (whose derating "achievable" uses)."""
    c = device_class_of(hw)
    return DeviceClassInfo(c.id, c.label, c.notes)


def device_class_label(hw: Hardware | str) -> str:
    """The name of ``hw``'s device class (whose derating "achievable" uses)."""
    return device_class_of(hw).label


def device_cases(hw: Hardware, workload: str) -> tuple[Measurement, ...]:
    """The published ``workload`` cases that ran on ``hw``; none for a modified device."""
    if HARDWARE.get(hw.id) != hw:
        return ()
    return tuple(m for m in all_measurements() if m.hardware == hw.id and m.workload == workload)


def class_cases_elsewhere(hw: Hardware, workload: str) -> tuple[Measurement, ...]:
    """The ``workload`` cases of ``hw``'s device class that ran on another device."""
    cls = device_class_of(hw).id
    return tuple(m for m in all_measurements() if m.workload == workload and m.hardware != hw.id
                 and device_class_of(m.hardware).id == cls)


def cnn_case_point(m: Measurement) -> tuple[float, float]:
    """(FLOP per byte of the case's pass at peak, FLOP/s it achieved: its pass's FLOP
    over the measured latency)."""
    r = cnn_inference_time(m.hardware, m.model, m.weight_bits, m.batch, "peak")
    return float(r.flops / r.bytes_moved), float(r.flops) / m.value

