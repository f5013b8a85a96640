"""Recovery hints chosen by predicate: a hint names only a control on screen, and only a
value of it that, moved alone, makes the failing check pass (found by re-running the check
itself through :mod:`labkit.plans.moves`' search, or :func:`labkit.plans.serving.lever_fixes`
for a pair where Part D allows it). Shared by every Lab 1 part."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from labkit import ui as lw
from labkit.core.format import fmt_count
from labkit.plans.moves import nearest_first, nearest_passing
from labkit.plans.serving import LeverFix, lever_fixes
from labkit.ui.controls import control_values

if TYPE_CHECKING:
    import ipywidgets as ipw

MAX_CANDIDATES = 10
"""Values of one slider a hint search tries at most: the neighbours of the current value
first, then stops spread over the whole range (every value stays a stop of the slider)."""


def _passes(settings: Mapping[str, object], key: str, name: str,
            failed: Callable[[Mapping[str, object]], Sequence[str]],
            ) -> Callable[[object], bool]:
    """Whether check ``name`` passes with control ``key`` moved alone to a value."""
    return lambda value: name not in failed({**settings, key: value})


def find_fixes(settings: Mapping[str, object], controls: Mapping[str, ipw.ValueWidget],
               failed: Callable[[Mapping[str, object]], Sequence[str]],
               pairs: bool = False) -> dict[str, LeverFix]:
    """For each check failing at ``settings``, a move of one control on screen that passes
    it: per control the nearest passing value (:func:`labkit.plans.moves.nearest_first`'s
    candidates, then :func:`~labkit.plans.moves.nearest_passing`'s bisection), then across
    controls the move leaving the fewest checks failing, then the smallest (``pairs``:
    :func:`lever_fixes`' search, a pair of moves where no single one passes)."""
    if pairs:
        cands = {n: control_values(c) for n, c in controls.items()}
        return lever_fixes(settings, cands, failed, pair_bases=4)
    now = tuple(failed(settings))
    best: dict[str, tuple[int, int, tuple[tuple[str, object], ...], tuple[str, ...]]] = {}
    for key, ctl in controls.items():
        todo = set(now)
        vals = list(control_values(ctl))
        here = vals.index(settings[key]) if settings[key] in vals else 0
        for i in nearest_first(vals, settings[key], MAX_CANDIDATES):
            after = tuple(failed({**settings, key: vals[i]}))
            for name in [n for n in todo if n not in after]:
                todo.discard(name)
                near = nearest_passing(vals, settings[key], vals[i], _passes(settings, key,
                                                                             name, failed))
                after_near = tuple(failed({**settings, key: near}))
                trial = (len(after_near), abs(vals.index(near) - here), ((key, near),),
                         after_near)
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
