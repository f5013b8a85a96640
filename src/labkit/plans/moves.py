"""Recovery hints as moves: a control on screen and one value of it that, moved alone,
makes a failing check pass -- found by re-running the check, never by a rule written
beside it. One search for every part that offers a hint: the candidate order
(:func:`nearest_first`), the smallest passing move along one control
(:func:`nearest_passing`) and the move of each control (:func:`single_moves`); Lab 1's
hints (:mod:`labkit.labs.inference_economy.hints`) call these, and also look for pairs
(:func:`labkit.plans.serving.lever_fixes`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Move:
    """One recovery hint: set control ``control`` to ``value`` (all else unchanged)."""

    control: str
    value: object


def _index(values: Sequence[object], here: object) -> int:
    """Position of ``here`` in ``values`` (0 when it is not one of them)."""
    return list(values).index(here) if here in values else 0


def nearest_first(values: Sequence[object], here: object,
                  limit: int | None = None) -> list[int]:
    """Indices of ``values`` other than ``here``'s, nearest first (ties: the lower index);
    distances count from index 0 when ``here`` is not one of the values.

    ``limit`` (a count of indices): at most that many -- both neighbours up to two stops
    away, then stops spread evenly over the whole range, so a long control costs a bounded
    number of checks; None: every index.
    """
    n, i0 = len(values), _index(values, here)
    if n == 0:
        return []
    if limit is None:
        idx = set(range(n))
    else:
        if limit < 1:
            raise ValueError(f"limit must be a positive count of values, got {limit!r}")
        near = [i for d in range(1, 3) for i in (i0 - d, i0 + d) if 0 <= i < n]
        spread = np.linspace(0, n - 1, max(0, limit - len(near))).round().astype(int)
        idx = {*near, *(int(i) for i in spread)}
    if here in values:
        idx.discard(i0)
    return sorted(idx, key=lambda i: (abs(i - i0), i))


def nearest_passing(values: Sequence[object], here: object, far: object,
                    passes: Callable[[object], bool]) -> object:
    """The value of ``values`` nearest ``here`` (between it and ``far``, which passes) that
    still passes: a bisection over the positions, since a check moves one way along a
    control, so a hint quotes the smallest passing move, not a far sample."""
    vals = list(values)
    if far not in vals:
        raise ValueError(f"far must be one of the values, got {far!r}")
    lo, hi = _index(vals, here), vals.index(far)
    while abs(hi - lo) > 1:
        mid = (lo + hi) // 2
        if passes(vals[mid]):
            hi = mid
        else:
            lo = mid
    return vals[hi]


def single_moves(current: Mapping[str, object], options: Mapping[str, Sequence[object]],
                 passes: Callable[[Mapping[str, object]], bool]) -> tuple[Move, ...]:
    """For each control in ``options`` (in order), the value nearest its current one (by
    position in its options) that, moved alone, makes ``passes`` true; controls with no such
    value are left out. ``current`` maps every control to its value."""
    out = []
    for name, opts in options.items():
        vals = list(opts)
        for i in nearest_first(vals, current[name]):
            if vals[i] != current[name] and passes({**current, name: vals[i]}):
                out.append(Move(name, vals[i]))
                break
    return tuple(out)
