"""Lab 2's "From Lab 1" figures (:func:`labkit.plans.lab2.lab1_precision_effect`) are on
the basis of the quantity they stand beside: a CNN's FLOP per byte counts its activations,
so each figure is Lab 2 Part A's own at that weight precision (batch 1, the shell's
roofline mode) and names the activation precision it was computed on; the base figure
names its own where it differs. On every track and weight precision."""

from __future__ import annotations

import itertools

import pytest

from labkit.core.answers import AnswerStore, record_ledger
from labkit.labs.registry import LABS
from labkit.physics.phases import cnn_compute_precision
from labkit.plans.cnn_roofline import cnn_view
from labkit.plans.lab2 import BASE_BITS, SHELL_MODE, lab1_precision_effect
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import TRACKS

CNN = [t for t, tr in TRACKS.items() if not tr.is_transformer]
LM = [t for t, tr in TRACKS.items() if tr.is_transformer]
BITS = (4, 8, 16, 32)


@pytest.mark.parametrize(("track", "bits"), list(itertools.product(CNN, BITS)))
def test_a_cnn_figure_is_part_a_s_at_its_own_datapath(track, bits):
    tr = TRACKS[track]
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    pe = lab1_precision_effect(tr, bits)
    mine, base = cnn_view(hw, m, bits, 1, SHELL_MODE), cnn_view(hw, m, BASE_BITS, 1, SHELL_MODE)
    assert pe.flop_per_byte == pytest.approx(mine.ai_flop_per_byte, rel=1e-12)
    assert pe.flop_per_byte_base == pytest.approx(base.ai_flop_per_byte, rel=1e-12)
    assert pe.pass_s == pytest.approx(mine.latency_s, rel=1e-12)
    assert pe.datapath == cnn_compute_precision(hw, bits).upper() == mine.precision.upper()
    assert pe.datapath_base == base.precision.upper()
    assert pe.label == f"{bits}-bit weights, {pe.datapath} activations"
    assert pe.base_label == f"{BASE_BITS}-bit weights, {pe.datapath_base} activations"


@pytest.mark.parametrize(("track", "bits"), list(itertools.product(LM, BITS[:3])))
def test_a_language_model_figure_names_only_its_weights(track, bits):
    """B* and L* have no activation bytes in them: no datapath is named."""
    pe = lab1_precision_effect(TRACKS[track], bits, 8)
    assert pe.datapath is None and pe.datapath_base is None
    assert pe.label == f"{bits}-bit weights" and pe.base_label == f"{BASE_BITS}-bit weights"


def _from_lab1(track: str, tmp_path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    tr = TRACKS[track]
    record_ledger("lab1", track, {"weight_bits": tr.weight_bits, "passed": True,
                                  "kv_bits": tr.kv_bits if tr.is_transformer else None,
                                  "devices_per_replica": tr.devices_per_replica})
    lab = LABS["lab2"].lab(track, store=AnswerStore(tmp_path / "a.json"))
    return lab.lab1_connection()


@pytest.mark.parametrize("track", list(TRACKS))
def test_the_from_lab1_box_names_a_base_that_differs_in_more_than_weights(
        track, tmp_path, monkeypatch):
    text = _from_lab1(track, tmp_path, monkeypatch)
    pe = lab1_precision_effect(TRACKS[track], TRACKS[track].weight_bits)
    assert f"In Lab 1 you shipped {pe.weight_bits}-bit weights" in text
    if pe.datapath != pe.datapath_base:
        assert pe.base_label in text and pe.label in text, text
