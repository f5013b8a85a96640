"""Chart helpers: scale domains for bqplot figures."""

from __future__ import annotations

import numpy as np


def log_domain(values: object, pad: float = 1.6) -> tuple[float, float]:
    a = np.asarray(values, dtype=float).ravel()
    a = a[np.isfinite(a) & (a > 0)]
    if a.size == 0:
        return 1e-3, 1.0
    lo, hi = float(a.min()) / pad, float(a.max()) * pad
    return (lo, hi) if hi > lo else (lo / 10, lo * 10)


def lin_top(values: object, floor: float = 1.0, pad: float = 1.25) -> float:
    a = np.asarray(values, dtype=float).ravel()
    a = a[np.isfinite(a)]
    return max(floor, float(a.max()) * pad if a.size else floor)
