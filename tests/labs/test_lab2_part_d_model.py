"""Lab 2 Part D and the lab shell read computed fields (issue 23).

Per track, at the defaults and at every value of each control (one at a time): no broken
sentence, the math peek names the binding constraint by its true ratio (a bar capped at
OFF_SCALE is said to be capped, with the true value beside it), the reveal's precision
sentence claims only what the check computes at both precisions, and the synthesis
carries the fleet size Part B's card shows and the constraint that binds Part D.
"""

from __future__ import annotations

import re

import pytest

from labkit.core.answers import AnswerStore
from labkit.core.format import counted, fmt_count
from labkit.labs.accelerators import Lab
from labkit.labs.accelerators.part_d_controls import candidates
from labkit.labs.accelerators.part_d_spec import constraint_label
from labkit.plans import design
from labkit.plans.lab2 import binding_constraint
from labkit.plans.scenarios import OFF_SCALE
from labkit.tracks import TRACKS

TRACK_IDS = list(TRACKS)
BROKEN = re.compile(r"\bNone\b|\bnan\b|\binf\b|\(\s*\)")


@pytest.fixture
def make_lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)

    def make(track: str) -> Lab:
        return Lab(track, store=AnswerStore(tmp_path / "answers.json"), gate_explore=False)
    return make


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _math(part) -> str:
    return _text(part.math.body)


def _settings(part):
    """The defaults, then each control's every value (one control at a time)."""
    base = {k: c.value for k, c in part.controls.items()}
    yield base
    for key, ctl in part.controls.items():
        for value in candidates(ctl)[::2]:
            if value != base[key]:
                yield {**base, key: value}


def _apply(part, values) -> None:
    for k, v in values.items():
        part.controls[k].value = v


def _check_screen(part) -> None:
    chk = part.check({k: c.value for k, c in part.controls.items()})
    shown = [_text(part.readout.value), _math(part)]
    shown += [_text(part.callouts[n].value) for n in part.names if part.callouts[n].active]
    for text in shown:
        assert not BROKEN.search(text), text
    b = binding_constraint(chk.constraints)
    math = _math(part)
    assert f"<b>{constraint_label(b.name)}</b>" in part.math.body
    if b.ratio is None or b.capped:
        assert "capped" in math
    if b.ratio is not None:
        assert f"{b.ratio:,.3g}x" in math
    assert f"({OFF_SCALE:.2f})" not in math


@pytest.mark.parametrize("track", TRACK_IDS)
def test_part_d_screens_over_a_grid_of_settings(make_lab, track):
    part = make_lab(track).part("D")
    seen = 0
    for values in _settings(part):
        _apply(part, values)
        _check_screen(part)
        seen += 1
    assert seen > len(part.controls)


@pytest.mark.parametrize("track", TRACK_IDS)
def test_the_precision_sentence_claims_what_the_check_computes(make_lab, track):
    part = make_lab(track).part("D")
    ref = part.reference or design.fewest_over_budget(track)
    text = part._precision_why()
    if ref is None or "weight_bits" not in ref.config:
        assert text == ""
        return
    bits = int(ref.config["weight_bits"])
    above = [p for p in (4, 8, 16, 32) if p > bits]
    if part.reference is None:
        return   # nothing fits: the sentence is about labkit's best, which does not exist
    changes = design.precision_changes(track, ref.config, above[0])
    relieved = {c.aspect for c in changes if c.lower}
    same = {c.aspect for c in changes if not c.lower} - relieved
    assert ("relieve" in text) == bool(relieved)
    relief = text.split("relieve", 1)[-1].split("; they leave", 1)[0] if relieved else ""
    left = text.split("; they leave", 1)[-1] if relieved else text
    for aspect in relieved:
        assert f"{aspect} (" in relief
    for aspect in same:
        assert f"{aspect} (" in left and f"{aspect} (" not in relief
    assert "memory, latency and energy at once" not in text


@pytest.mark.parametrize("track", TRACK_IDS)
def test_the_reveal_and_takeaway_have_no_broken_text(make_lab, track):
    part = make_lab(track).part("D")
    part.predict.commit(part.expected)
    assert not BROKEN.search(_text(part._reveal_html.value))
    assert not BROKEN.search(part.takeaway())
    assert part.expected in part.predict.options


def _card(part, label: str) -> str:
    m = re.search(rf">{re.escape(label)}</div><div class='labkit-card-value'[^>]*>([^<]*)<",
                  part.readout.value, flags=re.IGNORECASE)
    assert m, f"no card {label!r}"
    return m.group(1)


@pytest.mark.parametrize("track", TRACK_IDS)
def test_the_synthesis_carries_the_part_cards_numbers(make_lab, track):
    """The fleet size is Part B's card's; the binding constraint is Part D's largest true
    ratio; the ledger carries the same fleet size."""
    lab = make_lab(track)
    facts = lab.synthesis_facts()
    html = lab.synthesis(write=False).children[0].value
    for f in facts:
        assert not BROKEN.search(f)
    fleet = lab.fleet_size()
    if lab.scenario == "fleet":
        assert fleet is not None
        card = _card(lab.part("B"), "fleet")
        assert card == f"{fmt_count(fleet[0])} devices"
        assert f"Part B's fleet: {card}" in " ".join(facts)
        assert lab.ledger_choices()["fleet_devices"] == fleet[0]
        assert "prefill" in fleet[1]
    else:
        assert fleet is None and lab.ledger_choices()["fleet_devices"] is None
    d = lab.part("D")
    chk = lab.check(d.results["config"])
    b = binding_constraint(chk.constraints)
    lead = "Furthest past its limit" if b.fails else "Closest to its limit"
    assert f"{lead}: {constraint_label(b.name)}" in " ".join(facts)
    assert counted(chk.devices, "device") in " ".join(facts)
    assert "Numbers to carry into the memo" in html


def test_robotaxi_binding_follows_the_design_not_a_fixed_word(make_lab):
    """The robotaxi's deadline is far from binding at the defaults (a fraction of the
    limit): the synthesis names the constraint with the largest true ratio."""
    lab = make_lab("robotaxi")
    chk = lab.check(lab.part("D").results["config"])
    b = binding_constraint(chk.constraints)
    ratios = {n: c.value / c.limit if c.sense == "max" else c.limit / c.value
              for n, c in chk.constraints.items() if c.value and c.limit}
    assert b.name == max(ratios, key=ratios.get)
    facts = " ".join(lab.synthesis_facts())
    if b.name != "deadline":
        assert "limit: deadline" not in facts


def test_a_budget_too_small_names_what_it_would_have_to_pay_for(tmp_path, monkeypatch):
    """A fleet whose budget pays for no design that serves the demand: the check has no
    reference, and Part D names the fewest design meeting everything else, with its cost."""
    import dataclasses

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    tr = dataclasses.replace(TRACKS["cloud_fleet"], daily_budget=5_000.0)
    chk = design.design_check(tr, {})
    over = design.fewest_over_budget(tr)
    assert chk.reference is None and chk.min_devices is None
    assert over is not None and over.evaluation.failed == ("cost",)
    assert over.devices == design.reference_design("cloud_fleet").devices
    part = Lab(tr, store=AnswerStore(tmp_path / "a.json"), gate_explore=False).part("D")
    assert part.expected == "none fits" and "none fits" in part.predict.options
    assert f"{fmt_count(over.devices)} at" in _text(part.readout.value)
    part.predict.commit(part.expected)
    assert "all but the budget" in part._reveal_html.value
