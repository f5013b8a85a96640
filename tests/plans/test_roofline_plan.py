"""labkit.plans.roofline: Lab 2 Part A's computation as frozen results, checked against
the physics it stands on (:mod:`labkit.physics.roofline`, :mod:`labkit.physics.phases`)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from labkit.core.grids import PRECISIONS, pow2
from labkit.physics import roofline as rf
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.phases import cnn_inference_time
from labkit.plans import roofline as pr
from labkit.plans import roofline_sweeps as ps
from labkit.plans.equations import _combine
from labkit.plans.roofline import FIT_BASIS
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import TRACKS

OPTIONS = tuple(pow2(1024))
LM = [t for t, tr in TRACKS.items() if tr.is_transformer]
CNN = [t for t, tr in TRACKS.items() if not tr.is_transformer]


def _view(track: str, **kw: object) -> pr.DecodeView:
    tr = TRACKS[track]
    args: dict[str, object] = dict(batch=tr.batch_size, context_tokens=tr.context_tokens,
                                   weight_bits=tr.weight_bits, kv_bits=tr.kv_bits,
                                   tp=tr.devices_per_replica, mode="peak",
                                   batch_options=OPTIONS, kv_options=(4, 8, 16))
    args.update(kw)
    return pr.decode_view(get_hardware(tr.hardware_id), get_model(tr.model_id),
                          **args)  # type: ignore[arg-type]


def test_results_are_frozen():
    v = _view("cloud_fleet")
    for obj in (v, v.balance, v.gain, v.serving, *v.regime_rows, *v.equations.values()):
        assert dataclasses.is_dataclass(obj)
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.mode = "x"  # type: ignore[misc]


@pytest.mark.parametrize(("track", "mode"), list(itertools.product(LM, ("peak", "achievable"))))
def test_b_star_and_l_star_carry_their_mode(track, mode):
    tr = TRACKS[track]
    b = pr.balance(get_hardware(tr.hardware_id), get_model(tr.model_id), tr.weight_bits,
                   tr.kv_bits, mode)
    assert b.mode == mode and b.b_label == f"B* ({mode})" and b.l_label == f"L* ({mode})"
    assert b.b_star == pytest.approx(rf.critical_batch(tr.hardware_id, tr.model_id,
                                                       tr.weight_bits, mode=mode))
    assert b.l_star == pytest.approx(rf.balance_context(tr.hardware_id, tr.model_id,
                                                        tr.kv_bits, mode=mode))


def test_the_cloud_b_star_differs_by_mode_and_each_says_which():
    """The audit's 295 (Part A) vs ~197 (Part C): peak vs achievable, now labelled."""
    peak, ach = (_view("cloud_fleet", mode=m).balance for m in ("peak", "achievable"))
    assert round(peak.b_star) == 295 and round(ach.b_star) == 197
    assert peak.b_label != ach.b_label


@pytest.mark.parametrize(("track", "batch", "ctx", "mode"),
                         list(itertools.product(LM, (1, 16, 256), (512, 4096, 32768),
                                                ("peak", "achievable"))))
def test_a_point_is_one_model_of_the_step(track, batch, ctx, mode):
    v = _view(track, batch=batch, context_tokens=ctx, mode=mode)
    pt = rf.decode_roofline(v.hw, v.model, batch, ctx, v.weight_bits, v.kv_bits, tp=v.tp,
                            mode=mode)
    assert v.step_s == pytest.approx(pt.step_s) and v.per_token_s == pytest.approx(
        v.step_s / batch)
    assert sum(t.step_s for t in v.step_terms) == pytest.approx(v.step_s, rel=1e-12)
    assert v.per_token_s / float(pt.compute_s) == pytest.approx(
        v.weight_share + 1 + v.kv_share + v.overhead_share, rel=1e-12)
    assert v.doubling_saving == pytest.approx(float(rf.doubling_saving(
        v.hw, v.model, batch, ctx, v.weight_bits, v.kv_bits, v.tp, mode)))
    for eq in v.equations.values():  # every printed result is its terms' own
        assert eq.result == pytest.approx(_combine(eq.op, eq.terms), rel=1e-12)
    assert v.equations["b_star"].result == pytest.approx(v.balance.b_star, rel=1e-12)
    assert v.equations["l_star"].result == pytest.approx(v.balance.l_star, rel=1e-12)
    # one KV bytes per token: the physics' own, and the one the L* equation divides by
    kv = v.equations["kv_bpt"]
    assert kv.result == kv_bytes_per_token(v.model, v.kv_bits)
    assert v.equations["l_star"].terms[1] == pytest.approx(
        v.equations["ai"].result * kv.result, rel=1e-12)
    assert v.equations["step"].result == pytest.approx(v.step_s * 1e3, rel=1e-12)
    if v.knee_batch is not None:
        assert v.equations["knee"].result == pytest.approx(v.knee_batch, rel=1e-9)
    else:
        assert "knee" not in v.equations
    # the regime row is the predicate on the terms, exactly one row is "here"
    assert sum(r.here for r in v.regime_rows) == 1
    w, k = v.weight_share, v.kv_share
    want = ("extreme" if k >= rf.EXTREME_CONTEXT else "long" if k >= 1
            else "weights" if w > 1 else "serve")
    assert v.regime_key == want
    # compute-bound / compute-efficient is the compute term being the largest
    assert v.compute_bound == (str(pt.regime) == "compute-bound")


def test_a_kv_bound_step_past_b_star_is_not_compute_bound():
    """The DP stop rule once called a 256 x 4,096-token cloud step compute-efficient
    because B >= B* (achievable), while its KV read outlasts its compute."""
    v = _view("cloud_fleet", batch=256, context_tokens=4096, mode="achievable")
    assert v.batch >= v.balance.b_star
    p = v.point
    assert float(p.kv_step_s) > float(p.compute_step_s)
    assert not v.compute_bound and str(p.regime) != "compute-bound"


@pytest.mark.parametrize("track", LM)
def test_the_batching_gain_stops_at_the_largest_batch_that_fits(track):
    tr = TRACKS[track]
    v = _view(track, batch=1)
    g = v.gain
    fits = [b for b in OPTIONS if not rf.memory_budget(
        v.hw, v.model, v.context_tokens, b, v.weight_bits, v.kv_bits, tp=v.tp).over_budget]
    assert g.batch_to == max(fits) and g.capped == (max(fits) < max(OPTIONS))
    assert g.batch_max == max(OPTIONS)
    if g.capped:
        assert FIT_BASIS in g.label
    want = {"cloud_fleet": 128, "iphone": 16}.get(track)
    if want is not None and tr.context_tokens:
        assert g.batch_to == want  # not the 1,024 whose KV needs 1,374 GB / 150 GB


@pytest.mark.parametrize("track", LM)
def test_the_gain_sweep_agrees_with_the_point(track):
    tr = TRACKS[track]
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    grid = np.round(np.geomspace(256, m.max_context, 9))
    gain, to = ps.gain_sweep(hw, m, grid, tr.weight_bits, tr.kv_bits,
                             tr.devices_per_replica, "peak", OPTIONS, False)
    for i, ctx in enumerate(grid):
        v = _view(track, context_tokens=int(ctx))
        if v.gain.batch_to is None:
            assert np.isnan(gain[i]) and to[i] == 0
        else:
            assert to[i] == v.gain.batch_to
            assert gain[i] == pytest.approx(v.gain.gain, rel=1e-9)


def test_the_paper_pe_is_analytic():
    """One PE holds none of the 70B model: the point is over memory, and the gain is
    quoted analytically (memory not modelled), labelled as such."""
    hw, m = get_hardware(rf.PAPER_HARDWARE), get_model(rf.PAPER_MODEL)
    v = pr.decode_view(hw, m, batch=1, context_tokens=8192, weight_bits=16, kv_bits=16,
                       tp=1, mode="peak", paper=True, batch_options=OPTIONS)
    assert v.over_memory and v.gain.analytic and "analytic" in v.gain.label
    ex = ps.paper_example()
    assert ex.b_star == pytest.approx(31.25) and ex.mode == "peak"
    assert ps.paper_pair(hw, m, 8192, 16, 16, 1, "peak") == pytest.approx(
        ex.per_token_s[pr.PAPER_SHORT_CONTEXT])


@pytest.mark.parametrize("track", LM)
def test_levers_are_possible_moves(track):
    for batch, ctx in itertools.product((1, 64, 1024), (1024, 32768)):
        v = _view(track, batch=batch, context_tokens=ctx)
        for r in v.regime_rows:
            for lever in r.levers:
                if "smaller batch" in lever:
                    assert batch > 1 and (v.stalled or v.over_memory)
                if "larger batch" in lever:
                    assert not v.stalled and v.gain.batch_to is not None \
                        and v.gain.batch_to > batch
                assert "(CP" not in lever and "(DP" not in lever  # no axes given


@pytest.mark.parametrize("track", CNN)
def test_the_cnn_view_is_the_physics_pass(track):
    tr = TRACKS[track]
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    for wb, b, mode in itertools.product((32, 8, 4), (1, 8), ("peak", "achievable")):
        v = pr.cnn_view(hw, m, wb, b, mode)
        r = cnn_inference_time(hw, m, wb, b, mode)
        assert v.latency_s == pytest.approx(float(r.latency_s)) and v.regime == r.regime
        assert v.ridge_flop_per_byte == pytest.approx(v.c_flops / v.bw_bytes_per_s)
        assert v.attainable_flops == pytest.approx(min(v.c_flops,
                                                       v.ai_flop_per_byte * v.bw_bytes_per_s))
        assert v.achievable_over_peak >= 1 - 1e-12
    assert pr.precision_floor(hw, m, max(PRECISIONS), PRECISIONS) is None
