"""labkit.plans.fleet: Part B's fleet sizing step by step and Part C's layout evaluation,
checked against the physics and the serving plan computed here, outside the plans."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import labkit.scenarios.fleet.plan.sizing as fleet
from labkit.physics.capacity import size_deployment
from labkit.physics.parallelism import config_at, context_parallel_ttft
from labkit.physics.phases import prefill_time
from labkit.physics.roofline import balance_context, critical_batch, decode_roofline
from labkit.plans.design import fleet_table, not_candidate_reason
from labkit.plans.scenarios.common import serving_device
from labkit.plans.serving import serving_plan
from labkit.registries.hardware import get_hardware
from labkit.tracks import get_track

TR = get_track("cloud_fleet")


@pytest.mark.parametrize(("users", "ctx", "slo", "wb", "kb"), [
    (1143, 4096, "chat", 16, 16), (18288, 4096, "chat", 16, 16), (300, 8192, "voice", 8, 8),
    (4572, 32768, "batch", 16, 8)])
def test_size_fleet_adds_prefill_and_the_cap_to_the_decode_only_count(users, ctx, slo, wb, kb):
    f = fleet.size_fleet(TR, users, ctx, slo, wb, kb)
    # the served device: memory after the track's serving reserve (one definition)
    sz = size_deployment(serving_device(TR), TR.model_id, users, ctx, fleet.slo_tpot(slo), wb,
                         kb, mode="achievable")
    assert f.usable_bytes_per_device == pytest.approx(
        get_hardware(TR.hardware_id).usable_memory_bytes * (1 - TR.memory_reserve_fraction))
    assert f.sizing == sz and f.decode_only_devices == sz.total_devices
    assert f.demand_rate_per_s == pytest.approx(TR.demand_rate_per_s * users
                                                / fleet.fleet_users(TR))
    if not sz.feasible:
        assert f.fleet_devices == f.decode_only_devices and not f.fleet_includes_prefill
        return
    same = serving_plan(TR, demand_rate_per_s=f.demand_rate_per_s, weight_bits=wb,
                        kv_bits=kb, devices_per_replica=f.fleet_devices_per_replica,
                        batch_size=f.served_slots or f.served_sizing_slots, context_tokens=ctx,
                        with_baseline=False)
    if f.served_step_s is not None and f.served_step_s > f.tpot_slo_s:
        # Lab 1's replica (TP over its devices) misses the budget with its communication
        assert not f.fleet_includes_prefill and f.fleet_devices == f.decode_only_devices
    elif same.feasible:
        assert f.fleet_includes_prefill and f.fleet_devices == same.total_devices
        assert f.same_shape_devices is None or f.fleet_devices <= f.same_shape_devices
        assert f.served_replicas == math.ceil(
            f.demand_rate_per_s / (TR.max_utilisation * f.served_capacity_per_s) - 1e-12)
        assert f.busy_cost_per_day <= f.provisioned_cost_per_day
    else:
        assert not f.fleet_includes_prefill and f.fleet_devices == f.decode_only_devices
    assert f.provisioned_cost_per_day == pytest.approx(
        f.fleet_devices * TR.price_per_device_hour * TR.active_hours_per_day)
    assert f.over_budget == (f.provisioned_cost_per_day > TR.daily_budget)


@pytest.mark.parametrize("slo", ["voice", "chat", "batch"])
def test_the_served_fleet_never_shrinks_as_users_grow(slo):
    """More users never need fewer devices: the served fleet takes the replica size that
    serves with the fewest (the decode-only sizing's size can hold far fewer sequences once
    each step's communication counts: 680 users on 16-device replicas needed 288 devices
    where 808 users on 8-device replicas needed 104)."""
    users = sorted({max(1, round(fleet.fleet_users(TR) * 2 ** (k / 4))) for k in range(-12, 8)})
    sizes = [fleet.size_fleet(TR, u, int(TR.context_tokens), slo, 16, 16) for u in users]
    served = [(u, f.fleet_devices) for u, f in zip(users, sizes, strict=True)
              if f.fleet_includes_prefill]
    assert len(served) >= 10
    assert all(a[1] <= b[1] for a, b in itertools.pairwise(served)), served
    for f in sizes:   # never more than the decode-only sizing's own replica size needs
        assert f.same_shape_devices is None or f.fleet_devices <= f.same_shape_devices


def test_default_fleet_numbers():
    """Cloud defaults: 32 devices decode only, 144 with prefill and the 80% cap on the same
    8-device replicas; Lab 1's release shape (4-device replicas, 64 slots) needs 180."""
    f = fleet.size_fleet(TR, fleet.fleet_users(TR), 4096, "chat", 16, 16)
    assert (f.decode_only_devices, f.fleet_devices, f.release_devices) == (32, 144, 180)


def test_single_moves_moves_one_control_to_the_nearest_passing_value():
    opts = {"a": [1, 2, 3, 4], "b": [10, 20, 30]}
    moves = fleet.single_moves({"a": 2, "b": 10}, opts,
                               lambda x: int(x["a"]) >= 4 or int(x["b"]) >= 20)
    assert moves == (fleet.Move("a", 4), fleet.Move("b", 20))
    assert fleet.single_moves({"a": 2, "b": 10}, opts, lambda x: False) == ()


def test_layout_prefill_is_the_per_request_mean():
    p = fleet.LayoutPrefill(prompt_tokens=100, ttft_s=0.2, ttft_slo_s=1.0, tpot_slo_s=0.05,
                            step_s=0.03, output_tokens=11, batch_per_replica=3)
    # every one of the B = 3 slots refilled once in a request's L - 1 = 10 tokens
    assert p.tpot_colocated_s == pytest.approx(0.03 + 3 * 0.2 / 10)
    assert p.worst_gap_s == pytest.approx(0.23) and p.tpot_disaggregated_s == 0.03
    assert p.colocated_missed and p.disaggregate and not p.ttft_missed


def test_step_terms_name_the_largest_term():
    """256 x 4,096 tokens per replica (throughput, TP4 x DP4): KV-bound, not compute."""
    lay = fleet.FleetLayouts(TR)
    e = lay.evaluate(TR.model_id, "throughput", (4, 1, 1, 4, 1))
    assert e.stop is not None and not e.stop.below_b_star
    r = decode_roofline(TR.hardware_id, TR.model_id, 256, 4096, 16, 16, tp=4,
                        mode="achievable")
    assert e.terms.kv_s == pytest.approx(float(r.kv_step_s))
    assert e.terms.compute_s == pytest.approx(float(r.compute_step_s))
    assert e.terms.largest == "kv" and e.terms.kv_s > e.terms.compute_s
    assert e.terms.l_star == pytest.approx(balance_context(TR.hardware_id, TR.model_id, 16,
                                                           mode="achievable"))
    assert e.b_star == fleet.BStar(critical_batch(TR.hardware_id, TR.model_id, 16,
                                                  mode="achievable"), "achievable")


@pytest.mark.parametrize("model_id", fleet.fleet_models(TR))
def test_evaluate_matches_the_physics_and_next_only_when_a_layout(model_id):
    lay = fleet.FleetLayouts(TR)
    for key, p in lay.presets_for(lay.models[model_id]).items():
        _, index = fleet_table(TR, 16, 16, p.context, p.batch, model_id)
        for deg in ((1, 1, 1, 1, 1), (4, 1, 1, 1, 1), (4, 1, 1, 4, 1), (8, 1, 2, 1, 2)):
            e = lay.evaluate(model_id, key, deg)
            assert (e.config is not None) == (deg in index)
            assert (e.next_config is not None) == (e.next_degrees in index)
            if e.next_config is None:
                assert e.next_reason == not_candidate_reason(TR, e.next_degrees, p.batch,
                                                             p.context, model_id)
            if e.config is None:
                continue
            ref = config_at(TR.hardware_id, model_id, p.context, p.batch, 16, 16, deg,
                            mode="achievable")
            assert e.step_s == pytest.approx(ref.per_token_latency_s)
            assert e.per_token_s == pytest.approx(ref.per_token_latency_s
                                                  / ref.batch_per_replica)
            prompt = max(1, p.context - TR.output_tokens)
            pre = prefill_time(TR.hardware_id, model_id, prompt, 16, 16, deg[0], "achievable")
            assert e.prefill.ttft_s == pytest.approx(context_parallel_ttft(pre, deg[1]))


@pytest.mark.parametrize("model_id", fleet.fleet_models(TR))
def test_sweeps_hold_only_finite_numbers(model_id):
    lay = fleet.FleetLayouts(TR)
    opts = [1, 2, 4, 8, 16, 32, 64]
    for key in lay.presets_for(lay.models[model_id]):
        for deg in ((1, 1, 1, 1, 1), (4, 1, 1, 1, 1), (8, 2, 2, 2, 1)):
            sw = lay.sweep(lay.evaluate(model_id, key, deg), opts)
            for arr in (sw.degrees, sw.step_ms, sw.comm_degrees, sw.comm_ms):
                assert np.all(np.isfinite(arr)) and all(x > 0 for x in arr)
            assert len(sw.degrees) == len(sw.step_ms)
            assert len(sw.comm_degrees) == len(sw.comm_ms)


@pytest.mark.parametrize("users", [256, 1143, 18288])
@pytest.mark.parametrize("context", [4096, 32768])
def test_a_replica_holds_the_smaller_of_its_kv_and_tpot_limits(users, context):
    """The math peek's per-replica step: users per replica = min(KV fits, TPOT allows,
    users) at the chosen replica size, and replicas = ceil(users / that)."""
    tr = get_track("cloud_fleet")
    f = fleet.size_fleet(tr, users, context, "chat", 16, 16)
    if not f.feasible:
        return
    i, sz = f.replica_index, f.sizing
    assert sz.users_per_replica == min(f.kv_limit_by_size[i], f.slo_limit_by_size[i], users)
    assert sz.replicas == -(-users // sz.users_per_replica)


@pytest.mark.parametrize(("users", "wb", "kb"), [
    (1143, 16, 16), (1143, 8, 8), (1143, 16, 8), (4572, 16, 16), (18288, 16, 16),
    (286, 4, 4), (4572, 8, 8)])
def test_part_b_serves_on_the_layout_part_d_counts(users, wb, kb):
    """Part B's served replica is Lab 1's (TP over its devices), a row Part D can build:
    it holds the most sequences whose step, communication included, keeps the budget, and
    Part D's design of that shape holds the same slots and serves the same requests/s per
    replica. A replica whose step misses the budget at one sequence is not served (said)."""
    from labkit.scenarios.fleet.plan.serving import fleet_serving, replica_slots

    f = fleet.size_fleet(TR, users, int(TR.context_tokens), "chat", wb, kb)
    n = f.fleet_devices_per_replica
    _, step = replica_slots(TR, wb, kb, (n, 1, 1, 1))
    assert f.served_layout == fleet.layout_label((n, 1, 1, 1, 1))
    assert f.served_step_s == (step if math.isfinite(step) else None)
    if step > f.tpot_slo_s:
        assert not f.fleet_includes_prefill and f.fleet_devices == f.decode_only_devices
        return
    assert f.fleet_includes_prefill
    _, index = fleet_table(TR, wb, kb)   # a replica's capacity is its own, at any DP
    dp = max(d[3] for d in index if d[0] == n and d[1] == d[2] == d[4] == 1)
    fs = fleet_serving(TR, {"weight_bits": wb, "kv_bits": kb, "tp": n, "cp": 1, "pp": 1,
                            "dp": dp, "ep": 1})
    assert fs is not None
    assert fs.slots_per_replica == f.served_slots
    assert fs.capacity_per_s == pytest.approx(f.served_capacity_per_s, rel=1e-6)


def test_the_served_reference_is_the_fewest_devices_design_the_check_passes():
    """served_search (one pass over every layout, its prefills and slot caps shared) gives
    what design_check says design by design: the reference passes, and no design of fewer
    devices at any allowed precision pair does."""
    from labkit.plans.design import design_check, reference_design
    from labkit.scenarios.fleet.plan.serving import allowed_precisions, served_search
    from labkit.scenarios.fleet.plan.table import AXES

    ref = served_search(TR)
    assert ref is not None and reference_design(TR).config == ref
    assert design_check(TR, ref).feasible
    fewest = math.prod(ref[k] for k in ("tp", "cp", "pp", "dp"))
    checked = 0
    for wb, kb in allowed_precisions(TR):
        if kb is None:
            continue
        t, _ = fleet_table(TR, wb, kb)
        for i in np.flatnonzero(t.devices < fewest):
            cfg = {"weight_bits": wb, "kv_bits": kb, **{k: int(getattr(t, k)[i]) for k in AXES}}
            assert not design_check(TR, cfg).feasible, cfg
            checked += 1
    assert checked > 100  # smaller fleets exist at every precision: the claim is not empty
