"""A math peek's printed equation: its terms and the result computed from them, so the
result a student reads is the one its printed terms give."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Equation:
    """A printed equation of the math peek: ``terms`` combined by ``op`` (``sum``,
    ``product``, ``quotient`` t0/t1, ``ratio`` t0/(t1 - t2)) give ``result``."""

    name: str
    terms: tuple[float, ...]
    op: str
    result: float
    unit: str = ""


def _combine(op: str, t: Sequence[float]) -> float:
    if op == "sum":
        return float(sum(t))
    if op == "ratio":
        return t[0] / (t[1] - t[2])
    if op == "quotient":
        return t[0] / t[1]
    return float(np.prod(t))


def equation(name: str, terms: Sequence[float], op: str, unit: str = "") -> Equation:
    """An :class:`Equation` whose result is computed from its own terms."""
    t = tuple(float(x) for x in terms)
    return Equation(name, t, op, _combine(op, t), unit)
