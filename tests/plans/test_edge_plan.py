"""labkit.plans.edge: the one computation behind Lab 2's edge views (Parts B and C of the
iPhone, smart ring and robotaxi), checked against the physics it wraps and against itself."""

from __future__ import annotations

import numpy as np
import pytest

import labkit.scenarios.handheld.plan.device as phone
import labkit.scenarios.vehicle.plan.cameras as camera_plan
import labkit.scenarios.wearable.plan.window as ring
from labkit.physics import edge as phys
from labkit.physics.phases import request_phases
from labkit.plans.design import (
    DESIGN_MODE,
    INTERVALS_MS,
    handheld_metrics,
    ring_split,
    vehicle_load,
)
from labkit.registries.hardware import get_hardware
from labkit.tracks import get_track


def test_window_energy_is_named_parts_that_add_up():
    tr = get_track("oura_ring")
    for split in ring.SPLITS:
        for iv in (7.5, 100.0, 1000.0):
            e = ring.window_energy(tr, split=split, interval_ms=iv)
            assert sum(j for _, j in e.named_parts) == pytest.approx(e.energy_j, rel=1e-12)
            sp = ring_split(tr, tr.weight_bits, split, iv / 1e3, 1.0)
            assert e.energy_j == pytest.approx(sp.energy_j, rel=1e-12)
            assert e.compute_j == pytest.approx(sp.front_end_j + sp.model_j)
    on = ring.window_energy(tr)
    assert on.front_end_j > 0 and on.model_j > 0  # the front end is never left out
    assert on.named_parts[0][0] == ring.FRONT_END_NAME
    assert on.interval_s == pytest.approx(1.0)  # Part B's default BLE interval


def test_phone_context_tpot_is_the_glossary_mean_and_its_terms_add_up():
    tr = get_track("iphone")
    for wb, kb, ctx in ((4, 16, 1280), (8, 8, 4096), (16, 16, 512)):
        h = phone.phone_context(tr, wb, kb, ctx)
        ph = request_phases(get_hardware(tr.hardware_id), tr.model_id,
                            prompt_tokens=h.prompt_tokens, output_tokens=h.output_tokens,
                            weight_bits=wb, kv_bits=kb, mode=DESIGN_MODE)
        assert h.tpot_s == pytest.approx(ph.tpot_s, rel=1e-12)  # (e2e - TTFT) / (L - 1)
        assert h.tpot_s == pytest.approx((ph.latency_s - ph.ttft_s) / (h.output_tokens - 1))
        terms = h.weight_step_s + h.compute_step_s + h.kv_step_s + h.overhead_step_s
        assert terms == pytest.approx(h.tpot_s, rel=1e-12)
        assert h.kv_step_s == pytest.approx(
            h.mean_context_tokens * h.kv_bytes_per_token / h.bandwidth_bytes_per_s)
        assert h.last_step_s >= h.tpot_s
        assert h.request_s == pytest.approx(h.ttft_s + (h.output_tokens - 1) * h.tpot_s)
        mt = handheld_metrics(tr, wb, kb, ctx)  # Part D reads the same numbers
        assert mt["tpot_s"] == pytest.approx(h.tpot_s) and mt["ttft_s"] == h.ttft_s
        assert h.daily_mwh == pytest.approx(h.energy_j * h.requests_per_day / 3.6)


def test_phone_walls_agree_with_phone_context():
    tr = get_track("iphone")
    grid = np.unique(np.geomspace(512, 32768, 30).round()).astype(int)
    req = tr.demand_rate_per_s * 86400
    walls = phone.phone_walls(tr, 4, 16, req, grid)
    for name, at in walls.walls:
        if at is None:
            assert not phone.phone_context(tr, 4, 16, int(grid[-1]), req).fails[name]
            continue
        # the wall is the first failing context, to the token: it fails, one less passes
        assert phone.phone_context(tr, 4, 16, int(at), req).fails[name], name
        if at > grid[0]:
            assert not phone.phone_context(tr, 4, 16, int(at) - 1, req).fails[name], name


def test_phone_device_and_cloud_curves_match_the_single_requests():
    tr = get_track("iphone")
    outs = np.asarray([16, 64, 256, 1024])
    dev = phone.phone_device_curve(tr, 1024, 4, outs)
    for i, n in enumerate(outs):
        one = phone.phone_device(tr, 1024, int(n), 4)
        assert dev[i] == pytest.approx(one.energy_j, rel=1e-12)
        assert one.energy_j == pytest.approx(one.power_w * one.busy_s)
    cloud = phone.phone_cloud_curve(1024, outs, "lte")
    for i, n in enumerate(outs):
        assert cloud[i] == pytest.approx(phone.phone_cloud(1024, int(n), "lte").energy_j)
    x = phone.crossover(outs, dev, cloud)
    assert x is None or outs[0] <= x <= outs[-1]


def test_ring_design_and_life_curve_agree():
    tr = get_track("oura_ring")
    duties = np.asarray([0.02, 0.05, 0.5, 1.0])
    life = ring.ring_life_curve(tr, tr.weight_bits, duties)
    for d, days in zip(duties, life, strict=True):
        rd = ring.ring_design(tr, tr.weight_bits, float(d))
        assert days == pytest.approx(rd.battery_days, rel=1e-12)
        assert rd.daily_mwh == pytest.approx(rd.energy.energy_j * rd.windows_per_day / 3.6)
    assert ring.ring_design(tr, tr.weight_bits, 0.01).first == "coverage"


def test_ring_interval_curves_and_best_cut():
    tr = get_track("oura_ring")
    curves = ring.ring_interval_curves(tr, tr.weight_bits, 1.0, np.asarray(INTERVALS_MS))
    per_day = tr.demand_rate_per_s * 86400
    for j, iv in enumerate(INTERVALS_MS):
        cuts = ring.ring_cuts(tr, tr.weight_bits, iv, 1.0)
        for i, c in enumerate(cuts.values()):
            assert curves[i, j] == pytest.approx(c.energy_j * per_day / 3.6, rel=1e-9)
    cuts = ring.ring_cuts(tr, tr.weight_bits, 100.0, 1.0)
    best = ring.ring_best_cut(tr, cuts)
    assert best == "features"
    assert all(c.energy_j >= cuts[best].energy_j for c in cuts.values()
               if c.latency_s <= tr.slo_s)


def test_camera_point_ratios_are_true_values_and_energy_states_its_batch():
    tr = get_track("robotaxi")
    p = camera_plan.camera_point(tr, 8, 64, 60)
    assert max(p.ratios.values()) > 3.0  # not clamped for a chart
    assert p.closest == max(p.ratios, key=p.ratios.get)
    assert p.batch == 1
    cl = vehicle_load(tr, 8, "single", 64, 60)
    assert p.ratios["deadline"] == pytest.approx(cl.worst_latency_s / tr.slo_s)
    one = camera_plan.vehicle_batch(tr, 8, 1)
    base = camera_plan.camera_point(tr, 8, 8, 10)
    assert one.daily_wh == pytest.approx(base.daily_wh, rel=1e-12)
    eight = camera_plan.vehicle_batch(tr, 8, 8)
    assert eight.daily_wh < one.daily_wh and eight.wait_s > 0


def test_camera_first_and_layout_sweep():
    tr = get_track("robotaxi")
    walls, first, at = camera_plan.camera_first(tr, 8, 10.0, 64)
    assert first == "deadline" and at == 9
    sweep = camera_plan.layout_sweep(tr, 8, np.arange(1, 65))
    for i, lay in enumerate(camera_plan.VEHICLE_LAYOUTS):
        assert sweep[i, 7] == pytest.approx(
            float(phys.camera_load(*_frame(tr), 8, 10.0, layout=lay, power_w=60.0,
                                   link_bytes_per_s=get_hardware(tr.hardware_id)
                                   .interconnect_bandwidth,
                                   link_latency_s=get_hardware(tr.hardware_id)
                                   .interconnect_latency_s,
                                   frame_bytes=tr.window_bytes).worst_latency_s))
    assert dict(walls)["deadline"] == at


def _frame(tr):
    from labkit.plans.design import vehicle_frame
    return vehicle_frame(tr, 8)


def test_lab1_front_end_is_lab2s_front_end():
    """Both labs count the ring's energy per window as front end + model: Lab 1's front-end
    figure (plans.serving, when present) is this module's."""
    from labkit.plans import serving

    if not hasattr(serving, "front_end_energy_j"):
        pytest.skip("Lab 1 has no front-end figure of its own")
    e = ring.window_energy("oura_ring")
    assert serving.front_end_energy_j("oura_ring") == pytest.approx(e.front_end_j, rel=1e-9)


@pytest.mark.parametrize("weight_bits", [8, 16])
def test_the_worst_frame_on_one_soc_is_one_number_in_both_labs(weight_bits):
    """One SoC, no batching, every camera: Lab 1's hard-deadline tail (the simulated stream,
    which starts at the critical instant when all cameras fire together) and Lab 2's worst
    case (the last of the simultaneous frames) are the same quantity and agree. Before the
    critical instant was simulated, Lab 1 took the worst of one random phase draw (2.9 ms
    against Lab 2's 12.4 ms for the same plan)."""
    from labkit.plans.serving import release_guardrails

    tr = get_track("robotaxi")
    g = release_guardrails(tr.id, weight_bits=weight_bits, kv_bits=tr.kv_bits, policy="none",
                           devices_per_replica=1, demand_rate_per_s=tr.demand_rate_per_s)
    lab1 = {c.name: c.value for c in g.checks}["slo"]
    lab2 = vehicle_load(tr, weight_bits, "single").worst_latency_s
    assert lab1 == pytest.approx(lab2, rel=1e-9)
