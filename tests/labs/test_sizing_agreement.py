"""Lab 1 Part D and Lab 2 Part B size the same cloud demand with one function.

Lab 2 Part B's three axes (paper section 5.2) size decode only; beside them it shows the
same demand served the way Lab 1's release review sizes it (prefill, utilisation cap),
with :func:`labkit.plans.serving.serving_plan`. For the same demand and precisions, the
device count Lab 2 displays for Lab 1's replica shape is the count Lab 1 Part D displays,
and the gap to the paper's count is the displayed, computed term.
"""

from __future__ import annotations

import re

import pytest

from labkit.core.answers import AnswerStore
from labkit.core.format import fmt_pct
from labkit.labs.accelerators import Lab as Lab2
from labkit.labs.inference_economy import Lab as Lab1
from labkit.plans.serving import serving_plan
from labkit.tracks import TRACKS, get_track

FLEET_TRACKS = [t for t in TRACKS if get_track(t).cost_unit == "USD"
                and get_track(t).is_transformer]


@pytest.fixture
def parts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))

    def make(track: str):
        store = AnswerStore(tmp_path / f"{track}.json")
        b = Lab2(track, store=store, gate_explore=False).part("B")
        b.to_plan()   # these compare the track's own plan (not a candidate under review)
        return Lab1(track, store=store, gate_explore=False).part("D"), b
    return make


def _card(part, label: str) -> str:
    """The value of the readout card ``label`` (what the student reads)."""
    m = re.search(rf">{re.escape(label)}</div><div class='labkit-card-value'[^>]*>([^<]*)<",
                  part.readout.value, flags=re.IGNORECASE)
    assert m, f"no card {label!r}"
    return m.group(1)


def _lab1_devices(d) -> int:
    m = re.search(r"([\d,]+) devices? in total", d.readout.value)
    assert m
    return int(m.group(1).replace(",", ""))


@pytest.mark.parametrize("track", FLEET_TRACKS)
def test_default_demand_both_labs_show_the_same_release_fleet(parts, track):
    d, b = parts(track)
    tr = get_track(track)
    d.controls["policy"].value = tr.default_policy    # Lab 1's plan at the track's shape
    d.controls["weight_bits"].value = tr.weight_bits
    d.controls["kv_bits"].value = tr.kv_bits
    assert b.results["demand_rate_per_s"] == pytest.approx(tr.demand_rate_per_s)
    assert b.results["release_devices"] == d.results["total_devices"] == _lab1_devices(d)
    served = b.callouts["served"]
    assert served.active
    assert f"{d.results['total_devices']:,} devices" in served.detail
    assert f"{b.results['total_devices']:,} devices" in served.detail   # the paper's count
    if track == "cloud_fleet":  # 180 released vs the paper's 32 at 75 requests/s
        assert d.results["total_devices"] == 180 and b.results["total_devices"] == 32


@pytest.mark.parametrize("track", FLEET_TRACKS)
def test_a_grid_of_demands_and_precisions_agrees(parts, track):
    d, b = parts(track)
    tr = get_track(track)
    d.controls["policy"].value = tr.default_policy
    users = [v for _, v in b.controls["users"].options]
    u0 = b.u0
    grid_users = [u for u in users if u0 <= u <= 2 * u0][1::3]
    for wb, kb in ((tr.weight_bits, tr.kv_bits), (8, 8)):
        d.controls["weight_bits"].value, d.controls["kv_bits"].value = wb, kb
        b.controls["weight_bits"].value, b.controls["kv_bits"].value = wb, kb
        for u in grid_users:
            b.controls["users"].value = u
            d.controls["share_pct"].value = 100.0 * u / u0
            assert d.results["demand_share"] * tr.demand_rate_per_s == pytest.approx(
                b.results["demand_rate_per_s"])
            assert b.results["release_devices"] == d.results["total_devices"], (wb, kb, u)
            # the gap to the paper's decode-only count is the displayed served plan:
            # replicas with prefill and the utilisation cap, by serving_plan itself, at the
            # replica size that serves with the fewest devices
            same = serving_plan(tr, demand_rate_per_s=b.results["demand_rate_per_s"],
                                weight_bits=wb, kv_bits=kb,
                                devices_per_replica=b.results["served_devices_per_replica"],
                                batch_size=b.results["served_slots"],
                                context_tokens=b.results["context_tokens"],
                                with_baseline=False)
            assert b.results["served_devices"] == same.total_devices
            assert f"{same.total_devices:,} devices" in b.callouts["served"].detail
            assert b.results["served_devices"] >= b.results["total_devices"]
            assert b.results["prefill_share"] == pytest.approx(
                same.replica_capacity_requests_per_s * b.results["prefill_s"])
            assert fmt_pct(b.results["prefill_share"], sig=2) in b.callouts["served"].detail
            # one fleet size: the card reads the served count (prefill and the cap included)
            assert _card(b, "fleet") == f"{same.total_devices:,} devices"
            assert b.results["fleet_devices"] == same.total_devices


def test_the_served_bar_moves_with_the_users(parts):
    _, b = parts("cloud_fleet")
    y0 = float(list(b.m_axes.y)[-1])
    assert y0 == b.results["served_devices"] == 144
    for u in sorted((v for _, v in b.controls["users"].options), reverse=True):
        b.controls["users"].value = u   # the most users a served replica still takes
        if b.results["served_devices"] is not None:
            break
    assert u > b.u0
    assert float(list(b.m_axes.y)[-1]) == b.results["served_devices"] > y0
