"""labkit.physics.parallelism: hand-computed bytes, links, search == loop, Pareto, inputs."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import fields

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labkit.physics import parallelism as par
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.parallelism.results import FLOAT_FIELDS
from labkit.physics.roofline import decode_roofline, memory_budget, step_weight_params
from labkit.registries.hardware import HARDWARE
from labkit.registries.models import MODELS

TRANSFORMERS = sorted(k for k, m in MODELS.items() if m.is_transformer)
GPUS = ("h100-sxm", "h200", "a100-80gb", "b200", "l4")


def row(table: par.ConfigTable, tp: int = 1, cp: int = 1, pp: int = 1, dp: int = 1,
        ep: int = 1) -> par.ParallelConfig:
    hit = np.flatnonzero((table.tp == tp) & (table.cp == cp) & (table.pp == pp)
                         & (table.dp == dp) & (table.ep == ep))
    assert hit.size == 1, (tp, cp, pp, dp, ep)
    return table.config(int(hit[0]))


def assert_same_config(a: par.ParallelConfig, b: par.ParallelConfig) -> None:
    for f in fields(par.ParallelConfig):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, float):
            assert x == pytest.approx(y, rel=1e-12, abs=0.0), f.name
        else:
            assert x == y, f.name


def assert_same_search(a: par.ParallelismSearch, b: par.ParallelismSearch) -> None:
    assert_same_config(a.chosen, b.chosen)
    assert [c.degrees for c in a.frontier] == [c.degrees for c in b.frontier]
    for x, y in zip(a.frontier, b.frontier, strict=True):
        assert_same_config(x, y)
    assert (a.feasible_count, a.candidate_count) == (b.feasible_count, b.candidate_count)
    assert (a.hardware, a.model, a.context_tokens, a.batch, a.max_devices, a.mode) == (
        b.hardware, b.model, b.context_tokens, b.batch, b.max_devices, b.mode)


# -- hand-computed memory -------------------------------------------------------------------
def test_llama70b_tp8_per_device_bytes_by_hand() -> None:
    t = par.enumerate_configs("h100-sxm", "llama-3.1-70b", 8192, batch=4)
    c = row(t, tp=8)
    attn = (2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128) / 8  # 18,874,368 per layer
    ffn = 3 * 8192 * 28672 / 8  # 88,080,384 per layer
    lm_head = embedding = 8192 * 128256 / 8  # one stage holds both tables (untied)
    assert c.weights_bytes == pytest.approx((80 * (attn + ffn) + lm_head + embedding) * 2)
    assert c.weights_bytes == pytest.approx(17_638_096_896)
    assert kv_bytes_per_token("llama-3.1-70b") == 327_680
    assert c.kv_bytes == pytest.approx(327_680 / 8 * 8192 * 4)
    assert c.transient_bytes == pytest.approx(4 * ((4 * 8192 + 2 * 28672 / 8) * 2
                                                   + 128256 / 8 * 4))
    assert c.used_bytes == pytest.approx(c.weights_bytes + c.kv_bytes + c.transient_bytes)
    assert c.fits and c.capacity_bytes == 80e9
    assert (c.devices, c.batch_per_replica, c.microbatch, c.layers_per_stage) == (8, 4, 4, 80)


def test_kv_heads_replicated_past_kv_heads() -> None:
    t = par.enumerate_configs("h100-sxm", "llama-3.1-70b", 8192)
    kv = {tp: row(t, tp=tp).kv_bytes for tp in (4, 8, 16, 32, 64)}
    assert kv[4] == pytest.approx(2 * kv[8])
    assert kv[16] == pytest.approx(kv[8]) and kv[64] == pytest.approx(kv[8])
    q_o, k_v = 2 * 8192 * 64 * 128, 2 * 8192 * 8 * 128
    assert par.attention_params_per_device("llama-3.1-70b", 16) == q_o / 16 + k_v / 8
    assert par.attention_params_per_device("llama-3.1-70b", 8) == (q_o + k_v) / 8


def test_mla_latent_replicated_across_tp_split_by_cp() -> None:
    t = par.enumerate_configs("h100-sxm", "deepseek-v3", 32768, max_devices=256)
    per_seq = 61 * (512 + 64) * 2 * 32768
    for tp in (1, 8, 128):
        assert row(t, tp=tp).kv_bytes == pytest.approx(per_seq)
    assert row(t, tp=8, cp=4).kv_bytes == pytest.approx(per_seq / 4)


def test_pp_splits_layers_and_kv_and_last_stage_holds_lm_head() -> None:
    t = par.enumerate_configs("h100-sxm", "llama-3.1-405b", 8192, batch=8)
    one, four = row(t, tp=8), row(t, tp=8, pp=4)
    assert four.layers_per_stage == math.ceil(126 / 4) == 32
    assert four.microbatch == 2 and four.batch_per_replica == 8
    assert four.kv_bytes == pytest.approx(one.kv_bytes * 32 / 126)
    table = 16384 * 128256 / 8 * 2  # embedding or LM head, one TP rank's share, bytes
    # pp = 1: one stage holds both tables; pp = 4: first stage the embedding, last the
    # LM head -- same size, and the last stage also holds the logits, so it binds
    assert four.weights_bytes - table == pytest.approx(
        (one.weights_bytes - 2 * table) * 32 / 126)
    assert four.transient_bytes == pytest.approx(one.transient_bytes / 4)  # 2 of 8 seqs


def test_first_stage_binds_when_its_dense_layers_outweigh_spread_experts() -> None:
    # DeepSeek-V3, pp = 16: 4 layers a stage. First: 3 dense + 1 MoE layer + embedding;
    # last: 4 MoE layers + LM head + logits. With 64-way EP at tp = 1 an MoE layer's share
    # is small, so the first stage holds more.
    m = MODELS["deepseek-v3"]
    t = par.enumerate_configs("h100-sxm", "deepseek-v3", 8192, batch=64)
    c = row(t, tp=1, pp=16, dp=64, ep=64)
    attn = m.attention_params_per_layer
    dense = m.dense_ffn_params
    moe = (m.shared_experts * m.expert_params + m.hidden * 256) + 256 * m.expert_params / 64
    table = m.hidden * m.vocab
    first = (4 * attn + 3 * dense + 1 * moe + table) * 2
    last = (4 * attn + 4 * moe + table) * 2
    assert first > last
    assert c.weights_bytes == pytest.approx(first)
    act = (4 * m.hidden + 2 * m.moe_ffn_dim) * 2  # one micro-batch of one sequence
    assert c.transient_bytes == pytest.approx(act)  # no logits on the first stage
    assert c.used_bytes == pytest.approx(first + c.kv_bytes + act)
    # the same deployment at tp = 8 keeps experts 8-way: the last stage binds
    c8 = row(t, tp=8, pp=16, dp=8, ep=64)
    moe8 = (m.shared_experts * m.expert_params + m.hidden * 256) / 8 + 256 * m.expert_params / 64
    assert c8.weights_bytes == pytest.approx((4 * attn / 8 + 4 * moe8 + table / 8) * 2)


def test_tied_embeddings_one_table_on_one_stage_a_copy_per_end_stage() -> None:
    m = MODELS["llama-3.2-1b"]
    assert m.tied_embeddings
    t = par.enumerate_configs("h100-sxm", "llama-3.2-1b", 8192)
    one, two = row(t), row(t, pp=2)
    table = m.hidden * m.vocab * 2
    layer = (m.attention_params_per_layer + m.dense_ffn_params) * 2
    assert one.weights_bytes == pytest.approx(16 * layer + table)  # shared table, once
    assert two.weights_bytes == pytest.approx(8 * layer + table)  # a copy on each end


def test_experts_split_by_max_of_tp_and_ep() -> None:
    t = par.enumerate_configs("h100-sxm", "deepseek-v3", 8192, max_devices=64)
    m = MODELS["deepseek-v3"]
    all_experts = 256 * m.expert_params * 58 * 2  # bytes, 58 MoE layers
    # ep <= tp: expert-TP keeps the share at 1/tp; ep > tp: 1/ep
    assert row(t, tp=8, ep=8).weights_bytes == pytest.approx(row(t, tp=8).weights_bytes)
    assert row(t, tp=8, ep=2).weights_bytes == pytest.approx(row(t, tp=8).weights_bytes)
    diff = row(t, tp=8, cp=4).weights_bytes - row(t, tp=8, cp=4, ep=32).weights_bytes
    assert diff == pytest.approx(all_experts / 8 - all_experts / 32)


@pytest.mark.parametrize("model", TRANSFORMERS)
@pytest.mark.parametrize("tp", [1, 2, 8, 16])
def test_single_stage_matches_roofline_memory_budget(model: str, tp: int) -> None:
    if tp > MODELS[model].q_heads:
        pytest.skip("tp above q_heads is not a candidate")
    t = par.enumerate_configs("h200", model, 4096, batch=3, weight_bits=8, kv_bits=8)
    c = row(t, tp=tp)
    mb = memory_budget("h200", model, 4096, batch=3, weight_bits=8, kv_bits=8, tp=tp)
    assert c.weights_bytes == pytest.approx(mb.weights_bytes, rel=1e-12)
    m = MODELS[model]
    embedding = 0.0 if m.tied_embeddings else m.hidden * m.vocab / tp
    assert c.weights_bytes == pytest.approx(
        (step_weight_params(model, 1e9, tp, include_lm_head=True) + embedding) * 1.0,
        rel=1e-12)
    assert c.kv_bytes == pytest.approx(mb.kv_bytes, rel=1e-12)
    assert c.transient_bytes == pytest.approx(mb.transient_bytes, rel=1e-12)


@pytest.mark.parametrize("mode", ["peak", "achievable"])
@pytest.mark.parametrize("model", ["llama-3.1-70b", "deepseek-v3", "mixtral-8x7b"])
def test_single_stage_time_is_decode_roofline_plus_tp_comm(mode: str, model: str) -> None:
    t = par.enumerate_configs("h100-sxm", model, 16384, batch=5, max_devices=64, mode=mode)
    for tp in (1, 4, 8, 32):
        c = row(t, tp=tp)
        r = decode_roofline("h100-sxm", model, 5, 16384, tp=tp, mode=mode)
        # achievable decode charges the TP all-reduce itself, on the same link model
        assert c.roofline_s == pytest.approx(r.step_s - r.comm_step_s, rel=1e-12)
        assert c.per_token_latency_s == pytest.approx(r.step_s - r.comm_step_s
                                                      + c.tp_allreduce_s, rel=1e-12)
        want = c.tp_allreduce_s if mode == "achievable" else 0.0
        assert r.comm_step_s == pytest.approx(want, rel=1e-12, abs=1e-15)
        assert c.throughput_tokens_per_s == pytest.approx(5 / c.per_token_latency_s)


def test_pipeline_latency_adds_stages_serially() -> None:
    t = par.enumerate_configs("h100-sxm", "llama-3.1-70b", 8192)
    one, two = row(t, tp=4), row(t, tp=4, pp=2)
    # 80 layers: two stages of 40 each one after the other cost what one stage of 80 does
    assert two.roofline_s == pytest.approx(one.roofline_s, rel=1e-12)
    assert two.per_token_latency_s == pytest.approx(
        one.per_token_latency_s + two.pp_handoff_s, rel=1e-12)
    assert two.pp_handoff_s > 0


# -- communication ----------------------------------------------------------------------------
def test_comm_volumes_for_known_configs() -> None:
    t = par.enumerate_configs("h100-sxm", "llama-3.1-70b", 8192, batch=2)
    c = row(t, tp=8)
    assert c.tp_allreduce_bytes == pytest.approx(2 * 80 * 8192 * 2 * 2 * 7 / 8) == 4_587_520
    # two sequences' bytes per step, plus 2 all-reduces x 14 ring steps x 1 us per layer
    assert c.tp_allreduce_s == pytest.approx(2 * 4_587_520 / 450e9 + 80 * 2 * 14 * 1e-6)
    assert c.cp_ring_bytes == c.pp_handoff_bytes == c.ep_alltoall_bytes == 0
    assert (c.cp_link, c.pp_link, c.ep_link) == ("none", "none", "none")
    cp2 = row(t, tp=8, cp=2)
    assert cp2.cp_ring_bytes == pytest.approx(80 * 2 * 1 / 2 * (64 / 8) * (128 * 2 + 2 * 4))
    assert cp2.cp_link == "scaleout"  # 16 devices span two 8-GPU domains
    assert row(t, tp=4, cp=2).cp_link == "interconnect"
    assert row(t, tp=8, pp=2).pp_handoff_bytes == 8192 * 2
    assert row(t, tp=1).tp_allreduce_bytes == 0 and row(t, tp=1).tp_link == "none"

    d = par.enumerate_configs("h100-sxm", "deepseek-v3", 8192, max_devices=64)
    e = row(d, tp=8, ep=8)
    assert e.ep_alltoall_bytes == pytest.approx(2 * 58 * 7168 * 2 * 8 * 7 / 8)
    assert e.ep_link == "interconnect"
    assert e.ep_alltoall_s == pytest.approx(e.ep_alltoall_bytes / 450e9 + 2 * 58 * 7 * 1e-6)
    assert row(d, tp=8, cp=2, ep=16).ep_link == "scaleout"


def test_latency_term_by_hand_llama70b_tp8() -> None:
    # 80 layers x 2 all-reduces x 2 (8 - 1) ring steps x 1 us on NVLink = 2.24 ms a step
    t = par.enumerate_configs("h100-sxm", "llama-3.1-70b", 8192)
    c = row(t, tp=8)
    assert par.tp_allreduce_messages(80, 8) == 80 * 2 * 14 == 2240
    alpha = c.tp_allreduce_s - c.tp_allreduce_bytes / 450e9
    assert alpha == pytest.approx(2.24e-3, rel=1e-9)
    assert c.per_token_latency_s == pytest.approx(c.roofline_s + c.tp_allreduce_s)
    # the term is per step, not per token: 4 sequences pay it once, bandwidth 4 times
    c4 = row(par.enumerate_configs("h100-sxm", "llama-3.1-70b", 8192, batch=4), tp=8)
    assert c4.tp_allreduce_s == pytest.approx(4 * c.tp_allreduce_bytes / 450e9 + 2.24e-3)
    # same for the other axes: CP ring, EP all-to-all
    cp = row(t, tp=4, cp=2)  # span 8: NVLink
    assert par.cp_ring_messages(80, 2) == 160
    assert cp.cp_ring_s == pytest.approx(cp.cp_ring_bytes / 450e9 + 160 * 1e-6)
    cp_out = row(t, tp=8, cp=2)  # span 16: scale-out
    assert cp_out.cp_ring_s == pytest.approx(cp_out.cp_ring_bytes / 50e9 + 160 * 5e-6)
    assert par.ep_alltoall_messages(58, 16) == 2 * 58 * 15
    d = par.enumerate_configs("h100-sxm", "deepseek-v3", 8192, max_devices=64)
    e = row(d, tp=8, cp=2, ep=16)
    assert e.ep_alltoall_s == pytest.approx(e.ep_alltoall_bytes / 50e9 + 2 * 58 * 15 * 5e-6)


def test_tp16_across_two_nodes_costs_more_comm_than_tp8_inside_one() -> None:
    t = par.enumerate_configs("h100-sxm", "llama-3.1-70b", 8192)
    eight, sixteen = row(t, tp=8), row(t, tp=16)
    assert sixteen.comm_s > eight.comm_s
    # latency alone: 80 x 2 x 30 steps x 5 us = 24 ms against 2.24 ms
    assert sixteen.tp_allreduce_s - sixteen.tp_allreduce_bytes / 50e9 == pytest.approx(24e-3)
    assert sixteen.per_token_latency_s > eight.per_token_latency_s
    # 405B: 16 GPUs as TP 8 x PP 2 (NVLink inside, one scale-out hop) beat TP 16 over IB
    t405 = par.enumerate_configs("h100-sxm", "llama-3.1-405b", 8192)
    assert row(t405, tp=8, pp=2).comm_s < row(t405, tp=16).comm_s
    assert row(t405, tp=8, pp=2).per_token_latency_s < row(t405, tp=16).per_token_latency_s


@pytest.mark.parametrize("batch", [1, 64])
@pytest.mark.parametrize("ctx", [8192, 131072])
def test_405b_keeps_tp_inside_the_nvlink_domain(ctx: int, batch: int) -> None:
    s = par.search("h100-sxm", "llama-3.1-405b", ctx, batch)
    c = s.chosen
    assert c.devices > 8  # 811 GB of weights: more than one 8-GPU node
    assert c.tp <= 8 and c.tp_link == "interconnect"  # TP stays on NVLink
    assert c.pp >= 2 and c.pp_link == "scaleout"  # the pipeline crosses nodes
    if ctx == 8192 and batch == 1:
        assert c.degrees == (8, 1, 2, 1, 1)  # 811 GB: two nodes, PP across them


def test_tp_link_flips_to_scaleout_past_domain_size() -> None:
    t = par.enumerate_configs("h100-sxm", "llama-3.1-70b", 8192)
    eight, sixteen = row(t, tp=8), row(t, tp=16)
    assert eight.tp_link == "interconnect" and sixteen.tp_link == "scaleout"
    assert eight.tp_allreduce_s == pytest.approx(eight.tp_allreduce_bytes / 450e9
                                                 + 80 * 2 * 14 * 1e-6)
    assert sixteen.tp_allreduce_s == pytest.approx(sixteen.tp_allreduce_bytes / 50e9
                                                   + 80 * 2 * 30 * 5e-6)
    # a TPU v5e pod keeps 64-way TP on ICI
    v5e = row(par.enumerate_configs("tpu-v5e", "llama-3.1-70b", 8192), tp=64)
    assert v5e.tp_link == "interconnect"


def test_pipeline_hops_inside_a_domain_use_interconnect() -> None:
    t = par.enumerate_configs("h100-sxm", "llama-3.1-70b", 8192)
    inside, across = row(t, tp=4, pp=2), row(t, tp=8, pp=2)
    assert inside.pp_link == "interconnect" and across.pp_link == "scaleout"
    assert inside.pp_handoff_s == pytest.approx(8192 * 2 / 450e9 + 1e-6)
    assert across.pp_handoff_s == pytest.approx(8192 * 2 / 50e9 + 5e-6)
    mixed = row(t, tp=4, pp=4)  # two stages per domain: 1 of 3 hops leaves it
    assert mixed.pp_link == "scaleout"
    assert mixed.pp_handoff_s == pytest.approx(8192 * 2 * (1 / 50e9 + 2 / 450e9)
                                               + 5e-6 + 2 * 1e-6)


def test_single_device_hardware_has_no_multi_device_comm() -> None:
    t = par.enumerate_configs("a17-pro", "llama-3.2-1b", 4096, batch=4)
    assert set(t.tp) == set(t.cp) == set(t.pp) == set(t.ep) == {1}
    assert set(t.dp) == {1, 2, 4}  # independent replicas need no link
    for name in FLOAT_FIELDS:
        assert np.all(np.isfinite(getattr(t, name)))


# -- search -----------------------------------------------------------------------------------
SEARCH_CASES = [
    ("h100-sxm", "deepseek-v3", 8192, 1, {}),
    ("h100-sxm", "deepseek-v3", 131072, 16, {}),
    ("h100-sxm", "llama-3.1-405b", 32768, 8, {}),
    ("h100-sxm", "llama-3.1-405b", 131072, 1, {"weight_bits": 8, "kv_bits": 8}),
    ("h200", "mixtral-8x7b", 8192, 64, {"mode": "achievable"}),
    ("l4", "llama-3.1-70b", 4096, 4, {}),
    ("tpu-v5e", "qwen3-32b", 32768, 16, {"max_devices": 512}),
    ("a17-pro", "llama-3.2-1b", 2048, 2, {"weight_bits": 4}),
    ("h100-sxm", "llama-3.1-70b", 8192, 32, {"latency_slo_s": 0.01}),
]


@pytest.mark.parametrize(("hw", "model", "ctx", "batch", "kw"), SEARCH_CASES)
def test_vectorised_search_equals_loop(hw: str, model: str, ctx: int, batch: int,
                                       kw: dict) -> None:
    fast = par.search(hw, model, ctx, batch, **kw)
    slow = par.search_loop(hw, model, ctx, batch, **kw)
    assert_same_search(fast, slow)


@pytest.mark.parametrize(("hw", "model", "ctx", "batch", "kw"), SEARCH_CASES)
def test_chosen_is_feasible_and_minimal(hw: str, model: str, ctx: int, batch: int,
                                        kw: dict) -> None:
    s = par.search(hw, model, ctx, batch, **kw)
    opts = {k: kw[k] for k in ("weight_bits", "kv_bits", "max_devices", "mode") if k in kw}
    t = par.enumerate_configs(hw, model, ctx, batch, **opts)
    slo = kw.get("latency_slo_s", math.inf)
    ok = t.fits & (t.per_token_latency_s <= slo)
    c = s.chosen
    assert c.fits and c.used_bytes <= c.capacity_bytes and c.per_token_latency_s <= slo
    assert c.devices == t.devices[ok].min()
    same = ok & (t.devices == c.devices)
    assert c.per_token_latency_s == pytest.approx(t.per_token_latency_s[same].min(), rel=0)
    assert s.feasible_count == int(ok.sum()) and s.candidate_count == len(t)
    assert s.frontier[0].degrees == c.degrees


@pytest.mark.parametrize(("hw", "model", "ctx", "batch", "kw"), SEARCH_CASES)
def test_frontier_is_pareto(hw: str, model: str, ctx: int, batch: int, kw: dict) -> None:
    s = par.search(hw, model, ctx, batch, **kw)
    devs = [c.devices for c in s.frontier]
    lats = [c.per_token_latency_s for c in s.frontier]
    assert devs == sorted(set(devs))
    assert all(a > b for a, b in itertools.pairwise(lats))
    opts = {k: kw[k] for k in ("weight_bits", "kv_bits", "max_devices", "mode") if k in kw}
    t = par.enumerate_configs(hw, model, ctx, batch, **opts)
    ok = t.fits & (t.per_token_latency_s <= kw.get("latency_slo_s", math.inf))
    for d, lat in zip(t.devices[ok], t.per_token_latency_s[ok], strict=True):
        best = min(c.per_token_latency_s for c in s.frontier if c.devices <= d)
        assert best <= lat  # nothing off the frontier beats it with as few devices


def test_conventions_hold_for_every_row() -> None:
    for model in ("deepseek-v3", "mixtral-8x7b", "llama-3.1-405b"):
        t = par.enumerate_configs("h100-sxm", model, 65536, batch=8, max_devices=1024)
        assert np.all(t.devices == t.tp * t.cp * t.pp * t.dp)
        assert np.all((t.tp * t.cp * t.dp) % t.ep == 0)
        assert np.all(MODELS[model].experts_total % t.ep == 0) if MODELS[model].is_moe else (
            set(t.ep) == {1})
        assert np.all(t.devices <= 1024) and t.cp.max() <= 65536 // par.CP_BLOCK_TOKENS
        assert np.all(t.tp <= MODELS[model].q_heads) and np.all(t.pp <= MODELS[model].layers)
        with pytest.raises(ValueError):
            t.used_bytes[0] = 0.0  # read-only arrays


def test_as_dict_is_json_serialisable() -> None:
    s = par.search("h100-sxm", "deepseek-v3", 32768, 4, latency_slo_s=0.05)
    d = json.loads(json.dumps(s.as_dict()))
    assert d["chosen"]["tp"] == s.chosen.tp and d["latency_slo_s"] == 0.05
    assert len(d["frontier"]) == len(s.frontier)
    assert json.loads(json.dumps(s.chosen.as_dict()))["fits"] is True


def test_known_answers() -> None:
    # 405B at 16 bits is 811 GB: more than one 8 x 80 GB node, so at least 16 H100s
    s = par.search("h100-sxm", "llama-3.1-405b", 8192)
    assert s.chosen.devices == 16 and s.chosen.tp == 8 and s.chosen.pp == 2
    # 70B at 16 bits is 141 GB: two H100s
    assert par.search("h100-sxm", "llama-3.1-70b", 8192).chosen.devices == 2
    assert par.search("h200", "llama-3-8b", 8192).chosen.devices == 1


def test_nothing_fits_names_the_reason() -> None:
    with pytest.raises(ValueError, match=r"no deployment up to max_devices=4 fits "
                                         r"llama-3.1-405b at context_tokens=8192"):
        par.search("h100-sxm", "llama-3.1-405b", 8192, max_devices=4)
    with pytest.raises(ValueError, match="no deployment up to max_devices=4 fits"):
        par.search_loop("h100-sxm", "llama-3.1-405b", 8192, max_devices=4)
    with pytest.raises(ValueError, match="none meets latency_slo_s"):
        par.search("h100-sxm", "llama-3.1-70b", 8192, latency_slo_s=1e-9)
    with pytest.raises(ValueError, match="none meets latency_slo_s"):
        par.search_loop("h100-sxm", "llama-3.1-70b", 8192, latency_slo_s=1e-9)
    with pytest.raises(ValueError, match="no link to a peer"):
        par.search("a17-pro", "llama-3.1-70b", 8192)


BAD_INPUTS = [
    ({"hardware": "h999"}, "hardware"),
    ({"hardware": 3}, "hardware"),
    ({"model": "gpt-9"}, "model"),
    ({"model": "mobilenet-v2"}, "model"),
    ({"context_tokens": 0}, "context_tokens"),
    ({"context_tokens": -8}, "context_tokens"),
    ({"context_tokens": float("nan")}, "context_tokens"),
    ({"context_tokens": float("inf")}, "context_tokens"),
    ({"context_tokens": "8k"}, "context_tokens"),
    ({"context_tokens": True}, "context_tokens"),
    ({"context_tokens": 10.5}, "context_tokens"),
    ({"batch": 0}, "batch"),
    ({"batch": -1}, "batch"),
    ({"batch": float("nan")}, "batch"),
    ({"weight_bits": 3}, "weight_bits"),
    ({"kv_bits": 0}, "kv_bits"),
    ({"max_devices": 0}, "max_devices"),
    ({"max_devices": float("inf")}, "max_devices"),
    ({"max_devices": "8"}, "max_devices"),
]


@pytest.mark.parametrize("fn", [par.enumerate_configs, par.search, par.search_loop])
@pytest.mark.parametrize(("bad", "name"), BAD_INPUTS)
def test_bad_inputs_name_the_parameter(fn: object, bad: dict, name: str) -> None:
    kw = {"hardware": "h100-sxm", "model": "llama-3.1-70b", "context_tokens": 8192} | bad
    with pytest.raises(ValueError, match=name):
        fn(**kw)  # type: ignore[operator]


@pytest.mark.parametrize("fn", [par.search, par.search_loop])
@pytest.mark.parametrize("slo", [0, -1.0, float("nan"), float("inf"), "fast"])
def test_bad_slo_names_the_parameter(fn: object, slo: object) -> None:
    with pytest.raises(ValueError, match="latency_slo_s"):
        fn("h100-sxm", "llama-3.1-70b", 8192, latency_slo_s=slo)  # type: ignore[operator]


def test_bad_mode_names_the_parameter() -> None:
    with pytest.raises(ValueError, match="mode"):
        par.enumerate_configs("h100-sxm", "llama-3.1-70b", 8192, mode="turbo")


# -- properties -------------------------------------------------------------------------------
common = settings(max_examples=100, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow])
valid_inputs = st.fixed_dictionaries({
    "hardware": st.sampled_from(sorted(HARDWARE)),
    "model": st.sampled_from(TRANSFORMERS),
    "context_tokens": st.integers(1, 131072),
    "batch": st.integers(1, 300),
    "weight_bits": st.sampled_from([4, 8, 16, 32]),
    "kv_bits": st.sampled_from([4, 8, 16, 32]),
    "max_devices": st.integers(1, 512),
})


@common
@given(valid_inputs)
def test_no_nan_inf_or_negative_for_valid_input(kw: dict) -> None:
    t = par.enumerate_configs(**kw)
    assert len(t) >= 1  # one device, no traffic, is always a candidate
    for name in FLOAT_FIELDS:
        a = getattr(t, name)
        assert np.all(np.isfinite(a)) and np.all(a >= 0), name
    assert np.all(t.per_token_latency_s > 0) and np.all(t.throughput_tokens_per_s > 0)
    assert np.all(t.used_bytes > 0)


@common
@given(valid_inputs, st.data())
def test_more_devices_never_reduce_fitting_capacity(kw: dict, data: st.DataObject) -> None:
    t = par.enumerate_configs(**kw)
    index = {tuple(int(a[i]) for a in (t.tp, t.cp, t.pp, t.dp, t.ep)): i for i in range(len(t))}
    i = data.draw(st.integers(0, len(t) - 1))
    base = tuple(int(a[i]) for a in (t.tp, t.cp, t.pp, t.dp, t.ep))
    for axis in range(5):
        bigger = tuple(d * 2 if k == axis else d for k, d in enumerate(base))
        j = index.get(bigger)
        if j is not None:
            assert t.used_bytes[j] <= t.used_bytes[i] * (1 + 1e-12)
            assert t.fits[j] or not t.fits[i]
    # a larger device budget only adds candidates
    more = par.enumerate_configs(**(kw | {"max_devices": kw["max_devices"] * 2}))
    assert int(more.fits.sum()) >= int(t.fits.sum())
    assert more.used_bytes.min() <= t.used_bytes.min()


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["h100-sxm", "a100-80gb", "tpu-v5e"]),
       st.sampled_from(["deepseek-v3", "mixtral-8x7b", "llama-3.1-405b", "qwen3-32b"]),
       st.integers(1, 131072), st.integers(1, 64))
def test_vectorised_equals_loop_property(hw: str, model: str, ctx: int, batch: int) -> None:
    try:
        fast = par.search(hw, model, ctx, batch, max_devices=256)
    except ValueError as err:
        with pytest.raises(ValueError, match="no deployment"):
            par.search_loop(hw, model, ctx, batch, max_devices=256)
        assert "no deployment" in str(err)
        return
    assert_same_search(fast, par.search_loop(hw, model, ctx, batch, max_devices=256))


def test_pipeline_bubble_opens_when_stages_outnumber_micro_batches():
    """The paper's PP stop rule: one sequence on PP2 leaves a stage idle half the cycle
    (bubble >= 50% > 10%); 64 sequences fill both stages (bubble = the hand-off share)."""
    from labkit.physics.parallelism import PP_BUBBLE_STOP, config_at, stop_criteria

    lone = stop_criteria(config_at("h100-sxm", "llama-3.1-70b", 4096, 1, 16, 16,
                                   (4, 1, 2, 1, 1), mode="achievable"), 200)
    full = stop_criteria(config_at("h100-sxm", "llama-3.1-70b", 4096, 64, 16, 16,
                                   (4, 1, 2, 1, 1), mode="achievable"), 200)
    assert lone.micro_batches == 1 and lone.bubble >= 0.5 and lone.pp_stop
    assert full.micro_batches == 2 and full.bubble < PP_BUBBLE_STOP and not full.pp_stop
    assert full.bubble == pytest.approx(full.handoff_s / full.token_s, rel=1e-9)
    assert full.below_b_star and not full.dp_stop  # 64 < 200 but a single replica
