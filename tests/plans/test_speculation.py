"""Lab 1 Part C for a track whose model checks its own guessed tokens (the iPhone): one
definition per figure, agreeing with the other parts' roads to the same quantity."""

from __future__ import annotations

import numpy as np
import pytest

from labkit.physics.speculative import expected_tokens, time_per_token
from labkit.plans import speculation as sp
from labkit.plans.serving import serving_plan
from labkit.tracks import get_track

PHONE = "iphone"


def test_without_guesses_the_tail_is_part_d_s_p99_tpot_at_the_same_weights():
    """Part C (no guesses) and Part D's release review give one TPOT at 8-bit weights."""
    p = sp.speculation_point(PHONE, k=0, weight_bits=8)
    plan = serving_plan(PHONE, weight_bits=8, policy="none", with_baseline=False)
    assert plan.policy_result is not None
    assert p.tpot_tail_s == pytest.approx(plan.policy_result.tpot_p99_s, rel=1e-9)
    assert p.tpot_mean_s == pytest.approx(p.tpot_tail_s)


def test_the_tail_is_the_pass_over_the_tokens_at_the_tail_acceptance():
    p = sp.speculation_point(PHONE, k=4, weight_bits=8)
    assert p.tokens_tail == pytest.approx(expected_tokens(p.acceptance_tail, 4))
    assert p.tpot_tail_s == pytest.approx(time_per_token(p.check.pass_s, 4,
                                                         p.acceptance_tail))
    assert p.acceptance_tail < p.acceptance_mean
    assert p.tpot_mean_s < p.tpot_tail_s < p.step.pass_s
    assert p.context_tokens == 1024 + 256 / 2


def test_the_phone_starts_at_its_most_accurate_weights_and_a_single_move_passes():
    tr = get_track(PHONE)
    assert sp.weight_options(tr) == (8, 4)          # 16-bit weights do not fit the app
    assert sp.start_bits(tr) == 8
    assert not sp.speculation_point(tr, k=0, weight_bits=8).met
    assert sp.speculation_point(tr, k=1, weight_bits=8).met       # guess one token
    assert sp.speculation_point(tr, k=0, weight_bits=4).met       # or lose quality


def test_a_wide_spread_leaves_the_tail_over_the_slo_at_every_k_while_the_mean_gains():
    curve = sp.speculation_curve(PHONE, weight_bits=8, acceptance_sd=0.3)
    assert not any(p.met for p in curve)
    assert all(p.tpot_mean_s < curve[0].tpot_mean_s for p in curve[1:])
    assert all(p.tail_speedup < p.mean_speedup for p in curve[1:])


def test_acceptance_shares_are_the_same_requests():
    x, shares = sp.acceptance_shares(PHONE)
    assert shares.sum() == pytest.approx(1.0)
    assert x.size == shares.size == 20
    mean = float(np.sum(x * shares))
    assert mean == pytest.approx(get_track(PHONE).speculation.acceptance_mean, abs=0.01)


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="track 'cloud_fleet'"):
        sp.speculation_point("cloud_fleet", k=1)
    with pytest.raises(ValueError, match="k must be at most"):
        sp.speculation_point(PHONE, k=99)
    with pytest.raises(ValueError, match="acceptance_mean"):
        sp.speculation_point(PHONE, k=1, acceptance_mean=1.5)
    with pytest.raises(ValueError, match="weight_bits"):
        sp.speculation_point(PHONE, k=1, weight_bits=3)
