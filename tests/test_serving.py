"""State capacity, serving plans and release guardrails.

Reference-lab slips these tests pin down:
* its KV capacity for Llama 70B on 8 H100s at 128K tokens was 1 session (query-head KV);
  with GQA it is 11;
* its memory "available" was max(0, total - weights) and its OOM test "max_concurrent < 1",
  fine, but total memory was the whole RAM of a phone;
* its cost guardrail passed any plan within 5% of its own baseline, however large; ours is
  an absolute daily budget;
* its p99 was slo_ms x (0.35 + ...), so latency never depended on the hardware;
* its quality guardrail was hard-coded to "INT4 on robotaxi"; ours reads each track's
  quality table, so INT4 also fails the cloud's 1-point contract and passes on the phone.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labkit.core.format import format_bytes
from labkit.physics.kvcache import kv_bytes_per_token, kv_cache_bytes
from labkit.physics.memory import resident_weight_bytes, state_capacity
from labkit.plans.serving import (
    GUARDRAILS,
    quality_loss,
    release_guardrails,
    serving_plan,
    track_capacity,
)
from labkit.tracks import TRACKS

W70_16 = 141_104_775_168.0      # Llama 3.1 70B resident weights at 16 bits, bytes
KV70 = 327_680.0                # its KV bytes per token at 16 bits


# -- state capacity ------------------------------------------------------------------------

def test_cloud_capacity_by_hand():
    c = state_capacity("h100-sxm", "llama-3.1-70b", 4096, 16, 16, 4, 0.10)
    assert c.memory_bytes == pytest.approx(4 * 80e9 * 0.9)
    assert c.weight_bytes == W70_16
    assert c.bytes_per_session == 4096 * KV70 == 1_342_177_280.0
    assert c.free_bytes == pytest.approx(288e9 - W70_16)
    assert c.max_sessions == math.floor((288e9 - W70_16) / (4096 * KV70)) == 109
    assert not c.oom and c.kind == "kv-cache" and c.weight_location == "memory"


def test_reference_capacity_case_with_gqa():
    c = state_capacity("h100-sxm", "llama-3.1-70b", 131_072, 16, 16, 8)
    assert c.bytes_per_session == 131_072 * KV70                  # 42.9 GB, not 343.6 GB
    assert c.max_sessions == math.floor((640e9 - W70_16) / (131_072 * KV70)) == 11


def test_oom_is_a_flag_with_a_reason_never_negative():
    c = state_capacity("h100-sxm", "llama-3.1-70b", 4096, 16, 16, 1)
    assert c.oom and c.max_sessions == 0 and c.free_bytes == 0.0
    assert "OOM" in c.reason and "weights" in c.reason
    # weights fit but not a single session
    tight = state_capacity("h100-sxm", "llama-3.1-70b", 131_072, 16, 16, 2, 0.05)
    assert tight.oom and tight.max_sessions == 0 and tight.free_bytes >= 0
    assert "one session" in tight.reason


def test_tp_past_kv_heads_replicates_the_cache():
    c8 = state_capacity("h100-sxm", "llama-3.1-70b", 1000, devices_per_replica=8)
    c16 = state_capacity("h100-sxm", "llama-3.1-70b", 1000, devices_per_replica=16)
    assert c8.bytes_per_session == 1000 * KV70
    assert c16.bytes_per_session == 2 * 1000 * KV70   # 16 devices, 8 kv heads: each twice
    assert c16.max_sessions >= c8.max_sessions


def test_mcu_weights_in_flash_state_in_sram():
    c = state_capacity("cortex-m4-ring", "ds-cnn-kws", weight_bits=8,
                       state_bytes_per_request=48_000)
    assert c.weight_location == "flash" and c.weight_bytes == 23_756.0  # INT8: 1 B/param
    assert c.weight_limit_bytes == 1024**2
    assert c.memory_bytes == 192 * 1024 and c.free_bytes == 192 * 1024
    assert c.max_sessions == 196_608 // 48_000 == 4
    big = state_capacity("cortex-m4-ring", "yolov8n", weight_bits=8,
                         state_bytes_per_request=1_000)
    assert big.oom and "flash" in big.reason and big.max_sessions == 0
    sram = state_capacity("cortex-m4-ring", "ds-cnn-kws", state_bytes_per_request=300_000)
    assert sram.oom and sram.max_sessions == 0


def test_cnn_in_main_memory_shares_it_with_weights():
    c = track_capacity("robotaxi")
    assert c.weight_location == "memory"
    assert c.free_bytes == 24e9 - 25.9e6
    assert c.max_sessions == 1140


def test_resident_weights_include_untied_embedding():
    assert resident_weight_bytes("llama-3.1-70b", 16) == W70_16
    assert resident_weight_bytes("llama-3.1-70b", 8) == W70_16 / 2
    assert resident_weight_bytes("yolov8n", 8) == 3.2e6


def test_format_bytes_is_decimal():
    assert format_bytes(1_342_177_280) == "1.34 GB"
    assert format_bytes(48_000) == "48 kB"
    assert format_bytes(12) == "12 B"


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"context_tokens": 0}, "context_tokens"),
    ({"context_tokens": -5}, "context_tokens"),
    ({"context_tokens": float("nan")}, "context_tokens"),
    ({"context_tokens": None}, "context_tokens"),
    ({"weight_bits": 5}, "weight_bits"),
    ({"kv_bits": 2}, "kv_bits"),
    ({"devices_per_replica": 0}, "devices_per_replica"),
    ({"devices_per_replica": 1.5}, "devices_per_replica"),
    ({"reserve_fraction": 1.0}, "reserve_fraction"),
    ({"reserve_fraction": -0.1}, "reserve_fraction"),
])
def test_capacity_invalid_inputs(kwargs, name):
    base = {"context_tokens": 1000}
    base.update(kwargs)
    with pytest.raises(ValueError, match=name):
        state_capacity("h100-sxm", "llama-3.1-70b", **base)


def test_capacity_cnn_needs_state_and_ids_resolve():
    with pytest.raises(ValueError, match="state_bytes_per_request"):
        state_capacity("drive-orin", "yolov8n")
    with pytest.raises(ValueError, match="state_bytes_per_request"):
        state_capacity("drive-orin", "yolov8n", state_bytes_per_request=0)
    with pytest.raises(ValueError, match="hardware"):
        state_capacity("gpu9000", "yolov8n", state_bytes_per_request=1)


@settings(max_examples=80, deadline=None)
@given(d1=st.integers(1, 16), d2=st.integers(1, 16), ctx=st.integers(1, 200_000),
       wb=st.sampled_from([4, 8, 16]), kb=st.sampled_from([8, 16]),
       reserve=st.floats(0.0, 0.5))
def test_more_devices_never_reduce_capacity(d1, d2, ctx, wb, kb, reserve):
    lo, hi = sorted((d1, d2))
    a = state_capacity("h100-sxm", "llama-3.1-70b", ctx, wb, kb, lo, reserve)
    b = state_capacity("h100-sxm", "llama-3.1-70b", ctx, wb, kb, hi, reserve)
    assert a.max_sessions <= b.max_sessions
    assert a.max_sessions >= 0 and a.free_bytes >= 0 and a.bytes_per_session > 0


@settings(max_examples=60, deadline=None)
@given(c1=st.integers(1, 300_000), c2=st.integers(1, 300_000), devices=st.integers(1, 8))
def test_kv_grows_with_context_and_sessions_shrink(c1, c2, devices):
    lo, hi = sorted((c1, c2))
    a = state_capacity("h100-sxm", "llama-3.1-70b", lo, devices_per_replica=devices)
    b = state_capacity("h100-sxm", "llama-3.1-70b", hi, devices_per_replica=devices)
    assert a.bytes_per_session <= b.bytes_per_session
    assert a.max_sessions >= b.max_sessions


@settings(max_examples=60, deadline=None)
@given(ctx=st.integers(1, 100_000), b1=st.integers(1, 512), b2=st.integers(1, 512))
def test_kv_cache_grows_with_batch(ctx, b1, b2):
    lo, hi = sorted((b1, b2))
    assert kv_cache_bytes("llama-3.2-3b", ctx, lo) <= kv_cache_bytes("llama-3.2-3b", ctx, hi)
    assert kv_cache_bytes("llama-3.2-3b", ctx, lo) == \
        kv_bytes_per_token("llama-3.2-3b") * ctx * lo


# -- serving plan --------------------------------------------------------------------------

def test_cloud_default_plan_by_hand():
    p = serving_plan("cloud_fleet")
    cap = p.policy_result.capacity_requests_per_s
    assert p.replica_capacity_requests_per_s == cap
    assert p.replicas == math.ceil(75 / (0.8 * cap))
    assert p.total_devices == 4 * p.replicas
    assert p.daily_cost == pytest.approx(p.total_devices * 2.99 * 24)
    assert p.cost_per_event == pytest.approx(p.daily_cost / 6.48e6)
    assert p.replica_arrival_rate_per_s == pytest.approx(75 / p.replicas)
    assert p.baseline_daily_cost == p.daily_cost and p.cost_ratio_vs_baseline == 1.0
    assert p.batch_size == 64 and p.feasible and p.policy == "continuous"
    # provisioned cost exceeds the per-request derivation: replicas run at most 80% busy
    assert p.daily_cost > TRACKS["cloud_fleet"].events_per_day * \
        TRACKS["cloud_fleet"].cost_per_event


def test_owned_device_energy_plan_matches_cost_per_event():
    from labkit.plans.economy import event_cost
    from labkit.plans.workload import front_end_energy_j
    ring = serving_plan("oura_ring")
    t = TRACKS["oura_ring"]
    util = ring.utilisation
    assert front_end_energy_j(t) > 0     # the MFCC front end is part of the busy time
    assert ring.daily_cost == pytest.approx(0.0218 * util * 86_400 / 3.6, rel=1e-12)
    # one definition: the plan's energy per window is event_cost's (front end + model)
    assert ring.daily_cost == pytest.approx(t.events_per_day * event_cost(t).total, rel=1e-9)
    phone = serving_plan("iphone")
    t = TRACKS["iphone"]
    assert phone.daily_cost == pytest.approx(t.events_per_day * t.cost_per_event, rel=0.01)


def test_batching_cuts_the_robotaxi_energy_per_frame():
    t = TRACKS["robotaxi"]
    dyn = serving_plan(t)
    one = serving_plan(t, policy="none")
    assert one.daily_cost == pytest.approx(t.events_per_day * t.cost_per_event, rel=1e-9)
    assert dyn.daily_cost < one.daily_cost      # per-pass overhead shared by a batch


def test_oom_plan_is_infeasible_not_negative():
    p = serving_plan("cloud_fleet", devices_per_replica=1)
    assert not p.feasible and p.replicas == 0 and p.total_devices == 0
    assert p.daily_cost is None and p.policy_result is None and "OOM" in p.reason
    json.dumps(p.as_dict(), allow_nan=False)


def test_owned_devices_cannot_scale_out():
    p = serving_plan("robotaxi", demand_rate_per_s=20_000)
    assert p.exceeds_max_replicas and p.replicas == 2
    assert not p.policy_result.stable


def test_plan_is_json_ready():
    d = serving_plan("iphone").as_dict()
    json.dumps(d, allow_nan=False)
    assert d["capacity"]["max_sessions"] == 16


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"policy": "fifo"}, "policy"),
    ({"weight_bits": 3}, "weight_bits"),
    ({"kv_bits": 1}, "kv_bits"),
    ({"devices_per_replica": 0}, "devices_per_replica"),
    ({"demand_rate_per_s": 0}, "demand_rate_per_s"),
    ({"demand_rate_per_s": float("inf")}, "demand_rate_per_s"),
    ({"max_utilisation": 0}, "max_utilisation"),
    ({"max_utilisation": 1.2}, "max_utilisation"),
    ({"batch_size": 0}, "batch_size"),
    ({"context_tokens": -1}, "context_tokens"),
])
def test_plan_invalid_inputs(kwargs, name):
    with pytest.raises(ValueError, match=name):
        serving_plan("iphone", **kwargs)


# -- release guardrails --------------------------------------------------------------------

@pytest.mark.parametrize(("tid", "kwargs", "binding"), [
    ("cloud_fleet", {}, None),
    ("cloud_fleet", {"devices_per_replica": 1}, "memory"),
    ("cloud_fleet", {"policy": "static"}, "slo"),
    ("cloud_fleet", {"weight_bits": 4}, "quality"),
    ("cloud_fleet", {"kv_bits": 4}, "quality"),
    # 8-bit weights stream at 0.735 of the bf16 rate (fp8 measured 1.47x, not 2x, faster), so
    # TP2 at 8 bits misses the 50 ms TPOT that TP4 at 8 bits meets
    ("cloud_fleet", {"weight_bits": 8, "devices_per_replica": 2}, "slo"),
    ("cloud_fleet", {"weight_bits": 8, "devices_per_replica": 4}, None),
    ("iphone", {}, None),
    ("iphone", {"weight_bits": 16}, "memory"),
    ("iphone", {"weight_bits": 8}, "slo"),
    ("oura_ring", {}, "cost"),
    ("oura_ring", {"demand_rate_per_s": 0.05}, None),  # 80.7 mWh/day x 0.05 = 4.0 < 8
    ("oura_ring", {"policy": "static"}, "slo"),
    ("robotaxi", {}, None),
    ("robotaxi", {"weight_bits": 4}, "quality"),
    ("robotaxi", {"policy": "static"}, "slo"),
])
def test_binding_guardrail(tid, kwargs, binding):
    g = release_guardrails(tid, **kwargs)
    assert g.binding == binding
    assert g.passed is (binding is None)
    assert tuple(c.name for c in g.checks) == GUARDRAILS
    if binding:
        assert g.reason.startswith(binding) and not g.check(binding).passed
        first = next(c for c in g.checks if not c.passed)
        assert first.name == binding
    json.dumps(g.as_dict(), allow_nan=False)


def test_checks_carry_value_and_limit():
    g = release_guardrails("robotaxi", policy="static")
    slo = g.check("slo")
    assert slo.limit == 0.035 and slo.value > 0.035 and slo.unit == "s"
    assert "max latency" in slo.detail
    q = g.check("quality")
    assert q.value == 0.6 and q.limit == 1.0 and q.passed
    mem = g.check("memory")
    assert mem.value == 25.9e6 + 21_028_800.0 and mem.limit == 24e9
    cost = g.check("cost")
    assert cost.limit == 600.0 and cost.unit == "Wh/day"


def test_infeasible_plan_reports_unevaluated_checks():
    g = release_guardrails("iphone", weight_bits=16)
    assert g.check("slo").value is None and not g.check("slo").passed
    assert g.check("cost").value is None
    assert g.binding == "memory"       # memory comes first even though all four fail


def test_cost_guardrail_is_absolute_not_relative_to_baseline():
    g = release_guardrails("cloud_fleet", demand_rate_per_s=200)
    assert g.plan.cost_ratio_vs_baseline == 1.0   # the reference's 1.05x rule would pass
    assert g.binding == "cost"


def test_latency_depends_on_hardware_not_on_the_slo():
    four = serving_plan("cloud_fleet").policy_result
    eight = serving_plan("cloud_fleet", devices_per_replica=8).policy_result
    assert eight.tpot_p99_s < four.tpot_p99_s


def test_quality_from_track_tables():
    assert quality_loss("cloud_fleet", 4) == 1.5 and quality_loss("iphone", 4) == 2.5
    assert release_guardrails("iphone").check("quality").passed   # INT4 is fine on a phone
    with pytest.raises(ValueError, match="weight_bits"):
        quality_loss("iphone", 6)


def test_explicit_plan_and_check_lookup():
    p = serving_plan("robotaxi")
    g = release_guardrails("robotaxi", p)
    assert g.plan is p
    with pytest.raises(ValueError, match="name"):
        g.check("vibes")


@pytest.mark.parametrize("model", ["llama-3.1-70b", "llama-3.2-3b", "mixtral-8x7b"])
def test_resident_weights_agree_with_roofline_memory_budget(model):
    from labkit.physics.roofline import memory_budget

    assert resident_weight_bytes(model, 16) == memory_budget("h100-sxm", model,
                                                             1000).weights_bytes


def test_plan_without_baseline():
    p = serving_plan("robotaxi", with_baseline=False)
    assert p.baseline_daily_cost is None and p.cost_ratio_vs_baseline is None
    assert p.daily_cost is not None


_BAD = st.one_of(st.just(float("nan")), st.just(float("inf")), st.just(-1.0), st.just(0.0),
                 st.just("12"), st.just(True), st.floats(max_value=-1e-9, allow_nan=False))


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(["context_tokens", "devices_per_replica", "state"]), bad=_BAD)
def test_invalid_capacity_inputs_always_name_the_parameter(name, bad):
    if name == "state":
        with pytest.raises(ValueError, match="state_bytes_per_request"):
            state_capacity("drive-orin", "yolov8n", state_bytes_per_request=bad)
        return
    kwargs = {"context_tokens": 1000, name: bad}
    with pytest.raises(ValueError, match=name):
        state_capacity("h100-sxm", "llama-3.1-70b", **kwargs)
