"""Reopen where they left off: each control's value is saved beside the answers
(``labkit_settings.json``) and a notebook run again starts there -- the parts, the synthesis
and the report describe the student's own settings. A hostile or stale settings file
changes nothing but the values it may."""

from __future__ import annotations

import json

import pytest

from labkit.core.answers import SETTINGS_FILE, AnswerStore, SettingsStore
from labkit.labs.registry import LABS
from labkit.tracks import TRACKS
from text_checks import control_ends


@pytest.fixture
def open_lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    return lambda lab_id, track: LABS[lab_id].lab(
        track, store=AnswerStore(tmp_path / "labkit_answers.json"), gate_explore=False)


def _moved(ctl):
    """A value of ``ctl`` other than its current one."""
    return next(v for v in [*control_ends(ctl)] if v != ctl.value)


@pytest.mark.parametrize("lab_id", list(LABS))
@pytest.mark.parametrize("track", list(TRACKS))
def test_a_notebook_run_again_starts_where_the_student_left_it(open_lab, lab_id, track):
    first = open_lab(lab_id, track)
    want: dict[str, dict[str, object]] = {}
    for part in first.parts():
        for name, ctl in part.controls.items():
            if ctl.disabled or len(set(map(repr, control_ends(ctl)))) < 2:
                continue
            ctl.value = _moved(ctl)
            want.setdefault(part.letter, {})[name] = ctl.value
    assert want, "no control moved"
    again = open_lab(lab_id, track)
    for part in again.parts():
        got = {n: c.value for n, c in part.controls.items() if n in want.get(part.letter, {})}
        assert got == pytest.approx(want.get(part.letter, {})), part.letter
        assert part.settings() == first.part(part.letter).settings()
    assert again.takeaways() == first.takeaways()


@pytest.mark.parametrize("payload", [
    "{not json",
    json.dumps({"schema": "other", "version": 1, "labs": {}}),
    json.dumps({"schema": "labkit-settings", "version": 1, "labs": []}),
    json.dumps({"schema": "labkit-settings", "version": 1, "labs": {"lab1": {
        "cloud_fleet.A": {"demand": "lots", "saving_pct": 1e300, "policy": ["x"],
                          "nonexistent": 3, "__class__": 1}}}}),
    json.dumps({"schema": "labkit-settings", "version": 1, "labs": {"lab1": {
        "cloud_fleet.A": {"demand": -5.0, "saving_pct": float("nan")}}}}).replace(
            "NaN", "1e999"),
])
def test_a_hostile_settings_file_leaves_the_defaults(open_lab, tmp_path, payload):
    defaults = open_lab("lab1", "cloud_fleet").part("A").settings()
    (tmp_path / SETTINGS_FILE).write_text(payload)
    assert open_lab("lab1", "cloud_fleet").part("A").settings() == defaults


def test_the_store_keeps_only_plain_finite_scalars(tmp_path):
    store = SettingsStore(tmp_path / SETTINGS_FILE)
    store.put("lab1", "t.A", {"a": 1, "b": 2.5, "c": "x", "d": True, "e": [1], "f": None,
                              "g": float("inf")})
    assert store.get("lab1", "t.A") == {"a": 1, "b": 2.5, "c": "x", "d": True}
    assert store.get("lab1", "t.B") == {} and store.get("lab2", "t.A") == {}
    with pytest.raises(ValueError, match="scope"):
        store.put("lab1", "", {"a": 1})
