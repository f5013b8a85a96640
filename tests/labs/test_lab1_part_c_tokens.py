"""Lab 1 Part C where the model batches its own guessed tokens (a track that speculates):
chosen by a predicate over the track's data, its sentences true over a grid of every
control, its hints passing when applied, its math peek's terms giving its result."""

from __future__ import annotations

import itertools
import re

import pytest

from labkit.labs.inference_economy.part_c import PartC
from labkit.labs.inference_economy.part_c_tokens import PartCTokens
from labkit.plans.speculation import speculation_point
from labkit.tracks import TRACKS

SPECULATING = [t for t, tr in TRACKS.items() if tr.speculates]


def _plain(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def test_part_c_is_chosen_by_the_track_s_data(lab1):
    assert SPECULATING, "a built-in track should speculate (the iPhone)"
    for track, tr in TRACKS.items():
        cls = PartCTokens if tr.speculates else PartC
        assert type(lab1(track).part("C")) is cls, track


def _grid(part):
    c = part.controls
    ks = range(int(c["k"].min), int(c["k"].max) + 1, 2)
    sds = range(int(c["sd"].min), int(c["sd"].max) + 1, 10)
    means = (int(c["mean"].min), int(c["mean"].value), int(c["mean"].max))
    return itertools.product(ks, sds, [v for _, v in c["weight_bits"].options], means)


@pytest.mark.parametrize("track", SPECULATING)
def test_every_sentence_matches_the_model_over_a_grid(lab1, track):
    part = lab1(track).part("C")
    for k, sd, bits, mean in _grid(part):
        s = {"k": k, "sd": sd, "weight_bits": bits, "mean": mean}
        for name, value in s.items():
            part.controls[name].value = value
        p = speculation_point(track, k=k, weight_bits=bits, acceptance_mean=mean / 100,
                              acceptance_sd=sd / 100)
        assert part.results["tpot_tail_s"] == p.tpot_tail_s
        assert part.callouts["slo"].active == (not p.met), s
        assert part.callouts["boundary"].active == p.met, s
        assert part.callouts["variance"].active == (k > 0 and p.tail_speedup < p.mean_speedup)
        d = part.decision()
        assert d is not None and d.passed == p.met, s
        line = _plain(part.decision_line.value)
        assert ("✔" in line) == p.met and ("✖ fail" in line) == (not p.met), s


@pytest.mark.parametrize("track", SPECULATING)
def test_the_recovery_hint_applied_passes(lab1, track):
    part = lab1(track).part("C")
    tried = 0
    for k, sd, bits, mean in _grid(part):
        s = {"k": k, "sd": sd, "weight_bits": bits, "mean": mean}
        for name, value in s.items():
            part.controls[name].value = value
        if not part.failed(part.settings()):
            continue
        fix = part._fixes(part.settings())["slo"]
        if not fix.found:
            assert "no single control" in part.callouts["slo"].recovery
            continue
        tried += 1
        (key, value), = fix.changes
        assert key in part.controls and part.callouts["slo"].recovery
        part.controls[key].value = value
        assert not part.failed(part.settings()), (s, key, value)
    assert tried


@pytest.mark.parametrize("track", SPECULATING)
def test_the_math_peek_s_terms_give_its_result(lab1, track):
    part = lab1(track).part("C")
    part.controls["k"].value = 3
    text = part.math.body.replace("{,}", "")
    m = re.search(r"t_\{\\text\{pass\}\} = ([\d.]+) \+ ([\d.]+) \+ (\d+) \\times ([\d.]+) "
                  r"\+ ([\d.]+) = ([\d.]+)", text)
    assert m, text[:800]
    w, kv, n, c, o, total = (float(x) for x in m.groups())
    assert n == 4
    assert w + kv + n * c + o == pytest.approx(total, rel=1e-3)  # four significant digits
    m2 = re.search(r"\\text\{TPOT\} = ([\d.]+) / ([\d.]+) = ([\d.]+)", text)
    assert m2, text[:800]
    a, b, tpot = (float(x) for x in m2.groups())
    assert a / b == pytest.approx(tpot, rel=1e-3)
    assert tpot == pytest.approx(part.results["tpot_tail_s"] * 1e3, rel=1e-3)


@pytest.mark.parametrize("track", SPECULATING)
def test_the_prediction_s_answer_is_the_model_s_outcome_and_the_reveal_says_it(lab1, track):
    part = lab1(track).part("C")
    p = part.default_point
    assert part.expected == ("tail_ok" if p.met else
                             "tail_misses" if p.tpot_mean_s <= p.slo_s else
                             "slower" if p.tpot_tail_s > p.step.pass_s else "both_miss")
    part.predict.commit(part.expected)
    body = _plain(part._reveal_html.value)
    assert part.predict.label_for(part.expected) in body
