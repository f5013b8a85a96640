"""The track's vocabulary only: no rendered string of a track -- its notebooks' markdown,
every part's hook, question and options, controls and their option labels, cards, tables,
callouts, math peeks and reveal, the header and the synthesis -- uses another deployment's
words (a ring never shows tokens, requests, replicas or continuous batching; a phone never
a replica). The words are each scenario's ``about.FOREIGN``: a new scenario brings its own."""

from __future__ import annotations

import html
import re
from pathlib import Path

import ipywidgets as ipw
import nbformat
import pytest

from labkit import scenarios
from labkit.core.answers import AnswerStore
from labkit.labs.registry import LABS
from labkit.plans import design
from labkit.tracks import TRACKS

ROOT = Path(__file__).resolve().parents[2]


def _text(s: object) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", str(s))))


def _widget_texts(w: ipw.Widget) -> list[str]:
    """Every string a widget tree renders: HTML values, descriptions, option labels,
    accordion titles."""
    out = []
    for attr in ("value", "description", "tooltip", "title"):
        v = getattr(w, attr, None)
        if isinstance(v, str):
            out.append(v)
    out += [str(x) for x in getattr(w, "_options_labels", ()) or ()]
    out += [str(t) for t in getattr(w, "titles", ()) or ()]
    for c in getattr(w, "children", ()) or ():
        out += _widget_texts(c)
    return out


def _part_texts(part) -> list[str]:
    out = _widget_texts(part.banner()) + _widget_texts(part.explore)
    for q in (part.predict, part.checkpoint):
        out += [q.question, *(label for label, _ in q.choices), *q.feedback.values()]
    out += [part.math.body]
    part.predict.commit(part.expected)
    out += [part._reveal_html.value]
    out += [c.value for c in part.callouts.values() if c.active]
    return out + _moved_texts(part)


def _shown_now(part) -> list[str]:
    return [part.readout.value, part.details.value, part.math.body,
            part._reveal_html.value, *(c.value for c in part.callouts.values() if c.active)]


def _moved_texts(part) -> list[str]:
    """What the part shows with each control at each end of its range (one at a time)."""
    from labkit.ui.controls import control_values

    out: list[str] = []
    for ctl in part.controls.values():
        start = ctl.value
        values = control_values(ctl)
        for v in {values[0], values[-1]} if values else ():
            ctl.value = v
            out += _shown_now(part)
        ctl.value = start
    return out


def _notebook_texts(lab: str, track: str) -> list[str]:
    folder = ROOT / "source" / f"{lab}_{track}"
    nb = nbformat.read(next(folder.glob("*.ipynb")), as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "markdown"] + [
        line.split("#", 1)[1] for c in nb.cells if c.cell_type == "code"
        for line in c.source.splitlines() if "#" in line and "BEGIN" not in line
        and "END" not in line]   # the comments a data cell explains its numbers with


@pytest.mark.parametrize("track", TRACKS)
@pytest.mark.parametrize("lab", sorted(LABS))
def test_a_track_speaks_only_its_own_words(lab, track, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    foreign = scenarios.piece(design.scenario(track), "about").FOREIGN
    built = LABS[lab].lab(track, store=AnswerStore(tmp_path / "a.json"), gate_explore=False)
    texts = [built.header().value]
    for part in built.parts():
        texts += [f"[{part.letter}] {t}" for t in _part_texts(part)]
    texts += _widget_texts(built.synthesis(write=False))
    texts += [f"[notebook] {t}" for t in _notebook_texts(lab, track)]
    found = sorted({f"{pat}: ...{m.string[max(0, m.start() - 50):m.end() + 30]}..."
                    for t in texts for pat in foreign
                    for m in re.finditer(pat, _text(t), flags=re.IGNORECASE)})
    assert not found, f"{len(found)} foreign words on {lab} {track}:\n" + "\n".join(found[:40])
