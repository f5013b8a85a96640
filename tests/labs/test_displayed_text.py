"""What a student reads, for every lab, track and part, at the defaults and at each
control's ends: no raw LaTeX outside math, no NaN or inf, no "= 0 ms" left by rounding, no
internal id of a track, device or model where a name belongs."""

from __future__ import annotations

import ipywidgets as ipw

from text_checks import problems


def _texts(part) -> dict[str, str]:
    out = {"readout": part.readout.value, "details": part.details.value,
           "math": part.math.body}
    out.update({f"callout {n}": c.value for n, c in part.callouts.items() if c.active})
    return out


def _ends(ctl: ipw.ValueWidget) -> list[object]:
    opts = getattr(ctl, "options", None)
    if opts:
        values = [o[1] if isinstance(o, tuple) else o for o in opts]
        return [values[0], values[-1]]
    if isinstance(ctl, ipw.FloatLogSlider):
        return [ctl.base ** ctl.min, ctl.base ** ctl.max]
    return [ctl.min, ctl.max]


def test_every_shown_sentence_is_clean(any_lab):
    lab = any_lab
    found = []
    for letter in "ABCD":
        part = lab.part(letter)
        found += [f"{letter} defaults, {p}" for p in problems(_texts(part))]
        for name, ctl in part.controls.items():
            if ctl.disabled:
                continue
            start = ctl.value
            for value in _ends(ctl):
                ctl.value = value
                found += [f"{letter} {name}={value!r}, {p}" for p in problems(_texts(part))]
            ctl.value = start
    assert not found, "\n".join(found[:20])
