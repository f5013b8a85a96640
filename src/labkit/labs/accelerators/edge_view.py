"""View helpers shared by Lab 2's edge parts (handheld, wearable, vehicle; Parts B and C):
recovery hints found by moving one control on screen (:func:`find_lever`, on the one search
:func:`labkit.plans.moves.single_moves`), the label of a control's value, math-peek
equations that print their terms and their result from the same fields (:func:`tex_eq`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from labkit.core.format import fmt_count, fmt_pct, tex_num
from labkit.labs.common import Decision, LabPart, Settings, remembered
from labkit.plans.moves import single_moves
from labkit.ui.controls import control_values

NO_LEVER = "no single control here fixes it"


def limits_decision(task: str, fails: Mapping[str, bool], words: Mapping[str, str]) -> Decision:
    """A part whose task is every limit of ``fails`` (name -> failing) at once: passed when
    none fails; ``words`` names each limit as the student reads it."""
    failing = [words.get(k, k) for k, bad in fails.items() if bad]
    return Decision(task, not failing,
                    "fails: " + ", ".join(failing) if failing else "every limit holds")


def value_label(part: LabPart, name: str, value: object) -> str:
    """What the student reads for ``value`` of control ``name``."""
    ctl = part.controls[name]
    if getattr(ctl, "options", None):
        return part.option_label(name, value)
    if str(getattr(ctl, "readout_format", "")).endswith("%"):
        return fmt_pct(float(value))  # type: ignore[arg-type]
    return fmt_count(float(value))  # type: ignore[arg-type]


def find_lever(part: LabPart, s: Settings, still_fails: Callable[[Settings], bool],
               order: Sequence[str],
               breaks: Callable[[Settings], bool] | None = None) -> tuple[str, object] | None:
    """The first control of ``order`` (on screen) and its value nearest the current one
    that, moved alone, makes ``still_fails`` False (:func:`labkit.plans.moves.single_moves`)
    -- preferring a move for which ``breaks`` (a check passing now that would fail) is
    False; None when no single move does."""
    opts = {n: control_values(part.controls[n]) for n in order if n in part.controls}
    moves = single_moves(s, opts, lambda t: not still_fails(t))
    keeps = [m for m in moves if breaks is None or not breaks({**s, m.control: m.value})]
    chosen = keeps[0] if keeps else (moves[0] if moves else None)
    return None if chosen is None else (chosen.control, chosen.value)


def lever_text(part: LabPart, lever: tuple[str, object] | None) -> str:
    """A recovery hint naming the control and the value that fixes the check."""
    if lever is None:
        return NO_LEVER
    name, value = lever
    desc = str(part.controls[name].description)
    return f"set “{desc}” to {value_label(part, name, value)}"


def levers_for(part: LabPart, s: Settings, fails: Mapping[str, bool],
               check: Callable[[Settings], Mapping[str, bool]],
               order: Sequence[str]) -> dict[str, tuple[str, object] | None]:
    """For each failing check of ``fails``: the single move of :func:`find_lever` that
    passes it (``check(settings)[name]`` is True when it fails), preferring one that
    breaks no check passing now (each settings checked once: :func:`remembered`)."""
    check = remembered(part, check)
    passing = [k for k, failed in fails.items() if not failed]

    def fails_still(name: str) -> Callable[[Settings], bool]:
        return lambda t: bool(check(t)[name])

    def breaks(t: Settings) -> bool:
        now = check(t)
        return any(now[k] for k in passing)

    return {name: find_lever(part, s, fails_still(name), order, breaks)
            for name, failed in fails.items() if failed}


def tex_eq(symbolic: str, terms: str, result: float, unit: str) -> str:
    """``$$symbolic = terms = result unit$$``: the terms and the result printed from the same
    fields (tests recompute the result from the printed terms)."""
    u = f"\\ \\text{{{unit}}}" if unit else ""
    return f"$${symbolic} = {terms} = {tex_num(result)}{u}$$"


def tex_count(n: float) -> str:
    """A count for LaTeX, whole when it is whole (``8``, ``1{,}280``), else :func:`tex_num`."""
    return f"{int(n):,}".replace(",", "{,}") if float(n).is_integer() else tex_num(n)
