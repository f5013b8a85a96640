"""Reader findings on Lab 2's fleet (cloud_fleet): one device memory, one replica, one
capacity, references that point at something shown.

* A fleet device holds weights + KV in its usable memory after the track's serving reserve
  (``Track.memory_reserve_fraction``), as Lab 1 counts it: every memory capacity a part
  shows (cards, callouts, tables, math, the usable line of a chart) is that one number, or
  names its basis; the layout table, the design check, Part B's sizing and Part C's tiers
  all fit against it, and Part A's OOM agrees with the layout table's.
* Part D's rows name the batch each step is at; Part B and Part D give one replica shape
  one capacity.
* Part C's boundary callout refers to the prefill callout only when that callout is shown;
  the tier route never says a tier does not fit without saying which configuration.
"""

from __future__ import annotations

import html
import itertools
import re

import pytest

from labkit.core.answers import AnswerStore
from labkit.core.format import fmt_count, fmt_time, format_bytes
from labkit.labs.registry import LABS
from labkit.physics.roofline import memory_budget
from labkit.plans import design
from labkit.plans.scenarios.common import memory_basis, serving_device
from labkit.plans.serving import track_capacity
from labkit.registries.hardware import get_hardware
from labkit.scenarios.fleet.plan.serving import fleet_serving, replica_slots
from labkit.tracks import TRACKS, get_track

FLEET = [t for t in TRACKS if design.scenario(t) == "fleet"]


@pytest.fixture
def make_lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)

    def make(lab_id: str, track: str):
        return LABS[lab_id].lab(track, store=AnswerStore(tmp_path / f"{lab_id}.json"),
                                gate_explore=False)
    return make


def _text(s: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", str(s))))


def _shown(part) -> str:
    """Everything a student reads on a part: readout, details, math, active callouts and,
    once the prediction is committed, the reveal."""
    bits = [part.readout.value, part.details.value, part.math.body]
    bits += [c.value for c in part.callouts.values() if c.active]
    part.predict.commit(part.expected)
    bits.append(part._reveal_html.value)
    return _text(" ".join(bits))


def _set(part, **values) -> None:
    for k, v in values.items():
        part.controls[k].value = v


def _capacities(text: str) -> list[str]:
    """Every 'X GB of Y GB' capacity Y shown, and every 'of Y' after a used figure."""
    return re.findall(r"\d[\d.,]* [kMGT]?B (?:transient )?of (\d[\d.,]* [kMGT]?B)", text)


def _assert_one_capacity(text: str, want: str, basis_full: str, where: object) -> None:
    caps = _capacities(text)
    assert all(c == want for c in caps), (where, sorted(set(caps)), want)
    # the registry's whole memory appears only inside the basis that names the reserve
    whole = format_bytes(get_hardware(TRACKS["cloud_fleet"].hardware_id).usable_memory_bytes)
    for m in re.finditer(rf"\b{re.escape(whole)}\b", text):
        window = text[max(0, m.start() - 80): m.end() + 80]
        assert "serving reserve" in window, (where, window)
    assert basis_full  # the basis sentence exists for this track


@pytest.mark.parametrize("track", FLEET)
def test_one_device_memory_everywhere_the_fleet_shows_one(make_lab, track):
    tr = get_track(track)
    served = serving_device(tr)
    cap = served.usable_memory_bytes
    assert cap == pytest.approx(get_hardware(tr.hardware_id).usable_memory_bytes
                                * (1 - tr.memory_reserve_fraction))
    want = format_bytes(cap)
    basis = memory_basis(tr)
    assert basis.startswith(want) and "serving reserve" in basis
    # Lab 1: the same memory per device
    lab1 = track_capacity(tr)
    assert lab1.memory_bytes / lab1.devices == pytest.approx(cap)
    lab = make_lab("lab2", track)
    # Part A (its own fit after the same reserve), over batches that fit and do not
    a = lab.part("A")
    for b in (64, 128):
        _set(a, batch=b, mode="achievable")
        _assert_one_capacity(_shown(a), want, basis, ("A", b))
        assert a.results["capacity_bytes"] == pytest.approx(cap)
    # Part B: the math's HBM, the card sizing and the served sentence
    bp = lab.part("B")
    text = _shown(bp)
    _assert_one_capacity(text, want, basis, "B")
    assert basis in text and bp.results["total_devices"] > 0
    assert "7.2\\times10^{10}" in bp.math.body or f"{cap:.3g}" in bp.math.body
    # Part C: readout, OOM callout, tiers table, the chart's usable line, several layouts
    c = lab.part("C")
    for tp, dp, cp in itertools.product((2, 4, 8), (1, 2), (1, 2)):
        _set(c, tp=tp, dp=dp, cp=cp)
        text = _shown(c) + " " + _text(c.reveal_tables())
        _assert_one_capacity(text, want, basis, ("C", tp, dp, cp))
        assert float(c.m_mem_cap.y[0]) == pytest.approx(cap / 1e9)
    # Part D: the memory row of each design, and the design check's limit
    d = lab.part("D")
    for tp, dp in ((4, 1), (4, 8), (8, 16)):
        _set(d, tp=tp, dp=dp)
        _assert_one_capacity(_shown(d), want, basis, ("D", tp, dp))
        chk = design.design_check(track, {"tp": tp, "dp": dp})
        assert chk.constraints["memory"].limit == pytest.approx(cap)


@pytest.mark.parametrize("track", FLEET)
@pytest.mark.parametrize("context", [1024, 4096, 16384])
def test_part_a_oom_is_the_layout_tables_oom(track, context):
    """Part A's OOM at batch B on the track's replica is the layout table's at a TP-only
    layout of B sequences: one fit (feasibility first: B = 128 at TP4 fails both)."""
    tr = get_track(track)
    hw, tp = get_hardware(tr.hardware_id), tr.devices_per_replica
    for b in (16, 32, 64, 128, 256):
        mem = memory_budget(hw, tr.model_id, context, b, tr.weight_bits, tr.kv_bits, tp,
                            tr.memory_reserve_fraction)
        table, index = design.fleet_table(tr, tr.weight_bits, tr.kv_bits, context, b)
        row = index[(tp, 1, 1, 1, 1)]
        assert table.capacity_bytes == pytest.approx(float(mem.capacity_bytes))
        assert bool(table.fits[row]) == (not mem.over_budget), (b, context)


@pytest.mark.parametrize("track", FLEET)
def test_part_d_rows_name_their_batches_and_lab1_slots(make_lab, track):
    """The TPOT row's step is at the design's sequences per replica, the utilisation row's
    at its slots (each named); a TP-only replica's slots are Lab 1's sessions."""
    tr = get_track(track)
    d = make_lab("lab2", track).part("D")
    for tp, dp, wb in itertools.product((4, 8), (1, 4, 16), (8, 16)):
        cfg = {"weight_bits": wb, "kv_bits": wb, "tp": tp, "dp": dp}
        _set(d, **cfg)
        fs = fleet_serving(tr, {**cfg, "cp": 1, "pp": 1, "ep": 1})
        assert fs is not None
        chk = design.design_check(track, cfg)
        tpot = chk.constraints["tpot"].detail
        assert (f"step {fmt_time(fs.step_s)} (the design's "
                f"{fmt_count(fs.sequences_per_replica)} sequences per replica)") in tpot
        util = chk.constraints["utilisation"].detail
        assert (f"{fmt_time(fs.capacity_step_s + fs.scheduler_s)} per step at "
                f"{fmt_count(fs.slots_per_replica)} sequences") in util
        sessions = track_capacity(tr, weight_bits=wb, kv_bits=wb,
                                  devices_per_replica=tp).max_sessions
        slots, _ = replica_slots(tr, wb, wb, (tp, 1, 1, 1))
        assert slots <= sessions
        shown = _shown(d)
        assert util.split(":")[0] in shown or chk.constraints["utilisation"].passed


@pytest.mark.parametrize("track", FLEET)
@pytest.mark.parametrize(("wb", "kb"), [(16, 16), (8, 8), (16, 8)])
def test_part_b_and_part_d_give_one_replica_one_capacity(make_lab, track, wb, kb):
    """Part B's served replica (its mu in the math peek) and Part D's utilisation row for the
    same TP-only replica holding the same slots print the same requests/s (one step basis:
    all slots busy at a request's mean context, communication included)."""
    tr = get_track(track)
    b = make_lab("lab2", track).part("B")
    b.to_plan()
    _set(b, weight_bits=wb, kv_bits=kb)
    r = b.results
    if r["served_devices"] is None:
        pytest.skip("no served replica at these precisions")
    dpr = r["devices_per_replica"]
    dp = 1 << max(0, (int(r["served_replicas"]) - 1).bit_length())   # a power-of-two DP
    cfg = {"weight_bits": wb, "kv_bits": kb, "tp": dpr, "dp": dp}
    fs = fleet_serving(tr, {**cfg, "cp": 1, "pp": 1, "ep": 1})
    assert fs is not None
    assert fs.slots_per_replica == r["served_slots"]   # one replica: the same slots
    mu_b = b._fleet(b.settings()).served_capacity_per_s
    assert fs.capacity_per_s == pytest.approx(mu_b, rel=1e-4)
    assert fmt_count(fs.capacity_per_s) == fmt_count(mu_b)
    assert f"serves at most {fmt_count(fs.capacity_per_s)}/s" in \
        design.design_check(track, cfg).constraints["utilisation"].detail
    assert f"{fmt_count(mu_b)}" in b.math.body


@pytest.mark.parametrize("track", FLEET)
def test_part_c_references_point_at_what_is_shown(make_lab, track):
    """The boundary callout names 'the callout below' only when a prefill callout (TTFT or
    disaggregation) is active; the tier route says which configuration does not fit, and
    never contradicts your row."""
    c = make_lab("lab2", track).part("C")
    seen = set()
    for tp, dp, cp in itertools.product((4, 8), (1, 2, 4), (1, 2)):
        _set(c, tp=tp, dp=dp, cp=cp)
        bound = c.callouts["boundary"]
        if bound.active:
            below = "callout below" in bound.value
            shown = c.callouts["disagg"].active or c.callouts["ttft"].active
            assert below == shown, (tp, dp, cp)
            seen.add(below)
        route = _text(c.reveal_tables())
        m = re.search(r"routes to the (\w+) tier[^.]*\.", route)
        if m and "does not fit" in m.group(0):
            assert "its template" in m.group(0), m.group(0)
            yours = c.plans.tiers(c._layout(c.settings()))[-1]
            assert ("while your layout" in m.group(0)) == yours.fits
    assert seen == {True, False}, "both boundary templates must be reached"


@pytest.mark.parametrize("track", FLEET)
def test_part_b_names_lab1_s_count_wherever_the_paper_s_differs(make_lab, track):
    """One replica, two counts of its sequences (the paper's KV count, Lab 1's release
    review): equal, or Lab 1's stands beside the paper's with its reason."""
    part = make_lab("lab2", track).part("B")
    seen_differ = False
    for wb, kb in itertools.product((4, 8, 16), (8, 16)):
        _set(part, weight_bits=wb, kv_bits=kb)
        r = part.results
        at = r["replica_index"]
        f_kv = None if at is None else r["kv_limit_by_size"][at]
        lab1 = r.get("lab1_sessions")
        math = _text(part.math.body)
        if lab1 is None or f_kv is None:
            continue
        named = f"Lab 1's release review counts {fmt_count(lab1)} here" in math
        assert named == (lab1 != f_kv), (wb, kb, lab1, f_kv)
        seen_differ |= lab1 != f_kv
    assert seen_differ, "the grid never reached a replica where the two counts differ"


@pytest.mark.parametrize("track", FLEET)
def test_part_b_says_why_a_served_replica_holds_fewer_sequences(make_lab, track):
    """Wherever the served replica holds fewer sequences than the decode-only count, Part B
    says so with each reason that binds: its memory (embeddings and the reserve) and its own
    step, communication included (Part D's count of the same replica), each with its count."""
    b = make_lab("lab2", track).part("B")
    seen = set()
    for wb, kb in ((16, 16), (8, 8), (16, 8), (4, 4)):
        for ctx in (b.ctx0 // 2, b.ctx0, b.ctx0 * 2):
            _set(b, weight_bits=wb, kv_bits=kb, context=ctx)
            r = b.results
            if r["served_slots"] is None:
                continue
            text = _text(b.callouts["served"].value)
            n = r["served_sizing_slots"]   # the three axes' count at the served size
            mem, step = r["served_memory_slots"], r["served_step_slots"]
            assert r["served_slots"] == min(n, mem, step)
            if mem < n:
                seen.add("memory")
                assert f"memory holds {fmt_count(mem)} of the {fmt_count(n)}" in text
            if step < min(mem, n):
                seen.add("step")
                assert f"up to {fmt_count(step)} sequences" in text, text
            if r["served_slots"] == n:
                assert "sequences (as Part D" not in text and "memory holds" not in text
    assert seen == {"memory", "step"}, seen
