"""Weight and KV bytes: GQA, MLA, KV precision separate from weight precision."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labkit.physics.kvcache import (
    kv_bytes_per_token,
    kv_cache_bytes,
    kv_fraction_per_device,
    weight_bytes,
)
from labkit.registries.models import get_model


def test_llama3_8b_is_131072_bytes_per_token_at_16_bits():
    # 32 layers x 2 (K, V) x 8 kv heads x 128 d_head x 2 bytes
    assert kv_bytes_per_token("llama-3-8b", 16) == 131_072


def test_gqa_uses_kv_heads_not_query_heads():
    """Correction: a KV formula with query heads would claim 4x (8B) and 8x (70B) more."""
    m = get_model("llama-3.1-70b")
    mha = m.layers * 2 * m.q_heads * m.d_head * 2
    assert kv_bytes_per_token(m) == mha / 8 == 327_680


def test_qwen3_uses_its_own_head_dim():
    # 64 layers x 2 x 8 kv heads x 128 (config head_dim, not 5120/64 = 80) x 2 bytes
    assert kv_bytes_per_token("qwen3-32b") == 262_144


def test_deepseek_v3_caches_the_latent_not_full_heads():
    assert kv_bytes_per_token("deepseek-v3", 16) == 61 * 576 * 2 == 70_272
    full = 61 * 128 * (192 + 128) * 2  # 128 uncompressed heads: K 192 (nope+rope), V 128
    assert full / kv_bytes_per_token("deepseek-v3") == pytest.approx(71.1, abs=0.1)


def test_kv_precision_is_independent_of_weight_precision():
    assert kv_bytes_per_token("llama-3-8b", 8) == 65_536
    assert kv_bytes_per_token("llama-3-8b", 4) == 32_768
    assert weight_bytes("llama-3-8b", 4) == get_model("llama-3-8b").block_params_total / 2


def test_weight_bytes_options():
    m = get_model("mixtral-8x7b")
    assert weight_bytes(m, 16) == m.block_params_total * 2
    assert weight_bytes(m, 16, active_only=True) == m.block_params_active * 2
    assert weight_bytes(m, 8, include_lm_head=True) == m.block_params_total + m.lm_head_params
    assert weight_bytes("mobilenet-v2", 8) == 3.4e6


def test_kv_fraction_stops_at_one_head_and_mla_replicates():
    assert kv_fraction_per_device("llama-3.1-70b", 4) == 1 / 4
    assert kv_fraction_per_device("llama-3.1-70b", 64) == 1 / 8
    assert kv_fraction_per_device("deepseek-v3", 8) == 1.0


@given(st.integers(1, 2_000_000), st.integers(1, 1024))
def test_kv_cache_grows_with_context_and_batch(s, b):
    base = kv_cache_bytes("llama-3-8b", s, b)
    assert kv_cache_bytes("llama-3-8b", s + 1, b) > base
    assert kv_cache_bytes("llama-3-8b", s, b + 1) > base
    assert base == s * b * 131_072


@pytest.mark.parametrize(("call", "param"), [
    (lambda: kv_bytes_per_token("llama-3-8b", 12), "kv_bits"),
    (lambda: weight_bytes("llama-3-8b", 0), "weight_bits"),
    (lambda: kv_cache_bytes("llama-3-8b", 0), "context_tokens"),
    (lambda: kv_cache_bytes("llama-3-8b", 10, float("inf")), "batch"),
    (lambda: kv_fraction_per_device("llama-3-8b", -2), "tp"),
    (lambda: kv_bytes_per_token("yolov8n"), "model"),
])
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises(ValueError, match=param):
        call()
