"""Recovery hints as moves: a control on screen and one value of it that, moved alone,
makes a failing check pass -- found by re-running the check, never by a rule written
beside it. One search for every part that offers a hint (Lab 1's also looks for pairs:
:func:`labkit.plans.serving.lever_fixes`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Move:
    """One recovery hint: set control ``control`` to ``value`` (all else unchanged)."""

    control: str
    value: object


def single_moves(current: Mapping[str, object], options: Mapping[str, Sequence[object]],
                 passes: Callable[[Mapping[str, object]], bool]) -> tuple[Move, ...]:
    """For each control in ``options`` (in order), the value nearest its current one (by
    position in its options) that, moved alone, makes ``passes`` true; controls with no such
    value are left out. ``current`` maps every control to its value."""
    out = []
    for name, opts in options.items():
        vals = list(opts)
        here = vals.index(current[name]) if current[name] in vals else 0
        for i in sorted(range(len(vals)), key=lambda j: (abs(j - here), j)):
            if vals[i] != current[name] and passes({**current, name: vals[i]}):
                out.append(Move(name, vals[i]))
                break
    return tuple(out)
