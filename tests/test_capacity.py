"""Three-axis capacity planning."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labkit.physics import capacity as cap
from labkit.physics.roofline import decode_roofline
from labkit.registries.models import get_model


def test_weights_floor_matches_paper_axis_a():
    # ceil(N b / HBM_PE) = ceil(68.45e9 x 2 / 6e9) = 23 PEs for Llama 3.1 70B
    assert cap.weights_floor_devices("ahbm-pe", "llama-3.1-70b") == 23
    assert cap.weights_floor_devices("h100-sxm", "llama-3.1-70b") == 2
    assert cap.weights_floor_devices("h100-sxm", "llama-3.1-70b", weight_bits=8) == 1


def test_kv_headroom_matches_paper_axis_b():
    n_b = get_model("llama-3.1-70b").block_params_total * 2
    want = math.ceil((n_b + 64 * 8192 * 327_680) / 6e9)
    assert cap.kv_headroom_devices("ahbm-pe", "llama-3.1-70b", 64, 8192) == want == 52


def test_max_batch_within_slo_is_the_largest_batch_that_fits():
    b = cap.max_batch_within_slo("h100-sxm", "llama-3-8b", 4096, 0.020)
    assert decode_roofline("h100-sxm", "llama-3-8b", b, 4096).step_s <= 0.020
    assert decode_roofline("h100-sxm", "llama-3-8b", b + 1, 4096).step_s > 0.020
    # 70B weights alone take 41 ms on one H100: a 20 ms budget admits no batch at all
    assert cap.max_batch_within_slo("h100-sxm", "llama-3.1-70b", 100, 0.020) == 0


def test_max_batch_shrinks_with_tighter_slo_and_grows_with_devices():
    loose = cap.max_batch_within_slo("h100-sxm", "llama-3.1-70b", 8192, 0.100)
    tight = cap.max_batch_within_slo("h100-sxm", "llama-3.1-70b", 8192, 0.060)
    assert tight < loose
    assert cap.max_batch_within_slo("h100-sxm", "llama-3.1-70b", 8192, 0.060, devices=4) > tight


def test_binding_axis_flips_with_the_workload():
    one = cap.size_deployment("h100-sxm", "llama-3-8b", 1, 2000, 0.05)
    assert (one.binding_axis, one.total_devices) == ("weights", 1)
    kv = cap.size_deployment("h100-sxm", "llama-3.1-70b", 4, 1_000_000, 0.05)
    assert kv.binding_axis == "kv"
    slo = cap.size_deployment("h100-sxm", "llama-3.1-70b", 4, 1000, 0.004)
    assert slo.binding_axis == "slo"
    for s in (one, kv, slo):
        assert s.total_devices == s.devices_per_replica * s.replicas
        assert s.users_per_replica * s.replicas >= s.users


def test_reference_sizing_bug_is_fixed():
    """Correction: the reference sizes the SLO axis on ONE device, so 70B on 6 GB PEs (535 ms
    of weight fetch per step) gets one replica per user. A replica's own PEs share the work."""
    s = cap.size_deployment("ahbm-pe", "llama-3.1-70b", 64, 8192, 0.05)
    assert s.feasible and s.replicas < 64
    assert s.devices_per_replica >= s.weights_floor_devices


def test_infeasible_is_a_flag_not_a_number():
    s = cap.size_deployment("l4", "llama-3.1-405b", 1, 8192, 0.001, max_devices_per_replica=8)
    assert not s.feasible and s.total_devices == 0 and "infeasible" in s.reason


def test_slo_targets_from_the_paper():
    assert cap.slo_target("voice").tpot_s == (0.010, 0.025)
    assert cap.slo_target("chat").ttft_s == (0.300, 1.000)
    assert cap.slo_target("batch").tpot_s is None
    with pytest.raises(ValueError, match="workload"):
        cap.slo_target("gaming")


@given(st.integers(1, 2000), st.sampled_from([1024, 8192, 65536]),
       st.sampled_from([0.03, 0.05, 0.1]))
def test_more_users_never_need_fewer_devices(users, context, tpot):
    a = cap.size_deployment("h100-sxm", "llama-3.1-70b", users, context, tpot)
    b = cap.size_deployment("h100-sxm", "llama-3.1-70b", users + 1, context, tpot)
    assert b.total_devices >= a.total_devices


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"users": 0}, "users"), ({"context_tokens": -1}, "context_tokens"),
    ({"tpot_s": float("nan")}, "tpot_s"), ({"tpot_s": 0}, "tpot_s"),
    ({"max_devices_per_replica": 12}, "max_devices_per_replica"), ({"model": "yolov8n"}, "model"),
])
def test_bad_input_names_the_parameter(kwargs, param):
    args = {"hardware": "h100-sxm", "model": "llama-3.1-70b", "users": 8, "context_tokens": 4096,
            "tpot_s": 0.05, **kwargs}
    with pytest.raises(ValueError, match=param):
        cap.size_deployment(**args)


@pytest.mark.parametrize("hw, model", [("h100-sxm", "llama-3.1-70b"), ("ahbm-pe", "llama-3.1-70b"),
                                       ("h100-sxm", "llama-3-8b")])
@pytest.mark.parametrize("mode", ["peak", "achievable"])
def test_dense_closed_form_batch_equals_bisection(hw, model, mode):
    """The closed form for dense models gives exactly what bisecting the step time gives."""
    devices = 2 ** np.arange(0, 7)
    m = get_model(model)
    for ctx, tpot, wb, kb in itertools.product((512, 8192, 131072), (0.005, 0.03, 0.2, 2.0),
                                               (4, 16), (8, 16)):
        fast = cap._max_batch(hw, m, ctx, tpot, devices, wb, kb, mode)
        slow = [cap._bisect_max_batch(hw, m, ctx, tpot, int(d), wb, kb, mode, 1 << 20)
                for d in devices]
        assert fast.tolist() == slow, (ctx, tpot, wb, kb)
