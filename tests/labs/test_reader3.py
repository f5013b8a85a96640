"""Third reader's findings (executed notebooks at the defaults), each pinned by the
mechanism that produces it rather than by one sentence."""

from __future__ import annotations

import html
import re

import pytest

from labkit.core.answers import AnswerStore
from labkit.labs.registry import LABS
from labkit.plans.serving import track_capacity
from labkit.tracks import TRACKS, get_track

LM = [t for t in TRACKS if get_track(t).is_transformer]


@pytest.fixture
def make_lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))

    def make(lab_id: str, track: str):
        return LABS[lab_id].lab(track, store=AnswerStore(tmp_path / f"{lab_id}.json"),
                                gate_explore=False)
    return make


def _text(s: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", str(s))))


def _shown(part) -> str:
    bits = [part.readout.value, part.details.value, part.math.body]
    bits += [c.value for c in part.callouts.values() if c.active]
    return _text(" ".join(bits))


@pytest.mark.parametrize("track", LM)
def test_part_a_never_calls_a_slider_batch_the_most_that_fit(make_lab, track):
    """Part A's batches are the slider's (powers of two); where the last that fits is below
    what memory holds, it says so and gives memory's count -- at the defaults Lab 1's
    count of the same sessions (cloud: 'B = 64 is as far as batching goes' beside Lab 1's
    and Exercise A's 109)."""
    a = make_lab("lab2", track).part("A")
    tr = get_track(track)
    for ctx in [c for _, c in a.controls["context"].options]:
        a.controls["context"].value = ctx
        text = _shown(a)
        assert "as far as batching goes" not in text
        assert "the largest batch that fits" not in text, text
        v = a._view(a.settings())
        for n in re.findall(r"memory holds at most ([\d,]+) sequences", text):
            assert int(n.replace(",", "")) == v.most_fit
    a.controls["context"].value = int(tr.context_tokens)
    v = a._view(a.settings())
    lab1 = track_capacity(tr, weight_bits=v.weight_bits, kv_bits=v.kv_bits,
                          devices_per_replica=v.tp).max_sessions
    assert v.most_fit == lab1


@pytest.mark.parametrize("track", TRACKS)
def test_the_synthesis_headline_says_what_part_d_table_says(make_lab, track):
    """A guardrail Part D's table marks 'not evaluated' (the plan never ran: out of memory)
    is said so in the synthesis headline, never 'also fails' (iPhone: 'SLO and cost also
    fail' beside '— not evaluated')."""
    from labkit.labs.inference_economy.part_d_spec import guardrail_label, headline

    lab = make_lab("lab1", track)
    d = lab.part("D")
    seen = set()
    for wb in [v for _, v in d.controls["weight_bits"].options]:
        d.controls["weight_bits"].value = wb
        r = d.results
        text = headline(get_track(track), r)
        for name, c in r["checks"].items():
            label = guardrail_label(name)
            if name == r["binding"] or c["passed"]:
                continue
            if c["value"] is None:
                seen.add("unknown")
                assert label in text.split("not evaluated")[0].split(";")[-1], text
                assert f"{label} also fail" not in text and f"and {label} also" not in text
            else:
                assert label in text.split("also fail")[0], text
    if track == "iphone":
        assert "unknown" in seen


def test_part_b_cost_card_names_its_busy_basis_and_lab1s_figure(make_lab):
    """Lab 2 Part B's busy cost (its own replicas at their load) and Lab 1's cost of the
    same demand differ by replica shape: the card names the shape and gives Lab 1's figure,
    the one Lab 1's Part D shows (cloud: 'busy 8,133' beside Lab 1's 10,026 and 12,917 with
    no reason)."""
    b = make_lab("lab2", "cloud_fleet").part("B")
    b.to_plan()
    d = make_lab("lab1", "cloud_fleet").part("D")
    f = b._fleet(b.settings())
    card = _text(b.readout.value)
    assert f"{f.served_layout} replicas of {f.served_slots:,} slots at their load" in card
    from labkit.core.format import fmt_num
    from labkit.plans.serving import serving_plan

    lab1 = fmt_num(serving_plan("cloud_fleet", with_baseline=False).daily_cost)
    assert f"provisions {lab1} USD" in card, (card, lab1)
    assert lab1 in _text(d.details.value) + _text(d.readout.value)   # Lab 1 shows it


@pytest.mark.parametrize("track", LM)
def test_a_one_user_device_is_never_offered_a_batch(make_lab, track):
    """A track serving one user at a time (batch size 1: the phone) gets no batch lever in
    Part A's regime rows or hints at any setting, and its serving-batch line says 2B* is a
    server's batch; a batching track keeps the paper's advice."""
    a = make_lab("lab2", track).part("A")
    one = get_track(track).batch_size == 1
    for b in [v for _, v in a.controls["batch"].options][::4]:
        a.controls["batch"].value = b
        text = _shown(a)
        assert ("a larger batch" in text or "B near 2B*" in text or "a smaller batch" in text
                ) is False or not one, (b, text)
    a.controls["batch"].value = 1
    assert ("this device serves one user" in _shown(a)) == one
