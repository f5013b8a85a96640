"""What both labs say about an edge device's memory agrees at every precision: a vehicle's
frame in flight (Lab 2's design check and cameras) is Lab 1's state per inference -- the
frame + activations at the datapath the weights run on -- and a ring that sends its data
to the phone says why it still stores the model."""

from __future__ import annotations

import pytest

from labkit.core.grids import PRECISIONS
from labkit.physics.kvcache import weight_bytes
from labkit.plans.design import design_check, scenario
from labkit.plans.workload import session_capacity
from labkit.registries.models import get_model
from labkit.scenarios.vehicle.plan.cameras import camera_point
from labkit.scenarios.vehicle.plan.scenario import bytes_in_flight, cameras_and_fps
from labkit.scenarios.wearable.plan.scenario import FALLBACK
from labkit.tracks import TRACKS

VEHICLES = [t for t in TRACKS if scenario(t) == "vehicle"]
RINGS = [t for t in TRACKS if scenario(t) == "wearable"]


@pytest.mark.parametrize("track", VEHICLES)
@pytest.mark.parametrize("bits", PRECISIONS)
def test_a_frame_in_flight_is_lab1_s_state_at_every_precision(track, bits):
    tr = TRACKS[track]
    lab1 = session_capacity(tr, weight_bits=bits).bytes_per_session
    assert bytes_in_flight(tr, bits) == pytest.approx(lab1, rel=1e-12)
    n, fps = cameras_and_fps(tr)
    want = weight_bytes(get_model(tr.model_id), bits) + n * lab1
    chk = design_check(tr, {"weight_bits": bits, "layout": "single"})
    assert chk.constraints["memory"].value == pytest.approx(want, rel=1e-12)
    assert camera_point(tr, bits, n, fps, "single").memory_bytes == pytest.approx(want)


def test_wider_weights_widen_a_frame_s_activations():
    for track in VEHICLES:
        tr = TRACKS[track]
        assert bytes_in_flight(tr, 16) > bytes_in_flight(tr, 8)


@pytest.mark.parametrize("track", RINGS)
@pytest.mark.parametrize("split", ["on_device", "features", "raw"])
def test_a_ring_that_offloads_says_why_it_stores_the_model(track, split):
    chk = design_check(track, {"split": split})
    for name in ("flash", "sram"):
        assert (FALLBACK in chk.constraints[name].detail) == (split != "on_device"), name
