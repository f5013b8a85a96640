"""Validation of ``achievable`` that cannot flatter itself: leave one source family out.

The fitted terms of each device class's derating (:mod:`labkit.physics.derating`) were set
by a grid search over that class's published cases (:data:`FITS`: the grid, and the
derating and workload it sets). Judged on the same cases, the fit looks better than it
is. Here each source family (:attr:`Measurement.source_family`: one publisher's pages, CI
or result logs) is held out in turn: the class is refit on the other families' cases
alone and the held-out family is predicted with that refit. A class whose cases all come
from one family cannot be validated this way; its cases are reported as such, never
counted as within the band.

Error of a case as in :mod:`labkit.physics.calibration`: ``achievable / measured - 1``.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from labkit.physics import derating as dr
from labkit.physics.calibration import TOLERANCE, predict
from labkit.physics.derating import WORKLOADS, Derating, device_class_of
from labkit.physics.stacks import REFERENCE_CORE, StackTerms, fit_class_terms, merge
from labkit.registries.hardware import get_hardware
from labkit.registries.measurements import Measurement, all_measurements


@dataclass(frozen=True)
class ClassFit:
    """The grid a class's fitted terms were chosen on: ``make(*point)`` gives the
    :func:`dataclasses.replace` keywords of ``base`` at one grid point."""

    workload: str
    base: Derating
    make: Callable[..., dict[str, Any]]
    axes: tuple[tuple[float, ...], ...]


def _datacenter(bw: float, lo: float, mo: float) -> dict[str, Any]:
    return {"bandwidth_efficiency": bw, "layer_overhead_s": lo, "moe_layer_overhead_s": mo}


def _edge_cnn(e: float, e32: float, tail: float, lo: float) -> dict[str, Any]:
    return {"flop_efficiency": e, "fp32_flop_efficiency": e32, "layer_tail_flop": tail,
            "layer_overhead_s": lo}


def _phone(bw: float, q4: float) -> dict[str, Any]:
    return {"bandwidth_efficiency": bw,
            "bits_bandwidth": MappingProxyType({4: q4, 8: (1 + q4) / 2})}


def _mcu(cycles_per_mac: float) -> dict[str, Any]:
    return {"flop_efficiency": 1 / (dr.MCU_PEAK_MACS_PER_CYCLE * cycles_per_mac)}


FITS: Mapping[str, ClassFit] = MappingProxyType({
    # bandwidth fixed: a sourced estimate, not a fit
    "datacenter": ClassFit("decode", dr.DATACENTER_DECODE, _datacenter,
                           ((0.9,), (50e-6, 60e-6, 70e-6, 80e-6, 90e-6),
                            (0.0, 30e-6, 60e-6, 90e-6))),
    "automotive": ClassFit("cnn", dr.EDGE_GPU_CNN, _edge_cnn,
                           ((0.38, 0.4, 0.42, 0.44, 0.46, 0.48), (0.5, 0.55, 0.6),
                            (80e6, 90e6, 100e6, 110e6, 120e6, 130e6),
                            (3e-6, 4e-6, 5e-6, 6e-6, 7e-6))),
    # the 4-bit share fixed: from one measurement
    "phone": ClassFit("decode", dr.PHONE_DECODE, _phone,
                      ((0.55, 0.6, 0.65, 0.7, 0.75), (0.72,))),
    "mcu": ClassFit("cnn", dr.MCU_CNN, _mcu, ((2.9, 3.1, 3.3, 3.5, 3.7, 3.9, 4.1),)),
})
"""Device class -> the grid its fitted terms were chosen on (``bench_calibration --fit``,
over the class's fitted cases: :attr:`Measurement.fitted`)."""


def mean_abs_log_error(cases: Sequence[Measurement], d: Derating) -> float:
    """Mean |ln(predicted / measured)| of ``cases`` under derating ``d``."""
    return sum(abs(math.log(predict(m, d) / m.value)) for m in cases) / len(cases)


def fit_class(device_class: str, cases: Sequence[Measurement]) -> tuple[Derating, float]:
    """(derating, mean |log error|) at the grid point of ``device_class`` that fits
    ``cases`` (all of its grid's workload) best (ties: the first point in grid order)."""
    if device_class not in FITS:
        raise ValueError(f"device_class must be one of {sorted(FITS)}, got {device_class!r}")
    if not cases:
        raise ValueError("cases must hold at least one measurement")
    f = FITS[device_class]
    if any(m.workload != f.workload for m in cases):
        raise ValueError(f"cases must all be {f.workload!r} cases for {device_class!r}'s grid")
    best: tuple[float, Derating] | None = None
    for point in itertools.product(*f.axes):
        d = replace(f.base, **f.make(*point))
        score = mean_abs_log_error(cases, d)
        if best is None or score < best[0]:
            best = (score, d)
    assert best is not None
    return best[1], best[0]


@dataclass(frozen=True)
class ClassModel:
    """A device class fitted on some cases: its derating per workload (the grid's workload
    refit, the others as shipped) and its kernel-library and core terms around it."""

    device_class: str
    deratings: Mapping[str, Derating]
    terms: StackTerms

    def derating(self, m: Measurement) -> Derating:
        """The derating that predicts case ``m``: its workload's, slowed by its stack's and
        core's terms."""
        scale = self.terms.scale(self.device_class, m.stack, get_hardware(m.hardware).core)
        return self.deratings[m.workload].slowed(scale)

    def predict(self, m: Measurement) -> float:
        """This model's time for case ``m``, s."""
        return predict(m, self.derating(m))


def fit_model(device_class: str, cases: Sequence[Measurement]) -> ClassModel:
    """``device_class`` fitted on ``cases``: its grid over the cases of the grid's
    workload (on a microcontroller, the reference core's: the line is that core's), then
    the stack and core terms over every case around that line. A pure function of frozen
    inputs, so it is cached: the band's nested hold-out asks for the same refits often."""
    return _fit_model(device_class, tuple(cases))


@functools.lru_cache(maxsize=512)
def _fit_model(device_class: str, cases: tuple[Measurement, ...]) -> ClassModel:
    if not cases:
        raise ValueError("cases must hold at least one measurement")
    f = FITS[device_class]
    shipped = dr.DEVICE_CLASSES[device_class]
    deratings = {w: shipped.derating(w) for w in WORKLOADS}
    own = [m for m in cases if m.workload == f.workload
           and get_hardware(m.hardware).core in (None, REFERENCE_CORE)]
    if own:
        deratings[f.workload] = fit_class(device_class, own)[0]
    terms = fit_class_terms(device_class, cases, lambda m: predict(m, deratings[m.workload]))
    return ClassModel(device_class, MappingProxyType(deratings), terms)


@dataclass(frozen=True)
class HeldOutRow:
    """One case: measured, in-sample achievable (the shipped derating) and held-out
    achievable (its class refit without its family; None when no other family has a case
    of its class), s."""

    id: str
    device_class: str
    source_family: str
    stack: str
    measured_s: float
    in_sample_s: float
    held_out_s: float | None

    @property
    def in_sample_error(self) -> float:
        return self.in_sample_s / self.measured_s - 1.0

    @property
    def held_out_error(self) -> float | None:
        return None if self.held_out_s is None else self.held_out_s / self.measured_s - 1.0

    @property
    def held_out_within(self) -> bool:
        """Within +-35% held out (False when it cannot be validated)."""
        e = self.held_out_error
        return e is not None and abs(e) <= TOLERANCE


@dataclass(frozen=True)
class HoldOut:
    """Every case held out with its family, and the shares within +-35%: in sample and
    held out, overall and per class (cases that cannot be validated count as outside)."""

    rows: tuple[HeldOutRow, ...]
    in_sample_within: float
    held_out_within: float
    class_in_sample_within: Mapping[str, float]
    class_held_out_within: Mapping[str, float]
    unvalidated: tuple[str, ...]


def _share(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags)


def hold_out_families(measurements: Sequence[Measurement] | None = None) -> HoldOut:
    """Refit each class without each family in turn and predict the family with it
    (cached, as :func:`fit_model`; default: every published case)."""
    return _hold_out_families(tuple(all_measurements() if measurements is None
                                    else measurements))


@functools.lru_cache(maxsize=64)
def _hold_out_families(measurements: tuple[Measurement, ...]) -> HoldOut:
    if not measurements:
        raise ValueError("measurements must hold at least one case")
    cls = {m.id: device_class_of(m.hardware).id for m in measurements}
    refits: dict[tuple[str, str], ClassModel | None] = {}
    rows = []
    for m in measurements:
        key = (cls[m.id], m.source_family)
        if key not in refits:
            others = [o for o in measurements
                      if cls[o.id] == key[0] and o.source_family != m.source_family]
            refits[key] = fit_model(key[0], others) if others else None
        fitted = refits[key]
        rows.append(HeldOutRow(m.id, cls[m.id], m.source_family, m.stack, m.value,
                               predict(m), None if fitted is None else fitted.predict(m)))
    classes = sorted(set(cls.values()))

    def within(rs: Sequence[HeldOutRow], held: bool) -> float:
        return _share([r.held_out_within if held else abs(r.in_sample_error) <= TOLERANCE
                       for r in rs])

    by = {c: [r for r in rows if r.device_class == c] for c in classes}
    return HoldOut(
        rows=tuple(rows), in_sample_within=within(rows, False),
        held_out_within=within(rows, True),
        class_in_sample_within=MappingProxyType({c: within(by[c], False) for c in classes}),
        class_held_out_within=MappingProxyType({c: within(by[c], True) for c in classes}),
        unvalidated=tuple(r.id for r in rows if r.held_out_s is None))


def fit_terms(measurements: Sequence[Measurement] | None = None) -> StackTerms:
    """The terms ``achievable`` ships: each class's kernel-library and core terms over its
    fitted cases (:attr:`Measurement.fitted`) around its shipped line (default: every
    published case)."""
    measurements = all_measurements() if measurements is None else measurements
    parts = []
    for c in sorted({device_class_of(m.hardware).id for m in measurements}):
        line = dr.DEVICE_CLASSES[c]

        def on_line(m: Measurement, d: dr.DeviceClass = line) -> float:
            return predict(m, d.derating(m.workload))

        cases = [m for m in measurements if m.fitted and device_class_of(m.hardware).id == c]
        parts.append(fit_class_terms(c, cases, on_line))
    return merge(parts)
