"""What a student reads, for every lab, track and part, at the defaults and at each
control's ends: no raw LaTeX outside math, no NaN or inf, no "= 0 ms" left by rounding, no
internal id of a track, device or model where a name belongs."""

from __future__ import annotations

from text_checks import control_ends, problems


def _texts(part) -> dict[str, str]:
    out = {"readout": part.readout.value, "details": part.details.value,
           "math": part.math.body}
    out.update({f"callout {n}": c.value for n, c in part.callouts.items() if c.active})
    return out


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
            for value in control_ends(ctl):
                ctl.value = value
                found += [f"{letter} {name}={value!r}, {p}" for p in problems(_texts(part))]
            ctl.value = start
    assert not found, "\n".join(found[:20])
