"""A headless control behaves as its widget: the same moves give the same values, the same
refusals and the same changes seen by an observer (:mod:`labkit.ui.text_controls`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import ipywidgets as ipw
import pytest
import traitlets
from hypothesis import given, settings
from hypothesis import strategies as st

from labkit import ui as lw
from labkit.ui import text_controls as tc
from labkit.ui.log_slider import GridLogSlider

Make = Callable[[], Any]

MAKERS: dict[str, Make] = {
    "int": lambda: lw.int_control("Batch", 12, 1, 64, step=1),
    "float": lambda: lw.float_control("Share", 0.4, 0.0, 1.0, 0.05),
    "log": lambda: lw.log_control("Rate", 3.0, 0.1, 1000.0, steps=40),
    "dropdown": lambda: lw.choice_control("Stack", [("vLLM", "vllm"), ("TRT", "trt"),
                                                     ("none", None)], "trt"),
    "toggle": lambda: lw.precision_control("Weights", 8),
    "slider": lambda: lw.context_control(4096, 131072),
}


def both(name: str) -> tuple[Any, Any]:
    """(the widget, its headless stand-in) made by the same helper call."""
    live = MAKERS[name]()
    with lw.building(True):
        text = MAKERS[name]()
    return live, text


def apply(ctl: Any, moves: list[tuple[str, Any]]) -> list[object]:
    """Each move's outcome (the value after it, or the refusal), then every change seen."""
    seen: list[object] = []
    ctl.observe(lambda c: seen.append((c["old"], c["new"])), names="value")
    out: list[object] = []
    for attr, value in moves:
        try:
            setattr(ctl, attr, value)
            out.append(ctl.value)
        except traitlets.TraitError:
            out.append("refused")
    return [*out, "seen", *seen]


def same(a: list[object], b: list[object]) -> bool:
    return len(a) == len(b) and all(
        x == y or (isinstance(x, float) and isinstance(y, float) and math.isclose(x, y))
        for x, y in zip(a, b, strict=True))


def test_every_helper_gives_a_stand_in_headless_and_a_widget_live():
    for name in MAKERS:
        live, text = both(name)
        assert isinstance(live, ipw.ValueWidget) and isinstance(text, tc.TextControl), name
        assert live.value == text.value and type(live.value) is type(text.value), name
        assert lw.control_kind(live) == lw.control_kind(text), name
        assert lw.controls.control_values(live) == lw.controls.control_values(text), name
        assert str(live.description) == text.description, name
    assert isinstance(both("log")[0], GridLogSlider)


numbers = st.one_of(st.integers(-200, 200_000), st.floats(-10.0, 2e5, allow_nan=False))


@pytest.mark.parametrize("name", ["int", "float"])
@settings(max_examples=60, deadline=None)
@given(moves=st.lists(st.tuples(st.sampled_from(["value", "value", "min", "max"]), numbers),
                      max_size=8))
def test_a_slider_clamps_refuses_and_notifies_as_its_widget(name, moves):
    live, text = both(name)
    if name == "int":  # an IntSlider's traits take what int() takes
        moves = [(a, int(v)) for a, v in moves]
    assert same(apply(live, moves), apply(text, moves))


@settings(max_examples=60, deadline=None)
@given(moves=st.lists(st.one_of(
    st.floats(1e-3, 1e5, allow_nan=False),
    st.tuples(st.integers(-40, 40), st.floats(-2e-3, 2e-3)).map(  # near a stop, or not
        lambda kn: 3.0 * 10 ** ((kn[0] + kn[1]) * (4.0 / 40)))), max_size=8))
def test_a_log_slider_clamps_and_snaps_as_its_widget(moves):
    live, text = both("log")
    steps = [("value", v) for v in moves]
    assert same(apply(live, steps), apply(text, steps))


CHOICES = [None, "vllm", "trt", 4, 8, 8.0, 16, 256, 4096, 8192, "8", 131072, 999]


@pytest.mark.parametrize("name", ["dropdown", "toggle", "slider"])
@settings(max_examples=60, deadline=None)
@given(moves=st.lists(st.one_of(
    st.tuples(st.just("value"), st.sampled_from(CHOICES)),
    st.tuples(st.just("options"), st.lists(st.sampled_from(CHOICES[1:]), min_size=1,
                                           max_size=4, unique=True).map(
        lambda vs: [(f"#{v}", v) for v in vs]))), max_size=6))
def test_a_selection_takes_only_its_options_as_its_widget(name, moves):
    live, text = both(name)
    if name == "slider":  # SelectionSlider refuses None after taking it: not compared
        moves = [(attr, v) for attr, v in moves if v is not None]
    a, b = apply(live, moves), apply(text, moves)
    assert a == b and [type(x) for x in a] == [type(x) for x in b]
    assert (live.label, live.index) == (text.label, text.index)


def test_a_selection_slider_stand_in_refuses_none_and_keeps_its_value():
    _, text = both("slider")
    with pytest.raises(traitlets.TraitError):
        text.value = None
    assert text.value == 4096 and text.index is not None


def test_a_stand_in_holds_the_option_s_own_object():
    _, text = both("toggle")
    text.value = 16.0  # equal to an option: the option itself is held, as ipywidgets does
    assert text.value == 16 and type(text.value) is int and text.label == "16-bit"
