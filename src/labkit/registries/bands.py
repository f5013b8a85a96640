"""The band real systems span around ``achievable``, per device class, as shipped.

A snapshot of :func:`labkit.physics.band.band_of` and
:func:`labkit.physics.band.held_out_coverage` over the published measurements
(``data/bands.toml``): computing them refits every class once per source family (about a
third of a second for the datacenter class), too slow for a lab part to pay on every
build. ``benchmarks/bench_calibration.py --write-bands`` writes the file;
``tests/test_band.py`` fails when it differs from the computation. This module is data
only: it imports nothing of labkit.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

_DATA = "bands.toml"


@dataclass(frozen=True)
class ClassBand:
    """One device class's band: held-out measured / achievable from ``low`` to ``high``
    (the quantiles ``quantiles``) over ``cases`` cases of ``families`` source families;
    ``coverage``: the share of the class's cases (of ``kernels``' cases for a kernel
    library's band) inside the band built without their own family; ``scope``: "stack"
    (one kernel library's cases, ``kernels``), "class" (the class's own cases) or "all
    classes" (pooled: the class has too few source families for a band of its own)."""

    device_class: str
    low: float
    high: float
    quantiles: tuple[float, float]
    cases: int
    families: int
    coverage: float
    scope: str = "class"
    kernels: str | None = None


SCOPES = ("stack", "class", "all classes")


def load_bands(text: str | None = None) -> Mapping[tuple[str, str | None], ClassBand]:
    """Parse ``text`` (TOML, ``[[band]]`` tables; default: the package data), keyed by
    (device class, kernel library or None for the class's band), checked: a
    ``ValueError`` names the class and field."""
    if text is None:
        text = resources.files("labkit.registries").joinpath("data", _DATA).read_text("utf-8")
    out: dict[tuple[str, str | None], ClassBand] = {}
    for raw in tomllib.loads(text).get("band", []):
        name = str(raw.get("device_class", "?"))
        try:
            b = ClassBand(name, float(raw["low"]), float(raw["high"]),
                          (float(raw["quantiles"][0]), float(raw["quantiles"][1])),
                          int(raw["cases"]), int(raw["families"]), float(raw["coverage"]),
                          str(raw.get("scope", "class")),
                          str(raw["kernels"]) if raw.get("kernels") else None)
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise ValueError(f"band {name!r}: field {e} is missing or not a number") from None
        if not 0 < b.low <= b.high or b.cases < 1 or b.families < 1 or not 0 <= b.coverage <= 1 \
                or b.scope not in SCOPES or (b.scope == "stack") != (b.kernels is not None):
            raise ValueError(f"band {name!r}: needs 0 < low <= high, cases and families >= 1, "
                             "a coverage in [0, 1] and a known scope (kernels named on a "
                             f"stack band only); got {b}")
        out[(name, b.kernels)] = b
    return MappingProxyType(out)


_ALL = load_bands()
BANDS: Mapping[str, ClassBand] = MappingProxyType(
    {c: b for (c, k), b in _ALL.items() if k is None})
"""Device class id -> its shipped band."""
KERNEL_BANDS: Mapping[tuple[str, str], ClassBand] = MappingProxyType(
    {(c, k): b for (c, k), b in _ALL.items() if k is not None})
"""(device class id, kernel library) -> the library's own shipped band, where its cases
pin one (:data:`labkit.physics.band.MIN_STACK_CASES` cases from
:data:`~labkit.physics.band.MIN_STACK_FAMILIES` source families)."""


def shipped_band(device_class: str, kernels: str | None = None) -> ClassBand:
    """The band shipped for ``device_class`` and a stack with kernel library ``kernels``:
    the library's own where its cases pin one, else the class's (which says when it is
    every class's). The one lookup the labs and ``labkit roofline --explain`` share."""
    band = (KERNEL_BANDS.get((device_class, kernels)) if kernels else None) or \
        BANDS.get(device_class)
    if band is None:
        raise ValueError(f"device_class {device_class!r} has no shipped band "
                         f"(known: {', '.join(sorted(BANDS))})")
    return band
