"""The software stack as a Lab 2 Part A setting (:mod:`labkit.plans.stacks`): the options a
device offers, one road from the stack to every achievable number, and the band."""

from __future__ import annotations

import numpy as np
import pytest

from labkit.physics.derating import device_class_of, get_mode
from labkit.physics.phases import cnn_inference_time
from labkit.physics.roofline import decode_roofline
from labkit.physics.stacks import SHIPPED
from labkit.plans import roofline as pr
from labkit.plans import roofline_sweeps as ps
from labkit.plans import stacks as st
from labkit.registries.bands import BANDS, KERNEL_BANDS
from labkit.registries.hardware import get_hardware
from labkit.registries.measurements import MEASUREMENTS
from labkit.registries.models import get_model
from labkit.registries.stacks import get_stack
from labkit.tracks import get_track

TRACKS = ("cloud_fleet", "iphone", "oura_ring", "robotaxi")


def _track(track: str):
    tr = get_track(track)
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    return tr, hw, m, "decode" if m.is_transformer else "cnn"


@pytest.mark.parametrize("track", TRACKS)
def test_a_device_offers_none_named_then_every_stack_its_class_ran(track):
    _, hw, _, workload = _track(track)
    cls = device_class_of(hw).id
    choices = st.stack_choices(hw, workload)
    assert choices[0].id == st.NO_STACK and not choices[0].named
    assert choices[0].scale == 1.0 and choices[0].band == BANDS[cls]
    ran = {m.stack for m in MEASUREMENTS
           if m.workload == workload and device_class_of(m.hardware).id == cls
           and (get_stack(m.stack).processor != "npu" or m.hardware == hw.id)}
    assert {c.id for c in choices[1:]} == ran and len(choices) > 2
    assert "qai-hub-npu" not in ran and "tflm-silabs-mvp" not in ran  # vendors' NPUs
    for c in choices[1:]:
        k = get_stack(c.id).kernels
        assert c.kernels == k and c.kernel_term == SHIPPED.kernels.get((cls, k))
        assert c.band == KERNEL_BANDS.get((cls, k), BANDS[cls])
        assert (c.band.scope == "stack") == ((cls, k) in KERNEL_BANDS)
        assert c.cases and c.ratios is not None and c.ratios[0] <= c.ratios[1]
        assert all(m.stack == c.id for m in MEASUREMENTS if m.id in c.cases)


def test_an_unknown_stack_is_refused_naming_it():
    with pytest.raises(ValueError, match="stack 'x-cube-ai'"):
        st.stack_choice(get_hardware("h100-sxm"), "decode", "x-cube-ai")


@pytest.mark.parametrize("track", ["cloud_fleet", "iphone"])
def test_a_decode_point_on_a_stack_is_one_road(track):
    """Every achievable number of the point runs the stack's derating; peak is the
    hardware's whatever the stack; the band is achievable x the stack's band ends."""
    tr, hw, m, _ = _track(track)
    b, ctx, wb, kb, tp = 8, 4096, tr.weight_bits, tr.kv_bits, tr.devices_per_replica
    for c in st.stack_choices(hw, "decode"):
        v = pr.decode_view(hw, m, batch=b, context_tokens=ctx, weight_bits=wb, kv_bits=kb,
                           tp=tp, mode="achievable", batch_options=(1, 8, 64), stack=c.id)
        d = get_mode("achievable", hw, "decode", c.id or None)
        want = decode_roofline(hw, m, b, ctx, wb, kb, tp=tp, mode=d)
        assert v.step_s == pytest.approx(float(want.step_s), rel=1e-12)
        assert float(v.here["peak"].step_s) == pytest.approx(
            float(decode_roofline(hw, m, b, ctx, wb, kb, tp=tp).step_s), rel=1e-12)
        assert v.balance == pr.balance(hw, m, wb, kb, "achievable", c.id)
        assert v.stack == c
        assert v.band_step_s == pytest.approx((v.step_s * c.band.low, v.step_s * c.band.high))
        sw = ps.batch_sweep(hw, m, np.asarray([1.0, 8.0]), ctx, wb, kb, tp, "peak", c.id)
        band = sw.band_ms("step")
        assert band is not None and band[:, 1] == pytest.approx(
            np.asarray(v.band_step_s) * 1e3, rel=1e-9)
        assert float(np.asarray(sw.other.step_s)[1]) == pytest.approx(v.step_s, rel=1e-12)


def test_a_stack_with_a_fitted_term_moves_achievable_by_about_its_term():
    """On the ring, reference kernels run slower than the class line and a graph compiler
    faster, by their fitted terms (nothing is capped at peak here)."""
    _, hw, m, _ = _track("oura_ring")
    base = pr.cnn_view(hw, m, 8, 1, "achievable")
    for stack in ("tflm-reference", "x-cube-ai"):
        c = st.stack_choice(hw, "cnn", stack)
        v = pr.cnn_view(hw, m, 8, 1, "achievable", stack)
        assert c.kernel_term is not None
        assert v.latency_s / base.latency_s == pytest.approx(c.scale, rel=0.02), stack
        assert v.achievable_s == v.latency_s
        assert pr.cnn_view(hw, m, 8, 1, "peak", stack).latency_s == pytest.approx(
            pr.cnn_view(hw, m, 8, 1, "peak").latency_s)
        d = get_mode("achievable", hw, "cnn", stack)
        assert v.latency_s == pytest.approx(float(cnn_inference_time(hw, m, 8, 1, d).latency_s))
        lo, hi = v.band_s
        assert (lo, hi) == pytest.approx((v.latency_s * c.band.low, v.latency_s * c.band.high))
        f = float(v.pass_.flops)
        assert v.band_flops == pytest.approx((f / hi, f / lo))


def test_a_pre_xqa_stack_costs_the_cloud_model_its_kv_group_and_says_so():
    """The fleet's grouped-query model on a stack whose attention fetches the KV once per
    query head: same kernel term as today's TensorRT-LLM, KV read q_heads / kv_heads times,
    and the stack's card says why (a clause chosen by the stack's flag, no digits)."""
    from labkit.labs.accelerators.stack_text import term_text

    tr, hw, m, _ = _track("cloud_fleet")
    old = st.stack_choice(hw, "decode", "tensorrt-llm-pre-xqa")
    new = st.stack_choice(hw, "decode", "tensorrt-llm")
    assert old.kv_per_query_head and not new.kv_per_query_head
    assert old.scale == new.scale and m.q_heads > m.kv_heads
    args = dict(batch=64, context_tokens=8192, weight_bits=tr.weight_bits,
                kv_bits=tr.kv_bits, tp=tr.devices_per_replica, mode="achievable",
                batch_options=(1, 8, 64))
    a, b = (pr.decode_view(hw, m, stack=c.id, **args) for c in (new, old))
    assert b.step_s > a.step_s
    assert b.here["achievable"].kv_step_s == pytest.approx(
        a.here["achievable"].kv_step_s * m.q_heads / m.kv_heads, rel=1e-12)
    assert "once for each query head" in term_text(old, "datacenter GPU")
    assert term_text(old, "datacenter GPU").index("query head") < term_text(
        old, "datacenter GPU").index("published case")
    assert "query head" not in term_text(new, "datacenter GPU")


@pytest.mark.parametrize("track", TRACKS)
def test_the_band_equations_give_their_printed_results(track):
    _, hw, _, workload = _track(track)
    for c in st.stack_choices(hw, workload):
        fast, slow = c.band_equations(12.5, "ms")
        assert fast.result == pytest.approx(12.5 * c.band.low)
        assert slow.result == pytest.approx(12.5 * c.band.high)
        assert fast.result <= slow.result


def test_the_spread_is_the_published_configuration_furthest_apart_by_stack():
    """The checkpoint's evidence: one chip, one model, one precision; the same peak for
    every run, several-fold apart by toolchain."""
    sp = st.stack_spread()
    assert sp.stacks >= 2 and sp.runs >= sp.stacks and sp.ratio > 3
    assert sp.ratio == pytest.approx(sp.slowest[1] / sp.fastest[1])
    groups: dict[tuple, list] = {}
    for m in MEASUREMENTS:
        groups.setdefault((m.hardware, m.model, m.weight_bits, m.batch, m.workload),
                          []).append(m)
    spreads = [max(x.value for x in g) / min(x.value for x in g) for g in groups.values()
               if len({x.stack for x in g}) > 1]
    assert sp.ratio == pytest.approx(max(spreads))
    hi, lo = sp.peak_shares
    assert 0 < lo < hi <= 1


def test_an_npu_runtime_is_offered_only_on_the_chip_it_ran_on():
    ids = {c.id for c in st.stack_choices(get_hardware("snapdragon-8-elite-npu"), "decode")}
    assert "qai-hub-npu" in ids and "executorch-xnnpack" in ids
    assert "qai-hub-npu" not in {c.id for c in st.stack_choices(get_hardware("a17-pro"),
                                                                 "decode")}
