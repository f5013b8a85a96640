"""Lab 2 Parts B and C of the edge scenarios (iPhone, smart ring, robotaxi) are views of
:mod:`labkit.plans.edge`: at each track's defaults and a grid of every control,

* every recovery hint names a control on screen, and moving that control alone to the
  value named makes the failing check pass;
* every math peek's printed result is recomputed from its printed terms;
* no sentence shows a missing value (None, nan, n/a);
* the issue's examples: the ring's energy per window is shown as named parts (front end +
  model), Part C's "why" is templated over the cuts on screen, the robotaxi's energy per
  day states its batch, the vehicle's "closest limit" is chosen on true ratios;
* no digit is typed into a prose string of these parts (formula constants excepted).
"""

from __future__ import annotations

import ast
import html
import re
from pathlib import Path

import pytest

import labkit.labs.accelerators as ac_pkg
import labkit.scenarios.handheld.plan.device as phone
import labkit.scenarios.vehicle.plan.cameras as camera_plan
import labkit.scenarios.wearable.plan.window as ring
from labkit.core.answers import AnswerStore
from labkit.core.format import energy_scale, fmt, fmt_energy, fmt_time
from labkit.labs.accelerators import Lab
from labkit.labs.accelerators.edge_view import NO_LEVER
from labkit.ui.controls import control_values

EDGE_TRACKS = ("iphone", "oura_ring", "robotaxi")
PARTS = [(t, letter) for t in EDGE_TRACKS for letter in ("B", "C")]
REL = 0.02  # every printed term has 3 significant digits (or 2 decimals)


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    return lambda track: Lab(track, store=AnswerStore(tmp_path / "a.json"), gate_explore=False)


def _grid(part):
    """The defaults, then each control alone at its two ends and its middle."""
    yield {}
    for name, ctl in part.controls.items():
        values = control_values(ctl)
        for v in {0: values[0], 1: values[len(values) // 2], 2: values[-1]}.values():
            yield {name: v}


def _apply(part, point):
    for k, v in point.items():
        part.controls[k].value = v


def _restore(part, saved):
    for k, v in saved.items():
        part.controls[k].value = v


# -- math peeks: the printed result from the printed terms ---------------------------------------

def _py(tex: str) -> str:
    e = tex.replace("{,}", "")
    e = re.sub(r"\\times10\^\{(-?\d+)\}", r"e\1", e)
    e = e.replace("\\times", "*").replace("\\max", "max").replace("\\ ", " ")
    return e


def peek_equations(body: str) -> list[tuple[str, float, float]]:
    """(equation, value of its printed terms, printed result) of every ``a = terms =
    result unit`` equation of a math peek."""
    out = []
    for block in re.findall(r"\$\$(.*?)\$\$", body, re.S):
        parts = block.split(" = ")
        if len(parts) < 3:
            continue
        result = re.sub(r"\\ \\text\{[^}]*\}\s*$", "", parts[-1].strip())
        value = eval(_py(parts[-2]), {"__builtins__": {}, "max": max})
        out.append((block, float(value), float(_py(result))))
    return out


@pytest.mark.parametrize(("track", "letter"), PARTS)
def test_math_peeks_print_terms_that_give_their_result(lab, track, letter):
    part = lab(track).part(letter)
    saved = dict(part.settings())
    checked = 0
    for point in _grid(part):
        _apply(part, point)
        eqs = peek_equations(part.math.body)
        assert eqs, (track, letter, point)
        for eq, value, printed in eqs:
            assert value == pytest.approx(printed, rel=REL, abs=1e-9), (track, letter, point, eq)
            checked += 1
        _restore(part, saved)
    assert checked > 0


# -- recovery hints -------------------------------------------------------------------------------

@pytest.mark.parametrize(("track", "letter"), PARTS)
def test_every_recovery_hint_names_a_control_that_passes_alone(lab, track, letter):
    part = lab(track).part(letter)
    saved = dict(part.settings())
    moved = 0
    for point in _grid(part):
        _apply(part, point)
        here = dict(part.settings())
        for name, callout in part.callouts.items():
            if name == "boundary" or not callout.active:
                continue
            lever = part.levers.get(name)
            text = html.unescape(callout.value)
            if lever is None:
                assert NO_LEVER in text, (track, letter, point, name)
                continue
            control, value = lever
            assert control in part.controls  # on screen
            assert str(part.controls[control].description) in text
            part.controls[control].value = value
            assert not part.callouts[name].active, (track, letter, point, name, lever)
            moved += 1
            _restore(part, here)
        _restore(part, saved)
    if (track, letter) in {("iphone", "B"), ("oura_ring", "B"), ("robotaxi", "B")}:
        assert moved > 0, "no failure to recover from: the test is moot"


# -- no missing values in any sentence ------------------------------------------------------------

_MISSING = re.compile(r"\b(None|nan|n/a)\b")


@pytest.mark.parametrize(("track", "letter"), PARTS)
def test_no_sentence_shows_a_missing_value(lab, track, letter):
    part = lab(track).part(letter)
    saved = dict(part.settings())
    for point in _grid(part):
        _apply(part, point)
        texts = {"readout": part.readout.value, "details": part.details.value,
                 "math": part.math.body, "takeaway": part.takeaway(),
                 **{f"callout {k}": c.value for k, c in part.callouts.items()}}
        for where, text in texts.items():
            assert not _MISSING.search(re.sub(r"<code>.*?</code>", "", text)), (
                track, letter, point, where, text)
        _restore(part, saved)
    part.predict.commit(part.expected)
    assert not _MISSING.search(part._reveal_html.value)


# -- the examples -----------------------------------------------------------------------

def test_ring_energy_per_window_is_shown_as_named_parts(lab):
    part = lab("oura_ring").part("B")
    e = ring.window_energy("oura_ring")
    assert sum(j for _, j in e.named_parts) == pytest.approx(e.energy_j, rel=1e-12)
    r = part.results
    assert r["energy_per_window_j"] == pytest.approx(e.energy_j)
    text = html.unescape(part.readout.value)
    scale, unit = energy_scale(e.energy_j)   # the parts in their sum's unit
    for j in (e.front_end_j, e.model_j, e.energy_j):
        assert f"{fmt(j / scale)} {unit}" in text
    assert fmt_energy(e.energy_j) in text
    assert ring.FRONT_END_NAME in text


def test_ring_part_c_why_is_templated_over_the_cuts(lab):
    part = lab("oura_ring").part("C")
    part.predict.commit(part.expected)
    body = html.unescape(part._reveal_html.value)
    on = part._priced(part.settings())["on_device"]
    assert fmt_time(on.model_s) in body and fmt_energy(on.model_j) in body
    assert "~70 ms" not in body and "10 mW" not in body
    cq = part.checkpoint.question + " ".join(str(o) for o in part.checkpoint.options)
    assert "tens of milliseconds" not in cq


def test_robotaxi_energy_per_day_states_its_batch(lab):
    b = lab("robotaxi").part("B")
    r = b.results
    assert r["energy_batch"] == 1 and "batch 1" in b.readout.value
    batched = camera_plan.vehicle_batch("robotaxi", 8, b.track.batch_size)
    assert r["batched_daily_wh"] == pytest.approx(batched.daily_wh)
    assert batched.daily_wh < r["daily_wh"]  # batching amortises; the deadline forbids it
    assert f"Batching {b.track.batch_size} frames in every pass" in b.details.value
    c = lab("robotaxi").part("C")
    assert "batch 1" in c.readout.value


def test_vehicle_closest_limit_is_chosen_on_true_ratios(lab):
    part = lab("robotaxi").part("B")
    for cams in (1, 4, 8, 12):
        part.controls["cameras"].value = cams
        ratios = part.results["ratios"]
        if part.callouts["boundary"].active:
            name = max(ratios, key=ratios.get)
            assert f"Closest limit: {name}" in part.callouts["boundary"].value


def test_iphone_tpot_is_the_mean_per_reply_token(lab):
    part = lab("iphone").part("B")
    r = part.results
    h = phone.phone_context("iphone", r["weight_bits"], r["kv_bits"], r["context_tokens"])
    assert r["tpot_s"] == pytest.approx(h.tpot_s)
    assert r["last_step_s"] >= r["tpot_s"]  # the slowest gap is not TPOT
    assert fmt_time(h.tpot_s) in part.readout.value


# -- no digit typed into prose ------------------------------------------------------------------

_FILES = [f"scenarios/{s}/views/{f}.py" for s in ("handheld", "vehicle", "wearable")
          for f in ("part_b", "part_c", "spec")] + ["labs/accelerators/edge_view.py"]
_NUM = re.compile(r"(?<![A-Za-z0-9_.])\d[\d,.]*(?![A-Za-z_])|(?<![A-Za-z0-9_])\d+"
                  r"(?=-(bit|day|token|week|ms|s)\b)")
# formula constants inside math expressions, and the lab's own name
_ALLOWED = ("Lab 1", "(1 / mean TPOT)", "P + L/2", "L/2", "/ 3.6", "(n-1)", "(N-1)", "N/2")


def _prose(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    skip: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.FormattedValue) and n.format_spec is not None:
            skip |= {id(x) for x in ast.walk(n.format_spec)}
    out = []
    for n in ast.walk(tree):
        if id(n) in docs or id(n) in skip:
            continue
        if isinstance(n, ast.JoinedStr):
            skip |= {id(x) for x in n.values}
            texts = [v.value for v in n.values
                     if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            texts = [n.value]
        else:
            continue
        out += [(n.lineno, t) for t in texts if " " in t and re.search(r"[A-Za-z]{3}", t)]
    return out


@pytest.mark.parametrize("name", _FILES)
def test_no_digit_is_typed_into_prose(name):
    path = Path(ac_pkg.__file__).parents[2] / name
    bad = []
    for line, text in _prose(path):
        rest = text
        for ok in _ALLOWED:
            rest = rest.replace(ok, "")
        if _NUM.search(rest):
            bad.append(f"{name}:{line}: {text[:80]!r}")
    assert not bad, "\n".join(bad)


# -- feasibility first: numbers are quoted only where the setting fits -------------------------

def test_iphone_part_b_quotes_speed_and_energy_where_the_conversation_fits(lab):
    part = lab("iphone").part("B")
    top = max(v for _, v in part.controls["context"].options)
    part.controls["context"].value = top
    r = part.results
    assert r["fails"]["memory"]
    quoted = r["quoted_context_tokens"]
    assert quoted is not None and quoted < top
    fit = phone.phone_context("iphone", r["weight_bits"], r["kv_bits"], quoted)
    assert not fit.fails["memory"]
    text = html.unescape(part.readout.value)
    assert "the longest that fits" in text and fmt_time(fit.tpot_s) in text
    part.controls["weight_bits"].value = 32  # the weights alone do not fit
    assert part.results["quoted_context_tokens"] is None
    assert "does not run" in part.readout.value
    assert not any(part.callouts[k].active for k in ("tpot", "ttft", "energy"))


def test_iphone_part_c_does_not_quote_a_device_that_cannot_hold_the_model(lab):
    part = lab("iphone").part("C")
    part.controls["weight_bits"].value = 32
    r = part.results
    assert r["device_oom"] and r["winner"] == "cloud"
    assert fmt_energy(r["device_energy_j"]) not in part.readout.value
    assert "out of memory" in part.readout.value
    assert "E_{\\text{device}}" not in part.math.body
    assert not part.callouts["energy"].active and part.callouts["oom"].active


def test_robotaxi_overloaded_soc_has_no_bounded_worst_case(lab):
    for letter in ("B", "C"):
        part = lab("robotaxi").part(letter)
        part.controls["cameras"].value = 64
        part.controls["fps"].value = 60
        busy = part.results["busy"]
        if max(busy if isinstance(busy, list) else [busy]) >= 1:
            assert "unbounded" in part.readout.value
            assert "work demanded" in part.readout.value
