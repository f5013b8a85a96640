"""The deployment model: one definition per quantity, its unit and basis, parts that add up."""

from __future__ import annotations

import math

import pytest

from labkit.core.units import SECONDS_PER_HOUR
from labkit.plans.deployment import ACHIEVABLE, GLOSSARY, PEAK, deployment
from labkit.plans.economy import BUSY, PROVISIONED, event_cost
from labkit.plans.workload import tpot_s, track_phases
from labkit.tracks import TRACKS, get_track


@pytest.mark.parametrize("track", list(TRACKS))
def test_every_quantity_has_its_glossary_unit_and_a_basis(track):
    tr = get_track(track)
    d = deployment(track)
    for q in d:
        assert q.name in GLOSSARY
        assert q.unit == GLOSSARY[q.name].unit.replace("cost unit", tr.cost_unit), q.name
        assert q.basis and q.definition
        assert q.value is None or (math.isfinite(q.value) and q.value >= 0), q.name
    assert BUSY in d["cost_per_day_busy"].basis
    assert PROVISIONED in d["cost_per_day_provisioned"].basis


@pytest.mark.parametrize("track", list(TRACKS))
@pytest.mark.parametrize("bits", [4, 8, 16])
def test_named_parts_add_up_to_the_whole(track, bits):
    d = deployment(track, weight_bits=bits)
    for name in ("cost_per_event", "energy_per_inference"):
        if name in d.quantities:
            assert d.parts(name), name
            assert sum(d.parts(name).values()) == pytest.approx(d.value(name), rel=1e-12)


def test_the_ring_counts_its_front_end_in_the_energy_of_a_window():
    d = deployment("oura_ring")
    parts = d.parts("energy_per_inference")
    assert any("front end" in name for name in parts)
    assert d.value("energy_per_inference") == pytest.approx(event_cost("oura_ring").energy_j)


@pytest.mark.parametrize("track", [t for t in TRACKS if get_track(t).is_transformer])
def test_tpot_is_the_per_request_mean_after_the_first_token(track):
    tr = get_track(track)
    d = deployment(track)
    ph = track_phases(tr)
    e2e = ph.prefill_s + ph.decode_s
    assert d.value("ttft") == pytest.approx(ph.prefill_s)
    assert d.value("tpot") == pytest.approx(tpot_s(e2e, ph.prefill_s, int(tr.output_tokens)))


@pytest.mark.parametrize("track", list(TRACKS))
def test_busy_cost_per_day_is_cost_per_event_times_events(track):
    tr = get_track(track)
    d = deployment(track, demand_rate_per_s=tr.demand_rate_per_s * 2)
    events = tr.demand_rate_per_s * 2 * tr.active_hours_per_day * SECONDS_PER_HOUR
    assert d.value("cost_per_day_busy") == pytest.approx(d.value("cost_per_event") * events)


def test_b_star_and_l_star_carry_the_mode_on_screen():
    peak, ach = deployment("cloud_fleet", mode=PEAK), deployment("cloud_fleet", mode=ACHIEVABLE)
    assert PEAK in peak["b_star"].basis and ACHIEVABLE in ach["b_star"].basis
    assert peak.value("b_star") != ach.value("b_star")


@pytest.mark.parametrize(("kw", "name"), [({"demand_rate_per_s": 0}, "demand_rate_per_s"),
                                          ({"mode": "typical"}, "mode"),
                                          ({"weight_bits": 5}, "weight_bits")])
def test_bad_settings_name_the_parameter(kw, name):
    with pytest.raises(ValueError, match=name):
        deployment("cloud_fleet", **kw)
