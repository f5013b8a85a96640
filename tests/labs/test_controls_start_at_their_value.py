"""Controls start at their value: every slider of every part, on every lab and track, holds
a value the front end keeps.

A slider's front end keeps its position on the grid ``min + k * step`` (a log slider: its
exponent) and, when it renders, sends that grid point back as the value. A starting value
off the grid comes back as another number before the student touches anything, and every
card computed from it disagrees with the reveal computed from the default (the ring's
demand read 1.02 instead of 1.00). Here the front end's rounding is replayed in Python.
"""

from __future__ import annotations

import math

import ipywidgets as ipw

from labkit.ui.log_slider import GridLogSlider


def _front_end_value(ctl: ipw.ValueWidget) -> object:
    """What the browser's slider sends back for the widget's current value."""
    if isinstance(ctl, ipw.FloatLogSlider):
        pos = math.log(ctl.value) / math.log(ctl.base)
        k = round((pos - ctl.min) / ctl.step)
        return ctl.base ** (ctl.min + k * ctl.step)
    if isinstance(ctl, ipw.FloatSlider | ipw.IntSlider):
        k = round((ctl.value - ctl.min) / ctl.step)
        return ctl.min + k * ctl.step
    return ctl.value


def test_every_slider_starts_on_its_own_grid(any_lab):
    checked = 0
    for letter in "ABCD":
        part = any_lab.part(letter)
        for name, ctl in part.controls.items():
            if isinstance(ctl, ipw.FloatLogSlider):
                assert isinstance(ctl, GridLogSlider), f"{letter}.{name}: use log_control"
            sent = _front_end_value(ctl)
            if isinstance(sent, float):
                assert math.isclose(sent, ctl.value, rel_tol=1e-9, abs_tol=1e-12), (
                    f"Part {letter} {name}: starts at {ctl.value!r}, the browser sends {sent!r}")
                before = ctl.value
                ctl.value = sent   # the round trip leaves the value exactly as it was
                assert ctl.value == before, f"Part {letter} {name}: {before!r} -> {ctl.value!r}"
            checked += 1
    assert checked
