"""Every conditional sentence Lab 2 Parts A and B show is the physics' verdict at the
numbers on screen: each track's defaults and a grid of settings, driven through the part's
controls, checked against :mod:`labkit.physics` computed here, outside the part."""

from __future__ import annotations

import html
import itertools

import pytest

from labkit.core.answers import AnswerStore
from labkit.core.format import tex_num
from labkit.core.grids import PRECISIONS
from labkit.labs.accelerators import Lab
from labkit.labs.accelerators.base import paper_ms
from labkit.physics import roofline as rf
from labkit.physics.phases import cnn_compute_precision, cnn_inference_time
from labkit.plans.design import DESIGN_MODE
from labkit.registries.hardware import get_hardware
from labkit.tracks import TRACKS

LM_TRACKS = [t for t, tr in TRACKS.items() if tr.is_transformer]
CNN_TRACKS = [t for t, tr in TRACKS.items() if not tr.is_transformer]


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    return lambda track: Lab(track, store=AnswerStore(tmp_path / "a.json"), gate_explore=False)


def _lm_points(part):
    devices = [v for _, v in part.controls["device"].options] if "device" in part.controls \
        else [None]
    yield {}  # the track's defaults first
    for dev, batch, ctx, mode in itertools.product(devices, (1, 32, 1024),
                                                    (1024, 16384, 131072),
                                                    ("peak", "achievable")):
        yield {k: v for k, v in (("device", dev), ("batch", batch), ("context", ctx),
                                 ("mode", mode)) if v is not None}


@pytest.mark.parametrize("track", LM_TRACKS)
def test_part_a_lm_sentences_follow_the_roofline(lab, track):
    part = lab(track).part("A")
    tr = part.track
    for point in _lm_points(part):
        for k, v in point.items():
            part.controls[k].value = v
        r = part.results
        hw = get_hardware(rf.PAPER_HARDWARE) if r["device"] == "paper" else part.hw
        tp = 1 if r["device"] == "paper" else tr.devices_per_replica
        b, s, mode = r["batch"], r["context_tokens"], r["mode"]
        wb, kb = r["weight_bits"], r["kv_bits"]
        pt = rf.decode_roofline(hw, part.model, b, s, wb, kb, tp=tp, mode=mode)
        where = (track, point)
        # the readout's time per token and the regime
        assert paper_ms(pt.per_token_s) in part.readout.value and r["regime"] == pt.regime
        # the regime-rules row is the predicate on the step's own per-token terms (in
        # units of compute, this mode), and it names only levers this track can move
        b_star = rf.critical_batch(hw, part.model, wb, mode=mode)
        l_star = rf.balance_context(hw, part.model, kb, mode=mode)
        w, k = pt.weight_s / pt.compute_s, pt.kv_s / pt.compute_s
        key = ("extreme" if k >= rf.EXTREME_CONTEXT else "long" if k >= 1
               else "weights" if w > 1 else "serve")
        assert r["regime_rule"] == key, where
        if mode == "peak" and tp == 1:  # the paper's reading, B*/B and S/L*, agrees
            assert key == rf.regime_rule(b, s, b_star, l_star), where
        marked = html.unescape(
            part.details.value.split("◀ your settings")[0].rsplit("<tr>", 1)[-1])
        assert {"weights": "weight fetch per token > compute", "serve": "weight fetch ≤ compute",
                "long": "compute ≤ KV read", "extreme": "KV read ≥"}[key] in marked, where
        _assert_levers_are_moves(part, marked, b, s, wb, kb, hw, tp)
        # stall / boundary / floor / knee sentences
        saving = float(rf.doubling_saving(hw, part.model, b, s, wb, kb, tp, mode))
        stall, boundary = part.callouts["stall"], part.callouts["boundary"]
        assert stall.active == (saving < 0.10), where
        if stall.active:
            assert ("The KV read is the floor" in stall.value) == (pt.kv_s > pt.compute_s)
        if boundary.active:
            overlapped = pt.compute_step_s >= pt.weight_step_s + pt.kv_step_s
            assert ("already outlasts all memory traffic" in boundary.value) == (
                overlapped and r["knee_batch"] is not None), where
        mem = rf.memory_budget(hw, part.model, s, b, wb, kb, tp=tp,
                               reserve_fraction=tr.memory_reserve_fraction)
        assert part.callouts["oom"].active == bool(mem.over_budget), where
        assert part.callouts["slo"].active == (tr.slo_kind == "tpot" and pt.step_s > tr.slo_s)
        assert part.callouts["window"].active == (s > part.model.max_context)
        # the serving batch 2B*: its per-token time, and the SLO verdict on its step
        sb = rf.serving_batch(hw, part.model, wb, mode=mode)
        at = rf.decode_roofline(hw, part.model, sb, s, wb, kb, tp=tp, mode=mode)
        assert r["per_token_at_serving_s"] == pytest.approx(at.per_token_s, rel=1e-9)
        fits = r["device"] == "paper" or not rf.memory_budget(
            hw, part.model, s, sb, wb, kb, tp=tp,
            reserve_fraction=tr.memory_reserve_fraction).over_budget
        if tr.batch_size == 1:   # one user: 2B* is named a server's batch, never quoted
            assert "this device serves one user" in part.details.value, where
            assert "Per token (step ÷ B) that is" not in part.details.value, where
            continue
        if not fits:  # feasibility first: no time quoted at a batch that does not fit
            assert "It does not fit memory at" in part.details.value, where
            assert "Per token (step ÷ B) that is" not in part.details.value, where
            continue
        assert f"Per token (step ÷ B) that is {paper_ms(at.per_token_s)}" in part.details.value
        if tr.slo_kind == "tpot":
            verdict = "within" if at.step_s <= tr.slo_s else "over"
            assert f"{verdict} the" in part.details.value.split("One step at 2B*")[1], where


def _assert_levers_are_moves(part, marked, b, s, wb, kb, hw, tp):
    """Each lever the marked regime row names is a move this track can make here."""
    from labkit.plans.design import DESIGN_KEYS, scenario

    axes = DESIGN_KEYS[scenario(part.track)]
    opts = [v for _, v in part.controls["batch"].options]
    if "a larger batch (Batch)" in marked:
        assert r_fits_any(part, hw, s, [o for o in opts if o > b], wb, kb, tp) \
            or part.results["device"] == "paper"
    if "a smaller batch (Batch)" in marked:  # only where batching has stopped paying
        assert b > 1 and (part.results["stalled"] or part.results["over_memory"])
    if "a larger batch (Batch)" in marked:  # never beside "batching has stalled"
        assert not part.results["stalled"]
    if "B near 2B* (Batch)" in marked:
        assert part.results["serving_batch_fits"]
    if "lower KV-cache precision" in marked:
        assert any(v < kb for _, v in part.controls["kv_bits"].options)
    for word, axis in (("(CP, Part C)", "cp"), ("(DP, Part C)", "dp"),
                       ("(Context, Part D)", "context_tokens")):
        if word in marked:
            assert axis in axes, (word, part.track.id)


def r_fits_any(part, hw, s, batches, wb, kb, tp):
    reserve = part.track.memory_reserve_fraction
    return any(not rf.memory_budget(hw, part.model, s, x, wb, kb, tp=tp,
                                    reserve_fraction=reserve).over_budget for x in batches)


def _cost(part) -> tuple[float, ...]:
    """What a precision costs, as each part's readout states it (time, then energy)."""
    r = part.results
    if part.letter == "A":
        return (r["latency_s"],)
    keys = {"vehicle": ("frame_s", "daily_wh"), "wearable": ("energy_per_window_j", "daily_mwh"),
            "handheld": ("tpot_s", "ttft_s", "daily_mwh")}[part.scenario]
    return tuple(float(r[k]) for k in keys)


@pytest.mark.parametrize(("track", "letter"), [(t, "B") for t in TRACKS if t != "cloud_fleet"]
                         + [(t, "A") for t in CNN_TRACKS])
def test_cost_never_rises_as_precision_falls_and_a_floor_is_explained(lab, track, letter):
    """Robotaxi Part B at 8 -> 4 bits: same time and energy, and the screen says why."""
    part = lab(track).part(letter)
    ctl = part.controls["weight_bits"]
    widths = sorted((v for _, v in ctl.options), reverse=True)
    assert widths == sorted(set(widths) & set(PRECISIONS), reverse=True)
    prev: tuple[float, ...] | None = None
    floors = 0
    for i, wb in enumerate(widths):
        ctl.value = wb
        cost = _cost(part)
        if prev is not None:
            assert all(c <= p * (1 + 1e-12) for c, p in zip(cost, prev, strict=True)), (wb, cost)
            flat = cost[0] >= prev[0]
            assert ("no faster than" in part.details.value) == flat, (track, letter, wb)
            if flat:
                floors += 1
                mode = str(part.controls["mode"].value) if letter == "A" else DESIGN_MODE
                batch = int(part.controls["batch"].value) if letter == "A" else 1
                here = cnn_inference_time(part.hw, part.model, wb, batch, mode)
                assert here.regime == "compute-bound"
                assert f"{wb}-bit is no faster than {widths[i - 1]}-bit" in part.details.value
        prev = cost
    if track == "robotaxi":
        assert floors >= 1  # the 8 -> 4 floor is shown and explained


@pytest.mark.parametrize("track", CNN_TRACKS)
def test_part_a_cnn_sentences_follow_the_roofline(lab, track):
    part = lab(track).part("A")
    c = part.controls
    for wb, batch, mode in itertools.product((32, 8, 4), (1, int(c["batch"].max)),
                                             ("peak", "achievable")):
        c["weight_bits"].value, c["batch"].value, c["mode"].value = wb, batch, mode
        r = cnn_inference_time(part.hw, part.model, wb, batch, mode)
        assert part.callouts["memory_bound"].active == (r.regime == "memory-bound")
        assert part.callouts["deadline"].active == (r.latency_s > part.track.slo_s)
        assert part.callouts["boundary"].active == (
            r.regime == "compute-bound" and r.latency_s <= part.track.slo_s)
        ai = float(r.flops / r.bytes_moved)
        assert part.results["ai_flop_per_byte"] == pytest.approx(ai)
        assert (ai >= part.results["ridge_flop_per_byte"]) == (r.regime == "compute-bound")
    part.predict.commit(part.expected)  # the reveal's "above / below the ridge" at the defaults
    tr = part.track
    d = cnn_inference_time(part.hw, part.model, tr.weight_bits, 1, "peak")
    ridge = part.hw.flops(cnn_compute_precision(part.hw, tr.weight_bits)) / \
        part.hw.memory_bandwidth
    side = "above" if float(d.flops / d.bytes_moved) >= ridge else "below"
    assert f", {side} the" in part._reveal_html.value


@pytest.mark.parametrize("track", CNN_TRACKS)
def test_part_a_cnn_math_peek_writes_the_compute_term_the_physics_uses(lab, track):
    """Achievable on tensor cores charges each fused layer's tile tail (the robotaxi); the
    FP32 pass and the MCU have none, and the peek's numbers add up to the pass."""
    part = lab(track).part("A")
    c = part.controls
    for wb, mode in itertools.product((32, 8), ("peak", "achievable")):
        c["weight_bits"].value, c["mode"].value = wb, mode
        math = part.math.body
        d = rf.get_mode(mode, part.hw, "cnn")
        prec = cnn_compute_precision(part.hw, wb)
        tail = d.layer_tail_flop > 0 and prec not in ("fp32", "tf32")
        assert ("f_{\\text{tail}}" in math) == tail, (track, wb, mode)
        if tail:
            assert f"{part.model.kernel_layers} fused layers" in math
        r = cnn_inference_time(part.hw, part.model, wb, int(c["batch"].value), mode)
        assert (float(r.tail_flops) > 0) == tail  # the peek's term is the pass's own
        assert f"= {tex_num(float(r.latency_s) * 1e3)}\\ \\text{{ms}}" in math
