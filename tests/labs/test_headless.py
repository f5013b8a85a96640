"""Headless runs (issue 26): the grading kernel, the papermill smoke run and validate build
no views, and every value a grade or a report reads is the same as with views.

* every lab and track: the questions, their options, the computed answers, the state of
  every part (settings, results) and the report are equal headless and not, before and
  after the same answers are committed;
* headless builds no chart, callout or exploration widget (and never imports bqplot),
  shows text instead, and still fails loudly on a broken model;
* the flag comes from the environment the process started with, not from ``os.environ``
  as a cell may leave it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from labkit import ui as lw
from labkit.core.answers import AnswerStore
from labkit.core.headless import decide
from labkit.labs.registry import LABS
from labkit.tracks import TRACKS

PAIRS = [(lab, track) for lab in LABS for track in TRACKS]


def build(lab_id: str, track: str, folder, headless: bool):
    folder.mkdir()
    return LABS[lab_id].lab(track, store=AnswerStore(folder / "answers.json"),
                            headless=headless)


def graded(part) -> dict[str, object]:
    """What a grade, a hidden test or the report reads from one part."""
    return {
        "prediction": (part.predict.question, part.predict.options, part.expected),
        "checkpoint": (part.checkpoint.question, part.checkpoint.options,
                       part.checkpoint_expected),
        "state": without_times(part.state()),
        "shown": {k: (q.value, q.unit, q.basis) for k, q in part.shown().items()},
        "decision": part.decision(),
    }


def without_times(data: dict[str, object]) -> str:
    """``data`` as JSON, its time stamps blanked (two runs commit seconds apart)."""
    text = json.dumps(data, sort_keys=True, default=str)
    for key in ("generated_at", "first_at", "current_at", "at"):
        text = re.sub(rf'"{key}": "[^"]*"', f'"{key}": ""', text)
    return text


@pytest.mark.parametrize(("lab_id", "track"), PAIRS, ids=lambda p: str(p))
def test_headless_and_full_runs_give_the_same_graded_values(lab_id, track, tmp_path,
                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    full = build(lab_id, track, tmp_path / "full", headless=False)
    bare = build(lab_id, track, tmp_path / "bare", headless=True)
    for letter in "ABCD":
        a, b = full.part(letter), bare.part(letter)
        assert graded(b) == graded(a), letter
        for lab, part in ((full, a), (bare, b)):
            part.predict.commit(part.predict.options[-1])
            part.checkpoint.commit(part.checkpoint_expected)
            assert lab.part(letter) is part
        assert graded(b) == graded(a), letter
        assert b._reveal_html.value and b._reveal_html.value == a._reveal_html.value
        assert b.math.body in ("", a.math.body)  # a view-only step is skipped headless
    assert without_times(bare.report()[1]) == without_times(full.report()[1])
    assert bare.takeaways() == full.takeaways()
    # a headless kernel restores what a student's kernel saved (the grading case)
    restored = LABS[lab_id].lab(track, store=AnswerStore(tmp_path / "full" / "answers.json"),
                                headless=True)
    for letter in "ABCD":
        assert graded(restored.part(letter)) == graded(full.part(letter)), letter


@pytest.mark.parametrize("lab_id", list(LABS))
def test_a_headless_part_builds_no_view_and_shows_text(lab_id, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lab = build(lab_id, "cloud_fleet", tmp_path / "bare", headless=True)
    assert isinstance(lab.header(), lw.TextView) and str(lab.header())
    for letter in "ABCD":
        part = lab.part(letter)
        assert part._stale, "the model is computed on demand, not at construction"
        assert all(isinstance(f, lw.Sink) for f in part.figures.values())
        assert all(isinstance(c, lw.TextCallout) for c in part.callouts.values())
        assert isinstance(part.banner(), lw.TextView)
        shown = repr(part.explore)
        assert not part._stale
        assert shown.startswith(f"Part {letter}: ") and "live notebook" in shown
        assert "Settings:" in part.summary() and "<" not in part.summary()
        assert "Commit your prediction first" in repr(part.reveal)
        part.predict.commit(part.predict.options[0])
        assert "prediction is committed" in repr(part.reveal)
        # what reaches a graded notebook's feedback names no computed value
        for text in (shown, repr(part.reveal), repr(part.math), part.predict.text(),
                     part.checkpoint.text(), repr(part.banner())):
            assert not re.search(r"\d", text.replace(f"Part {letter}", "")), text
        assert part._explore_view is None and part._reveal_view is None
        for q in (part.predict, part.checkpoint):
            assert q.widget is None and isinstance(q.choice, lw.TextChoice)
        assert "(locked)" in part.predict.text()
    synthesis = repr(lab.synthesis(write=False))
    assert synthesis.startswith("Synthesis: ") and "live notebook" in synthesis


def test_a_broken_model_still_fails_the_cell_that_shows_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lab = build("lab1", "cloud_fleet", tmp_path / "bare", headless=True)
    part = lab.part("A")

    def broken(_s):
        raise ZeroDivisionError("model broke")
    monkeypatch.setattr(part, "_show_numbers", broken)
    with pytest.raises(ZeroDivisionError):
        repr(part.explore)


@pytest.mark.parametrize(("env", "expected"), [
    ({}, False),
    ({"LABKIT_HEADLESS": "1"}, True),
    ({"LABKIT_HEADLESS": "true"}, True),
    ({"LABKIT_HEADLESS": "0", "NBGRADER_EXECUTION": "autograde"}, False),
    ({"NBGRADER_EXECUTION": "autograde"}, True),
    ({"NBGRADER_EXECUTION": "validate"}, True),
    ({"NBGRADER_EXECUTION": "something"}, False),
])
def test_the_flag_comes_from_the_runners_variables(env, expected):
    assert decide(env) is expected


CHILD = textwrap.dedent("""
    import os, sys, tempfile
    os.chdir(tempfile.mkdtemp())
    os.environ["LABKIT_HEADLESS"] = "0"   # what a student cell could do: changes nothing
    from labkit.core.headless import is_headless
    from labkit.labs.registry import LABS
    from labkit.ui.controls import control_values
    moved = 0
    for lab_id in LABS:
        lab = LABS[lab_id].lab("cloud_fleet")
        for p in lab.parts():
            repr(p.explore), repr(p.reveal), p.results
            for ctl in p.controls.values():  # each control moved: the model follows
                other = [v for v in control_values(ctl) if v != ctl.value]
                if other:
                    ctl.value, moved = other[0], moved + 1
                    repr(p.results)
        repr(lab.synthesis(write=False))
    assert moved > 20, moved
    views = ("bqplot", "ipywidgets", "anywidget", "labkit.ui.boxes", "labkit.ui.keyguard")
    print(is_headless(), lab.headless, any(m.split(".")[0] in views or m in views
                                            for m in sys.modules))
""")


def test_a_process_started_headless_stays_headless_and_never_imports_a_view(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("NBGRADER_EXECUTION",)}
    env.update(LABKIT_HEADLESS="1", LABKIT_LEDGER=str(tmp_path / "ledger.json"))
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True, check=True, timeout=120)
    assert out.stdout.split() == ["True", "True", "False"], out.stderr[-2000:]
