"""Lab 2 Part A's math peek reproduces its own numbers: for every track and a grid of
controls, each printed equation's result is recomputed from the terms it prints (interval
arithmetic on the printed digits: every printed number stands for the interval its
rounding covers), and the readout quotes B*/L* with their mode, the per-token time as
step / B, and the batching gain only up to a batch that fits memory."""

from __future__ import annotations

import html
import itertools
import re

import pytest

from labkit.core.answers import AnswerStore
from labkit.labs.accelerators import Lab
from labkit.physics import roofline as rf
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.tracks import TRACKS

LM_TRACKS = [t for t, tr in TRACKS.items() if tr.is_transformer]
CNN_TRACKS = [t for t, tr in TRACKS.items() if not tr.is_transformer]
NUM = r"(-?[\d.]+(?:\{,\}\d{3})*(?:\\times10\^\{-?\d+\})?)"


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    return lambda track: Lab(track, store=AnswerStore(tmp_path / "a.json"), gate_explore=False)


class Iv:
    """The interval a printed number covers (its last digit's half unit either side)."""

    def __init__(self, lo: float, hi: float) -> None:
        self.lo, self.hi = min(lo, hi), max(lo, hi)

    @classmethod
    def of(cls, text: str) -> Iv:
        t = text.replace("{,}", "")
        m = re.fullmatch(r"(-?[\d.]+)(?:\\times10\^\{(-?\d+)\})?", t)
        assert m, text
        mant, exp = m.group(1), int(m.group(2) or 0)
        decimals = len(mant.split(".")[1]) if "." in mant else 0
        v = float(mant) * 10.0 ** exp
        if "." not in t and "\\times" not in t and abs(v) < 100:
            return cls(v, v)  # an exact small integer (tex_num writes 1-100 with decimals)
        half = 0.5 * 10.0 ** (exp - decimals)
        return cls(v - half, v + half)

    def _corners(self, o: Iv, f) -> Iv:
        c = [f(a, b) for a in (self.lo, self.hi) for b in (o.lo, o.hi)]
        return Iv(min(c), max(c))

    def __add__(self, o: Iv) -> Iv:
        return Iv(self.lo + o.lo, self.hi + o.hi)

    def __sub__(self, o: Iv) -> Iv:
        return Iv(self.lo - o.hi, self.hi - o.lo)

    def __mul__(self, o: Iv) -> Iv:
        return self._corners(o, lambda a, b: a * b)

    def __truediv__(self, o: Iv) -> Iv:
        assert o.lo > 0 or o.hi < 0, "division by an interval holding 0"
        return self._corners(o, lambda a, b: a / b)

    def meets(self, o: Iv) -> bool:
        """The intervals overlap (the printed result is a rounding of the recomputed one)."""
        return self.lo <= o.hi * (1 + 1e-12) and o.lo <= self.hi * (1 + 1e-12)


def _sum(parts: str) -> Iv:
    ivs = [Iv.of(x.strip()) for x in parts.split(" + ")]
    out = ivs[0]
    for x in ivs[1:]:
        out = out + x
    return out


def _check_lm_peek(body: str, where: object) -> int:
    """Every equation of the LM peek recomputed from its printed terms; returns how many."""
    n = 0
    b = re.search(r"B\^\*_\{\\text\{\w+\}\} = \\frac\{\\mathrm\{AI\}\\,b\}\{2\} = \\frac\{"
                  + NUM + r" \\times " + NUM + r"\}\{2\}(?: \\times " + NUM + r")?(?: \\div "
                  + NUM + r")? = " + NUM + r"\\ \\text\{sequences\}", body)
    assert b, where
    got = Iv.of(b.group(1)) * Iv.of(b.group(2)) / Iv(2, 2)
    if b.group(3):
        got = got * Iv.of(b.group(3))
    if b.group(4):
        got = got / Iv.of(b.group(4))
    assert got.meets(Iv.of(b.group(5))), (where, "B*", b.group(0))
    n2, ai, kv, ls = _l_star_terms(body)
    got = Iv.of(n2) / (Iv.of(ai) * Iv.of(kv))
    assert got.meets(Iv.of(ls)), (where, "L*", n2, ai, kv, ls)
    step = re.search(r"t_\{\\text\{step\}\} = [^=]+ = ([^=]+) = " + NUM + r"\\ \\text\{ms\}",
                     body)
    assert step, where
    assert _sum(step.group(1)).meets(Iv.of(step.group(2))), (where, "step", step.group(0))
    per = re.search(r"t/\(2N/C\) = ([^=]+) = " + NUM + r"\$", body)
    assert per, where
    assert _sum(per.group(1)).meets(Iv.of(per.group(2))), (where, "per token", per.group(0))
    stall = re.search(r"B > 4B\^\*/\(1 \+ S/L\^\*\)\$; with this screen's B\* \(\w+\) and "
                      r"L\* \(\w+\): \$" + NUM + " / " + NUM + " = " + NUM, body)
    assert stall, where
    got = Iv.of(stall.group(1)) / Iv.of(stall.group(2))
    assert got.meets(Iv.of(stall.group(3))), (where, "stall batch", stall.group(0))
    serve = re.search(r"2B\^\* = " + NUM + r" \\times " + NUM + " = " + NUM, body)
    assert serve, where
    assert (Iv.of(serve.group(1)) * Iv.of(serve.group(2))).meets(Iv.of(serve.group(3)))
    n += 6
    knee = re.search(r"B_\{\\text\{knee\}\} = \\frac\{W_1\}\{C_1 - K_1\} = \\frac\{" + NUM
                     + r"\}\{" + NUM + " - " + NUM + r"\} = " + NUM, body)
    if knee:
        got = Iv.of(knee.group(1)) / (Iv.of(knee.group(2)) - Iv.of(knee.group(3)))
        assert got.meets(Iv.of(knee.group(4))), (where, "knee", knee.group(0))
        n += 1
    else:
        assert "(no knee)" in body, where
    return n


def _l_star_terms(body: str) -> tuple[str, str, str, str]:
    """The L* equation's printed 2N, AI, KV bytes per token and result."""
    ls = re.search(r"L\^\*_\{\\text\{\w+\}\} = .*?= \\frac\{" + NUM + r"\}\{" + NUM
                   + r" \\times " + NUM + r"\} = " + NUM + r"\\ \\text\{tokens\}", body)
    assert ls, body[:200]
    return ls.group(1), ls.group(2), ls.group(3), ls.group(4)


def _points(part):
    devices = ([v for _, v in part.controls["device"].options] if "device" in part.controls
               else [None])
    yield {}
    for dev, batch, ctx, mode, kv in itertools.product(devices, (1, 16, 256),
                                                        (512, 4096, 32768),
                                                        ("peak", "achievable"), (16, 4)):
        yield {k: v for k, v in (("device", dev), ("batch", batch), ("context", ctx),
                                 ("mode", mode), ("kv_bits", kv)) if v is not None}
    # every stack named, on the track's device (its first), at achievable
    stacks = [v for _, v in part.controls["stack"].options]
    for stack, batch, ctx in itertools.product(stacks[1:], (1, 256), (512, 32768)):
        yield {k: v for k, v in (("device", devices[0]), ("mode", "achievable"),
                                 ("kv_bits", 16), ("stack", stack), ("batch", batch),
                                 ("context", ctx)) if v is not None}


@pytest.mark.parametrize("track", LM_TRACKS)
def test_the_lm_math_peek_reproduces_every_printed_result(lab, track):
    part = lab(track).part("A")
    checked = knees = 0
    for point in _points(part):
        for k, v in point.items():
            part.controls[k].value = v
        n = _check_lm_peek(part.math.body, (track, point))
        checked += n
        knees += n == 7
    assert checked > 0 and knees > 0  # the knee equation was exercised somewhere


@pytest.mark.parametrize("track", CNN_TRACKS)
def test_the_cnn_math_peek_reproduces_every_printed_result(lab, track):
    part = lab(track).part("A")
    c = part.controls
    for wb, batch, mode in itertools.product((32, 8, 4), (1, int(c["batch"].max)),
                                             ("peak", "achievable")):
        c["weight_bits"].value, c["batch"].value, c["mode"].value = wb, batch, mode
        body, where = part.math.body, (track, wb, batch, mode)
        ai = re.search(r"\\frac\{(\d+) \\times " + NUM + r"\}\{" + NUM + r"\} = " + NUM, body)
        assert ai, where
        got = Iv(float(ai.group(1)), float(ai.group(1))) * Iv.of(ai.group(2)) / Iv.of(ai.group(3))
        assert got.meets(Iv.of(ai.group(4))), (where, "AI")
        p = re.search(r"\\min\(" + NUM + ", " + NUM + r" \\times " + NUM + r"\) = " + NUM, body)
        assert p, where
        prod = Iv.of(p.group(2)) * Iv.of(p.group(3))
        c_iv = Iv.of(p.group(1))
        got = Iv(min(c_iv.lo, prod.lo), min(c_iv.hi, prod.hi))
        assert got.meets(Iv.of(p.group(4))), (where, "P")
        t = re.search(r"\+ o = \\max\(" + NUM + ", " + NUM + r"\) \+ " + NUM + " = " + NUM, body)
        assert t, where
        a, m_, o = Iv.of(t.group(1)), Iv.of(t.group(2)), Iv.of(t.group(3))
        got = Iv(max(a.lo, m_.lo), max(a.hi, m_.hi)) + o
        assert got.meets(Iv.of(t.group(4))), (where, "t")


def _text(h: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", h)).split())


@pytest.mark.parametrize("track", LM_TRACKS)
def test_b_star_and_l_star_state_their_mode_and_per_token_is_step_over_b(lab, track):
    part = lab(track).part("A")
    for mode in ("peak", "achievable"):
        part.controls["mode"].value = mode
        r, readout = part.results, _text(part.readout.value)
        assert f"B* ({mode})" in readout and f"L* ({mode})" in readout
        assert r["balance_mode"] == mode
        assert r["per_token_s"] == pytest.approx(r["step_s"] / r["batch"], rel=1e-12)
        assert "per token (step ÷ B)" in readout and "step " in readout
        # each figure names its mode and the precision it is computed at
        assert f"B* ({mode}, {r['weight_bits']}-bit weights) =" in part.takeaway()
        assert f"L* ({mode}, {r['kv_bits']}-bit KV) =" in part.takeaway()
        math = part.math.body
        assert f"B^*_{{\\text{{{mode}}}}}" in math and f"L^*_{{\\text{{{mode}}}}}" in math


@pytest.mark.parametrize("track", LM_TRACKS)
def test_the_batching_gain_is_quoted_only_up_to_a_batch_that_fits(lab, track):
    """The issue's 71.5x (cloud) and 9.56x (iPhone) at B = 1 -> 1024, whose KV needs
    1,374 GB / 150 GB: now B = 1 -> the largest batch that fits, labelled so."""
    part = lab(track).part("A")
    opts = sorted(v for _, v in part.controls["batch"].options)
    for ctx in (1024, part.track.context_tokens, part.model.max_context):
        part.controls["context"].value = ctx
        r = part.results
        to = r["batching_gain_batch"]
        wb, kb = r["weight_bits"], r["kv_bits"]
        res = part.track.memory_reserve_fraction   # the serving reserve Lab 1 keeps
        fits = [b for b in opts if not rf.memory_budget(part.hw, part.model, r["context_tokens"],
                                                       b, wb, kb, tp=r["tp"],
                                                       reserve_fraction=res).over_budget]
        assert to == (max(fits) if fits else None), (track, ctx)
        card = _text(part.readout.value)
        if to is None:
            assert r["batching_gain"] is None and "not even B = 1 fits" in card
            continue
        t = [float(rf.decode_roofline(part.hw, part.model, b, r["context_tokens"], wb, kb,
                                      tp=r["tp"], mode=r["mode"]).per_token_s) for b in (1, to)]
        assert r["batching_gain"] == pytest.approx(t[0] / t[1], rel=1e-9)
        assert f"B = 1 → {to:,}" in card
        assert ("the largest batch the slider offers that fits" in card) == (to < max(opts))
    if track == "cloud_fleet":
        part.controls["context"].value = part.track.context_tokens
        # after the 10% serving reserve (72 GB of 80 GB): B = 128 needs 78.3 GB per device
        assert part.results["batching_gain_batch"] == 64


def test_the_phone_regime_row_names_no_cp_and_no_smaller_batch_at_b1(lab):
    part = lab("iphone").part("A")
    details = _text(part.details.value)
    marked = details.split("◀ your settings")[0].rsplit("compute", 1)[-1]
    assert part.results["batch"] == 1
    assert "CP" not in details.split("Memory is a performance")[0]
    assert "smaller batch" not in marked and "smaller B" not in details


@pytest.mark.parametrize("track", LM_TRACKS)
def test_every_recovery_hint_names_a_control_on_screen_that_alone_fixes_it(lab, track):
    """Memory and TPOT-SLO failures: the hint names controls on screen only, and moving
    any one of them to the value it names clears the failure (once: 'more devices per
    replica', which Part A has no control for)."""
    part = lab(track).part("A")
    labels = {str(c.description): k for k, c in part.controls.items()}
    checked = 0
    for point in _points(part):
        for k, v in point.items():
            part.controls[k].value = v
        here = {k: c.value for k, c in part.controls.items()}
        fixes = part._fixes(part.settings())
        for name in ("oom", "slo"):
            callout = part.callouts[name]
            if not callout.active:
                assert name not in fixes
                continue
            recovery = callout.recovery or ""
            if not fixes[name]:
                assert "no single control on this screen fixes it" in recovery
                continue
            named = [lab_ for lab_ in labels if lab_ in recovery]
            assert {labels[n] for n in named} == {f.control for f in fixes[name]}, recovery
            for f in fixes[name]:
                part.controls[f.control].value = f.value
                assert not part.callouts[name].active, (track, point, name, f)
                checked += 1
                for k, v in here.items():  # back where we were (device first)
                    if k != "context":
                        part.controls[k].value = v
                part.controls["context"].value = here["context"]
    assert checked > 0


@pytest.mark.parametrize("track", CNN_TRACKS)
def test_every_cnn_hint_names_a_control_that_alone_fixes_it(lab, track):
    """The deadline and memory-bound callouts of the CNN part: each control the hint names,
    moved alone to the value named, clears the callout."""
    part = lab(track).part("A")
    c = part.controls
    labels = {str(ctl.description): k for k, ctl in c.items()}
    stacks = [v for _, v in c["stack"].options]
    for wb, batch, mode, stack in itertools.product((32, 8, 4), (1, int(c["batch"].max)),
                                                    ("peak", "achievable"),
                                                    (stacks[0], stacks[-1])):
        c["weight_bits"].value, c["batch"].value, c["mode"].value = wb, batch, mode
        c["stack"].value = stack
        fixes = part._fixes(part.settings())
        for name in ("deadline", "memory_bound"):
            callout = part.callouts[name]
            assert callout.active == (name in fixes), (track, name)
            if not callout.active:
                continue
            recovery = callout.recovery or ""
            named = {labels[n] for n in labels if n in recovery}
            assert named == {f.control for f in fixes[name]}, recovery
            if not fixes[name]:
                assert "no single control on this screen fixes it" in recovery
            for f in fixes[name]:
                c[f.control].value = f.value
                assert not part.callouts[name].active, (track, name, f)
                c["weight_bits"].value, c["batch"].value = wb, batch


@pytest.mark.parametrize("track", LM_TRACKS)
def test_the_l_star_peek_prints_the_one_kv_bytes_per_token(lab, track):
    """Every term the L* peek prints is the quantity it names, not one derived back from
    a rounded neighbour (the KV term once read 327,728 B, the AI-rounded quotient, beside
    the 327,680 B every other view prints): its KV bytes per token is the physics', on a
    grid of modes and KV precisions."""
    part = lab(track).part("A")
    for mode, kv in itertools.product(("peak", "achievable"), (16, 8, 4)):
        part.controls["mode"].value, part.controls["kv_bits"].value = mode, kv
        _, _, kv_txt, _ = _l_star_terms(part.math.body)
        want = kv_bytes_per_token(part.model, kv)
        got = Iv.of(kv_txt)
        assert got.lo <= want <= got.hi, (track, mode, kv, kv_txt, want)
