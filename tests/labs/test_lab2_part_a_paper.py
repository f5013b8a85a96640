"""Lab 2 Part A reproduces the paper's worked example (section 5.1) on screen: on the cloud
fleet track the device toggle swaps in one AHBM PE, the context slider reaches 1M tokens,
and the readout shows B* = 31.25, L* ~ 13.4K and per-token decode 562 -> 29.7 ms (8K) and
1894 -> 1361 ms (1M) from B = 1 to 256, exactly as the paper rounds them."""

from __future__ import annotations

import html
import re

import pytest

from labkit.core.answers import AnswerStore
from labkit.labs.accelerators import Lab
from labkit.physics.roofline import PAPER_MAX_CONTEXT


def _text(h: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", h)).split())


def _card(readout: str, label: str) -> str:
    """The value and note of the readout card headed ``label``."""
    text = _text(readout)
    i = text.index(label) + len(label)
    return text[i:i + 90].strip()


@pytest.fixture
def part(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    lab = Lab("cloud_fleet", store=AnswerStore(tmp_path / "a.json"), gate_explore=False)
    part = lab.part("A")
    part.to_plan()   # the paper's figures are the peak roofline's (the card says so)
    return part


@pytest.mark.parametrize(("context", "batch", "shown"), [
    (8192, 1, "562 ms"), (8192, 256, "29.7 ms"),
    (1_048_576, 1, "1894 ms"), (1_048_576, 256, "1361 ms"),
])
def test_the_paper_per_token_figures_appear_on_screen(part, context, batch, shown):
    c = part.controls
    c["device"].value = "paper"
    c["context"].value = context
    c["batch"].value = batch
    readout = part.readout.value
    assert _card(readout, "per token (step ÷ B)").startswith(shown)
    assert _card(readout, "B* (peak)").startswith("31.25 critical batch")  # the mode shown
    assert _card(readout, "L* (peak)").startswith("13,369 tokens 16-bit KV; 13.4 thousand")
    pair = _card(readout, "paper §5.1: B = 1 → 256")
    if context == 8192:
        assert pair.startswith("562 ms → 29.7 ms time per token cut 19x")
    else:
        assert pair.startswith("1894 ms → 1361 ms time per token cut 28%")
        assert part.callouts["window"].active  # past the model's trained window, said so
    assert part.results["tp"] == 1 and part.results["device"] == "paper"


def test_the_1m_context_is_only_reachable_on_the_papers_pe(part):
    ctx = part.controls["context"]
    track_max = max(v for _, v in ctx.options)
    assert track_max == part.model.max_context < PAPER_MAX_CONTEXT
    part.controls["device"].value = "paper"
    assert max(v for _, v in ctx.options) == PAPER_MAX_CONTEXT
    ctx.value = PAPER_MAX_CONTEXT
    assert part.figures["context"].marks[0].x[-1] == pytest.approx(PAPER_MAX_CONTEXT)
    part.controls["device"].value = "track"  # back on the track: clamped to the window
    assert ctx.value == track_max and not part.callouts["window"].active
    assert part.results["context_tokens"] == track_max and part.results["device"] == "track"
    assert "paper §5.1" not in part.readout.value


def test_the_regime_row_kv_share_and_serving_batch_at_the_papers_points(part):
    c = part.controls
    c["device"].value = "paper"
    c["context"].value, c["batch"].value = 8192, 16
    details = _text(part.details.value)
    assert part.results["regime_rule"] == "weights"
    row = details[details.index("weight fetch per token > compute"):]
    assert row.index("◀ your settings") < row.index("weight fetch ≤ compute")
    # 2B* = 62.5 on the PE: per-token time there against B* = 31.25, paper rounding
    r = part.results
    assert r["serving_batch"] == pytest.approx(62.5)
    assert "2B* = 62.5 sequences" in details
    c["context"].value = 1_048_576
    assert part.results["regime_rule"] == "extreme"
    share = part.results["kv_share_of_step"]
    assert share > 0.95 and "Memory is a performance variable" in _text(part.details.value)
