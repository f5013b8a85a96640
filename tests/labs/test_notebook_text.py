"""The notebooks' text is the track's own: built in-process with each spec's build_notebook
(no nbgrader, no kernel) for every lab and built-in track."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from labkit.course.build import load_spec
from labkit.course.scaffold import GLOSSARY, notebook_text
from labkit.labs import LABS
from labkit.physics.edge import SPLITS
from labkit.plans.design import VEHICLE_LAYOUTS
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import BUILTIN_TRACKS, get_track

ROOT = Path(__file__).resolve().parents[2]
TRACK_IDS = [t.id for t in BUILTIN_TRACKS]
CASES = [(lab, track) for lab in LABS for track in TRACK_IDS]
# Words that belong to language-model serving, and mean nothing on a CNN track.
LM_WORDS = (r"\bdecode\b", r"\bprefill\b", r"\bKV\b", r"\busers?\b", r"\btokens?\b",
            r"\bTP\b", r"\breplicas?\b", r"\bsessions?\b", r"\bserving\b", r"\bserves?\b",
            r"\bconversations?\b", r"\bTPOT\b", r"\bTTFT\b", r"\bsequences?\b")
CODE_SPAN = re.compile(r"`[^`]*`")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)


@cache
def _notebook(lab: str, track: str):
    return load_spec(ROOT, LABS[lab]).build_notebook(track)


def _markdown(lab: str, track: str) -> str:
    """Every markdown cell a student reads, solutions removed, code spans blanked."""
    cells = [c for c in _notebook(lab, track).cells if c.cell_type == "markdown"]
    return CODE_SPAN.sub("``", notebook_text(cells))


@pytest.mark.parametrize(("lab", "track"), CASES)
def test_cnn_tracks_use_no_language_model_words(lab, track):
    if get_track(track).is_transformer:
        pytest.skip("language-model track")
    text = _markdown(lab, track)
    found = {w: m.group(0) for w in LM_WORDS if (m := re.search(w, text, re.I if w.islower()
                                                                else 0))}
    assert not found, found


def test_the_sweep_catches_a_language_model_word():
    assert re.search(LM_WORDS[0], "every decode step reads the weights")


@pytest.mark.parametrize(("lab", "track"), CASES)
def test_no_raw_latex_outside_math(lab, track):
    text = MATH.sub("", _markdown(lab, track))
    assert not re.findall(r"\\[A-Za-z]+|\^\{|_\{", text)


@pytest.mark.parametrize(("lab", "track"), CASES)
def test_no_internal_ids_on_screen(lab, track):
    t = get_track(track)
    text = _markdown(lab, track)
    ids = {t.id, t.hardware_id, t.model_id, *(x for x in (*VEHICLE_LAYOUTS, *SPLITS) if "_" in x),
           "socs", "on_device"}
    for other in BUILTIN_TRACKS:
        ids |= {other.id, other.hardware_id, other.model_id}
    ids = {i for i in ids if not i.isalpha()}  # "robotaxi" is also an English word
    shown = sorted(i for i in ids if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", text))
    assert not shown, shown
    assert get_hardware(t.hardware_id).name in text and get_model(t.model_id).name in text


@pytest.mark.parametrize(("lab", "track"), CASES)
def test_glossary_defines_each_term_before_its_first_use(lab, track):
    text = _markdown(lab, track)
    for term in GLOSSARY:
        entry = text.find(f"**{term.term}**:")
        uses = [m.start() for m in re.finditer(term.pattern, text)]
        outside = [u for u in uses if not entry <= u < entry + len(term.term) + 6]
        if entry < 0:
            assert not uses, f"{term.term} is used but not defined"
            continue
        assert not outside or min(outside) > entry, f"{term.term} used before its entry"
    if not get_track(track).is_transformer:
        assert "**KV**" not in text and "**TPOT**" not in text


@pytest.mark.parametrize(("lab", "track"), CASES)
def test_one_time_estimate(lab, track):
    info = LABS[lab]
    text = _markdown(lab, track)
    totals = set(re.findall(r"\b\d+(?:-\d+)? minutes\b", text))
    assert totals == {info.minutes_text}, totals
    lo = sum(a for a, _ in info.part_minutes.values()) + info.synthesis_minutes
    hi = sum(b for _, b in info.part_minutes.values()) + info.synthesis_minutes
    assert info.minutes[0] <= lo <= hi <= info.minutes[1]
    assert info.time_estimate.startswith(f"{info.minutes_text}: ")
    for letter, (a, b) in info.part_minutes.items():
        assert f"{letter} {a}" + ("" if a == b else f"-{b}") in info.time_estimate


@pytest.mark.parametrize(("lab", "track"), CASES)
def test_points_in_the_header_are_the_graded_cells_points(lab, track):
    nb = _notebook(lab, track)
    graded = [c.metadata["nbgrader"] for c in nb.cells if c.metadata["nbgrader"].get("grade")]
    total = sum(m.get("points", 0) for m in graded)
    cells = [(c, c.metadata["nbgrader"]) for c in nb.cells]
    checked = sum(m["points"] for c, m in cells
                  if m.get("grade") and "expect_checkpoint(" in c.source)
    committed = sum(m["points"] for c, m in cells if m.get("grade")
                    and "expect_committed(" in c.source and "expect_checkpoint(" not in c.source)
    intro = nb.cells[0].source
    assert f"**Points.** {total:g} in all: {committed:g} for committing" in intro
    assert f"{checked:g} for the checkpoints" in intro and checked > 0
    assert "**Reading.**" in intro and "**Before you start.**" in intro
    if lab == "lab2":
        assert "Lab 1 on this track" in intro and "Roofline" in intro


@pytest.mark.parametrize("track", [t.id for t in BUILTIN_TRACKS if t.is_transformer])
def test_glossary_keeps_the_one_definition_of_each_quantity(track):
    """TPOT is a request's mean time per output token after the first (a single gap between
    two tokens is an inter-token gap); B* and L* name their roofline mode; the same words
    as the deployment model's glossary (labkit.plans.deployment)."""
    t = get_track(track)
    defs = {term.term: term.define(t) for term in GLOSSARY}
    assert "(end-to-end time − TTFT) / (L − 1)" in defs["TPOT"]
    assert "after the first" in defs["TPOT"] and "inter-token gap" in defs["TPOT"]
    assert "peak roofline" in defs["B*"] and "peak roofline" in defs["L*"]
    order = [term.term for term in GLOSSARY]
    assert order.index("TTFT") < order.index("TPOT")  # a definition uses only earlier terms


def test_the_self_check_text_claims_only_the_form_of_an_answer():
    from labkit.course.scaffold import HOW_IT_WORKS

    assert "self-check before you submit" not in HOW_IT_WORKS
    assert "checks only the form of your answer" in " ".join(HOW_IT_WORKS.split())
