"""Edge physics: links, batteries, wearable split points, cloud hand-off, multi-camera load."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labkit.core.lookup import UnknownIdError
from labkit.physics import edge
from labkit.registries.hardware import HARDWARE

# -- constants are sourced --------------------------------------------------------------------


def test_every_link_battery_and_profile_constant_has_a_source():
    for lk in edge.LINKS.values():
        assert lk.sources and all(isinstance(s, str) and s for s in lk.sources.values())
        assert lk.up_bytes_per_s > 0 and lk.down_bytes_per_s > 0
        assert lk.up_j_per_byte > 0 and lk.down_j_per_byte > 0
    for b in edge.BATTERIES.values():
        assert {"capacity_mwh", "other_mwh_per_day", "target_days"} <= set(b.sources)
    for p in edge.EDGE_PROFILES.values():
        assert p.hardware_id in HARDWARE and p.sources
        assert p.battery is None or p.battery in edge.BATTERIES
        assert all(lk in edge.LINKS for lk in p.offload_links)
        assert p.host_hardware_id is None or p.host_hardware_id in HARDWARE
    assert set(edge.HANDOFF_SOURCES) == {"BYTES_PER_TOKEN", "REQUEST_OVERHEAD_BYTES",
                                         "STREAM_BYTES_PER_TOKEN"}
    assert {"YOLOV8N_SPLIT_BYTES", "BACKBONE_FLOP_SHARE"} <= set(edge.CAMERA_SOURCES)


def test_edge_data_lives_in_the_registry_and_is_re_exported():
    from labkit.registries import edge as reg

    for name in ("LINKS", "BATTERIES", "EDGE_PROFILES", "HANDOFF_SOURCES", "CAMERA_SOURCES",
                 "Link", "Battery", "EdgeProfile", "get_link", "get_battery", "edge_profile",
                 "BYTES_PER_TOKEN", "YOLOV8N_SPLIT_BYTES", "BACKBONE_FLOP_SHARE"):
        assert getattr(edge, name) is getattr(reg, name), name
    assert edge.edge_profile("h100-sxm") is None
    assert edge.get_link("lte") is reg.LINKS["lte"]


def test_ble_packet_derivation_by_hand():
    ble = edge.get_link("ble-1m")
    # one 244-byte payload: 265 bytes on air at 8 us = 2.12 ms, + 150 + 80 + 150 us
    pkt_s = 265 * 8e-6 + 380e-6
    assert pkt_s == pytest.approx(2.50e-3)
    assert ble.up_bytes_per_s == pytest.approx(244 / 2.50e-3)          # 97.6 kB/s
    pkt_j = 3.0 * (6.4e-3 * 2.12e-3 + 6.26e-3 * 380e-6)                # 47.8 uJ
    assert pkt_j == pytest.approx(47.8e-6, rel=1e-3)
    assert ble.up_j_per_byte == pytest.approx(pkt_j / 244)            # 0.196 uJ/byte
    assert ble.up_j_per_byte == pytest.approx(0.196e-6, rel=1e-2)
    assert ble.fixed_j == 0.0


def test_lte_model_by_hand():
    lte = edge.get_link("lte")
    assert lte.up_j_per_byte == pytest.approx(3.507e-6, rel=1e-3)     # 438.39 mW/Mbps x 8
    assert lte.fixed_j == pytest.approx(1.2107 * 0.2601 + 1.060 * 11.576)
    t = edge.link_transfer("lte", 6e5, 1.3e6)                          # 0.8 s up, 0.8 s down
    assert t.airtime_s == pytest.approx(0.8 + 0.8)
    assert t.connected_s == pytest.approx(1.6)
    assert t.time_s == pytest.approx(0.2601 + 0.070 + 1.6)
    expected = (1.2107 * 0.2601 + 6e5 * 0.43839 * 8e-6 + 1.3e6 * 0.05197 * 8e-6
                + 1.28804 * 1.6 + 1.060 * 11.576)
    assert t.energy_j == pytest.approx(expected)
    # a stream keeps the radio connected for longer than the airtime
    s = edge.link_transfer("lte", 100, 100, stream_s=10.0)
    assert s.connected_s == 10.0 and s.active_j == pytest.approx(1.28804 * 10.0)


def test_ble_idle_power_by_hand():
    assert edge.ble_idle_power_w(0.1) == pytest.approx(7e-6 / 0.1)     # 70 uW
    assert edge.ble_idle_power_w(1.0) < edge.ble_idle_power_w(0.03)


def test_battery_life_and_daily_energy_by_hand():
    ring = edge.get_battery("smart-ring")
    assert ring.capacity_mwh == pytest.approx(77.0)
    assert ring.other_mwh_per_day == pytest.approx(11.25)
    # the spotter's full 8 mWh budget gives exactly the promised four days
    assert edge.battery_life_days("smart-ring", 8.0) == pytest.approx(4.0)
    assert edge.battery_life_days("smart-ring", 0.0) == pytest.approx(77 / 11.25)
    assert edge.get_battery("iphone-15-pro").capacity_mwh == pytest.approx(12_670.38)
    # 0.706 mJ per window, one window a second, no idle: 61.0 J = 16.9 mWh
    assert edge.daily_energy_mwh(0.706e-3, 86_400) == pytest.approx(0.706e-3 * 86_400 / 3.6)
    assert edge.daily_energy_mwh(0.0, 0.0, idle_power_w=1e-3) == pytest.approx(86.4 / 3.6)


def _split(split: str, **kw: object) -> edge.SplitCost:
    args = dict(window_bytes=32_000, feature_bytes=490, result_bytes=4, front_end_ops=2e6,
                front_end_ops_per_s=128e6, model_s=0.0706, device_power_w=0.010,
                host_s=1e-3, interval_s=0.1, inputs_per_s=1.0)
    args.update(kw)
    return edge.wearable_split(split, **args)  # type: ignore[arg-type]


def test_wearable_split_by_hand():
    ble = edge.get_link("ble-1m")
    on = _split("on_device")
    assert on.front_end_s == pytest.approx(2e6 / 128e6)                # 15.6 ms
    assert on.model_j == pytest.approx(0.010 * 0.0706)                 # 0.706 mJ
    assert on.bytes_sent == 4 and on.wait_s == 0.0 and on.host_s == 0.0
    assert on.latency_s == pytest.approx(2e6 / 128e6 + 0.0706)
    assert on.idle_j == pytest.approx(7e-6 / 0.1)                      # the link is kept
    feats = _split("features")
    assert feats.model_j == 0.0 and feats.bytes_sent == 490
    assert feats.radio_j == pytest.approx(490 * ble.up_j_per_byte)
    assert feats.latency_s == pytest.approx(2e6 / 128e6 + 0.1 + 490 / ble.up_bytes_per_s
                                            + 1e-3)
    raw = _split("raw")
    assert raw.front_end_j == 0.0 and raw.bytes_sent == 32_000
    assert raw.transfer_s == pytest.approx(32_000 / ble.up_bytes_per_s)  # 0.33 s
    assert raw.link_utilisation == pytest.approx(32_000 / ble.up_bytes_per_s)
    # a 490-byte hand-off costs less than 70 ms of Cortex-M4 compute
    assert feats.energy_j < on.energy_j < raw.energy_j
    assert raw.latency_s > 0.2  # the raw window cannot meet a 200 ms deadline over BLE


def test_cloud_handoff_by_hand():
    h = edge.cloud_handoff(1024, 256, link="lte", server_ttft_s=0.3, server_tpot_s=0.02)
    assert h.up_bytes == pytest.approx(1024 * 4 + 2000)
    assert h.down_bytes == pytest.approx(256 * 100)
    stream = 0.3 + 255 * 0.02
    assert h.transfer.connected_s == pytest.approx(stream)
    assert h.ttft_s == pytest.approx(0.2601 + 0.070 + h.up_bytes / (6e6 / 8) + 0.3)
    assert h.total_s == pytest.approx(0.2601 + 0.070 + stream)
    lte = edge.get_link("lte")
    assert h.energy_j == pytest.approx(lte.fixed_j + h.up_bytes * lte.up_j_per_byte
                                       + h.down_bytes * lte.down_j_per_byte
                                       + lte.active_w * stream)
    wifi = edge.cloud_handoff(1024, 256, link="wifi", server_ttft_s=0.3, server_tpot_s=0.02)
    assert wifi.energy_j < h.energy_j / 10  # no 11.6 s high-power tail on Wi-Fi


def test_camera_load_by_hand():
    single = edge.camera_load(0.4e-3, 0.3e-3, 8, 30)
    assert single.frames_per_s == 240 and single.busy == pytest.approx((240 * 0.4e-3,))
    assert single.worst_latency_s == pytest.approx(8 * 0.4e-3)
    cams = edge.camera_load(0.4e-3, 0.3e-3, 8, 30, layout="cameras",
                            link_bytes_per_s=10e9, link_latency_s=5e-6,
                            frame_bytes=1_228_800)
    x = 1_228_800 / 10e9 + 5e-6
    assert cams.transfer_s == pytest.approx(x)
    assert cams.worst_latency_s == pytest.approx(max(4 * 0.4e-3, x + 4 * 0.4e-3))
    assert cams.busy == pytest.approx((4 * 30 * 0.4e-3,) * 2)
    assert cams.link_bytes_per_s == pytest.approx(4 * 30 * 1_228_800)
    model = edge.camera_load(0.4e-3, 0.3e-3, 8, 30, layout="model", power_w=60,
                             link_bytes_per_s=10e9, link_latency_s=5e-6)
    a = b = 0.5 * 0.1e-3 + 0.3e-3
    xm = 716_800 / 10e9 + 5e-6
    assert model.stage_s == pytest.approx((a, b))
    assert model.worst_latency_s == pytest.approx(a + xm + b + 7 * max(a, xm, b))
    assert model.energy_j_per_frame == pytest.approx(60 * (a + b))
    assert edge.YOLOV8N_SPLIT_BYTES == 716_800


# -- validation names the parameter -----------------------------------------------------------

@pytest.mark.parametrize(("call", "name"), [
    (lambda: edge.link_transfer("lte", -1), "up_bytes"),
    (lambda: edge.link_transfer("lte", 1, stream_s=float("nan")), "stream_s"),
    (lambda: edge.ble_idle_power_w(0), "interval_s"),
    (lambda: edge.battery_life_days("smart-ring", -1), "load_mwh_per_day"),
    (lambda: edge.daily_energy_mwh(1, -2), "events_per_day"),
    (lambda: _split("cloud"), "split"),
    (lambda: _split("raw", interval_s=0), "interval_s"),
    (lambda: edge.cloud_handoff(0, 10, link="lte", server_ttft_s=0.3, server_tpot_s=0.02),
     "prompt_tokens"),
    (lambda: edge.camera_load(1e-3, 0, 0, 30), "cameras"),
    (lambda: edge.camera_load(1e-3, 0, 4, 30, layout="ring"), "layout"),
    (lambda: edge.camera_load(1e-3, 0, 4, 30, layout="model"), "link_bytes_per_s"),
    (lambda: edge.camera_load(1e-3, 2e-3, 4, 30), "overhead_s"),
])
def test_errors_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_unknown_ids():
    with pytest.raises(UnknownIdError, match="link"):
        edge.get_link("5g")
    with pytest.raises(UnknownIdError, match="battery"):
        edge.get_battery("watch")
    assert edge.edge_profile("h100-sxm") is None


# -- properties ---------------------------------------------------------------------------------

bytes_ = st.floats(0, 1e8, allow_nan=False)


@given(up=bytes_, down=bytes_, extra=st.floats(1, 1e6), link=st.sampled_from(list(edge.LINKS)))
def test_transfer_energy_and_time_grow_with_bytes(up, down, extra, link):
    a = edge.link_transfer(link, up, down)
    b = edge.link_transfer(link, up + extra, down)
    c = edge.link_transfer(link, up, down + extra)
    assert b.energy_j > a.energy_j and c.energy_j > a.energy_j
    assert b.time_s > a.time_s and c.time_s > a.time_s
    assert a.energy_j >= edge.get_link(link).fixed_j


@given(load=st.floats(0, 1e4), more=st.floats(1e-3, 1e3))
def test_battery_life_falls_with_load(load, more):
    assert edge.battery_life_days("smart-ring", load + more) < \
        edge.battery_life_days("smart-ring", load)


@given(interval=st.floats(7.5e-3, 4.0), split=st.sampled_from(edge.SPLITS),
       rate=st.floats(0.05, 1.0))
def test_split_latency_and_idle_energy_trade_off(interval, split, rate):
    short = _split(split, interval_s=interval, inputs_per_s=rate)
    long_ = _split(split, interval_s=interval * 2, inputs_per_s=rate)
    assert long_.idle_j < short.idle_j                 # rarer events: less idle energy
    if split == "on_device":
        assert long_.latency_s == short.latency_s      # local decision: no wait
    else:
        assert long_.latency_s > short.latency_s       # offloaded: waits for the link
    assert short.energy_j == pytest.approx(short.front_end_j + short.model_j + short.radio_j
                                           + short.idle_j)


@given(cams=st.integers(1, 64), fps=st.floats(1, 120), layout=st.sampled_from(edge.LAYOUTS))
def test_camera_load_properties(cams, fps, layout):
    kw = dict(layout=layout, power_w=60, link_bytes_per_s=10e9, link_latency_s=5e-6,
              frame_bytes=1_228_800)
    a = edge.camera_load(4e-4, 3e-4, cams, fps, **kw)
    b = edge.camera_load(4e-4, 3e-4, cams + 1, fps, **kw)
    assert b.worst_latency_s >= a.worst_latency_s
    per_frame = sum(a.stage_s) if layout == "model" else 4e-4
    assert sum(a.busy) == pytest.approx(cams * fps * per_frame)
    double = edge.camera_load(4e-4, 3e-4, cams, 2 * fps, **kw)
    assert double.max_busy == pytest.approx(2 * a.max_busy)
    assert a.worst_latency_s >= min(a.stage_s)
    assert math.isfinite(a.link_utilisation)


@given(cams=st.integers(1, 64), layout=st.sampled_from(edge.LAYOUTS))
def test_vectorised_worst_latency_matches_camera_load(cams, layout):
    kw = dict(link_bytes_per_s=10e9, link_latency_s=5e-6, frame_bytes=1_228_800)
    one = edge.camera_load(4e-4, 3e-4, cams, 30, layout=layout, **kw)
    many = edge.worst_latency(4e-4, 3e-4, [cams, cams + 1], layout, **kw)
    assert many[0] == pytest.approx(one.worst_latency_s)
    assert many[1] >= many[0]


@given(prompt=st.integers(1, 100_000), outs=st.lists(st.integers(1, 5000), min_size=1,
                                                    max_size=8),
       link=st.sampled_from(["lte", "wifi"]), ttft=st.floats(0, 2), tpot=st.floats(0, 0.2))
def test_vectorised_handoff_energy_matches_cloud_handoff(prompt, outs, link, ttft, tpot):
    curve = edge.cloud_handoff_energy(prompt, outs, link=link, server_ttft_s=ttft,
                                      server_tpot_s=tpot)
    for n, e in zip(outs, curve, strict=True):
        one = edge.cloud_handoff(prompt, n, link=link, server_ttft_s=ttft, server_tpot_s=tpot)
        assert e == pytest.approx(one.energy_j, rel=1e-12)
