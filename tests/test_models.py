"""Model registry: shapes, derived parameter counts and KV elements."""

from __future__ import annotations

import dataclasses

import pytest

from labkit.registries.models import MODELS, get_model

REQUIRED = {"llama-3-8b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-2-70b",
            "qwen3-8b", "qwen3-32b", "tinyllama-1.1b", "mixtral-8x7b", "deepseek-v3",
            "mobilenet-v2", "yolov8n", "ds-cnn-kws", "resnet-50"}


def test_required_models_and_an_on_device_llm():
    assert set(MODELS) >= REQUIRED
    assert {"llama-3.2-1b", "llama-3.2-3b"} & set(MODELS)


@pytest.mark.parametrize("m", MODELS.values(), ids=lambda m: m.id)
def test_every_model_has_sources(m):
    assert m.sources and all(text.strip() for text in m.sources.values())
    assert m.params_total >= m.params_active > 0


@pytest.mark.parametrize("m", [m for m in MODELS.values() if m.is_transformer],
                         ids=lambda m: m.id)
def test_shapes_reproduce_published_parameter_counts(m):
    """Blocks + LM head (+ embedding table unless tied) equals the model card within 1%."""
    embed = 0 if m.tied_embeddings else m.lm_head_params
    total = m.block_params_total + m.lm_head_params + embed
    assert total == pytest.approx(m.params_total, rel=0.01)


def test_moe_active_parameters():
    assert get_model("mixtral-8x7b").block_params_active + 2 * 4096 * 32000 == pytest.approx(
        12.9e9, rel=0.03)
    ds = get_model("deepseek-v3")
    assert ds.block_params_active + 2 * ds.lm_head_params == pytest.approx(37e9, rel=0.03)


def test_qwen3_head_dim_is_128_not_hidden_over_heads():
    q = get_model("qwen3-32b")
    assert q.d_head == 128 and q.hidden // q.q_heads == 80
    assert q.kv_elements_per_token == 64 * 2 * 8 * 128


def test_deepseek_caches_its_mla_latent():
    ds = get_model("deepseek-v3")
    assert ds.uses_mla
    assert ds.kv_elements_per_token == 61 * (512 + 64)


def test_cnns_carry_flops_per_inference():
    assert get_model("mobilenet-v2").flops_per_inference == pytest.approx(600e6)
    assert get_model("yolov8n").flops_per_inference == pytest.approx(8.7e9)
    assert not get_model("ds-cnn-kws").is_transformer
    assert get_model("resnet-50").flops_per_inference == pytest.approx(2 * 3.8e9)


def test_mlperf_tiny_ds_cnn_counts_parameters_and_operations_once():
    """About 24k parameters (not Hello Edge's 38.6 KB of memory) and 2 x 2.66M MACs."""
    kws = get_model("ds-cnn-kws")
    assert kws.params_total == 23_756
    macs = 25 * 5 * 64 * 10 * 4 + 4 * (25 * 5 * 64 * 9 + 25 * 5 * 64 * 64) + 64 * 12
    assert kws.flops_per_inference == pytest.approx(2 * macs, rel=0.01)


def test_a_modified_model_passes_through_and_a_wrong_type_names_the_parameter():
    from labkit.physics.roofline import decode_roofline

    wide = dataclasses.replace(get_model("llama-3-8b"), ffn_dim=2 * 14336)
    assert get_model(wide) is wide
    assert decode_roofline("h100-sxm", wide).weight_s > decode_roofline(
        "h100-sxm", "llama-3-8b").weight_s
    with pytest.raises(ValueError, match="model must be a registry id string or a Model"):
        get_model(8e9)  # type: ignore[arg-type]


def test_unknown_model_lists_close_matches():
    with pytest.raises(ValueError, match=r"model.*'llama-3.1-70b'"):
        get_model("llama-3.1-70")
