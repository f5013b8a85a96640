"""Numbers with units, formatted by one set of rules for every layer.

Physics reasons, plans, the labs' readouts and the CLI tables all format through this
module, so a value reads the same wherever a student meets it.

=======================  ==================================================================
:func:`fmt`              any number, optionally with a unit: ``fmt(8.7e9, "FLOP")`` ->
                         ``8.7 GFLOP``, ``fmt(23.38, "USD")`` -> ``23.4 USD``, ``fmt(86400)``
                         -> ``86,400``
:func:`fmt_num`          the ledger style for money and rates: 2 decimals from 1 to 100,
                         whole numbers from 100 (``12,139``, ``23.38``, ``0.0014``)
:func:`fmt_amount`       a number and a unit that takes no prefix (``583 mWh``, ``12 USD``)
:func:`fmt_time`         seconds -> µs | ms | s | min | h
:func:`fmt_bytes`        bytes -> B | kB | MB | GB | TB (decimal, as stored)
:func:`fmt_energy`       joules -> µJ | mJ | J | mWh | Wh | kWh
:func:`fmt_pct`          a fraction as a percentage: 0.123 -> ``12.3%``
:func:`fmt_tokens`       a token count in binary thousands: 4096 -> ``4k``
:func:`counted`          a count and its noun, singular or plural: ``1 device``, ``4 devices``
:func:`tex_num`          a number for LaTeX: ``8.64\\times10^{6}``, ``250{,}000``
:func:`d3_format`        what a chart's axis shows for a tick: a d3-format spec as bqplot's
                         ``tick_format`` (``".3~s"``: 2000 -> ``2k``)
=======================  ==================================================================

Rules every formatter follows:

* **Significant digits.** A value shows ``sig`` significant digits (3 unless given).
  From 1,000 on it is written out in full with thousands separators (``86,400``: more
  digits, never fewer), and from 10^6 in exponent notation (``1.2e+09``).
  Exceptions: bytes below 1 kB are whole bytes, minutes are whole minutes (10 to 599
  min), and :func:`fmt_num` shows 2 decimals from 1 to 100 and whole numbers from 100 to
  10^12.
* **The unit is chosen after rounding**, so 999.6 µs reads ``1 ms`` and 999.7 MB reads
  ``1 GB`` -- never ``1e+03 µs`` or ``1e+03 MB``.
* **Decimal prefixes**: k = 10^3, M = 10^6, ... (labkit stores decimal bytes; see
  :mod:`labkit.core.units`). :func:`fmt` prefixes only the units in :data:`SI_UNITS`, where
  a prefix means something (``GFLOP``, ``TB/s``): never ``kUSD`` unless ``si=True``.
* **Missing values.** ``None``, NaN and ±inf format as ``"n/a"`` (:data:`NA`) in every text
  formatter -- none raises for them; :func:`tex_num` writes ``\\infty`` (±inf) and
  ``\\text{n/a}`` (None, NaN).

The older names -- :func:`format_bytes`, :func:`fmt_count`, :func:`fmt_si` -- are thin
spellings of the functions above, kept for the callers that use them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np

NA = "n/a"
"""What every text formatter returns for None, NaN and ±inf."""

SI_UNITS = frozenset({"B", "B/s", "bit", "bit/s", "FLOP", "FLOP/s", "OP", "OP/s", "W", "J",
                      "Wh", "Hz"})
"""Units :func:`fmt` gives a decimal prefix (k, M, G, T, P) unless told ``si=False``."""

# One step of a unit ladder: (size of the unit, its name, the first displayed value that
# moves to the next step, decimals -- None for ``sig`` significant digits).
_Step = tuple[float, str, float, int | None]
_TIME: tuple[_Step, ...] = (
    (1e-6, "µs", 1e3, None), (1e-3, "ms", 1e3, None), (1.0, "s", 600.0, None),
    (60.0, "min", 600.0, 0), (3600.0, "h", math.inf, None))
_BYTES: tuple[_Step, ...] = (
    (1.0, "B", 1e3, 0), (1e3, "kB", 1e3, None), (1e6, "MB", 1e3, None),
    (1e9, "GB", 1e3, None), (1e12, "TB", math.inf, None))
_ENERGY: tuple[_Step, ...] = (
    (3.6e-6, "nWh", 1e3, None), (3.6e-3, "µWh", 1e3, None), (3.6, "mWh", 1e3, None),
    (3600.0, "Wh", 1e3, None), (3.6e6, "kWh", math.inf, None))
_PREFIXES: tuple[_Step, ...] = (
    (1.0, "", 1e3, None), (1e3, "k", 1e3, None), (1e6, "M", 1e3, None),
    (1e9, "G", 1e3, None), (1e12, "T", 1e3, None), (1e15, "P", math.inf, None))


def _finite(x: float | None) -> float | None:
    """``x`` as a float, or None when it is missing (None, NaN, ±inf)."""
    if x is None:
        return None
    v = float(x)
    return v + 0.0 if math.isfinite(v) else None  # + 0.0: no "-0"


def _sig(v: float, sig: int) -> str:
    """``v`` to ``sig`` significant digits, in words a reader reads: whole numbers grouped
    (``86,400``, ``1,200,000,000``; from 1,000 every digit of the whole part is kept),
    decimals without trailing zeros (``23.4``, ``0.0000259``); never an exponent."""
    if v == 0:
        return "0"
    r = float(f"{v:.{sig}g}")
    e = math.floor(math.log10(abs(r)))
    decimals = max(0, sig - 1 - e)
    if e >= 3:
        return f"{v:,.{decimals}f}"
    text = f"{r:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if decimals else text


def _ladder(v: float, steps: Sequence[_Step], sig: int, unit: str = "") -> str:
    """``v`` in the first step of ``steps`` where its *rounded* value stays below the bound."""
    text = ""
    for size, name, bound, decimals in steps:  # the last step's bound is inf
        inverse = 1 / size   # a decimal prefix multiplies (as exact as v * 1e3); 3.6e-3 divides
        scaled = v * round(inverse) if size < 1 and abs(inverse - round(inverse)) < 1e-9 \
            else v / size
        text = f"{_sig(scaled, sig) if decimals is None else f'{scaled:,.{decimals}f}'} {name}"
        if abs(float(text.split(" ")[0].replace(",", ""))) < bound:
            break
    return text + unit


# -- numbers ---------------------------------------------------------------------------------

def fmt(x: float | None, unit: str | None = None, *, sig: int = 3,
        si: bool | None = None) -> str:
    """A number with ``sig`` significant digits and an optional unit.

    ``fmt(8)`` -> ``8``, ``fmt(23.38)`` -> ``23.4``, ``fmt(86400)`` -> ``86,400``,
    ``fmt(1.2e9)`` -> ``1.2e+09``; ``fmt(8.7e9, "FLOP")`` -> ``8.7 GFLOP``,
    ``fmt(3.35e12, "B/s")`` -> ``3.35 TB/s``; ``fmt(583, "mWh")`` -> ``583 mWh``.
    ``si`` forces the decimal prefix on (True) or off (False); by default a unit in
    :data:`SI_UNITS` gets one and any other unit does not.
    """
    v = _finite(x)
    if v is None:
        return NA
    if not unit:
        return _sig(v, sig)
    if unit in SI_UNITS if si is None else si:
        return _ladder(v, _PREFIXES, sig, unit)
    return f"{_sig(v, sig)} {unit}"


def fmt_num(x: float | None) -> str:
    """The ledger style for money and rates: ``12,139``, ``583``, ``23.38``, ``0.0014``.

    Whole numbers with separators from 100, 2 decimals from 1 to 100, 3 significant digits
    below 1 (``0.0000259``); never an exponent.
    """
    v = _finite(x)
    if v is None:
        return NA
    a = abs(v)
    if a < 1:
        text = _sig(v, 3)
        if abs(float(text)) < 1:
            return text
    if a < 100:
        text = f"{v:,.2f}"
        if abs(float(text.replace(",", ""))) < 100:
            return text
    return f"{v:,.0f}"


def fmt_amount(x: float | None, unit: str, *, ledger: bool = False) -> str:
    """``x`` and a unit that takes no prefix: ``583 mWh``, ``12 USD``; ``n/a`` when missing.

    The number is :func:`fmt`'s (3 significant digits), or :func:`fmt_num`'s with
    ``ledger=True`` (``23.38 USD``, ``12,139 USD``).
    """
    v = _finite(x)
    if v is None:
        return NA
    return f"{fmt_num(v) if ledger else _sig(v, 3)} {unit}"


def fmt_pct(x: float | None, *, sig: int = 3) -> str:
    """A fraction as a percentage: 0.123 -> ``12.3%``, 1 -> ``100%``."""
    v = _finite(x)
    return NA if v is None else f"{_sig(100 * v, sig)}%"


def fmt_tokens(n: int | None) -> str:
    """A token count as a context is named: whole binary thousands as ``k`` (4096 ->
    ``4k``, 131072 -> ``128k``), anything else in full (512 -> ``512``, 1280 ->
    ``1,280``: never ``1.25k``, which reads as 1,250 beside a requirement of 1,280)."""
    if n is None:
        return NA
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}k"
    return f"{n:,}"


# -- quantities with units ---------------------------------------------------------------------

def fmt_time(s: float | None, *, sig: int = 3) -> str:
    """Seconds in µs (below 1 ms), ms, s (below 10 min), whole min (below 10 h) or h."""
    v = _finite(s)
    return NA if v is None else _ladder(v, _TIME, sig)


def fmt_bytes(n: float | None, *, sig: int = 3) -> str:
    """Bytes in decimal units, as stored: 1 kB = 1e3, 1 MB = 1e6, 1 GB = 1e9, 1 TB = 1e12."""
    v = _finite(n)
    return NA if v is None else _ladder(v, _BYTES, sig)


def fmt_energy(j: float | None, *, sig: int = 3) -> str:
    """Joules in one family a student reads beside every budget, watt-hours: nWh, µWh,
    mWh, Wh, kWh (1 mWh = 3.6 J). One unit family per screen: a card never reads
    "16.7 mWh vs 443 mJ", nor turns 456 mJ into 1.28 J and 3.44 mWh as a slider moves."""
    v = _finite(j)
    return NA if v is None else _ladder(v, _ENERGY, sig)


def energy_scale(j: float) -> tuple[float, str]:
    """(J per unit, unit) :func:`fmt_energy` prints ``j`` in: one unit for a sum and its
    parts (5.57 mJ = ``(3.6e-3, "µWh")``)."""
    for size, name, _bound, _decimals in reversed(_ENERGY):
        if abs(j) >= size:
            return size, name
    return _ENERGY[0][0], _ENERGY[0][1]


def byte_scale(n: float) -> tuple[float, str]:
    """The largest byte unit not above ``n``, as ``(size, name)``: an axis scale
    (3e10 -> ``(1e9, "GB")``); ``(1.0, "B")`` below 1 kB."""
    for size, name, _bound, _decimals in reversed(_BYTES):
        if abs(n) >= size:
            return size, name
    return 1.0, "B"


def tex_num(x: float | None, sig: int | None = None) -> str:
    """A number for LaTeX: 8.64e6 -> ``8.64\\times10^{6}``, 250000 -> ``250{,}000``.

    Exponent form (3 significant digits) from 10^6 and below 10^-3, :func:`fmt_num`'s
    digits in between; ``\\infty`` for ±inf and ``\\text{n/a}`` for None or NaN. ``sig``:
    that many significant digits instead (a derivation's terms, precise enough to give
    its printed result).
    """
    if x is None or math.isnan(x):
        return "\\text{n/a}"
    if math.isinf(x):
        return "\\infty" if x > 0 else "-\\infty"
    v = float(x)
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6 or a < 1e-3:
        mant, exp = f"{v:.{(sig or 3) - 1}e}".split("e")
        return f"{float(mant):g}\\times10^{{{int(exp)}}}"
    return (fmt_num(v) if sig is None else _sig(v, sig)).replace(",", "{,}")


# -- the older names ---------------------------------------------------------------------------

def format_bytes(n: float | None) -> str:
    """:func:`fmt_bytes` (the name physics reasons and Lab 1 use)."""
    return fmt_bytes(n)


def counted(n: int, one: str, many: str | None = None) -> str:
    """A whole count and its noun in the number the count takes: ``1 device``,
    ``4 devices``, ``0 sessions`` (``many``: the plural when it is not ``one`` + "s")."""
    if int(n) != n:
        raise ValueError(f"n must be a whole count, got {n!r}")
    return f"{int(n):,} {one if int(n) == 1 else (many or one + 's')}"


def fmt_count(x: float | None) -> str:
    """:func:`fmt` without a unit: 8 -> ``8``, 23.38 -> ``23.4``, 86400 -> ``86,400``."""
    return fmt(x)


def fmt_si(x: float | None, unit: str) -> str:
    """:func:`fmt` with a decimal prefix always: 256e6, ``"FLOP/s"`` -> ``256 MFLOP/s``."""
    return fmt(x, unit, si=True)


# -- chart ticks ---------------------------------------------------------------------------

_D3_SPEC = re.compile(r",?(?:\.(\d+))?(~)?([defgs%])")
_D3_SI = ("y", "z", "a", "f", "p", "n", "µ", "m", "", "k", "M", "G", "T", "P", "E", "Z", "Y")


def _js_exponential(x: float, digits: int) -> str:
    """JavaScript's ``x.toExponential(digits)``: ``1.50e+3`` (no zero-padded exponent)."""
    mantissa, exp = f"{x:.{digits}e}".split("e")
    return f"{mantissa}e{int(exp):+d}"


def _js_precision(x: float, p: int) -> str:
    """JavaScript's ``x.toPrecision(p)``: exponent form when it is < -6 or >= ``p``."""
    exp = int(f"{x:.{p - 1}e}".split("e")[1]) if x else 0
    if exp < -6 or exp >= p:
        return _js_exponential(x, p - 1)
    return f"{x:.{max(0, p - 1 - exp)}f}"


def _d3_trim(s: str) -> str:
    """d3's ``~``: drop the insignificant trailing zeros (and point) of the digits."""
    i0, i1 = -1, 0
    for i in range(1, len(s)):
        c = s[i]
        if c == ".":
            i0 = i1 = i
        elif c == "0":
            if i0 == 0:
                i0 = i
            i1 = i
        elif c.isdigit():
            if i0 > 0:
                i0 = 0
        else:
            break
    return s[:i0] + s[i1 + 1:] if i0 > 0 else s


def _d3_si(x: float, p: int) -> tuple[str, str]:
    """d3's ``s`` type: ``p`` significant digits and an SI prefix (``2.5k``)."""
    mant, exp_text = _js_exponential(x, p - 1).split("e")
    digits, exp = mant.replace(".", ""), int(exp_text)
    k = max(-8, min(8, math.floor(exp / 3)))
    i, n = exp - 3 * k + 1, len(digits)
    if i == n:
        text = digits
    elif i > n:
        text = digits + "0" * (i - n)
    elif i > 0:
        text = f"{digits[:i]}.{digits[i:]}"
    else:
        more = _js_exponential(x, max(0, p + i - 2)).split("e")[0].replace(".", "")
        text = "0." + "0" * -i + more  # below 1e-24 (yocto): not a chart tick
    return text, _D3_SI[8 + k]


def d3_format(spec: str, x: float) -> str:
    """``x`` as a chart axis labels it with d3-format ``spec`` (bqplot's ``tick_format``).

    Supports ``[,][.precision][~]type`` with type ``d`` (rounded integer), ``e``, ``f``,
    ``g``, ``s`` (SI prefix) and ``%``; precision defaults to 6 as in d3. Negative values
    get d3's minus sign (U+2212). Any other spec is a ValueError naming ``spec``.
    """
    m = _D3_SPEC.fullmatch(spec)
    if m is None:
        raise ValueError(f"spec must be [,][.precision][~] and one of d e f g s %; got {spec!r}")
    p = 6 if m.group(1) is None else int(m.group(1))
    trim, kind = m.group(2) is not None, m.group(3)
    v = float(x)
    if not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("−" if v < 0 else "") + "Infinity"
    a, suffix = abs(v), ""
    if kind == "d":
        text = str(math.floor(a + 0.5))
    elif kind == "f":
        text = f"{a:.{p}f}"
    elif kind == "%":
        text, suffix = f"{a * 100:.{p}f}", "%"
    elif kind == "e":
        text = _js_exponential(a, p)
    elif kind == "g":
        text = _js_precision(a, max(1, p))
    else:
        text, suffix = _d3_si(a, max(1, p))
    if trim:
        text = _d3_trim(text)
    if "," in spec[:1]:
        whole, dot, frac = text.partition(".")
        if whole.isdigit():
            text = f"{int(whole):,}{dot}{frac}"
    negative = v < 0 and any(ch in "123456789" for ch in text)
    return ("−" if negative else "") + text + suffix


# -- JSON ------------------------------------------------------------------------------------

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


def plain_dict(x: Mapping[str, object]) -> dict[str, object]:
    """:func:`plain` of a mapping, typed as the JSON object it is."""
    return {str(k): plain(v) for k, v in x.items()}


def percentile_name(q: float) -> str:
    """A quantile as an ordinal percentile: ``2.5th``, ``97.5th``, ``1st``, ``95th``."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be a quantile in [0, 1], got {q!r}")
    n = round(100 * q, 6)
    if n != int(n):
        return f"{n:g}th"
    k = int(n)
    end = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{end}"
