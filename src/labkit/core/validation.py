"""Input checks shared by every model function.

Each check names the parameter in its error so a student, a widget or the CLI can tell
exactly which input was wrong and what range is accepted. Checks accept Python numbers and
numpy arrays (every element is checked), reject bool and str, and never let NaN or inf
through.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Integral, Real
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike

from labkit.core.grids import PRECISIONS

T = TypeVar("T")
Number = float | np.ndarray


def _as_numeric(name: str, value: object) -> Number:
    if isinstance(value, bool | np.bool_ | str | bytes):
        raise ValueError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iuf":
            raise ValueError(f"{name} must be numeric, got array of dtype {value.dtype}")
        if value.size == 0:
            raise ValueError(f"{name} must not be empty")
        return value.astype(float)
    if isinstance(value, list | tuple):
        return _as_numeric(name, np.asarray(value))
    if not isinstance(value, Real):
        raise ValueError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    return float(value)


def _fail(name: str, requirement: str, value: object) -> ValueError:
    shown = value if not isinstance(value, np.ndarray) else f"array with {value!r:.60}"
    return ValueError(f"{name} must be {requirement}, got {shown}")


def _all(cond: ArrayLike) -> bool:
    return bool(np.all(cond))


def _plain(value: object) -> bool:
    """A Python float or int (not a bool): checked without numpy, the common case of a
    model's scalar call (a search calls the physics hundreds of thousands of times)."""
    return type(value) is float or type(value) is int


def finite(name: str, value: object) -> Number:
    """Any finite number (or array of them)."""
    if _plain(value):
        try:
            x = float(value)  # type: ignore[arg-type]
        except OverflowError:  # an int past float's range
            raise _fail(name, "a finite number", value) from None
        if not math.isfinite(x):
            raise _fail(name, "a finite number", value)
        return x
    v = _as_numeric(name, value)
    if not _all(np.isfinite(v)):
        raise _fail(name, "a finite number", value)
    return v


def positive(name: str, value: object) -> Number:
    """A finite number > 0."""
    v = finite(name, value)
    if not (v > 0 if isinstance(v, float) else _all(np.asarray(v) > 0)):
        raise _fail(name, "a finite number > 0", value)
    return v


def non_negative(name: str, value: object) -> Number:
    """A finite number >= 0."""
    v = finite(name, value)
    if not (v >= 0 if isinstance(v, float) else _all(np.asarray(v) >= 0)):
        raise _fail(name, "a finite number >= 0", value)
    return v


def fraction(
    name: str, value: object, *, allow_zero: bool = True, allow_one: bool = True
) -> Number:
    """A finite number in [0, 1] (ends optionally excluded)."""
    v = finite(name, value)
    arr = v if isinstance(v, float) else np.asarray(v)
    lo_ok = arr >= 0 if allow_zero else arr > 0
    hi_ok = arr <= 1 if allow_one else arr < 1
    if not (_all(lo_ok) and _all(hi_ok)):
        lo = "[0" if allow_zero else "(0"
        hi = "1]" if allow_one else "1)"
        raise _fail(name, f"in {lo}, {hi}", value)
    return v


def positive_int(name: str, value: object, *, minimum: int = 1) -> int:
    """An integer >= minimum (integral floats such as 8.0 are accepted)."""
    if type(value) is int:  # the common case, without the ABC checks below
        if value < minimum:
            raise _fail(name, f"an integer >= {minimum}", value)
        return value
    if isinstance(value, bool | np.bool_):
        raise _fail(name, f"an integer >= {minimum}", value)
    if isinstance(value, Integral):
        iv = int(value)
    elif isinstance(value, Real) and math.isfinite(float(value)) and float(value).is_integer():
        iv = int(float(value))
    else:
        raise _fail(name, f"an integer >= {minimum}", value)
    if iv < minimum:
        raise _fail(name, f"an integer >= {minimum}", value)
    return iv


def positive_ints(name: str, value: object, *, minimum: int = 1) -> np.ndarray:
    """An array of integers >= minimum (for vectorised sweeps)."""
    arr = np.asarray(_as_numeric(name, value), dtype=float)
    if not _all(np.isfinite(arr)) or not _all(arr == np.round(arr)) or not _all(arr >= minimum):
        raise _fail(name, f"integers >= {minimum}", value)
    return arr.astype(np.int64)


def choice(name: str, value: T, choices: Iterable[T]) -> T:
    """One of a fixed set of options."""
    options = tuple(choices)
    if value not in options:
        listed = ", ".join(repr(c) for c in options)
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return value


def precision_bits(name: str, value: object) -> int:
    """A storage precision in bits: one of 4, 8, 16, 32."""
    bits = positive_int(name, value)
    return choice(name, bits, PRECISIONS)
