"""Lab 2 Parts B and C of the fleet: views over labkit.plans.fleet.

Every recovery hint names a control on screen and, applied alone, makes its failing check
pass; the fleet size is one number (prefill and the utilisation cap included, or labelled
decode only); costs name their basis; B* carries its mode; the "next layout" is suggested
only when it is a layout; the DP rule names the step's largest computed term; no NaN reaches
a chart; every math peek re-derives its result from the terms it prints; the view modules
import no physics and stay within the size limits.
"""

from __future__ import annotations

import ast
import html
import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest

from labkit.core.answers import AnswerStore
from labkit.core.format import fmt_time
from labkit.labs.accelerators.lab import Lab
from labkit.plans.design import fleet_table

SRC = Path(__file__).resolve().parents[2] / "src" / "labkit"
VIEW_FILES = [f"scenarios/fleet/views/{f}.py" for f in (
    "part_b", "part_c", "part_c_paper", "part_b_spec", "part_c_spec", "part_c_charts")]


@pytest.fixture
def parts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    lab = Lab("cloud_fleet", store=AnswerStore(tmp_path / "a.json"), gate_explore=False)
    b = lab.part("B")
    b.to_plan()   # the track's own plan, where Part C's hand-off starts
    return b, lab.part("C")


def _set(part, **values) -> None:
    for k, v in values.items():
        part.controls[k].value = v


def _text(x: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", x))


def _card(part, label: str) -> tuple[str, str]:
    m = re.search(rf">{re.escape(label)}</div><div class='labkit-card-value'[^>]*>([^<]*)<"
                  r"/div><div[^>]*>([^<]*)<", html.unescape(part.readout.value),
                  flags=re.IGNORECASE)
    assert m, f"no card {label!r}"
    return html.unescape(m.group(1)), html.unescape(m.group(2))


# -- Part B ---------------------------------------------------------------------------------

def _b_points(b):
    users = [v for _, v in b.controls["users"].options]
    ctxs = [v for _, v in b.controls["context"].options]
    yield {}
    for u, ctx in itertools.product([*users[::8], users[-1]], (ctxs[0], 4096, ctxs[-1])):
        yield {"users": u, "context": ctx}
    yield {"users": 18288, "context": 4096}


def test_part_b_hints_are_controls_on_screen_that_fix_the_check(parts):
    b, _ = parts
    seen = 0
    for point in _b_points(b):
        _set(b, **point)
        start = b.settings()
        for check, failing in (("infeasible", not b.results["feasible"]),
                               ("budget", b.results["over_budget"])):
            assert b.callouts[check].active == failing
            if not failing:
                continue
            for mv in b.moves(start, check):
                seen += 1
                ctl = b.controls[mv.control]
                assert ctl.description in html.unescape(b.callouts[check].recovery)
                _set(b, **{mv.control: mv.value})
                assert not b.callouts[check].active, (point, mv)
                _set(b, **start)
    assert seen


def test_part_b_18288_users_budget_hint_is_a_control(parts):
    """The audit's case: the budget failure at 18,288 users is answered with a move of a
    control on screen (never "more CP" or "INT4 KV", which are not controls here)."""
    b, _ = parts
    _set(b, users=18288)
    rec = html.unescape(b.callouts["budget"].recovery or "")
    assert b.callouts["budget"].active and "CP" not in rec and "GQA" not in rec
    assert any(b.controls[k].description in rec for k in b.controls)


def test_part_b_one_fleet_size_with_its_basis(parts):
    b, _ = parts
    r = b.results
    assert r["fleet_devices"] == r["served_devices"] == 144 and r["total_devices"] == 32
    value, note = _card(b, "fleet")
    assert value == "144 devices" and "prefill" in note and "80%" in note
    assert b.callouts["boundary"].title.startswith("144 devices serve 1,143 users")
    assert "prefill" in b.callouts["boundary"].title
    assert "144 devices" in b.takeaway() and "decode only 32" in b.takeaway()
    label, _ = _card(b, "cost per day (provisioned)")
    assert label.replace(",", "").startswith(str(round(r["provisioned_cost_per_day"])))
    assert "busy" in _card(b, "cost per day (provisioned)")[1]


_T = r"((?:[^{}]|\{-?\d+\}|\{,\})*)"
_CEIL = re.compile(r"\\left\\lceil \\frac\{" + _T + r"\}\{" + _T
                   + r"\}\s*\\right\\rceil = (\d+)")


def _num(tex: str) -> float:
    tex = tex.replace("{,}", "").replace(",", "")
    m = re.fullmatch(r"\s*([\d.]+)\\times10\^\{(-?\d+)\}\s*", tex)
    return float(m.group(1)) * 10 ** int(m.group(2)) if m else float(tex)


def _expr(tex: str) -> float:
    """A printed product/sum/quotient of tex numbers."""
    tex = re.sub(r"([\d.]+)\\times10\^\{(-?\d+)\}", r"(\1e\2)", tex.replace("{,}", ""))
    return float(eval(tex.replace("\\times", "*"), {}))  # digits and operators only


def test_part_b_math_peek_rederives_each_result(parts):
    b, _ = parts
    for point in ({}, {"users": 18288}, {"context": 32768, "kv_bits": 8}):
        _set(b, **point)
        body = b.math.body
        found = _CEIL.findall(body)
        assert len(found) >= 3
        for num, den, res in found:
            if "lambda" in num or "\\" in num.replace("\\times", ""):
                continue
            val = _expr(num) / _expr(den)
            assert math.ceil(val - 1e-9) == int(res), (num, den, res)
        m = re.search(r"\\left\\lceil \\frac\{([\d.]+)\}\{([\d.]+) \\times ([\d.]+)\}"
                      r"\\right\\rceil = (\d+);\\quad (\d+) \\times (\d+) = (\d+)", body)
        if b.results["fleet_includes_prefill"]:
            assert m, body
            lam, u, mu, reps, r2, d, n = m.groups()
            assert math.ceil(float(lam) / (float(u) * float(mu)) - 1e-9) == int(reps)
            assert int(r2) * int(d) == int(n) == b.results["fleet_devices"]


# -- Part C ---------------------------------------------------------------------------------

def _c_points(c):
    for mid in [v for _, v in c.controls["model"].options]:
        _set(c, model=mid)
        for sym in [v for _, v in c.controls["symptom"].options]:
            for tp, pp, dp in ((1, 1, 1), (4, 1, 1), (4, 2, 4), (8, 1, 16)):
                _set(c, symptom=sym, tp=tp, pp=pp, dp=dp, cp=1,
                     **({"ep": 1} if "ep" in c.controls else {}))
                yield mid, sym


def test_part_c_hints_fix_their_check(parts):
    _, c = parts
    seen = 0
    for where in _c_points(c):
        start = c.settings()
        for name, co in c.callouts.items():
            if not (co.active and co.recovery):
                continue
            for mv in c.moves(start, name):
                seen += 1
                assert f"{mv.control.upper()} degree → {mv.value}" in co.recovery
                _set(c, **{mv.control: mv.value})
                assert not c.callouts[name].active, (where, name, mv)
                _set(c, **start)
    assert seen


def test_part_c_next_layout_only_when_it_is_one(parts):
    _, c = parts
    for mid, sym in _c_points(c):
        r = c.results
        p = r["preset"]
        _, index = fleet_table(c.track, c.track.weight_bits, c.track.kv_bits, p["context"],
                               p["batch"], mid)
        nxt = _text(c.callouts["diagnosis"].detail)
        m = re.search(r"Adding (\w+) here gives ([^:]+):", nxt)
        if m:
            deg = list(r["degrees"])
            ax = ("tp", "cp", "pp", "dp", "ep").index(m.group(1).lower())
            deg[ax] *= 2
            assert tuple(deg) in index, (mid, sym, nxt)
        else:
            assert "is not a layout" in nxt or "dense" in nxt, nxt


def test_part_c_marks_are_finite_for_every_model_and_symptom(parts):
    _, c = parts
    for where in _c_points(c):
        for name, fig in c.figures.items():
            for mark in fig.marks:
                for trait in ("x", "y"):
                    v = getattr(mark, trait, None)
                    if v is None or (isinstance(v, np.ndarray) and v.dtype.kind in "US"):
                        continue
                    arr = np.asarray(v)
                    if arr.dtype.kind in "fiu":
                        assert np.all(np.isfinite(arr)), (where, name, trait)


def test_part_c_dp_rule_names_the_largest_term(parts):
    _, c = parts
    _set(c, symptom="throughput", tp=4, dp=4)
    rules = _text(c.callouts["stop_rules"].detail)
    t = c.results["step_terms"]
    assert t["largest"] == "kv" and "KV-bound, not compute-efficient" in rules
    assert fmt_time(t["kv_s"]) in rules and fmt_time(t["compute_s"]) in rules
    assert "(achievable mode)" in rules  # B* and L* say their mode
    for where in _c_points(c):
        rules = _text(c.callouts["stop_rules"].detail)
        t = c.results["step_terms"]
        if "is compute-efficient" in rules:
            assert t["largest"] == "compute", where


def test_part_c_step_and_per_token_are_labelled_and_rederive(parts):
    _, c = parts
    r = c.results
    value, note = _card(c, "step (each sequence's TPOT)")
    assert value == fmt_time(r["step_s"])
    assert f"per token (step / B) {fmt_time(r['per_token_s'])}" in note
    assert r["per_token_s"] == pytest.approx(r["step_s"] / r["config"]["batch_per_replica"])
    for _ in _c_points(c):
        body = c.math.body
        if c.results["config"] is None:
            continue
        m = re.search(r"t_\{\\text\{PP\}\} = ([^=]+) = ([\d.]+)\\ \\text\{ms\}", body)
        printed = [x.strip() for x in m.group(1).split("+")] + [m.group(2)]
        half_ulp = sum(0.5 * 10 ** -len(x.split(".")[1]) if "." in x else 0.5
                       for x in printed)  # each printed number is rounded
        assert sum(float(x) for x in printed[:-1]) == pytest.approx(float(printed[-1]),
                                                                     abs=half_ulp)
        m = re.search(r"\\frac\{([\d.]+)\}\{(\d+)\} = ([\d.e+-]+)\\ \\text\{ms\}", body)
        assert float(m.group(1)) / int(m.group(2)) == pytest.approx(float(m.group(3)),
                                                                    rel=0.01)


def test_part_c_tpot_is_the_mean_and_the_stall_a_gap(parts):
    _, c = parts
    c.to_plan()   # the track's own layout (TP4), not the one-device candidate
    d = _text(c.callouts["disagg"].detail)
    r = c.results
    assert c.callouts["disagg"].active and fmt_time(r["tpot_colocated_s"]) in d
    assert "inter-token gap" in d and fmt_time(r["worst_gap_s"]) in d
    assert "4.6x" not in d  # the old claim: one stalled step is not the TPOT


# -- the modules ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", VIEW_FILES)
def test_view_modules_import_no_physics_nor_the_package_and_stay_small(name):
    path = SRC / name
    src = path.read_text()
    tree = ast.parse(src)
    assert len(src.splitlines()) <= 700
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert not (node.module or "").startswith("labkit.physics"), node.module
            assert node.module != "labkit.labs.accelerators", name
        if isinstance(node, ast.Import):
            assert not any(a.name.startswith("labkit.physics") for a in node.names)
        if isinstance(node, ast.ClassDef):
            assert node.end_lineno - node.lineno + 1 <= 300, node.name
        if isinstance(node, ast.FunctionDef):
            assert node.end_lineno - node.lineno + 1 <= 60, node.name


def test_plans_fleet_is_small():
    src = (SRC / "scenarios" / "fleet" / "plan" / "sizing.py").read_text()
    assert len(src.splitlines()) <= 700
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.ClassDef):
            assert node.end_lineno - node.lineno + 1 <= 300, node.name
        if isinstance(node, ast.FunctionDef):
            assert node.end_lineno - node.lineno + 1 <= 60, node.name



def test_part_b_names_the_replica_size_it_serves_on_when_not_the_sizings(parts):
    """Where the served fleet takes another replica size than the decode-only sizing's,
    the served callout says so: both sizes, and what the sizing's own size would need (or
    that it cannot be served); the fleet's count is the smaller."""
    b, _ = parts
    seen = 0
    for _, users in b.controls["users"].options[::2]:
        b.controls["users"].value = users
        r, text = b.results, _text(b.callouts["served"].value)
        if r["served_devices"] is None or \
                r["served_devices_per_replica"] == r["devices_per_replica"]:
            continue
        seen += 1
        assert f"The sizing's replicas of {r['devices_per_replica']} devices" in text, text
        assert f"replicas of {r['served_devices_per_replica']} devices" in text
        if r["same_shape_devices"] is None:
            assert "cannot be served" in text
        else:
            assert f"would need {r['same_shape_devices']:,} devices" in text
            assert r["served_devices"] < r["same_shape_devices"]
    assert seen >= 2, "no demand on the grid is served on another replica size"
