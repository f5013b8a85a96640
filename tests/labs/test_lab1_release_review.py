"""Lab 1 Part D (release review): it starts failing, a pass is reachable, and every
recovery hint names control values that, applied to the current settings, pass."""

from __future__ import annotations

import itertools

import pytest

from labkit.core.answers import AnswerStore
from labkit.labs.inference_economy import Lab
from labkit.plans.serving import GUARDRAILS, lever_fixes
from labkit.tracks import TRACKS


@pytest.fixture
def review(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))

    def make(track: str):
        return Lab(track, store=AnswerStore(tmp_path / f"{track}.json"),
                   gate_explore=False).part("D")
    return make


def _failing_grid(part) -> list[dict[str, object]]:
    """A small grid of settings (precision x scheduler x demand share) that fail."""
    c = part.controls
    share = c["share_pct"]
    out = []
    for wb, pol, sh in itertools.product((4, 16), ("none", "continuous"),
                                         (share.min, share.max)):
        s = {**part.settings(), "weight_bits": wb, "policy": pol, "share_pct": sh}
        if part._failed(s):
            out.append(s)
    return out[::2]


def _hints_recover(part) -> None:
    """Every failing guardrail's hint, applied on top of the current settings, passes it."""
    assert part.levers.keys() == {n for n in GUARDRAILS if part.callouts[n].active}
    for name, changes in part.levers.items():
        assert changes, f"{name}: no computed fix, and the hint says so"
        start = part.settings()
        for key, value in changes:
            part.controls[key].value = value
        assert part.results["checks"][name]["passed"], (name, changes, start)
        for key, value in start.items():
            part.controls[key].value = value


@pytest.mark.parametrize("track", list(TRACKS))
def test_defaults_fail_a_guardrail_and_a_pass_is_reachable(review, track):
    part = review(track)
    assert not part.results["passed"] and part.results["binding"] in GUARDRAILS
    assert part.results["start_candidate"] in part.candidates
    # the hints lead to a configuration that ships
    for _ in range(3):
        if part.results["passed"]:
            break
        name = part.results["binding"]
        for key, value in part.levers[name]:
            part.controls[key].value = value
    assert part.results["passed"], part.results["reason"]
    assert part.callouts["boundary"].active


@pytest.mark.parametrize("track", list(TRACKS))
def test_every_hint_names_a_lever_that_passes(review, track):
    part = review(track)
    _hints_recover(part)
    for s in _failing_grid(part):
        for key, value in s.items():
            part.controls[key].value = value
        _hints_recover(part)
        for name in part.levers:   # the hint's text names the computed values
            rec = part.callouts[name].recovery or ""
            for key, _ in part.levers[name]:
                assert part.controls[key].description in rec


def test_ring_hint_is_not_the_old_false_recovery(review):
    part = review("oura_ring")   # cost binds; lowering precision alone cannot pass it
    part.controls["weight_bits"].value = 8
    assert part.results["binding"] == "cost"
    changes = part.levers["cost"]
    assert [k for k, _ in changes] == ["share_pct"]
    assert "Demand served" in part.callouts["cost"].recovery


def test_lever_fixes_finds_pairs_and_says_when_nothing_works():
    def failed(c):
        return [] if c["a"] == 1 and c["b"] == 1 else ["x"]
    fixes = lever_fixes({"a": 0, "b": 0}, {"a": [0, 1], "b": [0, 1]}, failed)
    assert fixes["x"].changes == (("a", 1), ("b", 1)) and not fixes["x"].still_failing
    none = lever_fixes({"a": 0}, {"a": [0, 1]}, lambda c: ["x"])
    assert not none["x"].found
    with pytest.raises(ValueError, match="candidates"):
        lever_fixes({"a": 0}, {"z": [1]}, lambda c: ["x"])


def test_routing_moves_the_cost_and_the_quality(review):
    part = review("cloud_fleet")
    part.controls["policy"].value = "continuous"
    assert "route_pct" in part.controls
    cost0 = part.results["daily_cost"]
    loss0 = part.results["checks"]["quality"]["value"]
    readout0 = part.readout.value
    part.controls["route_pct"].value = 50.0
    assert part.results["routed_share"] == 0.5
    assert part.results["daily_cost"] < cost0
    assert part.results["checks"]["quality"]["value"] > loss0
    assert part.readout.value != readout0
    part.controls["route_pct"].value = 90.0   # 90% on 4-bit: average loss over the limit
    assert not part.results["checks"]["quality"]["passed"]
    assert part.levers["quality"]
