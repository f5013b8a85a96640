"""labkit.core.format: each formatter's unit choice at its boundaries, the significant digits
it promises (a formatted number parses back within them), and one rule for missing values."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labkit.core import format as core_format
from labkit.core.format import (
    NA,
    byte_scale,
    fmt,
    fmt_amount,
    fmt_bytes,
    fmt_count,
    fmt_energy,
    fmt_num,
    fmt_pct,
    fmt_si,
    fmt_time,
    fmt_tokens,
    format_bytes,
    tex_num,
)

# -- unit choice at the boundaries ----------------------------------------------------------

TIME = [
    (0.0, "0 µs"), (5e-9, "0.005 µs"), (999e-6, "999 µs"), (0.0009996, "1 ms"), (1e-3, "1 ms"),
    (0.999, "999 ms"), (0.9996, "1 s"), (1.0, "1 s"), (599.0, "599 s"), (599.7, "10 min"),
    (600.0, "10 min"), (612.0, "10 min"), (35_969.0, "599 min"), (35_999.0, "10 h"),
    (36_000.0, "10 h"), (4e6, "1,111 h"),
]
BYTES = [
    (0, "0 B"), (12, "12 B"), (999, "999 B"), (999.6, "1 kB"), (1000, "1 kB"),
    (48_000, "48 kB"), (999_600, "1 MB"), (1_342_177_280, "1.34 GB"), (999.6e9, "1 TB"),
    (1.71e12, "1.71 TB"), (3.35e15, "3,350 TB"),
]
ENERGY = [   # one unit family, the budgets' (watt-hours): never mJ beside mWh
    (0.0, "0 nWh"), (5e-7, "0.139 nWh"), (3.6e-6, "1 nWh"), (706e-6, "196 nWh"),
    (3.6e-3, "1 µWh"), (1.0, "278 µWh"), (3.59, "997 µWh"), (3.6, "1 mWh"), (61.0, "16.9 mWh"),
    (3599.0, "1 Wh"), (3600.0, "1 Wh"), (3.5e6, "972 Wh"), (3.6e6, "1 kWh"),
]
SI = [
    (5, "FLOP", "5 FLOP"), (999, "FLOP", "999 FLOP"), (999.6, "FLOP", "1 kFLOP"),
    (256e6, "FLOP/s", "256 MFLOP/s"), (8.7e9, "FLOP", "8.7 GFLOP"),
    (999.6e9, "FLOP", "1 TFLOP"), (3.35e12, "B/s", "3.35 TB/s"), (2e15, "FLOP", "2 PFLOP"),
    (2e18, "FLOP", "2,000 PFLOP"), (2500, "W", "2.5 kW"),
]
PLAIN = [  # fmt without a unit (= fmt_count)
    (0, "0"), (-0.0, "0"), (8, "8"), (30.0, "30"), (23.38, "23.4"), (0.00123, "0.00123"),
    (999.4, "999"), (999.6, "1,000"), (86_400, "86,400"), (999_999, "999,999"),
    (1e6, "1,000,000"), (1.2e9, "1,200,000,000"), (-1234.0, "-1,234"),
    (2.59e-5, "0.0000259"), (-3.03e-6, "-0.00000303"),  # words, never an exponent
]
LEDGER = [  # fmt_num: money and rates
    (0.0014, "0.0014"), (0.00123, "0.00123"), (0.9996, "1.00"), (1, "1.00"),
    (23.38, "23.38"), (99.994, "99.99"), (99.996, "100"), (583.23, "583"),
    (12_139.4, "12,139"), (1.5e6, "1,500,000"), (1.5e12, "1,500,000,000,000"), (-23.38, "-23.38"),
    (2.59e-5, "0.0000259"),
]
TEX = [
    (0, "0"), (23.38, "23.38"), (250_000, "250{,}000"), (999_999, "999{,}999"),
    (1e6, "1\\times10^{6}"), (8.64e6, "8.64\\times10^{6}"), (0.001, "0.001"),
    (0.000999, "9.99\\times10^{-4}"), (-8.64e6, "-8.64\\times10^{6}"),
    (6.8451e10, "6.85\\times10^{10}"),  # one rounding: 6.8451 -> 6.85, not 6.845 -> 6.84
    (math.inf, "\\infty"), (-math.inf, "-\\infty"), (math.nan, "\\text{n/a}"),
    (None, "\\text{n/a}"),
]


@pytest.mark.parametrize(("s", "text"), TIME)
def test_fmt_time_units(s, text):
    assert fmt_time(s) == text


@pytest.mark.parametrize(("n", "text"), BYTES)
def test_fmt_bytes_units(n, text):
    assert fmt_bytes(n) == text == format_bytes(n)


@pytest.mark.parametrize(("j", "text"), ENERGY)
def test_fmt_energy_units(j, text):
    assert fmt_energy(j) == text


@pytest.mark.parametrize(("x", "unit", "text"), SI)
def test_fmt_prefixes_the_units_where_a_prefix_means_something(x, unit, text):
    assert fmt(x, unit) == text == fmt_si(x, unit)


def test_fmt_leaves_other_units_alone_unless_told():
    assert fmt(583.0, "mWh") == "583 mWh" and fmt(2500, "USD") == "2,500 USD"
    assert fmt(2500, "W", si=False) == "2,500 W" and fmt(2500, "USD", si=True) == "2.5 kUSD"
    assert fmt(2500, "") == fmt(2500) == "2,500"
    units = core_format.SI_UNITS
    assert "mWh" not in units and {"B", "B/s", "FLOP", "FLOP/s"} <= units


@pytest.mark.parametrize(("x", "text"), PLAIN)
def test_fmt_plain_numbers(x, text):
    assert fmt(x) == text == fmt_count(x)


@pytest.mark.parametrize(("x", "text"), LEDGER)
def test_fmt_num_ledger(x, text):
    assert fmt_num(x) == text


@pytest.mark.parametrize(("x", "text"), TEX)
def test_tex_num(x, text):
    assert tex_num(x) == text


def test_fmt_amount_pct_and_tokens():
    assert fmt_amount(583.23, "mWh") == "583 mWh" == fmt_amount(583.23, "mWh", ledger=True)
    assert fmt_amount(23.38, "USD") == "23.4 USD"
    assert fmt_amount(23.38, "USD", ledger=True) == "23.38 USD"
    assert fmt_amount(12_139.4, "USD", ledger=True) == "12,139 USD"
    assert [fmt_pct(x) for x in (0, 0.123, 1, 12.34)] == ["0%", "12.3%", "100%", "1,234%"]
    assert fmt_pct(0.12345, sig=4) == "12.35%"
    assert [fmt_tokens(n) for n in (512, 1023, 1024, 1280, 4096, 131_072)] == [
        "512", "1,023", "1k", "1,280", "4k", "128k"]


def test_byte_scale_is_the_axis_unit():
    assert byte_scale(0) == (1.0, "B") and byte_scale(999) == (1.0, "B")
    assert byte_scale(1000) == (1e3, "kB") and byte_scale(3e10) == (1e9, "GB")
    assert byte_scale(2e12) == (1e12, "TB")


def test_sig_is_a_parameter_of_every_quantity():
    assert fmt(1234.5678, sig=6) == "1,234.57" and fmt(1234.5678) == "1,235"
    assert fmt(1.2345678, sig=5) == "1.2346" and fmt(2.5e6, sig=4) == "2,500,000"
    assert fmt_time(0.0123456, sig=5) == "12.346 ms" and fmt_time(0.0123456, sig=2) == "12 ms"
    assert fmt_bytes(1.2346e9, sig=4) == "1.235 GB"
    assert fmt_energy(0.0123456, sig=4) == "3.429 µWh"


# -- missing values: one rule ------------------------------------------------------------------

MISSING = [None, math.nan, math.inf, -math.inf, np.float64("nan"), np.float64("inf")]
TEXT_FORMATTERS = {
    "fmt": fmt, "fmt unit": lambda x: fmt(x, "FLOP"), "fmt_count": fmt_count,
    "fmt_si": lambda x: fmt_si(x, "B/s"), "fmt_num": fmt_num, "fmt_pct": fmt_pct,
    "fmt_amount": lambda x: fmt_amount(x, "USD"),
    "fmt_amount ledger": lambda x: fmt_amount(x, "USD", ledger=True),
    "fmt_time": fmt_time, "fmt_bytes": fmt_bytes, "format_bytes": format_bytes,
    "fmt_energy": fmt_energy,
}


@pytest.mark.parametrize("name", TEXT_FORMATTERS)
@pytest.mark.parametrize("x", MISSING, ids=repr)
def test_missing_values_read_n_a_and_never_raise(name, x):
    assert TEXT_FORMATTERS[name](x) == NA == "n/a"


def test_missing_tokens_and_tex():
    assert fmt_tokens(None) == NA
    assert tex_num(None) == tex_num(math.nan) == "\\text{n/a}"


# -- the promised significant digits: a formatted number parses back ----------------------------

TIME_UNITS = {"µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
BYTE_UNITS = {"B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
ENERGY_UNITS = {"nWh": 3.6e-6, "µWh": 3.6e-3, "mWh": 3.6, "Wh": 3600.0, "kWh": 3.6e6}
PREFIX = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
NUMBER = re.compile(r"-?[\d,]*\.?\d+(?:e[+-]\d+)?")


def _split(text: str) -> tuple[float, str]:
    m = NUMBER.match(text)
    assert m, text
    return float(m.group().replace(",", "")), text[m.end():].strip()


def _close(shown: float, x: float, sig: int, resolution: float = 0.0) -> bool:
    """``shown`` is ``x`` (both in the shown unit) to ``sig`` significant digits, or to
    ``resolution`` when that is coarser."""
    if shown == 0:
        return abs(x) <= resolution
    half_ulp = 0.5 * 10 ** (math.floor(math.log10(abs(shown))) - sig + 1)
    return abs(shown - x) <= max(half_ulp, resolution) * (1 + 1e-9)


finite = st.one_of(
    st.just(0.0),
    st.floats(min_value=1e-30, max_value=1e30) | st.floats(min_value=-1e30, max_value=-1e-30),
    st.floats(min_value=0.5, max_value=2e6),  # where the ladders switch units
)
sigs = st.integers(2, 6)


@given(x=finite, sig=sigs)
def test_fmt_parses_back_within_sig_digits(x, sig):
    shown, rest = _split(fmt(x, sig=sig))
    assert rest == "" and _close(shown, x, sig)
    shown, rest = _split(fmt(x, "FLOP/s", sig=sig))
    prefix = rest.removesuffix("FLOP/s")
    assert _close(shown, x / PREFIX[prefix], sig)
    assert prefix == "P" or abs(shown) < 1000  # the unit is chosen after rounding


@given(x=finite, sig=sigs)
def test_fmt_time_parses_back(x, sig):
    shown, unit = _split(fmt_time(x, sig=sig))
    assert _close(shown, x / TIME_UNITS[unit], sig, resolution=0.5 if unit == "min" else 0)
    assert unit == "h" or abs(shown) < {"s": 600, "min": 600}.get(unit, 1000)


@given(n=st.integers(-10**15, 10**18), sig=sigs)
def test_fmt_bytes_parses_back(n, sig):
    shown, unit = _split(fmt_bytes(n, sig=sig))
    assert _close(shown, n / BYTE_UNITS[unit], sig, resolution=0.5 if unit == "B" else 0.0)
    assert unit == "TB" or abs(shown) < 1000


@given(j=finite, sig=sigs)
def test_fmt_energy_parses_back(j, sig):
    shown, unit = _split(fmt_energy(j, sig=sig))
    assert _close(shown, j / ENERGY_UNITS[unit], sig)
    assert unit == "kWh" or abs(shown) < (3.6 if unit == "J" else 1000)


@given(x=finite)
def test_fmt_num_and_amount_keep_three_digits(x):
    assert _close(_split(fmt_num(x))[0], x, 3)
    shown, unit = _split(fmt_amount(x, "USD", ledger=True))
    assert unit == "USD" and _close(shown, x, 3)


@given(x=finite, sig=sigs)
def test_fmt_pct_parses_back(x, sig):
    text = fmt_pct(x, sig=sig)
    assert text.endswith("%") and _close(_split(text[:-1])[0], 100 * x, sig)


@given(x=finite)
def test_tex_num_parses_back(x):
    text = tex_num(x).replace("{,}", "")
    m = re.fullmatch(r"(-?[\d.]+)\\times10\^\{(-?\d+)\}", text)
    shown = float(m.group(1)) * 10 ** int(m.group(2)) if m else float(text)
    assert _close(shown, x, 3)


@given(n=st.integers(0, 10**9))
def test_fmt_tokens_parses_back(n):
    text = fmt_tokens(n)
    if text.endswith("k"):   # exact: only whole binary thousands get a k
        assert int(text[:-1]) * 1024 == n
    else:
        assert float(text.replace(",", "")) == n


@given(x=finite)
def test_the_old_names_are_thin(x):
    assert format_bytes(x) == fmt_bytes(x) and fmt_count(x) == fmt(x)
    assert fmt_si(x, "FLOP") == fmt(x, "FLOP", si=True)
    assert fmt_amount(x, "mWh") == fmt(x, "mWh")


def test_percentile_name_reads_a_quantile_as_an_ordinal():
    from labkit.core.format import percentile_name

    got = [percentile_name(q) for q in (0.025, 0.975, 0.05, 0.95, 0.01, 0.02, 0.03, 0.11)]
    assert got == ["2.5th", "97.5th", "5th", "95th", "1st", "2nd", "3rd", "11th"]
    with pytest.raises(ValueError, match="q"):
        percentile_name(1.5)
