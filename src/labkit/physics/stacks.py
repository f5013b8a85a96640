"""What the software stack and a microcontroller's core add to the class's achievable line.

A device class's derating (:mod:`labkit.physics.derating`) is one line through its measured
cases. The cases sit around it by kernel library and, on microcontrollers, by core: the
same DS-CNN runs at 2.0 cycles per MAC under X-CUBE-AI 10 and 8.2 under TFLM's reference
kernels on one Cortex-M4 board, and a Cortex-M7 retires a MAC in about half the cycles of
an M4 under the same compiler. Each is a **time multiplier** on the class line:

    ln(measured / class line) = k[kernel library] + c[core],   c[reference core] = 0,

solved by least squares over the cases (:func:`fit_class_terms`). A term is fitted only
where at least :data:`MIN_TERM_CASES` cases of :data:`MIN_TERM_FAMILIES` source families
pin it; otherwise it is 1 (the class line: an unknown
stack, or a core whose peak per cycle is all that is known). On a memory-bound decode the
kernel term is the inverse of the stack's reachable share of bandwidth relative to the
class's; on a microcontroller it is cycles per MAC relative to the class's.
:meth:`labkit.physics.derating.Derating.slowed` applies a multiplier to a derating.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from labkit.registries.hardware import get_hardware
from labkit.registries.measurements import Measurement
from labkit.registries.stacks import TERMS, ShippedTerm, get_stack

MIN_TERM_CASES = 2
"""Cases a kernel or core term needs before it is fitted (one case is an anecdote)."""
MIN_TERM_FAMILIES = 2
"""Source families those cases must come from (one publisher's setup is not a stack's)."""
REFERENCE_CORE = "cortex-m4"
"""The core the MCU class line was fitted on (the MLPerf Tiny reference board's)."""


@dataclass(frozen=True)
class Term:
    """One fitted multiplier on the class line's time (s/s; below 1: faster than the
    line), over ``cases`` cases of ``families`` source families."""

    scale: float
    cases: int
    families: int


@dataclass(frozen=True)
class StackTerms:
    """Fitted kernel-library and core multipliers, keyed by (device class, kernels) and
    (device class, core)."""

    kernels: Mapping[tuple[str, str], Term]
    cores: Mapping[tuple[str, str], Term]

    def scale(self, device_class: str, stack: str | None, core: str | None) -> float:
        """Time multiplier of ``stack`` (None: unknown) on ``core`` (None: not an MCU) over
        ``device_class``'s line (1 where no term is fitted)."""
        k = self.kernels.get((device_class, get_stack(stack).kernels)) if stack else None
        c = self.cores.get((device_class, core)) if core else None
        return (k.scale if k else 1.0) * (c.scale if c else 1.0)


NO_TERMS = StackTerms(MappingProxyType({}), MappingProxyType({}))


def _core(m: Measurement) -> str | None:
    return get_hardware(m.hardware).core


def _pinned(cases: Sequence[Measurement], key: Mapping[str, str | None]) -> list[str]:
    """The keys with at least MIN_TERM_CASES cases from MIN_TERM_FAMILIES families."""
    seen: dict[str, list[Measurement]] = {}
    for m in cases:
        k = key[m.id]
        if k is not None:
            seen.setdefault(k, []).append(m)
    return sorted(k for k, ms in seen.items() if len(ms) >= MIN_TERM_CASES
                  and len({m.source_family for m in ms}) >= MIN_TERM_FAMILIES)


def _term(rows: Sequence[Measurement], beta: float) -> Term:
    return Term(math.exp(beta), len(rows), len({m.source_family for m in rows}))


def fit_class_terms(device_class: str, cases: Sequence[Measurement],
                    line: Callable[[Measurement], float]) -> StackTerms:
    """The kernel and core terms of ``cases`` (one device class) around ``line`` (the
    class line's time of a case, s): least squares on ln(measured / line)."""
    kern = {m.id: get_stack(m.stack).kernels for m in cases}
    core = {m.id: (None if _core(m) in (None, REFERENCE_CORE) else _core(m)) for m in cases}
    ks = _pinned(cases, kern)
    cs = _pinned(cases, core)
    rows = [m for m in cases if kern[m.id] in ks and (core[m.id] is None or core[m.id] in cs)]
    if not rows:
        return NO_TERMS
    cols = [("k", k) for k in ks] + [("c", c) for c in cs]
    x = np.zeros((len(rows), len(cols)))
    for i, m in enumerate(rows):
        x[i, cols.index(("k", kern[m.id]))] = 1.0
        own = core[m.id]
        if own is not None:
            x[i, cols.index(("c", own))] = 1.0
    y = np.log([m.value / line(m) for m in rows])
    beta = np.linalg.lstsq(x, y, rcond=None)[0]
    kernels = {(device_class, k): _term([m for m in rows if kern[m.id] == k], float(b))
               for (kind, k), b in zip(cols, beta, strict=True) if kind == "k"}
    cores = {(device_class, c): _term([m for m in rows if core[m.id] == c], float(b))
             for (kind, c), b in zip(cols, beta, strict=True) if kind == "c"}
    return StackTerms(MappingProxyType(kernels), MappingProxyType(cores))


def merge(parts: Sequence[StackTerms]) -> StackTerms:
    """One :class:`StackTerms` holding every class's terms."""
    return StackTerms(MappingProxyType({k: t for p in parts for k, t in p.kernels.items()}),
                      MappingProxyType({k: t for p in parts for k, t in p.cores.items()}))


def shipped_terms(terms: Sequence[ShippedTerm] = TERMS) -> StackTerms:
    """The shipped terms (``registries/data/stack_terms.toml``) as a :class:`StackTerms`."""
    def pick(axis: str) -> Mapping[tuple[str, str], Term]:
        return MappingProxyType({(t.device_class, t.key): Term(t.scale, t.cases, t.families)
                                 for t in terms if t.axis == axis})
    return StackTerms(pick("kernels"), pick("core"))


SHIPPED = shipped_terms()
"""The kernel-library and core terms ``achievable`` applies (:func:`labkit.physics.
derating.get_mode`): fitted on the fitted cases around the shipped class lines."""
