"""Cost crossover, cost per token and the per-track economy record.

The reference lab returned ``math.inf`` crossover days when serving never overtook setup
and rendered "never in the first year" from that; here the crossover is ``None`` beyond the
horizon, and never inf or NaN, so it serialises to JSON.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labkit.physics.economy import Crossover, cost_crossover, cost_per_token, crossover_day
from labkit.physics.roofline import decode_roofline
from labkit.plans.economy import event_cost, track_crossover, track_economy
from labkit.tracks import TRACKS

TRACK_IDS = tuple(TRACKS)


def test_reference_cloud_case_by_hand():
    # setup USD 2M, 100 requests/s x 86,400 s, USD 0.01 each
    c = cost_crossover(2_000_000, 0.01, 100 * 86_400)
    assert c.daily_cost == pytest.approx(86_400.0)
    assert c.weekly_cost == pytest.approx(604_800.0)
    assert c.crossover_days == pytest.approx(2_000_000 / 86_400)       # 23.1 days
    assert 3.2 < c.crossover_days / 7 < 3.4
    assert c.crosses is True and c.crossover_days_capped == c.crossover_days


def test_optimisation_saving_and_annual_savings():
    c = cost_crossover(1000.0, 2.0, 50.0, optimisation_saving=0.25)
    assert c.effective_cost_per_event == 1.5
    assert c.daily_cost == 75.0
    assert c.crossover_days == pytest.approx(1000 / 75)
    assert c.annual_savings == pytest.approx(2.0 * 0.25 * 50 * 365)


def test_beyond_horizon_is_none_not_inf():
    c = cost_crossover(1e9, 0.01, 100.0, horizon_days=365)
    assert c.crossover_days is None and c.crosses is False
    assert c.crossover_days_capped == 365.0
    zero = cost_crossover(10.0, 0.0, 100.0)
    assert zero.crossover_days is None and zero.daily_cost == 0.0
    no_demand = cost_crossover(10.0, 1.0, 0.0)
    assert no_demand.crossover_days is None
    assert cost_crossover(0.0, 1.0, 1.0).crossover_days == 0.0
    assert crossover_day(5.0, 0.0) is None and crossover_day(5.0, 2.0) == 2.5


def test_curves_for_charts():
    c = cost_crossover(500.0, 1.0, 10.0, horizon_days=30)
    assert c.days.shape == (31,) and c.days[0] == 0 and c.days[-1] == 30
    assert np.allclose(c.cumulative_recurring, 10.0 * c.days)
    assert np.allclose(c.cumulative_total, 500.0 + 10.0 * c.days)


def test_vectorised_over_events_per_day():
    ev = np.array([0.0, 10.0, 100.0, 1000.0])
    c = cost_crossover(5000.0, 1.0, ev, horizon_days=365)
    assert isinstance(c, Crossover)
    assert np.allclose(c.daily_cost, ev)
    assert c.crossover_days == (None, None, 50.0, 5.0)       # 500 days > horizon -> None
    assert np.array_equal(c.crosses, [False, False, True, True])
    assert np.allclose(c.crossover_days_capped, [365, 365, 50, 5])
    assert c.cumulative_recurring.shape == (4, 366)
    assert np.all(np.isfinite(c.crossover_days_capped))


@pytest.mark.parametrize(("args", "name"), [
    ((-1, 1, 1), "setup_cost"),
    ((float("nan"), 1, 1), "setup_cost"),
    ((1, -0.5, 1), "cost_per_event"),
    ((1, float("inf"), 1), "cost_per_event"),
    ((1, 1, -3), "events_per_day"),
    ((1, 1, np.array([1.0, np.nan])), "events_per_day"),
    ((1, 1, "10"), "events_per_day"),
    ((1, 1, 1, 0), "horizon_days"),
    ((1, 1, 1, 10.5), "horizon_days"),
    ((1, 1, 1, 365, 1.0), "optimisation_saving"),
    ((1, 1, 1, 365, -0.1), "optimisation_saving"),
])
def test_invalid_inputs_name_the_parameter(args, name):
    with pytest.raises(ValueError, match=name):
        cost_crossover(*args)


@settings(max_examples=100, deadline=None)
@given(setup=st.floats(0, 1e9), cpe=st.floats(1e-9, 10), e1=st.floats(0, 1e9),
       e2=st.floats(0, 1e9), saving=st.floats(0, 0.99))
def test_crossover_days_fall_as_demand_rises(setup, cpe, e1, e2, saving):
    lo, hi = sorted((e1, e2))
    a = cost_crossover(setup, cpe, lo, optimisation_saving=saving)
    b = cost_crossover(setup, cpe, hi, optimisation_saving=saving)
    assert a.crossover_days_capped >= b.crossover_days_capped
    if a.crossover_days is not None:
        assert b.crossover_days is not None and b.crossover_days <= a.crossover_days
    for c in (a, b):
        assert c.crossover_days is None or (math.isfinite(c.crossover_days)
                                            and c.crossover_days >= 0)
        assert c.daily_cost >= 0 and c.annual_savings >= 0


@settings(max_examples=40, deadline=None)
@given(events=st.lists(st.floats(0, 1e7), min_size=1, max_size=20))
def test_vectorised_agrees_with_scalar(events):
    arr = cost_crossover(1e4, 0.01, np.array(events))
    for e, cd in zip(events, arr.crossover_days, strict=True):
        assert cd == cost_crossover(1e4, 0.01, e).crossover_days


# -- cost per token ------------------------------------------------------------------------

def test_cost_per_token_by_hand():
    r = decode_roofline("h100-sxm", "llama-3.1-70b", batch=1, context_tokens=1000,
                        mode="peak")
    c = cost_per_token("h100-sxm", "llama-3.1-70b", 1, 1000, mode="peak")
    assert c == pytest.approx(2.99 / 3600 * r.step_s, rel=1e-12)
    c4 = cost_per_token("h100-sxm", "llama-3.1-70b", 8, 1000, tp=4, mode="peak",
                        price_per_device_hour=2.0)
    r4 = decode_roofline("h100-sxm", "llama-3.1-70b", batch=8, context_tokens=1000, tp=4,
                         mode="peak")
    assert c4 == pytest.approx(4 * 2.0 / 3600 * r4.step_s / 8, rel=1e-12)


def test_cost_per_token_errors():
    with pytest.raises(ValueError, match="price_per_device_hour"):
        cost_per_token("a17-pro", "llama-3.2-3b")
    with pytest.raises(ValueError, match="price_per_device_hour"):
        cost_per_token("h100-sxm", "llama-3.2-3b", price_per_device_hour=-1)
    with pytest.raises(ValueError, match="batch"):
        cost_per_token("h100-sxm", "llama-3.2-3b", batch=0)


@settings(max_examples=80, deadline=None)
@given(b1=st.integers(1, 256), b2=st.integers(1, 256), ctx=st.integers(1, 4096),
       tp=st.sampled_from([1, 2, 4, 8]))
def test_cost_per_token_falls_with_batch_when_memory_bound(b1, b2, ctx, tp):
    lo, hi = sorted((b1, b2))
    if lo == hi:
        return
    r = decode_roofline("h100-sxm", "llama-3.1-70b", batch=hi, context_tokens=ctx, tp=tp)
    if r.regime != "memory-bound":
        return
    a = cost_per_token("h100-sxm", "llama-3.1-70b", lo, ctx, tp=tp)
    b = cost_per_token("h100-sxm", "llama-3.1-70b", hi, ctx, tp=tp)
    assert b < a


def test_cost_per_token_vectorised_and_positive():
    c = cost_per_token("h100-sxm", "llama-3.1-70b", np.arange(1, 65), 2048, tp=4)
    assert c.shape == (64,) and np.all(c > 0) and np.all(np.diff(c) < 0)


# -- per-track economy ---------------------------------------------------------------------

def test_track_crossovers_span_minutes_to_never():
    days = {t: track_crossover(t).crossover_days for t in TRACK_IDS}
    assert days["oura_ring"] < 1 / 24                  # under an hour
    assert days["iphone"] < 1                          # hours
    assert 7 < days["cloud_fleet"] < 70                # weeks
    assert days["robotaxi"] is None                    # validation dominates the year


def test_track_crossover_overrides():
    base = track_crossover("cloud_fleet")
    t = TRACKS["cloud_fleet"]
    assert base.daily_cost == pytest.approx(t.cost_per_event * t.events_per_day)
    more = track_crossover("cloud_fleet", events_per_day=2 * t.events_per_day)
    assert more.crossover_days == pytest.approx(base.crossover_days / 2)
    saved = track_crossover("cloud_fleet", optimisation_saving=0.5)
    assert saved.crossover_days == pytest.approx(base.crossover_days * 2)


@pytest.mark.parametrize("tid", TRACK_IDS)
def test_track_economy_record(tid):
    e = track_economy(tid)
    d = e.as_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text) == d
    assert set(d) == {"track", "crossover", "phases", "capacity", "plan", "guardrails"}
    t = TRACKS[tid]
    assert d["track"]["id"] == tid and d["track"]["cost_unit"] == t.cost_unit
    assert d["crossover"]["daily_cost"] == pytest.approx(event_cost(t).total * t.events_per_day)
    assert d["capacity"]["max_sessions"] >= t.batch_size
    assert d["phases"]["binding_phase"] in ("prefill", "decode")
    assert len(d["guardrails"]["checks"]) == 4
    table = e.format_table()
    assert t.label in table and "crossover" in table and "guardrails" in table


def test_track_economy_values_by_track():
    cloud = track_economy("cloud_fleet").as_dict()
    assert cloud["phases"]["binding_phase"] == "decode"
    assert cloud["plan"]["policy"] == "continuous" and cloud["guardrails"]["passed"]
    ring = track_economy("oura_ring").as_dict()
    assert ring["guardrails"]["binding"] == "cost"
    assert ring["phases"]["binding_label"] == "input pass"
    taxi = track_economy("robotaxi")
    assert taxi.as_dict()["crossover"]["crossover_days"] is None
    assert "not within 365 days" in taxi.format_table()


_BAD = st.one_of(st.just(float("nan")), st.just(float("inf")), st.just(-float("inf")),
                 st.just("3"), st.just(None), st.just(False),
                 st.floats(max_value=-1e-9, allow_nan=False, allow_infinity=False))


@settings(max_examples=80, deadline=None)
@given(position=st.integers(0, 2), bad=_BAD)
def test_invalid_crossover_inputs_always_name_the_parameter(position, bad):
    names = ("setup_cost", "cost_per_event", "events_per_day")
    args = [100.0, 1.0, 10.0]
    args[position] = bad
    with pytest.raises(ValueError, match=names[position]):
        cost_crossover(*args)
