"""Lab 1, second reader's findings on what the text claims, over every track:

* the synthesis headline is the model's own finding at the student's Part D settings
  (the ring's typed "the binding guardrail is energy per day" contradicted Part D's
  "slo binds");
* one memory unit convention on a screen (decimal, :func:`labkit.core.format.format_bytes`):
  no KiB in a hook beside kB in the readout;
* Part D's lean candidate is named for what it is (it said "Lowest precision" while a
  lower KV precision was selectable).
"""

from __future__ import annotations

import html
import re

import pytest

from labkit.core.answers import AnswerStore
from labkit.core.format import format_bytes
from labkit.labs.inference_economy import Lab
from labkit.labs.inference_economy.base import guardrail_label
from labkit.plans.serving import GUARDRAILS, release_guardrails
from labkit.registries.hardware import get_hardware
from labkit.tracks import TRACKS, get_track

BINARY_UNITS = re.compile(r"\b\d[\d.,]*\s?(?:KiB|MiB|GiB|TiB)\b")


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))

    def make(track: str) -> Lab:
        return Lab(track, store=AnswerStore(tmp_path / f"{track}.json"), gate_explore=False)
    return make


def _text(s: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", s)))


def _values(control) -> list[int]:
    """The values a toggle control offers."""
    return [int(v) for _, v in control.options]


def _settings_grid(d) -> list[dict[str, object]]:
    """Part D at each fixed candidate's settings, and the controls' ends."""
    grid: list[dict[str, object]] = []
    for _, spec in d.candidates.values():
        kw: dict[str, object] = {"weight_bits": spec["weight_bits"], "policy": spec["policy"]}
        if "kv_bits" in d.controls:
            kw["kv_bits"] = spec["kv_bits"]
        if "devices" in d.controls:
            kw["devices"] = spec["devices_per_replica"]
        grid.append(kw)
    if "devices" in d.controls:
        grid.append({"devices": d.controls["devices"].max})
    grid.append({"share_pct": d.controls["share_pct"].min})
    return grid


@pytest.mark.parametrize("track", list(TRACKS))
def test_synthesis_headline_is_what_part_d_computes(lab, track):
    lb = lab(track)
    tr = get_track(track)
    d = lb.part("D")
    seen = set()
    for kw in _settings_grid(d):
        for k, v in kw.items():
            d.controls[k].value = v
        r = d.results
        lead = _text(lb._synthesis_lead())
        assert tr.narrative.takeaway not in lead
        failing = [g for g in GUARDRAILS if not r["checks"][g]["passed"]]
        if r["passed"]:
            assert "every guardrail passes" in lead and not failing
            seen.add("pass")
        else:
            seen.add(str(r["binding"]))
            assert failing[0] == r["binding"]
            assert f"is {guardrail_label(str(r['binding']))}:" in lead, lead
            for g in failing[1:]:
                assert guardrail_label(g) in lead.split(":", 1)[1], (g, lead)
            assert "every guardrail passes" not in lead
        # no guardrail is named binding unless it is the computed one
        for g in GUARDRAILS:
            if g != r["binding"]:
                assert f"is {guardrail_label(g)}:" not in lead
    assert seen   # the grid reached at least one computed outcome


@pytest.mark.parametrize("track", list(TRACKS))
def test_one_memory_unit_convention_on_screen(lab, track):
    """Track text a student reads uses the decimal units the readouts use, and a memory
    size it quotes for the device is the one Part B's readout prints."""
    tr = get_track(track)
    texts = [tr.stakeholder.message, tr.narrative.intro, *tr.narrative.hooks.values(),
             *tr.guardrail_metrics]
    for t in texts:
        assert not BINARY_UNITS.search(t), t
    hw = get_hardware(tr.hardware_id)
    usable = format_bytes(hw.usable_memory_bytes)
    b = lab(track).part("B")
    for name, ctl in b.controls.items():   # the track's plan (the controls start at a
        ctl.value = b._defaults()[name]    # candidate under review)
    card = ("usable memory " + format_bytes(hw.usable_memory_bytes * tr.devices_per_replica
                                            * (1 - tr.memory_reserve_fraction)))
    assert card in _text(b.readout.value)
    for t in texts:
        for m in re.finditer(r"(\d[\d.,]*\s?[kMGT]?B) of (?:SRAM|RAM)\b", t):
            assert m.group(1) == usable, t
        if hw.flash_bytes:
            for m in re.finditer(r"(\d[\d.,]*\s?[kMGT]?B) of flash\b", t):
                assert m.group(1) == format_bytes(hw.flash_bytes), t


@pytest.mark.parametrize("track", list(TRACKS))
def test_lean_candidate_label_is_true(lab, track):
    tr = get_track(track)
    d = lab(track).part("D")
    label, spec = d.candidates["lean"]
    wb = int(spec["weight_bits"])
    assert wb == min(_values(d.controls["weight_bits"])), label
    assert f"{wb}-bit weights" in label and str(spec["policy"]) in label
    assert "Lowest precision" not in label
    if not tr.is_transformer:
        assert "KV" not in label
        return
    kv = int(spec["kv_bits"])
    assert f"{kv}-bit KV" in label
    # "the lowest the quality floor allows": every lower KV option fails quality
    lower = [k for k in _values(d.controls["kv_bits"]) if k < kv]
    assert lower, "the control offers a lower KV precision: the label must not say lowest"
    for k in lower:
        g = release_guardrails(tr, weight_bits=8, kv_bits=k, policy="continuous",
                               devices_per_replica=tr.devices_per_replica)
        assert not next(c for c in g.checks if c.name == "quality").passed, k
    g = release_guardrails(tr, weight_bits=8, kv_bits=kv, policy="continuous",
                           devices_per_replica=tr.devices_per_replica)
    assert next(c for c in g.checks if c.name == "quality").passed
