"""Reader findings on Lab 2 Part A (cloud_fleet and iphone): feasibility first, peeks that
re-derive, one name for each step term.

* A saving from doubling the batch is quoted (callouts, reveal, math) only where 2B is a
  setting that fits usable memory after the reserve and the slider offers it; otherwise the
  screen says why it is not.
* The math peek prints the per-token terms at B and at 2B; their sums and the saving
  re-derive from the printed terms, and the saving is the physics' (TP comm grows with the
  batch, so halving the printed overhead term would be wrong).
* The overhead is named the same way in Part A's math, its modes chart and Part C's stop
  rules: a fixed overhead, and TP comm beside it.
"""

from __future__ import annotations

import html
import itertools
import re

import numpy as np
import pytest

from labkit.core.answers import AnswerStore
from labkit.core.format import fmt_time
from labkit.labs.registry import LABS
from labkit.physics import roofline as rf
from labkit.tracks import TRACKS

LM = [t for t in ("cloud_fleet", "iphone") if t in TRACKS]
GRID = list(itertools.product((1, 8, 32, 64, 128, 1024), (512, 4096, 32768),
                              ("peak", "achievable")))


@pytest.fixture
def make_lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)

    def make(track: str):
        return LABS["lab2"].lab(track, store=AnswerStore(tmp_path / "a.json"),
                                gate_explore=False)
    return make


def _text(s: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", str(s))))


def _set(part, **values) -> None:
    for k, v in values.items():
        part.controls[k].value = v


def _doubling_fits(part, batch: int, ctx: int) -> bool:
    r = part.results
    if 2 * batch > max(v for _, v in part.controls["batch"].options):
        return False
    if r["device"] == "paper":
        return True
    mem = rf.memory_budget(part.hw, part.model, ctx, 2 * batch, r["weight_bits"],
                           r["kv_bits"], tp=r["tp"],
                           reserve_fraction=part.track.memory_reserve_fraction)
    return not bool(mem.over_budget)


SAVING = re.compile(r"(?:saves?|would save) (?:\$[^$]*\$ = )?(\d+(?:\.\d+)?)% (?:per token|here)")


@pytest.mark.parametrize("track", LM)
def test_a_saving_is_quoted_only_where_doubling_fits(make_lab, track):
    lab = make_lab(track)
    a = lab.part("A")
    a.predict.commit(a.expected)
    seen = set()
    for batch, ctx, mode in GRID:
        if ctx > a.model.max_context:
            continue
        _set(a, batch=batch, context=ctx, mode=mode)
        fits = _doubling_fits(a, batch, ctx)
        assert a.results["doubling_fits"] == fits, (batch, ctx, mode)
        shown = [c.value for c in a.callouts.values() if c.active]
        shown.append(a._reveal_html.value)
        quoted = [m for s in shown for m in SAVING.findall(_text(s))]
        if fits:
            # the saving quoted is the physics' at a setting that fits
            want = a.results["doubling_saving"]
            assert all(abs(float(q) / 100 - want) < 0.006 for q in quoted), (quoted, want)
        else:
            assert not quoted, (batch, ctx, mode, quoted)
            text = " ".join(_text(s) for s in shown)
            assert (f"B = {2 * batch:,}" in text or "largest batch the slider offers" in text
                    or "largest the slider offers" in text), (batch, ctx, mode)
        seen.add(fits)
    assert seen == {True, False}, "both templates must be reached"


def _sum(s: str) -> tuple[list[float], float]:
    nums = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", s)]
    return nums[:-1], nums[-1]


@pytest.mark.parametrize("track", LM)
def test_the_doubling_peek_re_derives_from_its_printed_terms(make_lab, track):
    a = make_lab(track).part("A")
    checked = 0
    for batch, ctx, mode in GRID:
        if ctx > a.model.max_context:
            continue
        _set(a, batch=batch, context=ctx, mode=mode)
        body = _text(a.math.body)
        one = re.search(r"\$t/\(2N/C\) = ([^$]*)\$", body)
        two = re.search(r"At 2B the same terms read \$([^$]*)\$", body)
        sav = re.search(r"saves \$1 - ([\d.,]+)/([\d.,]+)\$ = (\d+\.\d)%", body)
        assert one and two and sav, body[:400]
        t1, s1 = _sum(one.group(1))
        t2, s2 = _sum(two.group(1))
        assert sum(t1) == pytest.approx(s1, rel=0.01, abs=0.02)
        assert sum(t2) == pytest.approx(s2, rel=0.01, abs=0.02)
        assert len(t1) == len(t2)
        p2, p1, pct = (float(x.replace(",", "")) for x in sav.groups())
        # the ratio's values are the printed sums (to more digits where the .1% needs them)
        assert (p2, p1) == pytest.approx((s2, s1), rel=0.005)
        assert 1 - p2 / p1 == pytest.approx(float(pct) / 100, abs=0.002)
        assert float(pct) / 100 == pytest.approx(a.results["doubling_saving"], abs=0.0006)
        r = a.results
        if len(t1) > 3 and r["comm_step_s"] > 0:
            # TP comm grows with the batch: the last term does not halve, and the peek says so
            assert t2[-1] > t1[-1] / 2 + 1e-9 or np.isclose(t2[-1], t1[-1] / 2, rtol=0.02)
            assert "TP comm of a step grows with the batch" in body
            checked += 1
        if not r["doubling_fits"]:
            assert "arithmetic only" in body
    if track == "cloud_fleet":
        assert checked, "a point with TP comm must be checked"


@pytest.mark.parametrize("track", LM)
def test_overhead_is_named_the_same_way_in_part_a_and_part_c(make_lab, track):
    lab = make_lab(track)
    a = lab.part("A")
    _set(a, mode="achievable")
    labels = list(a.mc.bars.labels)
    assert labels[-2:] == ["overhead", "TP comm"]
    r = a.results
    bars = np.asarray(a.mc.bars.y, dtype=float)
    assert bars[3][1] == pytest.approx(r["overhead_step_s"] * 1e3)   # achievable column
    assert bars[4][1] == pytest.approx(r["comm_step_s"] * 1e3)
    math_text = _text(a.math.body)
    if r["comm_step_s"] > 0:
        assert "\\text{overhead} + \\text{TP comm}" in math_text
    if track != "cloud_fleet":   # Part C's stop rules are the fleet's
        return
    c = lab.part("C")
    _set(c, tp=r["tp"], cp=1, pp=1, dp=1)
    stop = _text(c.callouts["stop_rules"].value)
    t = c._layout(c.settings()).terms
    assert t is not None and t.overhead_s == pytest.approx(t.fixed_s + t.comm_s)
    assert (f"overhead {fmt_time(t.overhead_s)} (fixed {fmt_time(t.fixed_s)} + TP comm "
            f"{fmt_time(t.comm_s)})") in stop
    # Part C's workload is Part A's default point: the same fixed overhead and TP comm
    if (a.results["batch"], a.results["context_tokens"]) == (c.results["preset"]["batch"],
                                                             c.results["preset"]["context"]):
        assert t.fixed_s == pytest.approx(r["overhead_step_s"])
        assert t.comm_s == pytest.approx(r["comm_step_s"], rel=1e-6)
