"""One definition of "fits in memory" for both labs: Lab 2 Part A's memory fit
(:func:`labkit.physics.roofline.memory_budget`, :func:`labkit.plans.roofline.max_batch_in_memory`)
and Lab 1's session count (the deployment model's ``max_batch_in_memory``,
:func:`labkit.physics.memory.state_capacity`) count the same weights, KV and reserve on
every language-model track and a grid of settings; the one term they differ by, a
decoding step's activations, is named, and so is the reserve whenever a view leaves it
out."""

from __future__ import annotations

import itertools
import math

import pytest

from labkit.core.grids import pow2
from labkit.physics import roofline as rf
from labkit.plans import roofline as pr
from labkit.plans.deployment import deployment
from labkit.plans.workload import session_capacity
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import TRACKS

LM = [t for t, tr in TRACKS.items() if tr.is_transformer]
GRID = list(itertools.product((512, 4096, 32768), (4, 8, 16), (4, 8, 16)))
OPTIONS = tuple(pow2(1024))


def _args(track: str):
    tr = TRACKS[track]
    return (get_hardware(tr.hardware_id), get_model(tr.model_id), tr.devices_per_replica,
            tr.memory_reserve_fraction)


@pytest.mark.parametrize("track", LM)
def test_both_labs_count_the_same_weights_kv_and_reserve(track):
    hw, m, tp, reserve = _args(track)
    for ctx, wb, kb in GRID:
        one = rf.memory_budget(hw, m, ctx, 1, wb, kb, tp, reserve_fraction=reserve)
        free = float(one.capacity_bytes) - float(one.weights_bytes)
        lab1 = session_capacity(track, weight_bits=wb, kv_bits=kb, context_tokens=ctx)
        # Lab 1's count is Lab 2's budget without the step's activations, nothing else
        assert lab1.max_sessions == max(0, math.floor(free / float(one.kv_bytes))), (
            track, ctx, wb, kb)
        lab2 = pr.max_batch_in_memory(hw, m, ctx, wb, kb, tp, reserve)
        want = max(0, math.floor(free / (float(one.kv_bytes) + float(one.transient_bytes))))
        assert lab2 == want <= lab1.max_sessions
        if lab2 >= 1:   # the largest batch fits and one more does not
            assert not rf.memory_budget(hw, m, ctx, lab2, wb, kb, tp, reserve).over_budget
        assert rf.memory_budget(hw, m, ctx, lab2 + 1, wb, kb, tp, reserve).over_budget


@pytest.mark.parametrize("track", LM)
def test_the_deployment_s_max_batch_is_lab_2_s_budget_less_the_activations(track):
    tr = TRACKS[track]
    hw, m, tp, reserve = _args(track)
    for wb, kb in itertools.product((4, 8, 16), (4, 8, 16)):
        got = deployment(track, weight_bits=wb, kv_bits=kb)["max_batch_in_memory"]
        one = rf.memory_budget(hw, m, tr.context_tokens, 1, wb, kb, tp, reserve)
        free = float(one.capacity_bytes) - float(one.weights_bytes)
        assert got.value == max(0, math.floor(free / float(one.kv_bytes))), (wb, kb)


@pytest.mark.parametrize("track", LM)
def test_a_view_names_the_reserve_it_keeps_or_leaves_out(track):
    """With the track's reserve the gain stops at the largest option Lab 1's budget holds
    and its label names the reserve; without it, the label says there is none."""
    tr = TRACKS[track]
    hw, m, tp, reserve = _args(track)
    kw = dict(batch=1, context_tokens=tr.context_tokens, weight_bits=tr.weight_bits,
              kv_bits=tr.kv_bits, tp=tp, mode="peak", batch_options=OPTIONS)
    kept = pr.decode_view(hw, m, reserve_fraction=reserve, **kw).gain
    cap = pr.max_batch_in_memory(hw, m, tr.context_tokens, tr.weight_bits, tr.kv_bits, tp,
                                 reserve)
    assert kept.batch_to == max(b for b in OPTIONS if b <= cap)
    bare = pr.decode_view(hw, m, **kw).gain
    for g, basis in ((kept, pr.fit_basis(reserve)), (bare, pr.FIT_BASIS)):
        if g.capped:
            assert basis in g.label and "reserve" in g.label
    if reserve > 0:
        assert f"{round(reserve * 100)}% serving reserve" in pr.fit_basis(reserve)
        assert bare.batch_to is not None and kept.batch_to is not None
        assert kept.batch_to <= bare.batch_to


def test_a_reserve_outside_zero_to_one_is_refused():
    hw, m, tp, _ = _args(LM[0])
    for bad in (-0.1, 1.0, float("nan")):
        with pytest.raises(ValueError, match="reserve_fraction"):
            rf.memory_budget(hw, m, 512, 1, 16, 16, tp, reserve_fraction=bad)
