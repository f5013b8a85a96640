"""Roofline: the paper's published figures, unit checks and invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labkit.physics import roofline as rf
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model

PE, L70 = "ahbm-pe", "llama-3.1-70b"


# --- paper section 5.1, peak mode ------------------------------------------------------
def test_paper_critical_batch_is_31_25():
    assert rf.critical_batch(PE, L70) == pytest.approx(31.25, abs=1e-12)


def test_paper_balance_context_is_13_4k_tokens():
    l_star = rf.balance_context(PE, L70)
    assert round(l_star / 1e3, 1) == 13.4
    # 2 N / (AI kv_bpt) with N = 68,451,041,280 block weights and kv_bpt = 327,680 bytes
    assert l_star == pytest.approx(2 * 68_451_041_280 / (31.25 * 327_680))


@pytest.mark.parametrize(("context", "batch", "ms"), [
    (8192, 1, 562), (8192, 256, 29.7), (1_048_576, 1, 1894), (1_048_576, 256, 1361),
])
def test_paper_per_token_figures(context, batch, ms):
    r = rf.decode_roofline(PE, L70, batch, context)
    decimals = 1 if ms < 100 else 0
    assert round(r.per_token_s * 1e3, decimals) == ms


def test_paper_ratios_19x_short_and_minus_28_percent_long():
    short = rf.decode_roofline(PE, L70, np.array([1, 256]), 8192).per_token_s
    long = rf.decode_roofline(PE, L70, np.array([1, 256]), 1_048_576).per_token_s
    assert round(short[0] / short[1]) == 19
    assert round((1 - long[1] / long[0]) * 100) == 28


def test_paper_component_figures():
    """535 ms weights and 17 ms compute at B=1; 1342 ms KV at 1M context."""
    r = rf.decode_roofline(PE, L70, 1, 1_048_576)
    assert round(r.weight_s * 1e3) == 535
    assert round(r.compute_s * 1e3) == 17
    assert round(r.kv_s * 1e3) == 1342
    assert r.regime == "kv-bound"


# --- unit checks -----------------------------------------------------------------------
def test_arithmetic_intensity_h100_is_flops_over_bytes():
    hw = get_hardware("h100-sxm")
    assert rf.arithmetic_intensity(hw) == pytest.approx(989.4e12 / 3.35e12)  # ≈ 295 FLOP/B
    assert rf.arithmetic_intensity(hw, precision="fp8") == pytest.approx(2 * 989.4e12 / 3.35e12,
                                                                        rel=1e-3)


def test_critical_batch_halves_with_int8_weights_and_scales_with_moe_sparsity():
    b16 = rf.critical_batch("h100-sxm", "llama-3-8b", 16)
    assert rf.critical_batch("h100-sxm", "llama-3-8b", 8) == pytest.approx(b16 / 2)
    mix = get_model("mixtral-8x7b")
    assert rf.critical_batch("h100-sxm", mix) == pytest.approx(b16 * mix.moe_sparsity)
    assert 3.5 < mix.moe_sparsity < 3.8  # 46.4B / 12.6B block weights


def test_weight_time_is_bytes_over_bandwidth():
    m = get_model("llama-3-8b")
    r = rf.decode_roofline("h100-sxm", m, 1, 1)
    assert r.weight_step_s == pytest.approx(m.block_params_total * 2 / 3.35e12)
    assert r.compute_step_s == pytest.approx(2 * m.block_params_active / 989.4e12)
    assert r.kv_step_s == pytest.approx(131_072 / 3.35e12)


def test_tensor_parallel_splits_weights_and_replicates_kv_heads_past_kv_heads():
    one = rf.decode_roofline("h100-sxm", L70, 4, 8192, tp=1)
    eight = rf.decode_roofline("h100-sxm", L70, 4, 8192, tp=8)
    sixteen = rf.decode_roofline("h100-sxm", L70, 4, 8192, tp=16)
    assert eight.kv_step_s == pytest.approx(one.kv_step_s / 8)
    assert sixteen.kv_step_s == pytest.approx(eight.kv_step_s)  # 8 KV heads: no further split
    assert eight.compute_step_s == pytest.approx(one.compute_step_s / 8)
    assert sixteen.weight_step_s > one.weight_step_s / 16  # K/V projections replicated


def test_achievable_mode_sits_above_peak_and_documents_its_sources():
    peak = rf.decode_roofline("h100-sxm", L70, 8, 4096, mode="peak")
    real = rf.decode_roofline("h100-sxm", L70, 8, 4096, mode="achievable")
    assert real.per_token_s > peak.per_token_s
    assert real.kv_s == pytest.approx(peak.kv_s / 0.9)             # datacenter class: 90%
    assert real.overhead_step_s == pytest.approx(0.3e-3 + 80 * 70e-6)  # + 80 layers x 70 us
    assert rf.get_mode("achievable", "h100-sxm") is rf.ACHIEVABLE
    assert set(rf.ACHIEVABLE.sources) >= {"bandwidth_efficiency", "flop_efficiency",
                                           "step_overhead_s", "include_lm_head",
                                           "layer_overhead_s", "bits_bandwidth",
                                           "tp_allreduce", "moe_layer_overhead_s"}


def test_moe_weight_reads_grow_with_batch_to_all_experts():
    touched = rf.expected_experts_touched("deepseek-v3", np.array([1, 8, 64, 4096]))
    assert touched[0] == pytest.approx(8)
    assert np.all(np.diff(touched) > 0)
    assert touched[-1] == pytest.approx(256, rel=1e-6)


def test_knee_is_b_star_at_zero_context_and_absent_past_l_star():
    b_star = rf.critical_batch(PE, L70)
    l_star = rf.balance_context(PE, L70)
    assert rf.knee_batch(PE, L70, 0) == pytest.approx(b_star)
    assert rf.knee_batch(PE, L70, l_star / 2) == pytest.approx(2 * b_star)
    assert rf.knee_batch(PE, L70, l_star) is None


def test_paper_knee_description_belongs_to_the_overlapped_roofline():
    """Correction: the paper says the knee B*/(1 - S/L*) is where the weight term drops below
    the compute + KV floor. In its own additive model that happens at B*/(1 + S/L*); the
    (1 - S/L*) formula is where an *overlapped* step turns compute-bound."""
    s = 4096
    knee = rf.knee_batch(PE, L70, s)
    r = rf.decode_roofline(PE, L70, knee, s)
    assert r.compute_step_s == pytest.approx(r.weight_step_s + r.kv_step_s)  # overlapped
    b = rf.weight_amortised_batch(PE, L70, s)
    r = rf.decode_roofline(PE, L70, b, s)
    assert r.weight_s == pytest.approx(r.compute_s + r.kv_s)  # additive
    assert b < rf.critical_batch(PE, L70) < knee


def test_utilization_is_half_at_l_star_and_a_third_at_twice():
    assert rf.utilization_at(100.0, 100.0) == pytest.approx(0.5)
    assert rf.utilization_at(200.0, 100.0) == pytest.approx(1 / 3)
    assert rf.utilization_at(0, 100.0) == 1.0


def test_memory_budget_flags_oom_and_never_returns_negative_free():
    mb = rf.memory_budget("h100-sxm", "llama-3-8b", np.array([1_000, 100_000]), 64)
    assert list(mb.over_budget) == [False, True]
    assert np.all(mb.free_bytes >= 0)
    assert mb.kv_bytes[1] == pytest.approx(64 * 100_000 * 131_072)


def test_ai_sensitivity_linear_in_flops_inverse_in_bandwidth():
    f = rf.ai_sensitivity(PE, L70, [1, 2, 4], axis="flops")
    b = rf.ai_sensitivity(PE, L70, [1, 2, 4], axis="bandwidth")
    assert f.ai_flop_per_byte == pytest.approx([31.25, 62.5, 125])
    assert b.ai_flop_per_byte == pytest.approx([31.25, 15.625, 7.8125])
    assert f.critical_batch == pytest.approx(f.ai_flop_per_byte)  # 16-bit weights, dense


def test_vectorised_sweep_matches_pointwise():
    batches = np.arange(1, 257)[:, None]
    contexts = np.geomspace(128, 1e6, 64)[None, :]
    grid = rf.decode_roofline("h100-sxm", L70, batches, contexts)
    for b, s in [(1, 0), (17, 9), (256, 63)]:
        point = rf.decode_roofline("h100-sxm", L70, int(batches[b - 1, 0]), contexts[0, s])
        assert grid.per_token_s[b - 1, s] == pytest.approx(point.per_token_s)
        assert grid.regime[b - 1, s] == point.regime


# --- invariants ------------------------------------------------------------------------
hardware_ids = st.sampled_from(["h100-sxm", "h200", "a100-80gb", "b200", "l4", "tpu-v5e",
                                "a17-pro", "ahbm-pe"])
llm_ids = st.sampled_from(["llama-3-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen3-32b",
                           "mixtral-8x7b", "deepseek-v3", "llama-3.2-1b"])
batches = st.integers(1, 4096)
contexts = st.integers(1, 2_000_000)
modes = st.sampled_from(["peak", "achievable"])


@given(hardware_ids, llm_ids, batches, contexts, modes)
def test_step_is_per_token_times_batch(hw, m, b, s, mode):
    r = rf.decode_roofline(hw, m, b, s, mode=mode)
    assert r.step_s == pytest.approx(r.per_token_s * b)


@given(hardware_ids, st.sampled_from(["llama-3-8b", "llama-3.1-70b", "qwen3-32b"]), contexts,
       modes)
def test_cost_per_token_falls_with_batch_for_dense_models(hw, m, s, mode):
    r = rf.decode_roofline(hw, m, np.array([1, 2, 8, 64, 512]), s, mode=mode)
    assert np.all(np.diff(r.per_token_s) < 0)


DERATED_NO_HEAD = rf.Derating("derated", 0.8, 0.6, 0.0, False)


@given(hardware_ids, llm_ids, st.sampled_from([rf.PEAK, DERATED_NO_HEAD]),
       st.sampled_from([4, 8, 16]))
def test_kv_time_equals_compute_time_at_l_star(hw, m, mode, kv_bits):
    l_star = rf.balance_context(hw, m, kv_bits, mode=mode)
    r = rf.decode_roofline(hw, m, 1, l_star, kv_bits=kv_bits, mode=mode)
    assert r.kv_s == pytest.approx(r.compute_s)


@given(hardware_ids, llm_ids, batches, contexts, modes, st.sampled_from([4, 8, 16]),
       st.sampled_from([4, 8, 16]), st.sampled_from([1, 2, 4, 8, 16]))
def test_no_nan_inf_or_negative_for_valid_input(hw, m, b, s, mode, wbits, kbits, tp):
    r = rf.decode_roofline(hw, m, b, s, wbits, kbits, tp=tp, mode=mode)
    for name in ("weight_s", "compute_s", "kv_s", "overhead_s", "per_token_s", "step_s",
                 "tokens_per_s"):
        value = getattr(r, name)
        assert math.isfinite(value) and value >= 0, name
    assert r.regime in rf.REGIMES
    mb = rf.memory_budget(hw, m, s, b, wbits, kbits, tp)
    assert all(math.isfinite(x) and x >= 0 for x in (mb.used_bytes, mb.free_bytes))
    for value in (rf.critical_batch(hw, m, wbits), rf.balance_context(hw, m, kbits)):
        assert math.isfinite(value) and value > 0


@given(hardware_ids, llm_ids, st.integers(1, 512), contexts)
def test_kv_grows_with_context_and_batch(hw, m, b, s):
    base = rf.decode_roofline(hw, m, b, s).kv_step_s
    assert rf.decode_roofline(hw, m, b + 1, s).kv_step_s > base
    assert rf.decode_roofline(hw, m, b, s + 1).kv_step_s > base


# --- bad input -------------------------------------------------------------------------
@pytest.mark.parametrize(("kwargs", "param"), [
    ({"batch": 0}, "batch"), ({"batch": -1}, "batch"), ({"batch": float("nan")}, "batch"),
    ({"batch": float("inf")}, "batch"), ({"batch": "8"}, "batch"), ({"batch": True}, "batch"),
    ({"context_tokens": -5}, "context_tokens"), ({"context_tokens": float("nan")},
                                                 "context_tokens"),
    ({"weight_bits": 3}, "weight_bits"), ({"kv_bits": 0}, "kv_bits"), ({"tp": 0}, "tp"),
    ({"tp": 2.5}, "tp"), ({"mode": "turbo"}, "mode"), ({"precision": "fp64"}, "precision"),
    ({"batch": np.array([1.0, np.nan])}, "batch"),
])
def test_invalid_input_names_the_parameter(kwargs, param):
    args = {"hardware": "h100-sxm", "model": L70, **kwargs}
    with pytest.raises(ValueError, match=param):
        rf.decode_roofline(**args)


@pytest.mark.parametrize(("hardware", "model", "param"), [
    ("h100", L70, "hardware"), ("h100-sxm", "llama-70b", "model"), (42, L70, "hardware"),
    ("h100-sxm", "mobilenet-v2", "model"),
])
def test_unknown_ids_and_wrong_models_name_the_parameter(hardware, model, param):
    with pytest.raises(ValueError, match=param):
        rf.critical_batch(hardware, model)


# --- the paper's serving batch and regime rules (section 5.2) --------------------------
def test_serving_batch_is_twice_b_star_and_halves_the_weight_share():
    sb = rf.serving_batch(PE, L70)
    assert sb == pytest.approx(62.5)
    r = rf.decode_roofline(PE, L70, sb, 0)
    assert r.weight_s / r.compute_s == pytest.approx(0.5)


def test_regime_rule_rows_at_their_boundaries():
    b, l_ = rf.critical_batch(PE, L70), rf.balance_context(PE, L70)
    assert rf.regime_rule(b * 0.99, 0.99 * l_, b, l_) == "weights"
    assert rf.regime_rule(b, 0.99 * l_, b, l_) == "serve"
    assert rf.regime_rule(1, l_, b, l_) == "long"
    assert rf.regime_rule(1, rf.EXTREME_CONTEXT * l_, b, l_) == "extreme"
    assert rf.regime_rule(256, 1_048_576, b, l_) == "extreme"  # the paper's 78 L*
    assert {r.key for r in rf.REGIME_RULES} == {"weights", "serve", "long", "extreme"}
    with pytest.raises(ValueError, match="batch"):
        rf.regime_rule(0, 10, b, l_)
    with pytest.raises(ValueError, match="l_star"):
        rf.regime_rule(1, 10, b, -1)


# --- a decode attention kernel that fetches the KV once per query head ----------------
def test_kv_read_factor_is_the_query_heads_sharing_a_kv_head():
    from labkit.physics.derating import get_mode, with_attention

    per_q = with_attention(get_mode("achievable", "h100-sxm"), "tensorrt-llm-pre-xqa")
    assert per_q.kv_per_query_head
    m = get_model("llama-2-70b")                    # 64 query heads, 8 KV heads
    assert rf.kv_read_factor(m, per_q) == m.q_heads / m.kv_heads == 8
    assert rf.kv_read_factor("llama-2-7b", per_q) == 1.0          # MHA: one each
    assert rf.kv_read_factor(m, "achievable") == 1.0              # a grouped kernel
    assert rf.kv_read_factor(m, "peak") == 1.0
    assert with_attention(rf.MODES["peak"], "tensorrt-llm-pre-xqa") is rf.MODES["peak"]
    assert not with_attention(get_mode("achievable", "h100-sxm"), "vllm").kv_per_query_head


def test_a_per_query_head_kernel_multiplies_only_the_kv_read():
    """KV step = B S kv_bpt x (q_heads / kv_heads) / BW: s = seq x tok x B/tok / (B/s)."""
    from labkit.physics.derating import get_mode

    grouped = get_mode("achievable", "h200", "decode", "tensorrt-llm")
    per_q = get_mode("achievable", "h200", "decode", "tensorrt-llm-pre-xqa")
    assert per_q.bandwidth_efficiency == grouped.bandwidth_efficiency  # one kernel library
    a = rf.decode_roofline("h200", "llama-2-70b", 64, 1152, 8, 8, 1, grouped, "fp8")
    b = rf.decode_roofline("h200", "llama-2-70b", 64, 1152, 8, 8, 1, per_q, "fp8")
    assert b.kv_step_s == pytest.approx(8 * a.kv_step_s)
    assert (b.weight_step_s, b.compute_step_s, b.overhead_step_s) == pytest.approx(
        (a.weight_step_s, a.compute_step_s, a.overhead_step_s))
    # the balance context shrinks by the same factor: each token's KV costs 8 reads
    assert rf.balance_context("h200", "llama-2-70b", 8, "fp8", grouped) == pytest.approx(
        8 * rf.balance_context("h200", "llama-2-70b", 8, "fp8", per_q))


def test_the_xqa_blog_s_speed_up_is_what_the_kv_re_read_gives():
    """NVIDIA's XQA blog: Llama-70B on one H200, 128 in / 2048 out, FP8: 2.4x the tokens/s
    within one latency budget. At batch 256 (mean context 1152) the per-query-head kernel's
    step is about that many times the grouped kernel's (same kernel-library term)."""
    from labkit.physics.derating import get_mode, with_attention

    grouped = get_mode("achievable", "h200", "decode", "tensorrt-llm")
    per_q = with_attention(grouped, "tensorrt-llm-pre-xqa")
    a = rf.decode_roofline("h200", "llama-2-70b", 256, 1152, 8, 8, 1, grouped, "fp8")
    b = rf.decode_roofline("h200", "llama-2-70b", 256, 1152, 8, 8, 1, per_q, "fp8")
    assert 1.8 < b.step_s / a.step_s < 2.6
