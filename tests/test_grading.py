"""Student-facing checks: every failure says what was checked, what was found, what to revisit."""

from __future__ import annotations

import math

import pytest

from labkit import grading as g


class _Widget:
    def __init__(self, committed: bool) -> None:
        self.committed = committed


def test_expect_committed():
    g.expect_committed(_Widget(True), "A")
    with pytest.raises(AssertionError, match=r"Part B: .*prediction.*Revisit: the Part B"):
        g.expect_committed(_Widget(False), "B")


@pytest.mark.parametrize("bad", [None, "3", True, math.nan, math.inf])
def test_expect_number_rejects_non_numbers(bad):
    with pytest.raises(AssertionError, match=r"^Part C: `x`"):
        g.expect_number("x", bad, "C")


def test_expect_number_sign():
    assert g.expect_number("x", 2, "A") == 2.0
    assert g.expect_number("x", 0, "A", positive=False) == 0.0
    with pytest.raises(AssertionError, match="positive"):
        g.expect_number("x", 0, "A")


def test_expect_close_says_direction_and_revisit():
    g.expect_close("x", 100.5, 100.0, "A", rel=0.01, revisit="r")
    with pytest.raises(AssertionError, match=r"too high.*Revisit: the formula"):
        g.expect_close("x", 120, 100.0, "A", rel=0.01, revisit="the formula")
    with pytest.raises(AssertionError, match="too low"):
        g.expect_close("x", 80, 100.0, "A", rel=0.01, revisit="the formula")


def test_expect_true_and_choice():
    g.expect_true(True, "D", "c", "f", "r")
    with pytest.raises(AssertionError, match=r"Part D: checked -- found\. Revisit: here"):
        g.expect_true(False, "D", "checked", "found", "here")
    g.expect_choice("p", "none", ("none", "static"), "C")
    with pytest.raises(AssertionError, match="must be one of 'none', 'static'"):
        g.expect_choice("p", "turbo", ("none", "static"), "C")
