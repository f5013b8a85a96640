"""Lab 1, second reader's findings: the same figure is the same number wherever a student
meets it, and every time says its basis.

* The notebook's batching exercises (B and C) time a batch as Part C's widget does: the
  one per-batch time, :func:`labkit.plans.workload.pass_table_s` (a CNN's pass with each
  input's signal front end; a language model's decode step at Part C's mean context).
* A CNN's Part A never quotes an achievable pass time as if computed at peak: the floor
  note names both, and the hook does not ask for a peak-rate calculation.
* Part C's delivered throughput of a stable policy is the offered load.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from labkit.core.answers import AnswerStore
from labkit.core.format import fmt_num, fmt_time
from labkit.course.build import load_spec
from labkit.labs.inference_economy import Lab
from labkit.plans.economy import pass_basis_figures
from labkit.plans.workload import POLICIES, BatchingBench, delivered_per_s
from labkit.tracks import TRACKS, get_track

BATCHING = [t for t, tr in TRACKS.items() if not tr.speculates]  # Part C batches requests

ROOT = Path(__file__).resolve().parents[2]
ONE_PLURAL = re.compile(
    r"\b1 (?:windows|frames|requests|days|devices|sessions|conversations)\b")


@cache
def _lab1():
    return load_spec(ROOT, "lab1")


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))

    def make(track: str) -> Lab:
        return Lab(track, store=AnswerStore(tmp_path / f"{track}.json"), gate_explore=False)
    return make


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _data(ex) -> dict[str, object]:
    ns: dict[str, object] = {}
    exec(ex.data, ns)
    return ns


@pytest.mark.parametrize("track", BATCHING)
def test_exercise_batch_times_are_part_c_widget_times(lab, track):
    """Every time the batching exercises quote equals what Part C's widget shows at the same
    batch (the old table left out the ring's front end: 146 ms vs the widget's 255 ms)."""
    spec, tr = _lab1(), get_track(track)
    c = lab(track).part("C")
    if tr.is_transformer:
        # Exercise B's step of its sessions at Part C's mean context is Part C's step tau(B)
        n = spec.session_target(tr)
        ns = _data(spec.exercise_b(tr))
        ctx = float(tr.prompt_tokens or 0) + float(tr.output_tokens or 0) / 2
        step = (float(ns["STEP_S_AT_ZERO_CONTEXT"])
                + float(ns["KV_READ_S_PER_TOKEN"]) * n * ctx)
        bench = c.bench if n <= c.max_b else BatchingBench(tr, n)
        assert step == pytest.approx(bench.step_s(n), rel=1e-9)
        assert "BATCH_MS" not in spec.exercise_c(tr).data
        return
    table = _data(spec.exercise_c(tr))["BATCH_MS"]
    assert isinstance(table, list) and table
    for b in range(1, min(len(table), c.max_b) + 1):
        assert table[b - 1] == pytest.approx(c.bench.prefill_s(b) * 1e3, abs=1e-4), b
    # the math peek prints p(1); the exercise's first entry prints the same
    assert f"p(1) = {fmt_time(table[0] / 1e3)}" in _text(c.math.body)
    # Exercise B's batch time, in its statement, is the widget's p(b) of its batch
    target, batch_s = spec.in_flight_target(tr)
    assert batch_s == pytest.approx(c.bench.prefill_s(target), abs=1e-7)  # 4 decimals of ms
    b_text = spec.exercise_b(tr).statement
    assert f"it takes {fmt_time(c.bench.prefill_s(target))}" in b_text
    # Exercise C's answer is a rate the widget's capacity agrees with at that batch
    ns = _data(spec.exercise_c(tr))
    exec(spec.exercise_c(tr).solution, ns)
    ans = float(ns["answer_C"])
    if ans > 1 and "ARRIVALS_PER_S" in ns and ans != int(ans):
        caps = [b / c.bench.prefill_s(b) for b in range(1, len(table) + 1)]
        assert any(ans == pytest.approx(x, rel=1e-3) for x in caps)


@pytest.mark.parametrize("track", list(TRACKS))
def test_exercise_statements_never_hedge_a_count(track):
    spec, tr = _lab1(), get_track(track)
    for letter, make in spec.EXERCISES.items():
        ex = make(tr)
        text = "\n".join((ex.statement, ex.data, ex.visible, ex.hidden))
        assert "(s)" not in text, letter
        assert not ONE_PLURAL.search(text), letter


@pytest.mark.parametrize("track", list(TRACKS))
def test_part_a_names_the_basis_of_every_pass_time(lab, track):
    """The floor note quotes the achievable arithmetic time with its basis and the peak
    time beside it (Lab 2 computes at peak: 20.8 ms on the ring, not 145 ms); the hook
    asks for no peak-rate calculation when the part answers at the achievable rate."""
    tr = get_track(track)
    a = lab(track).part("A")
    hook = tr.narrative.hooks["A"]
    if tr.is_transformer:
        assert not a.callouts["floor"].active
        return
    f = pass_basis_figures(tr, tr.weight_bits)
    assert f.peak_compute_s < f.compute_s   # the device class derates the arithmetic
    a.controls["weight_bits"].value = tr.weight_bits
    a.controls["weight_bits"].value = 4
    assert a.callouts["floor"].active
    detail = _text(a.callouts["floor"].value)
    assert f"{fmt_time(f.compute_s)} of arithmetic at the achievable rate" in detail
    assert f"{fmt_time(f.peak_compute_s)} at its peak" in detail
    assert f.derating_text in detail
    # a hook that quotes the device's peak rate also says the pass runs below it
    peak_words = re.search(r"\b\d[\d,.]* (?:million|billion|trillion)\b.*operations",
                           hook)
    if peak_words:
        assert "peak" in hook and "reach" in hook, hook


@pytest.mark.parametrize("track", BATCHING)
def test_part_c_delivered_is_the_offered_load_while_stable(lab, track):
    """A stable policy delivers what is offered (not the finite simulated span's rate);
    an overloaded one its capacity. Shown in the table and on the chart."""
    c = lab(track).part("C")
    rate = c.controls["rate"]
    for value in (c.rate0, rate.max):
        rate.value = value
        cmp = c.compare_at(c.settings())
        details = _text(c.details.value)
        for p, r in cmp.results.items():
            got = delivered_per_s(r)
            offered = r.utilisation * r.capacity_tokens_per_s
            if r.stable:
                assert got == pytest.approx(offered, rel=1e-12), p
            else:
                assert got == pytest.approx(r.capacity_tokens_per_s, rel=1e-12), p
            assert got <= r.capacity_tokens_per_s * (1 + 1e-12)
            assert c.results["policies"][p]["throughput_tokens_per_s"] == got
            assert fmt_num(got) in details, (p, details)
        bars = c.m_tput.y
        assert list(bars[1]) == [delivered_per_s(cmp.results[p]) for p in POLICIES]


@pytest.mark.parametrize("track", list(TRACKS))
def test_pass_table_is_the_one_per_batch_time(track):
    """plans.workload.pass_table_s is the table Part C's bench simulates with, front end
    included where the device computes one, on every track."""
    from labkit.plans.workload import front_end_s, pass_table_s

    tr = get_track(track)
    bench = BatchingBench(tr, 4)
    table = pass_table_s(tr, 4)
    assert [bench.prefill_s(b) for b in range(1, 5)] == pytest.approx(list(table), rel=1e-12)
    if not tr.is_transformer:
        from labkit.physics.batching import step_tables

        model_only, _ = step_tables(tr.hardware_id, tr.model_id, 4, weight_bits=tr.weight_bits,
                                    kv_bits=tr.kv_bits, window_bytes=tr.window_bytes)
        fe = front_end_s(tr)
        for b in range(1, 5):
            assert table[b - 1] == pytest.approx(model_only[b - 1] + b * fe, rel=1e-12)
