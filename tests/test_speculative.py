"""Speculative decoding of one sequence: the expected tokens a pass emits, the check pass on
the roofline, time per token and the per-request acceptance (units and invariants)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labkit.physics import speculative as sp
from labkit.physics.roofline import decode_roofline

A17, L3B = "a17-pro", "llama-3.2-3b"


# -- expected tokens (Leviathan et al. 2023, eq. 1) ----------------------------------------
def test_expected_tokens_is_the_geometric_sum():
    # 1 + 0.6 + 0.36 + 0.216 + 0.1296 tokens
    assert sp.expected_tokens(0.6, 4) == pytest.approx(2.3056)
    assert sp.expected_tokens(0.5, 0) == 1.0          # no guesses: the pass's own token
    assert sp.expected_tokens(1.0, 3) == 4.0          # every guess kept: k + 1
    assert sp.expected_tokens(0.0, 8) == 1.0          # none kept: still one token


def test_the_iphone_source_range_two_to_four_x_is_alpha_half_to_077_at_ten_guesses():
    """The track's source: 2-4x with 10 guesses a pass is E(alpha, 10) for alpha 0.5-0.77."""
    assert sp.expected_tokens(0.5, 10) == pytest.approx(2.0, abs=0.001)
    assert sp.expected_tokens(0.77, 10) == pytest.approx(4.1, abs=0.01)


@given(st.floats(0.0, 0.999), st.integers(0, 16))
def test_expected_tokens_grows_with_k_and_alpha_and_stays_within_one_and_k_plus_one(a, k):
    e = sp.expected_tokens(a, k)
    assert 1.0 <= e <= k + 1 + 1e-9
    assert sp.expected_tokens(a, k + 1) >= e
    assert sp.expected_tokens(min(0.9999, a + 1e-3), k) >= e - 1e-12
    assert e <= 1.0 / (1.0 - a) + 1e-9          # the limit of infinitely many guesses


def test_expected_tokens_broadcasts():
    out = sp.expected_tokens(np.array([0.3, 0.6]), 4)
    assert out.shape == (2,) and out[0] < out[1]


@pytest.mark.parametrize(("name", "kwargs"), [
    ("alpha", {"alpha": 1.2, "k": 2}), ("alpha", {"alpha": -0.1, "k": 2}),
    ("k", {"alpha": 0.5, "k": -1}), ("k", {"alpha": 0.5, "k": 1.5}),
])
def test_bad_input_names_the_parameter(name, kwargs):
    with pytest.raises(ValueError, match=name):
        sp.expected_tokens(**kwargs)


# -- the check pass --------------------------------------------------------------------------
def test_a_pass_with_no_guesses_is_the_decode_step():
    step = decode_roofline(A17, L3B, 1, 1152, 8, 16, mode="achievable")
    vp = sp.verify_pass(A17, L3B, 0, context_tokens=1152, weight_bits=8)
    assert vp.positions == 1
    assert vp.pass_s == pytest.approx(float(step.step_s))


def test_a_pass_reads_weights_and_kv_once_and_computes_every_position():
    one = sp.verify_pass(A17, L3B, 0, context_tokens=1152, weight_bits=8)
    five = sp.verify_pass(A17, L3B, 4, context_tokens=1152, weight_bits=8)
    assert five.weight_s == one.weight_s and five.kv_s == one.kv_s
    assert five.overhead_s == one.overhead_s
    assert five.compute_s == pytest.approx(5 * one.compute_s)
    # units: seconds per term, added
    assert five.pass_s == pytest.approx(five.weight_s + five.kv_s + five.compute_s
                                        + five.overhead_s)
    # a batch of five sequences reads five KV caches: the pass is cheaper than that step
    batch5 = decode_roofline(A17, L3B, 5, 1152, 8, 16, mode="achievable")
    assert five.pass_s < float(batch5.step_s)


def test_on_a_memory_bound_phone_checking_guesses_is_nearly_free():
    one = sp.verify_pass(A17, L3B, 0, context_tokens=1152, weight_bits=8)
    nine = sp.verify_pass(A17, L3B, 8, context_tokens=1152, weight_bits=8)
    assert nine.pass_s / one.pass_s < 1.1


# -- time per token --------------------------------------------------------------------------
def test_time_per_token_is_the_cycle_over_the_tokens_it_emits():
    # prompt lookup: no draft step; 0.12 s pass, E(0.6, 4) = 2.3056 tokens
    assert sp.time_per_token(0.12, 4, 0.6) == pytest.approx(0.12 / 2.3056)
    # a draft model: k draft steps join the cycle (Leviathan et al.'s walltime model)
    assert sp.time_per_token(0.12, 4, 0.6, draft_step_s=0.03) == pytest.approx(
        (4 * 0.03 + 0.12) / 2.3056)
    assert sp.time_per_token(0.12, 0, 0.6) == pytest.approx(0.12)


def test_guesses_nothing_accepts_make_every_token_slower_than_a_plain_step():
    step = sp.verify_pass(A17, L3B, 0, context_tokens=1152, weight_bits=8).pass_s
    four = sp.verify_pass(A17, L3B, 4, context_tokens=1152, weight_bits=8).pass_s
    assert sp.time_per_token(four, 4, 0.0) == pytest.approx(four)
    assert four > step     # the five positions' compute, paid for one token
    assert sp.time_per_token(four, 4, 0.0, draft_step_s=0.03) == pytest.approx(four + 0.12)


@given(st.floats(0.0, 0.98), st.floats(0.001, 0.01), st.integers(1, 12),
       st.floats(0.0, 0.05))
def test_time_per_token_falls_as_acceptance_rises_within_its_bounds(a, da, k, draft):
    """Between every guess kept (the cycle over k + 1 tokens) and none (the whole cycle
    per token), and lower the more guesses are kept."""
    pass_s = 0.1 * (1 + 0.01 * k)
    cycle = k * draft + pass_s
    t = sp.time_per_token(pass_s, k, a, draft_step_s=draft)
    assert cycle / (k + 1) - 1e-12 <= t <= cycle + 1e-12
    assert sp.time_per_token(pass_s, k, a + da, draft_step_s=draft) < t


# -- acceptance across requests --------------------------------------------------------------
def test_acceptance_sample_has_the_mean_and_spread_asked_for():
    a = sp.acceptance_sample(0.6, 0.1, n=20000, seed=3)
    assert a.mean() == pytest.approx(0.6, abs=0.005)
    assert a.std() == pytest.approx(0.1, abs=0.005)
    assert np.all((a > 0) & (a < 1))
    assert np.array_equal(a, sp.acceptance_sample(0.6, 0.1, n=20000, seed=3))  # seeded


def test_no_spread_is_every_request_at_the_mean():
    assert np.all(sp.acceptance_sample(0.6, 0.0, n=5) == 0.6)


def test_a_spread_no_beta_can_have_names_sd():
    with pytest.raises(ValueError, match="sd"):
        sp.acceptance_sample(0.9, math.sqrt(0.09))
    with pytest.raises(ValueError, match="mean"):
        sp.acceptance_sample(1.0, 0.1)
