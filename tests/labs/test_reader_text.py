"""What a reader of Lab 1 (and, for plurals, Lab 2) sees, read as a reader would, on every
track: no count is written with a hedged plural ("1 device(s)", "4 session(s)"), and every
coefficient of variation (CV) of the output lengths Part C shows is the control's, or is
labelled as the simulated stream's sample with the control's value beside it."""

from __future__ import annotations

import html
import itertools
import re

import pytest

from labkit.core.answers import AnswerStore
from labkit.core.format import counted, fmt_num
from labkit.labs.inference_economy import Lab
from labkit.labs.inference_economy.part_c import PADDING_WASTE_MAX
from labkit.labs.registry import LABS
from labkit.tracks import TRACKS
from text_checks import control_ends

HEDGED = re.compile(r"[A-Za-z]{2}\((?:s|es)\)")  # a word, not a function f(s)
_TAG = re.compile(r"<[^>]+>")
LM_TRACKS = [t for t, tr in TRACKS.items() if tr.is_transformer]
LM_BATCHING = [t for t in LM_TRACKS if not TRACKS[t].speculates]  # Part C batches requests


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    return lambda track: Lab(track, store=AnswerStore(tmp_path / f"{track}.json"),
                             gate_explore=False)


def _prose(value: object) -> str:
    return " ".join(html.unescape(_TAG.sub(" ", str(value or ""))).split())


def _texts(part) -> dict[str, str]:
    """Every string the part shows: readout, details, math peek, active callouts (with
    their recovery hints), chart titles, axis and mark labels."""
    out = {"readout": part.readout.value, "details": part.details.value,
           "math": part.math.body}
    out.update({f"callout {n}": c.value for n, c in part.callouts.items() if c.active})
    for name, fig in part.figures.items():
        header = getattr(fig, "labkit_header", None)
        out[f"chart {name} title"] = getattr(header, "chart_title", "") or fig.title or ""
        out.update({f"chart {name} axis {i}": str(ax.label or "")
                    for i, ax in enumerate(fig.axes)})
        out.update({f"chart {name} mark {i}": " / ".join(map(str, m.labels or []))
                    for i, m in enumerate(fig.marks)})
    return {k: _prose(v) for k, v in out.items()}


def _questions(part) -> dict[str, str]:
    out = {"hook": part._hook()}
    for what, q in (("prediction", part.predict), ("checkpoint", part.checkpoint)):
        out[f"{what} question"] = q.question
        out[f"{what} options"] = " / ".join(str(q.label_for(v)) for v in q.options)
    return {k: _prose(v) for k, v in out.items()}


def _hedged(where: str, texts: dict[str, str]) -> list[str]:
    return [f"{where} {k}: ...{t[max(0, m.start() - 40):m.end() + 20]}..."
            for k, t in texts.items() for m in HEDGED.finditer(t)]


def test_counted_picks_the_noun_by_count_and_the_pattern_catches_a_hedge():
    assert counted(1, "device") == "1 device"
    assert counted(0, "device") == "0 devices"
    assert counted(4, "replica") == "4 replicas"
    assert counted(2, "batch", "batches") == "2 batches"
    assert counted(1200, "token") == "1,200 tokens"
    with pytest.raises(ValueError, match="n"):
        counted(1.5, "device")
    for text in ("1 device(s)", "4 replica(s)", "2 pass(es)", "session(s) of 1 GB"):
        assert HEDGED.search(text), text
    for text in ("1 device", "4 devices", "f(s) = 2", "p(B) + o"):
        assert not HEDGED.search(text), text


@pytest.mark.parametrize("lab_id", list(LABS))
@pytest.mark.parametrize("track", list(TRACKS))
def test_no_part_writes_a_hedged_plural(tmp_path, monkeypatch, lab_id, track):
    """Every part of both labs, at the defaults and at each control's ends, and after the
    reveal; then the synthesis's facts and takeaways."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    the_lab = LABS[lab_id].lab(track, store=AnswerStore(tmp_path / "a.json"),
                               gate_explore=False)
    found: list[str] = []
    for letter in "ABCD":
        part = the_lab.part(letter)
        found += _hedged(f"{letter} defaults", {**_texts(part), **_questions(part)})
        for name, ctl in part.controls.items():
            if ctl.disabled:
                continue
            start = ctl.value
            for value in control_ends(ctl):
                ctl.value = value
                found += _hedged(f"{letter} {name}={value!r}", _texts(part))
            ctl.value = start
        part.predict.commit(part.expected)
        found += _hedged(f"{letter} reveal", {"reveal": _prose(part._reveal_html.value)})
    found += _hedged("synthesis", {f"takeaway {i}": _prose(t)
                                   for i, t in enumerate(the_lab.takeaways())})
    assert not found, "\n".join(found[:20])


CV = re.compile(r"(sampled )?CV (?:is )?(\d[\d.,]*\d|\d)")


def _cv_offences(where: str, texts: dict[str, str], cv: float) -> list[str]:
    """Each CV quoted that is neither the control's value nor labelled as sampled with
    the control's value beside it."""
    want = fmt_num(cv)
    out = []
    for key, text in texts.items():
        for m in CV.finditer(text):
            if m.group(1):   # a sampled CV must stand beside the control's
                if f"CV {want}" not in text:
                    out.append(f"{where} {key}: sampled CV without the set {want}: {text}")
            elif m.group(2) != want:
                out.append(f"{where} {key}: CV {m.group(2)} beside the control's {want}: "
                           f"{text}")
    return out


@pytest.mark.parametrize("track", LM_BATCHING)
def test_every_cv_part_c_shows_is_the_control_s_or_labelled_sampled(lab, track):
    part = lab(track).part("C")
    c = part.controls
    found: list[str] = []
    padded = sampled = 0
    batches = sorted({int(c["batch"].min), int(c["batch"].value), int(c["batch"].max)})
    for cv, batch in itertools.product((0.0, 0.5, 1.0, 1.7, 2.5), batches):
        c["cv"].value, c["batch"].value = cv, batch
        texts = _texts(part)
        found += _cv_offences(f"cv={cv} batch={batch}", texts, float(c["cv"].value))
        cmp = part.compare_at(part.settings())
        if cmp.results["static"].padding_waste >= PADDING_WASTE_MAX:
            padded += 1
            assert "callout padding" in texts, (cv, batch)
            sampled += fmt_num(cmp.cv_tokens) != fmt_num(float(c["cv"].value))
    assert not found, "\n".join(found[:10])
    assert padded > 0, "the grid never reached the padding callout, which quotes a CV"
    assert sampled > 0, "no point's sample differed from its target: the label is untested"
