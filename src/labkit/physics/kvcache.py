"""Bytes of weights and KV cache: the memory side of every formula.

KV precision is independent of weight precision (FP16 weights with an FP8 cache, or INT4
weights with an FP16 cache are both common), so every function takes both.
"""

from __future__ import annotations

import numpy as np

from labkit.core import validation as v
from labkit.core.units import bits_to_bytes
from labkit.registries.models import Model, get_model, require_transformer


def kv_bytes_per_token(model: str | Model, kv_bits: int = 16) -> float:
    """KV-cache bytes one token adds to one sequence, all layers.

    GQA: layers x 2 x kv_heads x d_head x bytes. Using query heads instead (a common slip)
    overstates Llama 3 70B's cache 8x; deriving d_head as hidden/heads breaks Qwen3-32B.
    MLA (DeepSeek-V3): layers x (latent rank + RoPE key dim) x bytes.
    """
    m = require_transformer(get_model(model))
    bits = v.precision_bits("kv_bits", kv_bits)
    return m.kv_elements_per_token * bits_to_bytes(bits)


def weight_bytes(model: str | Model, weight_bits: int = 16, *,
                 include_lm_head: bool = False, active_only: bool = False) -> float:
    """Bytes of model weights at ``weight_bits``.

    Transformers: decoder blocks (all experts unless ``active_only``), plus the LM head
    (hidden x vocab) when ``include_lm_head``. CNNs: every parameter.
    """
    m = get_model(model)
    bits = v.precision_bits("weight_bits", weight_bits)
    if not m.is_transformer:
        return m.params_total * bits_to_bytes(bits)
    params = m.block_params_active if active_only else m.block_params_total
    if include_lm_head:
        params += m.lm_head_params
    return params * bits_to_bytes(bits)


def kv_cache_bytes(model: str | Model, context_tokens: object, batch: object = 1,
                   kv_bits: int = 16) -> float | np.ndarray:
    """KV bytes held by ``batch`` sequences of ``context_tokens`` each (vectorised)."""
    s = v.positive("context_tokens", context_tokens)
    b = v.positive("batch", batch)
    return kv_bytes_per_token(model, kv_bits) * s * b


def kv_fraction_per_device(model: str | Model, tp: object) -> float:
    """Share of one sequence's KV cache that each of ``tp`` tensor-parallel devices holds.

    TP splits KV heads; past ``tp = kv_heads`` a head cannot be split further and is
    replicated, so the share stops at 1/kv_heads. MLA's latent is shared by all heads and
    is replicated on every TP rank (share 1).
    """
    m = require_transformer(get_model(model))
    t = v.positive_int("tp", tp)
    if m.uses_mla:
        return 1.0
    return max(1.0 / t, 1.0 / m.kv_heads)
