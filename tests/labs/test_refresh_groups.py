"""Refresh steps (:func:`labkit.labs.common.depends_on`): a control runs only the steps that
read it, shared values (:func:`~labkit.labs.common.computed`) are recomputed only when their
inputs change, and the grouped result always equals a full refresh."""

from __future__ import annotations

import json
from typing import ClassVar

import ipywidgets as ipw
import numpy as np
import pytest

import labkit.labs.accelerators as lab2
import labkit.labs.inference_economy as lab1
from labkit import ui as lw
from labkit.core.answers import AnswerStore
from labkit.core.format import plain
from labkit.labs.common import ALL, LabPart, Settings, computed, depends_on
from labkit.labs.parts import PARTS
from labkit.tracks import TRACKS

LABS = {"lab1": lab1, "lab2": lab2}
CASES = [(lab, tid, letter) for lab in LABS for tid in TRACKS for letter in PARTS]


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    return AnswerStore(tmp_path / "labkit_answers.json")


def _part(store: AnswerStore, lab: str, track: str, letter: str) -> LabPart:
    part = LABS[lab].Lab(track, store=store).part(letter)
    part.predict.commit(part.expected)  # the reveal is rendered too
    return part


def _freeze(v: object) -> str:
    if isinstance(v, np.ndarray | list | tuple):
        return json.dumps(np.asarray(v, dtype=object).tolist(), default=repr)
    return repr(v)


def snapshot(part: LabPart) -> dict[str, str]:
    """Everything a refresh writes: marks and scales, readout, table, callouts, math, reveal
    and results."""
    snap: dict[str, str] = {}
    for fname, fig in part.figures.items():
        for i, m in enumerate(fig.marks):
            for t in ("x", "y", "visible", "colors"):
                snap[f"{fname}.mark{i}.{t}"] = _freeze(getattr(m, t))
            for k, sc in m.scales.items():
                snap[f"{fname}.mark{i}.scale.{k}"] = repr((getattr(sc, "min", None),
                                                          getattr(sc, "max", None)))
    snap["readout"] = part.readout.value
    snap["details"] = part.details.value
    for name, c in part.callouts.items():
        snap[f"callout.{name}"] = repr((c.active, c.value))
    snap["math"] = part.math.body
    snap["reveal"] = part._reveal_html.value
    snap["results"] = json.dumps(plain(part.results), sort_keys=True, default=repr)
    return snap


def grid(ctl: ipw.ValueWidget, most: int = 5) -> list[object]:
    """A few valid values of a control: its ends and points between."""
    opts = getattr(ctl, "options", None)
    if opts:
        vals = [o[1] if isinstance(o, tuple) else o for o in opts]
        idx = sorted({round(i) for i in np.linspace(0, len(vals) - 1, min(most, len(vals)))})
        return [vals[i] for i in idx]
    lo, hi = ctl.min, ctl.max
    if isinstance(ctl, ipw.FloatLogSlider):
        return [ctl.base ** x for x in np.linspace(lo, hi, 3)]
    if isinstance(ctl, ipw.IntSlider):
        return sorted({lo, (lo + hi) // 2, hi})
    return [lo, (lo + hi) / 2, hi]


def expected_steps(part: LabPart, control: str) -> tuple[str, ...]:
    return tuple(step for step, deps in part.refresh_steps.items()
                 if ALL in deps or control in deps)


# -- the mechanism on a toy part ------------------------------------------------------------

class _Lab:
    def __init__(self, store: AnswerStore) -> None:
        self.track = TRACKS["cloud_fleet"]
        self.store = store
        self.gate_explore = False


class ToyPart(LabPart):
    letter = "A"
    lab_id = "toy"
    titles: ClassVar[dict[str, str]] = {"A": "Toy"}
    minutes: ClassVar[dict[str, str]] = {"A": "1 minute"}

    def _setup(self) -> None:
        self.controls["a"] = lw.int_control("a", 1, 1, 9)
        self.controls["b"] = lw.int_control("b", 1, 1, 9)
        self.calls: list[str] = []
        self.drawn: dict[str, object] = {}
        self._expected = "x"

    def _hook(self) -> str:
        return "toy"

    def _prediction_spec(self) -> tuple[str, list[tuple[str, str]]]:
        return "q", [("x", "x"), ("z", "z")]

    def _checkpoint_spec(self) -> tuple[str, list[tuple[str, str]], str, dict[str, str]]:
        return "q", [("y", "y"), ("n", "n")], "y", {"y": "ok", "n": "no"}

    def _reveal_body(self) -> str:
        return ""

    @computed("a")
    def _square(self, s: Settings) -> int:
        self.calls.append("square")
        return int(s["a"]) ** 2

    @depends_on("_square")
    def _draw_a(self, s: Settings) -> None:
        self.drawn["a"] = self._square(s)

    @depends_on("b")
    def _draw_b(self, s: Settings) -> None:
        self.drawn["b"] = s["b"]

    @depends_on(ALL)
    def _draw_both(self, s: Settings) -> None:
        self.drawn["both"] = (self._square(s), s["b"])

    @depends_on()
    def _draw_once(self, s: Settings) -> None:
        self.drawn["once"] = self.drawn.get("once", 0) + 1  # type: ignore[operator]


def test_toy_part_runs_only_dependent_steps_and_reuses_shared_values(store):
    part = ToyPart(_Lab(store))
    assert part.refresh_steps == {"_draw_a": {"a"}, "_draw_b": {"b"},
                                  "_draw_both": {ALL}, "_draw_once": frozenset()}
    assert part.last_steps == ("_draw_a", "_draw_b", "_draw_both", "_draw_once")
    assert part.calls == ["square"]  # computed once, shared by two steps
    part.controls["b"].value = 5
    assert part.last_steps == ("_draw_b", "_draw_both")
    assert part.calls == ["square"]  # its input did not change
    assert part.drawn == {"a": 1, "b": 5, "both": (1, 5), "once": 1}
    part.controls["a"].value = 3
    assert part.last_steps == ("_draw_a", "_draw_both")
    assert part.calls == ["square", "square"]
    assert part.drawn == {"a": 9, "b": 5, "both": (9, 5), "once": 1}
    part.update()  # a full refresh recomputes everything, static steps included
    assert part.last_steps == ("_draw_a", "_draw_b", "_draw_both", "_draw_once")
    assert part.calls == ["square"] * 3 and part.drawn["once"] == 2


def test_a_part_without_steps_refreshes_with_refresh():
    class Whole(ToyPart):
        def _refresh(self, s: Settings) -> None:
            pass

    assert "_draw_a" in Whole.refresh_steps  # a subclass inherits its base's steps
    bare = type("Bare", (LabPart,), {"_refresh": lambda self, s: None})
    assert bare.refresh_steps == {"_refresh": frozenset({ALL})}


def test_a_computed_value_may_not_depend_on_itself():
    with pytest.raises(ValueError, match="depends on itself"):
        type("Loop", (LabPart,), {"_x": computed("_x")(lambda self, s: 0)})


# -- every part of both labs ------------------------------------------------------------

@pytest.mark.parametrize(("lab", "track", "letter"), CASES)
def test_a_control_runs_only_the_steps_that_depend_on_it(store, lab, track, letter):
    part = _part(store, lab, track, letter)
    steps = part.refresh_steps
    for name, ctl in part.controls.items():
        for v in grid(ctl):
            if v == ctl.value:
                continue
            ctl.value = v
            assert part.last_steps == expected_steps(part, name), (name, v)
            assert part.last_steps, f"{lab} {track} {letter}: {name} redraws nothing"
    # declared names are controls (of some track) or ALL: no typo hides a dependency
    known = set(part.controls) | {ALL} | _controls_of_any_track(store, lab, type(part))
    for step, deps in steps.items():
        assert deps <= known, (step, deps - known)


_KNOWN: dict[type, set[str]] = {}


def _controls_of_any_track(store: AnswerStore, lab: str, cls: type) -> set[str]:
    """Control names the part class has on some track (cached across tests)."""
    if cls not in _KNOWN:
        for tid in TRACKS:
            for letter in PARTS:
                p = LABS[lab].Lab(tid, store=store).part(letter)
                _KNOWN.setdefault(type(p), set()).update(p.controls)
    return _KNOWN[cls]


def test_the_roofline_and_sizing_parts_skip_what_a_control_does_not_touch(store):
    """The steps are real groups, not one ALL step in disguise."""
    a = _part(store, "lab2", "cloud_fleet", "A")
    a.controls["view"].value = "step"
    assert "_draw_gain" not in a.last_steps and "_draw_modes" not in a.last_steps
    a.controls["batch"].value = 1 if a.controls["batch"].value != 1 else 2
    assert "_draw_batch_sweep" not in a.last_steps and "_draw_context_sweep" in a.last_steps
    b = _part(store, "lab1", "cloud_fleet", "B")
    b.controls["context"].value = b.grid[0] if b.controls["context"].value != b.grid[0] \
        else b.grid[-1]
    assert "_draw_sessions" not in b.last_steps
    c = _part(store, "lab2", "cloud_fleet", "C")
    c.controls["tp"].value = 8 if c.controls["tp"].value != 8 else 4
    assert "_draw_pareto" not in c.last_steps


@pytest.mark.parametrize(("lab", "track", "letter"), CASES)
def test_grouped_refresh_equals_a_full_refresh(store, lab, track, letter):
    """Walk a grid of control values, one control at a time (earlier ones left where they
    were): after every move the state equals what a full refresh computes from scratch."""
    part = _part(store, lab, track, letter)
    moves = 0
    for name, ctl in part.controls.items():
        for v in grid(ctl):
            if v == ctl.value:
                continue
            ctl.value = v
            grouped = snapshot(part)
            part.update()
            full = snapshot(part)
            diff = sorted(k for k in full if grouped.get(k) != full[k])
            assert not diff, f"{lab} {track} {letter}: after {name}={v!r} stale: {diff}"
            moves += 1
    assert moves


@pytest.mark.parametrize(("lab", "track", "letter"), CASES)
def test_a_setting_moved_back_to_shows_what_a_full_refresh_computes(store, lab, track,
                                                                     letter):
    """A computed value keeps its last results (KEEP_COMPUTED) and a recovery search its
    answers (remembered): moving a control away and back reuses them. What the part shows
    then equals a full refresh from scratch at that setting."""
    part = _part(store, lab, track, letter)
    for name, ctl in part.controls.items():
        start = ctl.value
        away = [v for v in grid(ctl) if v != start]
        if not away:
            continue
        for v in away:
            ctl.value = v
        ctl.value = start  # revisited: every computed value of it is still kept
        again = snapshot(part)
        part.update()
        assert snapshot(part) == again, f"{lab} {track} {letter}: {name} back to {start!r}"
