"""The range real systems span around ``achievable``: a band from the published cases.

``achievable`` is one line through the measured cases of a device class. Real systems of
that class sit around it, several-fold apart by software stack. The band says how far,
out of sample: the [2.5th, 97.5th] percentile (:data:`QUANTILES`) of measured / achievable
where each case's achievable comes from its class refit *without its source family*
(:mod:`labkit.physics.holdout`): the error to expect on a system the line was not fitted
to. Over one software stack's cases where they can pin it (at least
:data:`MIN_STACK_CASES` cases from :data:`MIN_STACK_FAMILIES` source families), else the
class's. Both ends are multipliers on achievable time (below 1: a system faster than the
line).

Its coverage is validated one level further out: each family held out in turn, the band
built from the other families alone (their own held-out errors, every refit without the
held-out family too), and the family's cases checked for falling inside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from labkit.physics.derating import device_class_of
from labkit.physics.holdout import fit_model, hold_out_families
from labkit.registries.measurements import Measurement, all_measurements
from labkit.registries.stacks import get_stack

QUANTILES = (0.025, 0.975)
"""The band's ends: these quantiles of held-out measured / achievable over its cases (the
observed value at or beyond each, so a band of few cases runs from its lowest to its
highest). A nominal 95% band: out of sample (:func:`held_out_coverage`) it holds about 90%
of a family it was not built from; the nominal 90% band held 84%."""
MIN_STACK_CASES = 4
MIN_STACK_FAMILIES = 3
MIN_CLASS_FAMILIES = 4
"""Source families a class's own band needs; with fewer, the band pools every class's
held-out ratios (a spread seen on three publishers is not yet the class's spread)."""


@dataclass(frozen=True)
class Band:
    """Held-out measured / achievable at the band's two quantiles, over ``cases`` cases of
    ``families`` source families: of ``stack``'s kernel library in ``device_class``
    (``scope`` "stack"), of the class ("class"), or of every class ("all classes", where
    the class has fewer than :data:`MIN_CLASS_FAMILIES` families)."""

    device_class: str
    stack: str | None
    low: float
    high: float
    cases: int
    families: int
    scope: str = "class"

    def holds(self, ratio: float) -> bool:
        """Whether a measured / achievable ratio falls inside the band."""
        return self.low <= ratio <= self.high


def _families(cases: Sequence[Measurement]) -> int:
    return len({m.source_family for m in cases})


def _class(m: Measurement) -> str:
    return device_class_of(m.hardware).id


def held_out_ratios(cases: Sequence[Measurement]) -> dict[str, float]:
    """measured / held-out achievable of each case: its class refit without its source
    family (:func:`labkit.physics.holdout.hold_out_families`, the one road to that figure);
    a case whose family is its class's only one is left out."""
    return {r.id: r.measured_s / r.held_out_s for r in hold_out_families(cases).rows
            if r.held_out_s is not None}


def _band(device_class: str, cases: Sequence[Measurement], ratios: Mapping[str, float],
          stack: str | None) -> Band:
    """The band of ``device_class`` over ``cases`` (every class's) with held-out
    ``ratios``: ``stack``'s kernel library's where it pins one, else the class's where it
    has :data:`MIN_CLASS_FAMILIES` families, else every class's."""
    had = [m for m in cases if m.id in ratios]
    mine = [m for m in had if _class(m) == device_class]
    kernels = get_stack(stack).kernels if stack is not None else None
    own = [m for m in mine if get_stack(m.stack).kernels == kernels]
    if len(own) >= MIN_STACK_CASES and _families(own) >= MIN_STACK_FAMILIES:
        had, which, scope = own, stack, "stack"
    elif _families(mine) >= MIN_CLASS_FAMILIES:
        had, which, scope = mine, None, "class"
    else:
        which, scope = None, "all classes"
    if not had:
        raise ValueError(f"device_class {device_class!r}: no case has a held-out ratio (one "
                         "source family cannot validate itself)")
    x = np.asarray([ratios[m.id] for m in had], dtype=float)
    lo = np.quantile(x, QUANTILES[0], method="lower")    # observed values, widened: the
    hi = np.quantile(x, QUANTILES[1], method="higher")   # band holds >= 95% of its cases
    return Band(device_class, which, float(lo), float(hi), len(had), _families(had), scope)


def _class_cases(device_class: str, measurements: Sequence[Measurement]) -> list[Measurement]:
    cases = [m for m in measurements if _class(m) == device_class]
    if not cases:
        raise ValueError(f"device_class {device_class!r} has no measured case")
    return cases


def band_of(device_class: str, stack: str | None = None,
            measurements: Sequence[Measurement] | None = None) -> Band:
    """The band of ``device_class`` (and ``stack`` where its cases pin one), from
    ``measurements`` (default: every published case)."""
    measurements = all_measurements() if measurements is None else measurements
    _class_cases(device_class, measurements)
    return _band(device_class, measurements, held_out_ratios(measurements), stack)


def kernel_bands(measurements: Sequence[Measurement] | None = None
                 ) -> dict[tuple[str, str], Band]:
    """Every kernel library's own band, by (device class, kernel library): those whose
    cases pin one (:data:`MIN_STACK_CASES` from :data:`MIN_STACK_FAMILIES` families)."""
    measurements = all_measurements() if measurements is None else measurements
    ratios = held_out_ratios(measurements)
    out: dict[tuple[str, str], Band] = {}
    for m in measurements:
        key = (_class(m), get_stack(m.stack).kernels)
        if key not in out:
            b = _band(key[0], measurements, ratios, m.stack)
            if b.scope == "stack":
                out[key] = b
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class CoverageRow:
    """One case held out with its family: its ratio under its class refit without the
    family, and the band built from the other families alone."""

    id: str
    device_class: str
    source_family: str
    stack: str
    ratio: float
    band: Band

    @property
    def inside(self) -> bool:
        return self.band.holds(self.ratio)


@dataclass(frozen=True)
class Coverage:
    """Every case against the band built without its family: the share inside, overall
    and per class (a case whose class has too few other families to build a band counts
    as outside and is listed in ``unvalidated``)."""

    rows: tuple[CoverageRow, ...]
    share: float
    class_share: Mapping[str, float]
    unvalidated: tuple[str, ...]

    def kernel_share(self, device_class: str, kernels: str) -> float:
        """The share of ``kernels``' cases in ``device_class`` inside the band built
        without their own family (NaN when none was checked)."""
        mine = [r.inside for r in self.rows if r.device_class == device_class
                and get_stack(r.stack).kernels == kernels]
        return sum(mine) / len(mine) if mine else float("nan")


def _family_rows(device_class: str, measurements: Sequence[Measurement], family: str,
                 ratios: Mapping[str, float]) -> list[CoverageRow] | None:
    """The held-out family's rows in ``device_class`` (``ratios``: every case's held-out
    ratio with the family left out), or None when its class's other families cannot
    build a band."""
    cases = _class_cases(device_class, measurements)
    others = [o for o in cases if o.source_family != family]
    if _families(others) < 2:
        return None
    model = fit_model(device_class, others)
    rest = [o for o in measurements if o.source_family != family]
    return [CoverageRow(m.id, device_class, family, m.stack, m.value / model.predict(m),
                        _band(device_class, rest, ratios, m.stack))
            for m in cases if m.source_family == family]


def _ratios_without(measurements: Sequence[Measurement], family: str,
                    full: Mapping[str, dict[str, float]]) -> dict[str, float]:
    """Every case's held-out ratio with ``family`` left out of the data: recomputed for
    the classes it has cases in, ``full`` (each class's own) for the others."""
    out: dict[str, float] = {}
    for c, ratios in full.items():
        cases = _class_cases(c, measurements)
        if any(m.source_family == family for m in cases):
            ratios = held_out_ratios([m for m in cases if m.source_family != family])
        out.update(ratios)
    return out


def held_out_coverage(measurements: Sequence[Measurement] | None = None) -> Coverage:
    """Hold each source family out and check its cases against the band the other
    families build (refits and held-out ratios all without it; default: every published
    case)."""
    measurements = all_measurements() if measurements is None else measurements
    if not measurements:
        raise ValueError("measurements must hold at least one case")
    classes = sorted({_class(m) for m in measurements})
    full = {c: held_out_ratios(_class_cases(c, measurements)) for c in classes}
    rows: list[CoverageRow] = []
    unvalidated: list[str] = []
    inside: dict[str, int] = dict.fromkeys(classes, 0)
    for family in sorted({m.source_family for m in measurements}):
        ratios = _ratios_without(measurements, family, full)
        for c in classes:
            if not any(m.source_family == family and _class(m) == c for m in measurements):
                continue
            got = _family_rows(c, measurements, family, ratios)
            if got is None:
                unvalidated += [m.id for m in measurements
                                if m.source_family == family and _class(m) == c]
                continue
            rows += got
            inside[c] += sum(r.inside for r in got)
    share = {c: inside[c] / len(_class_cases(c, measurements)) for c in classes}
    return Coverage(tuple(rows), sum(r.inside for r in rows) / len(measurements),
                    MappingProxyType(share), tuple(unvalidated))
