"""Lab 2 Part A's software-stack control (issue 25): on every track and every option, the
achievable the part shows is the plan's on that stack, the band is drawn where
achievable is and quoted with whose band it is, the math peek's band gives its printed
results, and the CNN checkpoint's lesson (one chip, several-fold apart by toolchain)
marks no misconception correct."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

from labkit.core.answers import AnswerStore
from labkit.labs.accelerators import Lab
from labkit.plans import roofline as pr
from labkit.plans.stacks import stack_choice, stack_spread
from labkit.tracks import TRACKS

NUM = r"(-?[\d.]+(?:\{,\}\d{3})*(?:\\times10\^\{-?\d+\})?)"
BAND = (r"t_\{\\text\{(fast|slow)\}\} = " + NUM + r"\\ \\text\{ms\} \\times " + NUM + " = "
        + NUM)


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    return lambda track: Lab(track, store=AnswerStore(tmp_path / "a.json"), gate_explore=False)


def _iv(text: str) -> tuple[float, float]:
    """The interval a printed number covers (half its last digit either side)."""
    t = text.replace("{,}", "")
    m = re.fullmatch(r"(-?[\d.]+)(?:\\times10\^\{(-?\d+)\})?", t)
    assert m, text
    mant, exp = m.group(1), int(m.group(2) or 0)
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    v, half = float(mant) * 10.0 ** exp, 0.5 * 10.0 ** (exp - decimals)
    return v - half, v + half


def _text(h: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", h)).split())


@pytest.mark.parametrize("track", list(TRACKS))
def test_every_stack_option_moves_achievable_by_the_plan_and_draws_its_band(lab, track):
    part = lab(track).part("A")
    c, lm = part.controls, TRACKS[track].is_transformer
    workload = "decode" if lm else "cnn"
    c["mode"].value = "achievable"
    for label, stack in c["stack"].options:
        c["stack"].value = stack
        r, choice = part.results, stack_choice(part.hw, workload, stack)
        assert r["stack"] == (stack or None) and r["stack_scale"] == choice.scale
        assert r["band_scope"] == choice.band.scope
        t = r["step_s"] if lm else r["latency_s"]
        if lm:
            s = part.settings()
            want = pr.decode_view(part.hw, part.model, batch=int(s["batch"]),
                                  context_tokens=int(s["context"]),
                                  weight_bits=int(s["weight_bits"]),
                                  kv_bits=int(s["kv_bits"]), tp=part.tp, mode="achievable",
                                  stack=stack).step_s
            mark = part.bc.band
            assert mark.visible and np.asarray(mark.y).shape == (2, part.bgrid.size)
        else:
            want = pr.cnn_view(part.hw, part.model, int(c["weight_bits"].value),
                               int(c["batch"].value), "achievable", stack).latency_s
            mark = part.m_band
            f = r["achieved_flops"] * t   # the pass's FLOP
            assert mark.visible and list(mark.y) == pytest.approx(
                [f / (t * choice.band.high), f / (t * choice.band.low)])
        assert t == pytest.approx(want, rel=1e-12), (track, stack)
        assert r["band_s"] == pytest.approx([t * choice.band.low, t * choice.band.high])
        said = _text(part.readout.value)
        assert "software stack" in said and ("none named" if not stack else
                                             choice.label) in said, label
        whose = (f"on {choice.kernels} kernels run" if choice.band.scope == "stack"
                 else "systems run at")
        assert whose in r["real_systems"], (track, stack)


@pytest.mark.parametrize("track", list(TRACKS))
def test_the_band_peek_gives_its_printed_results(lab, track):
    part = lab(track).part("A")
    c = part.controls
    for mode in ("peak", "achievable"):
        c["mode"].value = mode
        for _, stack in c["stack"].options:
            c["stack"].value = stack
            found = re.findall(BAND, part.math.body)
            assert [f[0] for f in found] == ["fast", "slow"], (track, stack)
            for _, a, k, res in found:
                (alo, ahi), (klo, khi), (rlo, rhi) = _iv(a), _iv(k), _iv(res)
                assert alo * klo <= rhi and ahi * khi >= rlo, (track, stack, a, k, res)
            lm = TRACKS[track].is_transformer
            t = part.results["band_s"][0] / stack_choice(
                part.hw, "decode" if lm else "cnn", stack).band.low
            lo, hi = _iv(found[0][1])
            assert lo <= t * 1e3 <= hi   # the peek's achievable is the point's


@pytest.mark.parametrize("track", [t for t, tr in TRACKS.items() if not tr.is_transformer])
def test_the_cnn_checkpoint_teaches_the_toolchain_spread_and_marks_no_misconception(
        lab, track):
    part = lab(track).part("A")
    sp = stack_spread()
    assert part.checkpoint_expected == "stack"
    q = _text(part.checkpoint.question)
    assert sp.fastest[0] in q and sp.slowest[0] in q
    good = part.checkpoint.feedback["stack"]
    assert good.startswith("Right")
    assert len(part.checkpoint.options) == 4
    for value in part.checkpoint.options:
        if value != "stack":
            assert part.checkpoint.feedback[value].startswith("Not quite"), value
