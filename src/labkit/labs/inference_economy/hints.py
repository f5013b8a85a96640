"""Recovery hints chosen by predicate: a hint names only a control on screen, and only a
value of it that, moved alone, makes the failing check pass (found by re-running the check
itself through :func:`labkit.plans.serving.lever_fixes`; a pair only where Part D allows
it). Shared by every Lab 1 part."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import ipywidgets as ipw
import numpy as np

from labkit import ui as lw
from labkit.core.format import fmt_count
from labkit.plans.serving import LeverFix, lever_fixes
from labkit.ui.controls import control_values

MAX_CANDIDATES = 10
"""Values of one slider a hint search tries at most: the neighbours of the current value
first, then stops spread over the whole range (every value stays a stop of the slider)."""


def _nearest_first(values: Sequence[object], here: object) -> list[tuple[int, object]]:
    """(distance in stops, value) for at most MAX_CANDIDATES values of ``values`` other
    than ``here``, nearest first: both neighbours at every distance up to a few stops,
    then an even spread (so a long slider costs a bounded number of checks)."""
    vals = list(values)
    i0 = vals.index(here) if here in vals else 0
    near = [i for d in range(1, 3) for i in (i0 - d, i0 + d) if 0 <= i < len(vals)]
    spread = np.linspace(0, len(vals) - 1, MAX_CANDIDATES - len(near)).round().astype(int)
    idx = sorted({*near, *(int(i) for i in spread)} - {i0}, key=lambda i: (abs(i - i0), i))
    return [(abs(i - i0), vals[i]) for i in idx]


def _index(vals: Sequence[object], here: object) -> int:
    return vals.index(here) if here in vals else 0


def _nearest_passing(vals: Sequence[object], settings: Mapping[str, object], key: str,
                     value: object, name: str,
                     failed: Callable[[Mapping[str, object]], Sequence[str]],
                     ) -> tuple[object, tuple[str, ...]]:
    """The stop nearest the current value, between it and ``value`` (which passes check
    ``name``), that still passes it: a bisection over the slider's stops (a check moves one
    way along a control), so a hint quotes the smallest move, not a far sample."""
    lo, hi = _index(vals, settings[key]), vals.index(value)
    while abs(hi - lo) > 1:
        mid = (lo + hi) // 2
        if name in failed({**settings, key: vals[mid]}):
            lo = mid
        else:
            hi = mid
    return vals[hi], tuple(failed({**settings, key: vals[hi]}))


def find_fixes(settings: Mapping[str, object], controls: Mapping[str, ipw.ValueWidget],
               failed: Callable[[Mapping[str, object]], Sequence[str]],
               pairs: bool = False) -> dict[str, LeverFix]:
    """For each check failing at ``settings``, a move of one control on screen that passes
    it: per control the nearest passing value, then across controls the move leaving the
    fewest checks failing, then the smallest (``pairs``: :func:`lever_fixes`' search, a
    pair of moves where no single one passes)."""
    if pairs:
        cands = {n: control_values(c) for n, c in controls.items()}
        return lever_fixes(settings, cands, failed, pair_bases=4)
    now = tuple(failed(settings))
    best: dict[str, tuple[int, int, tuple[tuple[str, object], ...], tuple[str, ...]]] = {}
    for key, ctl in controls.items():
        todo = set(now)
        vals = control_values(ctl)
        for _dist, value in _nearest_first(vals, settings[key]):
            after = tuple(failed({**settings, key: value}))
            for name in [n for n in todo if n not in after]:
                todo.discard(name)
                near, after_near = _nearest_passing(vals, settings, key, value, name, failed)
                trial = (len(after_near), abs(vals.index(near) - _index(vals, settings[key])),
                         ((key, near),), after_near)
                if name not in best or trial[:2] < best[name][:2]:
                    best[name] = trial
            if not todo:
                break
    return {n: (LeverFix(n, best[n][2], best[n][3]) if n in best else LeverFix(n, (), now))
            for n in now}


def change_text(controls: Mapping[str, ipw.ValueWidget], key: str, value: object) -> str:
    """``Weight precision: <b>8-bit</b>``: a move in the control's own words."""
    ctl = controls[key]
    label: str | None = None
    for option in getattr(ctl, "options", None) or ():
        if isinstance(option, tuple) and option[1] == value:
            label = str(option[0])
    if label is None:   # a number in words (the readout's d3 format may use an exponent)
        label = fmt_count(float(value)) if isinstance(value, int | float) else str(value)
    return f"{lw.esc(ctl.description)}: <b>{lw.esc(label)}</b>"


def hint_text(controls: Mapping[str, ipw.ValueWidget], fix: LeverFix,
              label: Callable[[str], str] = str, pairs: bool = False) -> str:
    """The recovery hint for ``fix`` (its moves and what still fails after them)."""
    if not fix.found:
        return ("no change of one or two controls here passes it from these settings"
                if pairs else "no single control on screen passes it from these settings")
    rest = fix.still_failing
    after = ("then every check passes" if not rest else
             f"then {', '.join(label(n) for n in rest)} still fail"
             + ("s" if len(rest) == 1 else ""))
    moves = " and ".join(change_text(controls, k, val) for k, val in fix.changes)
    one = len(fix.changes) == 1
    lead = "" if one else "no single control passes it; together, "
    return f"{lead}{moves} pass{'es' if one else ''} it ({after})"
