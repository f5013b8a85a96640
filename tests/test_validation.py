"""Input checks: every rejection names the parameter and the accepted range."""

from __future__ import annotations

import numpy as np
import pytest

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
