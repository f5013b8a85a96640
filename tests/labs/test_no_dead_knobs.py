"""No dead knob: for every lab, track and part, each control moved from the defaults
changes something the student sees (a chart mark, the readout, a callout, the math peek);
a precision control must move a chart mark, so the chart shows what precision buys."""

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
    return json.dumps([[np.asarray(getattr(m, t), dtype=object).tolist() for t in _MARK_TRAITS]
                       for fig in part.figures.values() for m in fig.marks], default=repr)


def _text(part) -> str:
    return json.dumps([part.readout.value, part.details.value, part.math.body,
                       [(c.active, c.value) for c in part.callouts.values()]])


def _is_precision(name: str) -> bool:
    return "bits" in name or "precision" in name


def test_every_control_changes_what_the_student_sees(any_lab):
    dead, moved = [], 0
    for letter in "ABCD":
        part = any_lab.part(letter)
        part.predict.commit(part.expected)  # the exploration opens
        for name, ctl in part.controls.items():
            if ctl.disabled:
                continue
            moved += 1
            start, marks, text = ctl.value, _marks(part), _text(part)
            moved_marks = moved_text = False
            for v in _values(ctl):
                if v == start:
                    continue
                ctl.value = v
                moved_marks |= _marks(part) != marks
                moved_text |= _text(part) != text
            ctl.value = start
            if not (moved_marks or moved_text):
                dead.append(f"{letter}/{name}: nothing shown changes")
            elif _is_precision(name) and not moved_marks:
                dead.append(f"{letter}/{name}: precision moves no chart mark")
    assert moved and not dead, dead
