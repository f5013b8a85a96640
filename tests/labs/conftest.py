"""Every (lab, track) pair, built in a folder of its own (answers and ledger there)."""

from __future__ import annotations

import pytest

from labkit.core.answers import AnswerStore
from labkit.labs.inference_economy import Lab
from labkit.labs.registry import LABS
from labkit.tracks import TRACKS


@pytest.fixture(params=[(lab, track) for lab in LABS for track in TRACKS],
                ids=lambda p: f"{p[0]}-{p[1]}")
def any_lab(request, tmp_path, monkeypatch):
    """A lab object for each lab and track, its answers and ledger in ``tmp_path``."""
    lab_id, track = request.param
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    return LABS[lab_id].lab(track, store=AnswerStore(tmp_path / "answers.json"))


@pytest.fixture
def lab1(tmp_path, monkeypatch):
    """Lab 1 for any track, controls open (no prediction gate), in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))

    def make(track: str) -> Lab:
        return Lab(track, store=AnswerStore(tmp_path / f"{track}.json"), gate_explore=False)
    return make
