"""Numbers with units, formatted once for every layer (physics reasons, plans, widgets)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np


def format_bytes(n: float) -> str:
    """Decimal units, as stored: 1 kB = 1e3, 1 MB = 1e6, 1 GB = 1e9 bytes."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_num(x: float) -> str:
    a = abs(x)
    if a >= 1e6:
        return f"{x:,.3e}" if a >= 1e12 else f"{x:,.0f}"
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 1:
        return f"{x:,.2f}"
    return f"{x:.3g}"


def fmt_time(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "n/a"
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    if s < 600:
        return f"{s:.3g} s"
    if s < 36_000:
        return f"{s / 60:,.0f} min"
    return f"{s / 3600:,.3g} h"


def tex_num(x: float) -> str:
    """A number for LaTeX: 8.64e6 -> 8.64\\times10^{6}, 250000 -> 250{,}000."""
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1e6 or a < 1e-3:
        mant, exp = f"{x:.3e}".split("e")
        return f"{float(mant):.3g}\\times10^{{{int(exp)}}}"
    return fmt_num(x).replace(",", "{,}")


def plain(x: object) -> object:
    """numpy -> Python, tuples -> lists, recursively (JSON-ready)."""
    if isinstance(x, Mapping):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return plain(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def fmt_count(x: float) -> str:
    """A count or amount for prose: 8 -> '8', 30.0 -> '30', 23.38 -> '23.4', 86400 ->
    '86,400', 1.2e9 -> '1.2e+09'."""
    a = abs(x)
    if a >= 1e6:
        return f"{x:.3g}"
    if a >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def fmt_si(x: float, unit: str) -> str:
    """8.7e9 FLOP -> '8.7 GFLOP', 3.35e12 B/s -> '3.35 TB/s', 256e6 -> '256 MFLOP/s'."""
    for size, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= size:
            return f"{x / size:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def fmt_pct(x: float | None) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{100 * x:.3g}%"


def fmt_energy(j: float) -> str:
    if j >= 3.6:
        return f"{j / 3.6:.3g} mWh" if j < 3600 else f"{j / 3600:.3g} Wh"
    if j >= 1:
        return f"{j:.3g} J"
    return f"{j * 1e3:.3g} mJ" if j >= 1e-3 else f"{j * 1e6:.3g} µJ"


def fmt_amount(x: float | None, unit: str) -> str:
    return "n/a" if x is None else f"{fmt_count(x)} {unit}"
