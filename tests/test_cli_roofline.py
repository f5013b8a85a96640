"""``labkit roofline`` in-process: the knee batch counts ``--tp``."""

from __future__ import annotations

import json

import pytest

from labkit.cli import main, roofline_report
from labkit.physics import roofline as rf


def _knee(capsys: pytest.CaptureFixture[str], *args: str) -> object:
    assert main(["roofline", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["knee_batch"]


@pytest.mark.parametrize("model", ["llama-3.1-70b", "mixtral-8x7b", "deepseek-v3"])
@pytest.mark.parametrize("mode", ["peak", "achievable"])
def test_one_device_knee_is_the_physics_knee(model: str, mode: str):
    for context in (0, 512):
        got = roofline_report("h100-sxm", model, context=context, mode=mode)["knee_batch"]
        want = rf.knee_batch("h100-sxm", model, context, mode=mode)
        assert (got is None) == (want is None)
        if want is not None:
            assert got == pytest.approx(want, rel=1e-9)


def test_tp_moves_the_knee_where_each_device_still_reads_the_whole_kv(capsys):
    """MLA's latent is replicated on every TP rank: per device B = B* / (1 - tp S / L*)."""
    s = 1024
    b_star = rf.knee_batch("h100-sxm", "deepseek-v3", 0)
    l_star = rf.balance_context("h100-sxm", "deepseek-v3")
    common = ("--hardware", "h100-sxm", "--model", "deepseek-v3", "--context", str(s))
    one = _knee(capsys, *common)
    two = _knee(capsys, *common, "--tp", "2")
    assert one == pytest.approx(b_star / (1 - s / l_star))
    assert two == pytest.approx(b_star / (1 - 2 * s / l_star))
    assert isinstance(two, float) and isinstance(one, float) and two > 1.5 * one
    assert _knee(capsys, *common, "--tp", "8") is None  # 8 S > L*: no knee


def test_tp_within_the_kv_heads_leaves_the_knee_and_past_them_moves_it():
    """GQA: 8 KV heads split over tp <= 8 devices; at tp = 16 each head is replicated."""
    knees = {tp: roofline_report("h100-sxm", "llama-3.1-70b", context=512, tp=tp)["knee_batch"]
             for tp in (1, 8, 16)}
    assert knees[8] == pytest.approx(knees[1])
    assert isinstance(knees[16], float) and isinstance(knees[1], float)
    assert knees[16] > knees[1]
