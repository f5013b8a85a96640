"""One search for recovery hints (:mod:`labkit.plans.moves`): the candidate order, the
bisection to the smallest passing stop, and Lab 1's hints using them rather than a search
of their own."""

from __future__ import annotations

import itertools

import ipywidgets as ipw
import pytest

from labkit.labs.inference_economy import hints
from labkit.plans import moves
from labkit.plans.moves import Move, nearest_first, nearest_passing, single_moves

VALUES = list(range(0, 101, 5))  # a slider's stops


def test_nearest_first_orders_by_distance_and_bounds_a_long_control():
    order = nearest_first(VALUES, 50)
    assert len(order) == len(VALUES) - 1 and VALUES.index(50) not in order
    dist = [abs(i - VALUES.index(50)) for i in order]
    assert dist == sorted(dist)
    short = nearest_first(VALUES, 50, limit=6)
    assert len(short) <= 6 and short[:4] == [9, 11, 8, 12]   # both neighbours first
    assert 0 in short and len(VALUES) - 1 in short            # then the range's ends
    assert nearest_first([], 3) == []
    assert nearest_first(VALUES, 7) == list(range(len(VALUES)))  # not a stop: from index 0
    with pytest.raises(ValueError, match="limit"):
        nearest_first(VALUES, 50, limit=0)


@pytest.mark.parametrize("here, threshold",
                         list(itertools.product((0, 35, 100), (10, 40, 95))))
def test_nearest_passing_is_the_smallest_passing_stop(here, threshold):
    """Over a grid of starts and thresholds (a check passing at and past a value, either
    way along the control), the bisection returns the passing stop nearest the start."""
    for up in (True, False):
        def passes(v, up=up):
            return v >= threshold if up else v <= threshold
        far = VALUES[-1] if up else VALUES[0]
        if passes(here):
            continue
        calls: list[object] = []

        def counted_passes(v, calls=calls, p=passes):
            calls.append(v)
            return p(v)
        got = nearest_passing(VALUES, here, far, counted_passes)
        exact = min((v for v in VALUES if passes(v)), key=lambda v: abs(v - here))
        assert got == exact, (here, threshold, up)
        assert len(calls) <= len(VALUES).bit_length()   # a bisection, not a scan


def test_nearest_passing_rejects_a_far_value_off_the_control():
    with pytest.raises(ValueError, match="far"):
        nearest_passing(VALUES, 0, 7, lambda v: True)


def test_single_moves_uses_the_same_order():
    moved = single_moves({"a": 50, "b": 0}, {"a": VALUES, "b": VALUES},
                         lambda s: s["a"] <= 20 or s["b"] >= 60)
    assert moved == (Move("a", 20), Move("b", 60))


def test_lab1_hints_search_through_plans_moves(monkeypatch):
    """Lab 1's hints call the plans' bisection (a spy sees it) and name its stop."""
    seen: list[object] = []

    def spy(values, here, far, passes):
        out = moves.nearest_passing(values, here, far, passes)
        seen.append(out)
        return out
    monkeypatch.setattr(hints, "nearest_passing", spy)
    ctl = ipw.SelectionSlider(options=VALUES, value=90, description="Knob")

    def failed(s):
        return ("low",) if s["knob"] > 35 else ()
    fix = hints.find_fixes({"knob": 90}, {"knob": ctl}, failed)
    assert seen and fix["low"].changes == (("knob", 35),)
    assert not hasattr(hints, "_nearest_passing") and not hasattr(hints, "_nearest_first")
