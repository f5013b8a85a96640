"""Prefill vs decode (and input pass vs decision for CNNs), checked by hand.

The reference lab's phase split was a proxy: prefill = 10% of the SLO + a token-squared
fudge, TPOT = weight GB / bandwidth (no KV, no batch), device tracks scaled by per-track
constants. Here every term is a roofline term, so the SLO cannot change the prefill time
and the KV read shows up in TPOT.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labkit.physics.kvcache import weight_bytes
from labkit.physics.phases import (
    CNN_PHASE_LABELS,
    LLM_PHASE_LABELS,
    attention_prefill_flops,
    cnn_compute_precision,
    cnn_inference_time,
    decision_time,
    prefill_time,
    request_phases,
)
from labkit.physics.roofline import decode_roofline
from labkit.plans.workload import track_phases
from labkit.registries.models import get_model

H100_BF16 = 989.4e12
H100_BW = 3.35e12
N70 = 68_451_041_280  # Llama 3.1 70B decoder-block parameters, from the layer shapes


def test_block_params_literal_matches_shapes():
    m = get_model("llama-3.1-70b")
    attn = 2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128
    ffn = 3 * 8192 * 28672
    assert m.block_params_active == 80 * (attn + ffn) == N70


def test_attention_flops_gqa_and_mla():
    # GQA: 2 x layers x P^2 x q_heads x d_head (causal half of QK^T and AV).
    assert attention_prefill_flops("llama-3.1-70b", 1000) == 2 * 80 * 1000**2 * 64 * 128
    # MLA: QK width 128 + 64 (RoPE), V width 128.
    assert attention_prefill_flops("deepseek-v3", 1000) == 61 * 1000**2 * 128 * (192 + 128)
    arr = attention_prefill_flops("llama-3.1-70b", np.array([1000.0, 2000.0]))
    assert arr[1] == 4 * arr[0]  # quadratic


def test_prefill_by_hand_peak_tp4():
    p, tp = 3584, 4
    r = prefill_time("h100-sxm", "llama-3.1-70b", p, weight_bits=16, kv_bits=16, tp=tp,
                     mode="peak")
    compute = 2 * N70 * p / (tp * H100_BF16)
    attention = 2 * 80 * p**2 * 64 * 128 / (tp * H100_BF16)
    weights = N70 * 2 / tp / H100_BW               # blocks only in peak mode
    kv_write = p * 327_680 / tp / H100_BW          # 8 kv heads over 4 devices
    assert r.compute_s == pytest.approx(compute, rel=1e-12)
    assert r.attention_s == pytest.approx(attention, rel=1e-12)
    assert r.weight_s == pytest.approx(weights, rel=1e-12)
    assert r.kv_write_s == pytest.approx(kv_write, rel=1e-12)
    assert r.overhead_s == 0.0
    assert r.total_s == pytest.approx(compute + attention + weights + kv_write, rel=1e-12)
    assert r.total_s == pytest.approx(0.1385, abs=1e-4)  # compute-bound: ~139 ms
    assert r.flops == pytest.approx(2 * N70 * p + 2 * 80 * p**2 * 64 * 128, rel=1e-12)


def test_prefill_achievable_adds_head_derating_and_overhead():
    peak = prefill_time("h100-sxm", "llama-3.1-70b", 2048, tp=4, mode="peak")
    ach = prefill_time("h100-sxm", "llama-3.1-70b", 2048, tp=4, mode="achievable")
    m = get_model("llama-3.1-70b")
    compute = (2 * N70 * 2048 + 2 * m.lm_head_params) / 4 / (H100_BF16 * 0.6)
    assert ach.compute_s == pytest.approx(compute, rel=1e-12)
    assert ach.weight_s == pytest.approx(
        weight_bytes(m, 16, include_lm_head=True) / 4 / (H100_BW * 0.9), rel=1e-12)
    # datacenter class: 0.3 ms per pass + 80 layers x 70 us of kernel overhead
    assert ach.overhead_s == pytest.approx(0.3e-3 + 80 * 70e-6, rel=1e-12)
    assert ach.total_s > peak.total_s


def test_request_phases_llm_by_hand():
    p, n = 1000, 200
    r = request_phases("h100-sxm", "llama-3.1-70b", prompt_tokens=p, output_tokens=n,
                       tp=1, mode="peak")
    step = N70 * 2 / H100_BW + 2 * N70 / H100_BF16 + (p + n / 2) * 327_680 / H100_BW
    assert r.tpot_s == pytest.approx(step, rel=1e-12)
    assert r.decode_s == pytest.approx((n - 1) * step, rel=1e-12)
    pre = prefill_time("h100-sxm", "llama-3.1-70b", p, mode="peak")
    assert r.prefill_s == r.ttft_s == pre.total_s
    assert r.latency_s == pytest.approx(r.prefill_s + r.decode_s)
    assert r.binding_phase == "decode" and r.kind == "transformer"
    assert r.phase_labels == LLM_PHASE_LABELS and r.binding_label.startswith("decode")
    assert r.energy_j == pytest.approx(700.0 * r.latency_s, rel=1e-12)
    assert r.decode_regime == "memory-bound"


def test_decode_uses_roofline_at_mean_context_and_batch():
    r = request_phases("h100-sxm", "llama-3.1-70b", prompt_tokens=3584, output_tokens=512,
                       tp=4, batch=64)
    step = decode_roofline("h100-sxm", "llama-3.1-70b", batch=64, context_tokens=3584 + 256,
                           tp=4, mode="achievable").step_s
    assert r.tpot_s == pytest.approx(step, rel=1e-12)
    # energy share: prefill alone, decode shared by 64 sequences, 4 GPUs at 700 W
    assert r.energy_j == pytest.approx(4 * 700 * (r.prefill_s + r.decode_s / 64), rel=1e-12)


def test_tpot_includes_the_kv_read_unlike_weight_over_bandwidth():
    short = request_phases("h100-sxm", "llama-3.1-70b", prompt_tokens=100, output_tokens=2,
                           mode="peak")
    long = request_phases("h100-sxm", "llama-3.1-70b", prompt_tokens=100_000,
                          output_tokens=2, mode="peak")
    weight_only = N70 * 2 / H100_BW                  # the reference's TPOT proxy
    assert long.tpot_s - short.tpot_s == pytest.approx(99_900 * 327_680 / H100_BW, rel=1e-9)
    assert long.tpot_s > 1.2 * weight_only            # KV adds 24% at 100K tokens


def test_binding_phase_flips_to_prefill_for_long_prompts_short_answers():
    r = request_phases("h100-sxm", "llama-3.1-70b", prompt_tokens=32_000, output_tokens=4,
                       tp=8)
    assert r.binding_phase == "prefill"
    one = request_phases("a17-pro", "llama-3.2-3b", prompt_tokens=10, output_tokens=1,
                         weight_bits=4)
    assert one.decode_s == 0.0 and one.binding_phase == "prefill"


def test_cnn_ring_by_hand_peak():
    r = cnn_inference_time("cortex-m4-ring", "ds-cnn-kws", weight_bits=8, mode="peak")
    # MLPerf Tiny DS-CNN: 2.66M MACs = 5.32 MFLOP, 23,756 INT8 weights + 16 kB activations
    assert r.compute_s == pytest.approx(2 * 2.66e6 / 256e6, rel=1e-12)   # 20.78 ms
    assert r.memory_s == pytest.approx((23_756 + 16_000) / 256e6, rel=1e-12)
    assert r.latency_s == r.compute_s and r.regime == "compute-bound"
    assert r.per_inference_s == r.latency_s


def test_cnn_robotaxi_and_memory_bound_case():
    r = cnn_inference_time("drive-orin", "yolov8n", weight_bits=8, mode="peak")
    assert r.compute_s == pytest.approx(8.7e9 / 85e12, rel=1e-12)   # GPU-only dense INT8
    assert r.memory_s == pytest.approx(9.8e6 / 204.8e9, rel=1e-12)
    assert r.regime == "compute-bound"
    # MobileNetV2 in FP16 on a phone: activations at 2 bytes make it memory-bound.
    mb = cnn_inference_time("a17-pro", "mobilenet-v2", weight_bits=16, mode="peak")
    assert mb.memory_s == pytest.approx((3.4e6 * 2 + 1.2e6 * 2) / 51.2e9, rel=1e-12)
    assert mb.regime == "memory-bound" and mb.latency_s == mb.memory_s


def test_cnn_tile_tail_scales_with_the_device_and_skips_fp32():
    """Achievable on an edge GPU: 40% of the tensor FLOP/s on the pass plus a 90 MFLOP
    partial wave per fused layer (YOLOv8n: 168), a 5 us launch per layer; FP32 on the CUDA
    cores at 55% and no tile tail. Seconds = FLOP / (FLOP/s)."""
    tail = 168 * 90e6
    for hw, tops in (("jetson-agx-orin-gpu", 42.5e12), ("jetson-orin-nano-super-gpu",
                                                        16.75e12)):
        r = cnn_inference_time(hw, "yolov8n", weight_bits=16, mode="achievable")
        assert r.compute_s == pytest.approx((8.7e9 + tail) / (tops * 0.40), rel=1e-12)
        assert r.overhead_s == pytest.approx(168 * 5e-6, rel=1e-12)
        assert r.tail_flops == tail and not r.cuda_cores
    f32 = cnn_inference_time("jetson-orin-nano-super-gpu", "yolov8n", weight_bits=32,
                             mode="achievable")
    assert f32.compute_s == pytest.approx(8.7e9 / (2.09e12 * 0.55), rel=1e-12)
    peak = cnn_inference_time("jetson-agx-orin-gpu", "yolov8n", weight_bits=16, mode="peak")
    assert peak.compute_s == pytest.approx(8.7e9 / 42.5e12, rel=1e-12)  # no tail at peak
    # a tiny model on a big GPU: 11 tails of 90 MFLOP dwarf its 5.3 MFLOP, and the engine
    # keeps the CUDA-core kernels (FP32 rate x 55%) instead
    kws = cnn_inference_time("h100-sxm", "ds-cnn-kws", weight_bits=16, mode="achievable")
    assert kws.compute_s == pytest.approx(5.32e6 / (66.9e12 * 0.55), rel=1e-12)
    assert kws.cuda_cores and kws.tail_flops == 0.0
    assert f32.tail_flops == 0.0 and not f32.cuda_cores  # FP32: no tail to begin with


def test_cnn_batch_vectorised():
    b = np.array([1.0, 2.0, 8.0])
    r = cnn_inference_time("drive-orin", "yolov8n", batch=b)
    assert r.latency_s.shape == (3,) and np.all(np.diff(r.latency_s) > 0)
    assert np.all(np.diff(r.per_inference_s) < 0)   # overhead and weights amortised


def test_cnn_precision_mapping():
    assert cnn_compute_precision("cortex-m4-ring", 8) == "int8"
    assert cnn_compute_precision("cortex-m4-ring", 4) == "int8"
    assert cnn_compute_precision("cortex-m4-ring", 16) == "fp32"   # no FP16 unit on an M4
    assert cnn_compute_precision("drive-orin", 16) == "fp16"
    assert cnn_compute_precision("tpu-v5e", 16) == "bf16"


def test_cnn_request_phases():
    r = request_phases("cortex-m4-ring", "ds-cnn-kws", weight_bits=8, window_bytes=32_000)
    assert r.kind == "cnn" and r.tpot_s is None
    assert r.decode_s == pytest.approx(decision_time("cortex-m4-ring", 32_000), rel=1e-12)
    assert r.decode_s == pytest.approx(2 * 32_000 / (256e6 * 0.5), rel=1e-12)  # MCU: 50%
    assert r.ttft_s == r.latency_s == pytest.approx(r.prefill_s + r.decode_s)
    assert r.binding_phase == "prefill" and r.binding_label == "input pass"
    assert r.phase_labels == CNN_PHASE_LABELS
    assert r.energy_j == pytest.approx(0.0218 * r.latency_s, rel=1e-12)   # 21.8 mW board


def test_no_power_means_no_energy():
    r = request_phases("tpu-v5e", "llama-3-8b", prompt_tokens=100, output_tokens=10)
    assert r.energy_j is None


@pytest.mark.parametrize("tid", ("cloud_fleet", "iphone", "oura_ring", "robotaxi"))
def test_track_phases_defaults(tid):
    r = track_phases(tid)
    assert math.isfinite(r.latency_s) and r.latency_s > 0
    assert r.energy_j is not None and r.energy_j > 0


def test_track_phases_overrides():
    base = track_phases("iphone")
    # by hand, phone-class achievable derating (bandwidth 0.65, 4-bit x 0.72, FLOP 0.5,
    # 1 ms per step + 20 us per layer): 1.606 GB of 4-bit weights (with the LM head) at
    # 51.2 GB/s x 0.65 x 0.72 = 67.04 ms; KV at the mean context 1,024 + 256/2 = 1,152
    # tokens x 114,688 B at 51.2 GB/s x 0.65 = 3.97 ms; 2 x 3.21e9 FLOP at 17.5 TFLOP/s x
    # 0.5 = 0.73 ms; overhead 1 ms + 28 x 20 us = 1.56 ms; total 73.3 ms
    hand = (1.606e9 / (51.2e9 * 0.65 * 0.72) + 1152 * 114_688 / (51.2e9 * 0.65)
            + 2 * 3.21e9 / (17.5e12 * 0.5) + 1e-3 + 28 * 20e-6)
    assert base.tpot_s == pytest.approx(hand, rel=2e-3)          # 4-bit: under the 100 ms SLO
    eight = track_phases("iphone", weight_bits=8)
    assert eight.tpot_s > 0.100                                  # 8-bit misses it
    assert track_phases("cloud_fleet", devices_per_replica=8).prefill_s < \
        track_phases("cloud_fleet").prefill_s


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"prompt_tokens": -1, "output_tokens": 10}, "prompt_tokens"),
    ({"prompt_tokens": float("nan"), "output_tokens": 10}, "prompt_tokens"),
    ({"prompt_tokens": float("inf"), "output_tokens": 10}, "prompt_tokens"),
    ({"prompt_tokens": "100", "output_tokens": 10}, "prompt_tokens"),
    ({"prompt_tokens": None, "output_tokens": 10}, "prompt_tokens"),
    ({"prompt_tokens": 100, "output_tokens": 0}, "output_tokens"),
    ({"prompt_tokens": 100, "output_tokens": 2.5}, "output_tokens"),
    ({"prompt_tokens": 100, "output_tokens": 10, "weight_bits": 3}, "weight_bits"),
    ({"prompt_tokens": 100, "output_tokens": 10, "kv_bits": 12}, "kv_bits"),
    ({"prompt_tokens": 100, "output_tokens": 10, "tp": 0}, "tp"),
    ({"prompt_tokens": 100, "output_tokens": 10, "batch": 0}, "batch"),
    ({"prompt_tokens": 100, "output_tokens": 10, "mode": "turbo"}, "mode"),
])
def test_invalid_inputs_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        request_phases("h100-sxm", "llama-3.1-70b", **kwargs)


def test_invalid_models_and_ids():
    with pytest.raises(ValueError, match="model"):
        prefill_time("h100-sxm", "yolov8n", 100)
    with pytest.raises(ValueError, match="model"):
        cnn_inference_time("drive-orin", "llama-3-8b")
    with pytest.raises(ValueError, match="hardware"):
        request_phases("h900", "llama-3-8b", prompt_tokens=1, output_tokens=1)
    with pytest.raises(ValueError, match="window_bytes"):
        decision_time("drive-orin", -5)
    with pytest.raises(ValueError, match="batch"):
        cnn_inference_time("drive-orin", "yolov8n", batch=np.array([1.0, -2.0]))
    with pytest.raises(ValueError, match="precision"):
        cnn_inference_time("drive-orin", "yolov8n", precision="fp64")


@settings(max_examples=60, deadline=None)
@given(p1=st.integers(1, 60_000), p2=st.integers(1, 60_000), n=st.integers(1, 4000),
       bits=st.sampled_from([4, 8, 16]))
def test_prefill_grows_with_prompt_and_everything_is_finite(p1, p2, n, bits):
    lo, hi = sorted((p1, p2))
    a = request_phases("h100-sxm", "llama-3.1-70b", prompt_tokens=lo, output_tokens=n,
                       weight_bits=bits, tp=4)
    b = request_phases("h100-sxm", "llama-3.1-70b", prompt_tokens=hi, output_tokens=n,
                       weight_bits=bits, tp=4)
    assert a.prefill_s <= b.prefill_s
    for r in (a, b):
        for x in (r.prefill_s, r.decode_s, r.ttft_s, r.tpot_s, r.latency_s, r.energy_j):
            assert math.isfinite(x) and x >= 0
        assert r.ttft_s <= r.latency_s


@settings(max_examples=40, deadline=None)
@given(n1=st.integers(1, 5000), n2=st.integers(1, 5000))
def test_decode_grows_with_output_tokens(n1, n2):
    lo, hi = sorted((n1, n2))
    a = request_phases("a17-pro", "llama-3.2-3b", prompt_tokens=512, output_tokens=lo,
                       weight_bits=4)
    b = request_phases("a17-pro", "llama-3.2-3b", prompt_tokens=512, output_tokens=hi,
                       weight_bits=4)
    assert a.decode_s <= b.decode_s


def test_track_phases_default_batch_is_the_operating_batch():
    assert track_phases("cloud_fleet").batch == 64
    assert track_phases("cloud_fleet", batch=1).tpot_s < track_phases("cloud_fleet").tpot_s
    assert track_phases("robotaxi").batch == 1


def test_a_cnn_pass_never_gets_faster_as_the_weight_precision_rises():
    """Every device and CNN in the registries: 4 <= 8 <= 16 <= 32-bit time per pass (the
    robotaxi once ran 32-bit weights in its INT8 datapath, faster than 16-bit)."""
    from labkit.physics.phases import cnn_compute_precision, cnn_inference_time
    from labkit.registries.hardware import HARDWARE, get_hardware
    from labkit.registries.models import MODELS, get_model

    checked = 0
    for hw in HARDWARE:
        for m in (m for m in MODELS if not get_model(m).is_transformer):
            t = [float(cnn_inference_time(hw, m, b, 1).latency_s) for b in (4, 8, 16, 32)]
            assert t == sorted(t), (hw, m, t)
            assert cnn_compute_precision(hw, 32) != "int8" or "fp16" not in \
                get_hardware(hw).peak_flops, hw
            checked += 1
    assert checked >= 4


def test_front_end_rate_is_the_fp32_peak_derated_like_the_cnn():
    """The ring's MFCC front end: 128 MFLOP/s FP32 peak (64 MHz x 2) at the MCU class's
    1/(2 x 3.3) of peak = 19.4 MFLOP/s achievable; peak mode is the bare peak."""
    from labkit.physics.phases import front_end_ops_per_s

    assert front_end_ops_per_s("cortex-m4-ring") == pytest.approx(128e6 / 6.6, rel=1e-12)
    assert front_end_ops_per_s("cortex-m4-ring", "peak") == 128e6
    # the ring's sources quote front end + DS-CNN pass at this rate
    from labkit.tracks import TRACKS

    total_ms = (2e6 / (128e6 / 6.6) + 2 * 2.66e6 * 6.6 / 256e6) * 1e3
    assert f"about {total_ms:.0f} ms" in TRACKS["oura_ring"].sources["slo_s"]


@pytest.mark.parametrize(("hw", "model", "bits", "batch"), [
    ("stm32l4r5-nucleo", "ds-cnn-kws", 8, 1), ("jetson-orin-nano-super-gpu", "yolov8n", 16, 1),
    ("jetson-agx-orin-gpu", "resnet-50", 8, 8), ("jetson-orin-nano-super-gpu", "yolov8n", 32, 1),
])
def test_cnn_terms_switched_on_from_peak_sum_to_achievable(hw, model, bits, batch):
    """Each CNN derating term only slows the pass, so switched on in order they add
    positive seconds that sum to achievable - peak (s)."""
    from labkit.physics.phases import CNN_DERATING_TERMS, cnn_derating_contributions

    terms = cnn_derating_contributions(hw, model, bits, batch)
    peak = cnn_inference_time(hw, model, bits, batch, "peak").latency_s
    real = cnn_inference_time(hw, model, bits, batch, "achievable").latency_s
    assert all(t.added_step_s > 0 for t in terms)
    assert peak + sum(t.added_step_s for t in terms) == pytest.approx(real, rel=1e-12)
    order = [k for k, _ in CNN_DERATING_TERMS]
    assert [t.key for t in terms] == sorted((t.key for t in terms), key=order.index)
