"""Input checks: every rejection names the parameter and the accepted range."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labkit.core import validation as v


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), -float("inf"), "3", True,
                                 None, [1, -1], np.array([]), np.array(["a"])])
def test_positive_rejects(bad):
    with pytest.raises(ValueError, match=r"^speed must"):
        v.positive("speed", bad)


def test_positive_accepts_numbers_and_arrays():
    assert v.positive("x", 3) == 3.0
    assert np.all(v.positive("x", np.array([1, 2])) == [1.0, 2.0])


@pytest.mark.parametrize("bad", [0, 1.5, -3, float("nan"), True, "4"])
def test_positive_int_rejects(bad):
    with pytest.raises(ValueError, match=r"^n must be an integer >= 1"):
        v.positive_int("n", bad)


def test_positive_int_accepts_integral_floats():
    assert v.positive_int("n", 8.0) == 8
    assert v.positive_int("n", np.int64(3)) == 3


def test_fraction_and_choice_and_bits():
    assert v.fraction("f", 0.5) == 0.5
    with pytest.raises(ValueError, match=r"f must be in \(0, 1\]"):
        v.fraction("f", 0, allow_zero=False)
    with pytest.raises(ValueError, match="mode must be one of 'a', 'b'"):
        v.choice("mode", "c", ("a", "b"))
    with pytest.raises(ValueError, match="bits must be one of 4, 8, 16, 32"):
        v.precision_bits("bits", 6)
    assert v.non_negative("z", 0) == 0.0


@pytest.mark.parametrize("check", [v.finite, v.positive, v.non_negative, v.fraction])
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                 st.integers(min_value=-(10**400), max_value=10**400)))
def test_a_python_number_gets_the_verdict_of_the_same_number_as_an_array(check, x):
    """The scalar fast path (a Python float or int, checked without numpy) accepts and
    rejects exactly what the array path does, and returns the same float."""
    try:
        want: object = float(check("x", np.array([float(x)]))[0])
    except (ValueError, OverflowError):
        want = ValueError
    try:
        got: object = check("x", x)
    except ValueError as e:
        assert str(e).startswith("x must")
        got = ValueError
    assert got == want and (got is ValueError or type(got) is float)


def test_positive_int_takes_a_python_int_as_it_is():
    assert v.positive_int("n", 3) == 3 and type(v.positive_int("n", 3)) is int
    with pytest.raises(ValueError, match=r"^n must be an integer >= 2"):
        v.positive_int("n", 1, minimum=2)
