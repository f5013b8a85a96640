"""The ring and the robotaxi read in their own words: for both labs, every part, at the
defaults and at each control's ends, no sentence, chart title, axis or mark label, math
peek, reveal or question of their widgets uses a language-model word (session, replica,
serving, token, TTFT, TPOT, KV, decode, prefill, user, conversation, sequence) unless it
is the track's own word for that thing (``Track.state_noun`` / ``Track.replica_noun``)."""

from __future__ import annotations

import html
import re

import pytest

from labkit.core.answers import AnswerStore
from labkit.labs.registry import LABS
from labkit.tracks import get_track
from text_checks import control_ends

CNN_TRACKS = ("oura_ring", "robotaxi")
LM_WORDS = ("session", "replica", "serving", "token", "ttft", "tpot", "kv", "decode",
            "prefill", "user", "conversation", "sequence")
_TAG = re.compile(r"<[^>]+>")
_CODE = re.compile(r"<code>.*?</code>", re.S)  # a module path is a name, not a sentence


def _forbidden(track_id: str) -> re.Pattern[str]:
    """The LM words (singular or plural) minus the track's own vocabulary."""
    tr = get_track(track_id)
    own = {w.lower() for w in (tr.state_noun, tr.state_nouns, tr.replica_noun,
                               tr.replica_nouns)}
    words = [w for w in LM_WORDS if w not in own and f"{w}s" not in own]
    return re.compile(r"(?<![a-z])(" + "|".join(words) + r")s?(?![a-z])", re.I)


def _text(value: object) -> str:
    return html.unescape(_TAG.sub(" ", _CODE.sub(" ", str(value or ""))))


def _chart_texts(name: str, fig) -> dict[str, str]:
    header = getattr(fig, "labkit_header", None)
    out = {f"chart {name} title": getattr(header, "chart_title", "") or fig.title or ""}
    out.update({f"chart {name} axis {i}": str(ax.label or "") for i, ax in enumerate(fig.axes)})
    out.update({f"chart {name} mark {i}": " / ".join(str(lab) for lab in (m.labels or []))
                for i, m in enumerate(fig.marks)})
    return out


def _texts(part) -> dict[str, str]:
    out = {"readout": part.readout.value, "details": part.details.value,
           "math": part.math.body, "math title": part.math.title}
    out.update({f"callout {n}": c.value for n, c in part.callouts.items() if c.active})
    for name, fig in part.figures.items():
        out.update(_chart_texts(name, fig))
    return out


def _questions(part) -> dict[str, str]:
    out = {"hook": part._hook()}
    for what, q in (("prediction", part.predict), ("checkpoint", part.checkpoint)):
        out[f"{what} question"] = q.question
        out[f"{what} options"] = " / ".join(str(q.label_for(v)) for v in q.options)
    for name, ctl in part.controls.items():
        labels = [o[0] if isinstance(o, tuple) else o for o in getattr(ctl, "options", ())]
        out[f"control {name}"] = " / ".join([str(ctl.description), *map(str, labels)])
    return out


def _offences(where: str, texts: dict[str, str], bad: re.Pattern[str]) -> list[str]:
    found = []
    for key, value in texts.items():
        prose = _text(value)
        if m := bad.search(prose):
            i = m.start()
            found.append(f"{where} {key}: {m.group(0)!r} in ...{prose[max(0, i - 50):i + 40]}...")
    return found


@pytest.mark.parametrize("track_id", CNN_TRACKS)
@pytest.mark.parametrize("lab_id", sorted(LABS))
def test_cnn_widgets_use_the_track_s_own_words(lab_id, track_id, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    lab = LABS[lab_id].lab(track_id, store=AnswerStore(tmp_path / "answers.json"))
    bad = _forbidden(track_id)
    found: list[str] = []
    for letter in "ABCD":
        part = lab.part(letter)
        found += _offences(f"{letter} defaults", {**_texts(part), **_questions(part)}, bad)
        for name, ctl in part.controls.items():
            if ctl.disabled:
                continue
            start = ctl.value
            for value in control_ends(ctl):
                ctl.value = value
                found += _offences(f"{letter} {name}={value!r}", _texts(part), bad)
            ctl.value = start
        part.predict.commit(part.expected)
        found += _offences(f"{letter} reveal", {"reveal": part._reveal_html.value}, bad)
    assert not found, "\n".join(found[:40])


def test_the_pattern_catches_what_it_bans():
    bad = _forbidden("oura_ring")
    for text in ("per token", "KV cache", "TTFT", "2 replicas", "sessions that fit",
                 "prefill", "users", "serving"):
        assert bad.search(text), text
    for text in ("windows in flight", "one ring", "tokenless"):
        assert not bad.search(text), text
    assert not _forbidden("cloud_fleet").search("replica")  # the fleet's own word
