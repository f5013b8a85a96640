"""No dead knob: for every lab, track and part, each control can be moved and every move
changes something the student sees (a chart mark or its scale's domain, the readout, the
details, a callout, the math peek); a precision control must move a chart mark, so the
chart shows what precision buys. (Lab 1's and Lab 2's own copies of this test were merged
here.)"""

from __future__ import annotations

import json

import ipywidgets as ipw
import numpy as np

_MARK_TRAITS = ("x", "y", "visible", "colors")


def _values(ctl: ipw.ValueWidget, most: int = 5) -> list[object]:
    """A few valid values of a control: its ends and points between."""
    opts = getattr(ctl, "options", None)
    if opts:
        vals = [o[1] if isinstance(o, tuple) else o for o in opts]
        idx = sorted({round(i) for i in np.linspace(0, len(vals) - 1, min(most, len(vals)))})
        return [vals[i] for i in idx]
    if isinstance(ctl, ipw.FloatLogSlider):
        return [ctl.base ** x for x in np.linspace(ctl.min, ctl.max, 3)]
    if isinstance(ctl, ipw.IntSlider):
        return sorted({ctl.min, (ctl.min + ctl.max) // 2, ctl.max})
    return [ctl.min, (ctl.min + ctl.max) / 2, ctl.max]


def _marks(part) -> str:
    """Every mark's data, visibility and colours, and the domains of its scales."""
    return json.dumps([[np.asarray(getattr(m, t), dtype=object).tolist() for t in _MARK_TRAITS]
                       + [(k, getattr(sc, "min", None), getattr(sc, "max", None))
                          for k, sc in sorted(m.scales.items())]
                       for fig in part.figures.values() for m in fig.marks], default=repr)


def _text(part) -> str:
    return json.dumps([part.readout.value, part.details.value, part.math.body,
                       [(c.active, c.value) for c in part.callouts.values()]])


def _is_precision(name: str) -> bool:
    return "bits" in name or "precision" in name


def test_every_control_changes_what_the_student_sees(any_lab):
    """Each control can be moved, and every move of it (from one value to the next) changes
    something shown; a precision control moves a chart mark."""
    dead, moved = [], 0
    for letter in "ABCD":
        part = any_lab.part(letter)
        part.predict.commit(part.expected)  # the exploration opens
        for name, ctl in part.controls.items():
            if ctl.disabled:
                continue
            start, steps, moved_marks = ctl.value, 0, False
            for v in _values(ctl):
                old, marks, text = ctl.value, _marks(part), _text(part)
                ctl.value = v
                if ctl.value == old:
                    continue
                steps += 1
                now = _marks(part)
                moved_marks |= now != marks
                if now == marks and _text(part) == text:
                    dead.append(f"{letter}/{name}: {old!r} -> {v!r} changes nothing shown")
            ctl.value = start
            moved += steps > 0
            if not steps:
                dead.append(f"{letter}/{name}: could not be moved")
            elif _is_precision(name) and not moved_marks:
                dead.append(f"{letter}/{name}: precision moves no chart mark")
    assert moved and not dead, dead
