"""What every lab module shares: the part skeleton and the HTML/format helpers.

A lab part is banner -> prediction (gates the reveal and, optionally, the exploration) ->
live exploration (controls, readout, callouts, figures) -> reveal -> math peek ->
checkpoint. :class:`LabPart` builds that skeleton once; a lab subclasses it per part and
fills in the hooks (``_setup``, ``_hook``, ``_prediction_spec``, ``_checkpoint_spec``,
``_refresh``, ``_reveal_body``).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

import bqplot as bq
import ipywidgets as ipw

from labkit.core.answers import AnswerEntry
from labkit.core.format import plain
from labkit.tracks import PARTS, Track
from labkit.ui import widgets as lw

if TYPE_CHECKING:
    from labkit.core.answers import AnswerStore

Spec = tuple[str, list[tuple[str, str]]]
CheckSpec = tuple[str, list[tuple[str, str]], str, dict[str, str]]


def _cards(items: Sequence[tuple[str, str, str, str]]) -> str:
    """Metric cards: (label, value, note, colour)."""
    cells = "".join(
        f"<div class='labkit-card' style='flex:1;min-width:150px;border:1px solid #d5d8dc;"
        f"border-top:4px solid {color};border-radius:4px;padding:6px 10px'>"
        f"<div style='font-size:0.75em;color:#5d6d7e;text-transform:uppercase'>{lw.esc(label)}"
        f"</div><div class='labkit-card-value' style='font-size:1.25em;font-weight:700'>"
        f"{lw.esc(value)}</div><div style='font-size:0.8em;color:#7f8c8d'>{lw.esc(note)}</div>"
        f"</div>" for label, value, note, color in items)
    return f"<div style='display:flex;gap:8px;flex-wrap:wrap;margin:6px 0'>{cells}</div>"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """An HTML table; cells are trusted HTML built here."""
    head = "".join(f"<th style='text-align:left;padding:3px 8px;border-bottom:2px solid #aab7b8'>"
                   f"{lw.esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td style='padding:3px 8px;border-bottom:1px solid "
                                    f"#e5e8e8'>{c}</td>" for c in r) + "</tr>" for r in rows)
    return (f"<table class='labkit-table' style='border-collapse:collapse;font-size:0.9em'>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _ok(flag: bool) -> str:
    return ("<span style='color:#1e8449;font-weight:700'>✔ pass</span>" if flag
            else "<span style='color:#c0392b;font-weight:700'>✖ fail</span>")


def _verdict(predicted: object, actual: object) -> str:
    return ("<span style='color:#1e8449;font-weight:700'>✔ matches</span>" if predicted == actual
            else "<span style='color:#b9770e;font-weight:700'>✖ differs</span>")


def _md_entry(q: lw._Question, e: AnswerEntry | None) -> str:
    if e is None:
        return "not committed"
    text = f"{q.label_for(e.first)} (committed {e.first_at})"
    if e.revised:
        text += f"; revised: {q.label_for(e.current)} ({e.current_at})"
    return text


def _download_link(text: str, filename: str, mime: str, label: str) -> str:
    b64 = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return (f"<a download='{lw.esc(filename)}' href='data:{mime};charset=utf-8;base64,{b64}' "
            f"target='_blank' class='labkit-download' style='color:#1f6fb2;"
            f"text-decoration:underline;font-weight:600'>{lw.esc(label)}</a>")


def answer_key(track_id: str, part: str, kind: str) -> str:
    """AnswerStore key of a part's ``prediction`` or ``checkpoint`` (or ``memo``: part '')."""
    if kind == "memo":
        return f"{track_id}.memo"
    if part not in PARTS or kind not in ("prediction", "checkpoint"):
        raise ValueError(f"part must be one of {PARTS} and kind prediction/checkpoint/memo; "
                         f"got {part!r}, {kind!r}")
    return f"{track_id}.{part}.{kind}"


class LabPart:
    """One lab part. ``lab`` must provide ``track``, ``store`` and ``gate_explore``.

    Class attributes set by each lab: ``lab_id`` (answer-store namespace), ``titles`` and
    ``minutes`` (per part letter) and ``kicker`` (text before "Part X" in the banner).
    """

    letter = ""
    lab_id: ClassVar[str] = ""
    titles: ClassVar[Mapping[str, str]] = {}
    minutes: ClassVar[Mapping[str, str]] = {}
    kicker: ClassVar[str] = ""

    def __init__(self, lab: _LabLike) -> None:
        self.lab = lab
        self.track: Track = lab.track
        self.title = self.titles[self.letter]
        self.controls: dict[str, ipw.ValueWidget] = {}
        self.figures: dict[str, bq.Figure] = {}
        self.callouts: dict[str, lw.Callout] = {}
        self.results: dict[str, object] = {}
        self.readout = ipw.HTML()
        self.readout.add_class("labkit-readout")
        self.details = ipw.HTML()
        self._reveal_html = ipw.HTML(value="")
        self._reveal_html.add_class("labkit-reveal")
        self.math = lw.MathPeek(f"Math peek: {self.title}")
        self._expected: str = ""
        self._init_context()
        self._setup()
        tid = self.track.id
        question, options = self._prediction_spec()
        if self._expected not in [val for _, val in options]:
            options.append((f"{self._expected} (computed by labkit)", self._expected))
        self.predict = lw.Prediction(self.lab_id, answer_key(tid, self.letter, "prediction"),
                                     question, options, lab.store)
        self.reveal = self.predict.reveal_gate(
            self._reveal_html, "Commit your prediction first: the comparison with the computed "
                               "answer appears here.")
        cq, copts, cexpected, cfeedback = self._checkpoint_spec()
        self.checkpoint_expected = cexpected
        self.checkpoint = lw.Checkpoint(self.lab_id, answer_key(tid, self.letter, "checkpoint"),
                                        cq, copts, lab.store, feedback=cfeedback)
        body = ipw.VBox([ipw.VBox(list(self.controls.values())), self.readout,
                         *self.callouts.values(), *self._figure_rows(), self.details])
        body.add_class("labkit-explore-body")
        content: ipw.Widget = body
        if lab.gate_explore:
            content = self.predict.reveal_gate(
                body, "Commit your prediction above to unlock the controls and charts.")
        self.explore = ipw.VBox([content])
        self.explore.add_class(f"labkit-explore-{self.letter}")
        for ctl in self.controls.values():
            ctl.observe(self._on_change, names="value")
        self.predict.on_commit(lambda _entry: self._render_reveal())
        self.update()

    # -- hooks -----------------------------------------------------------------------------
    def _init_context(self) -> None:
        """Attributes every part of a lab needs before ``_setup`` (default: none)."""

    def _setup(self) -> None:
        raise NotImplementedError

    def _hook(self) -> str:
        raise NotImplementedError

    def _prediction_spec(self) -> Spec:
        raise NotImplementedError

    def _checkpoint_spec(self) -> CheckSpec:
        raise NotImplementedError

    def _refresh(self, s: Mapping[str, object]) -> None:
        raise NotImplementedError

    def _reveal_body(self) -> str:
        raise NotImplementedError

    def _state_extra(self) -> dict[str, object]:
        return {}

    def _figure_rows(self) -> list[ipw.Widget]:
        return list(self.figures.values())

    # -- public ----------------------------------------------------------------------------
    @property
    def expected(self) -> str:
        """The prediction's computed answer at the track's default settings."""
        return str(self._expected)

    def settings(self) -> dict[str, object]:
        return {name: plain(ctl.value) for name, ctl in self.controls.items()}

    def update(self) -> None:
        """Recompute from the current control values and redraw (the control callback)."""
        self._refresh(self.settings())
        self._render_reveal()

    def banner(self) -> ipw.HTML:
        tr = self.track
        return ipw.HTML(
            f"<div class='labkit-banner' style='border-left:6px solid #1f6fb2;padding:6px 12px;"
            f"margin:12px 0 6px 0;background:#f4f8fb'>"
            f"<div style='font-size:0.8em;color:#5d6d7e'>{lw.esc(tr.label)} · {self.kicker}Part "
            f"{self.letter} · {self.minutes[self.letter]}</div>"
            f"<div style='font-size:1.3em;font-weight:700'>Part {self.letter}: "
            f"{lw.esc(self.title)}</div>"
            f"<div style='margin-top:4px'>{lw.esc(self._hook())}</div></div>")

    def state(self) -> dict[str, object]:
        """JSON-serialisable snapshot: settings, answers, computed answer and results."""
        pe, ce = self.predict.entry, self.checkpoint.entry
        return plain({
            "part": self.letter, "title": self.title, "track": self.track.id,
            **self._state_extra(), "settings": self.settings(),
            "prediction": {
                "key": self.predict.key, "question": self.predict.question,
                "entry": None if pe is None else pe.to_dict(), "expected": self.expected,
                "first_correct": None if pe is None else pe.first == self.expected,
                "current_correct": None if pe is None else pe.current == self.expected,
            },
            "checkpoint": {
                "key": self.checkpoint.key, "entry": None if ce is None else ce.to_dict(),
                "expected": self.checkpoint_expected,
                "current_correct": None if ce is None else ce.current == self.checkpoint_expected,
            },
            "results": self.results,
        })  # type: ignore[return-value]

    # -- internals -------------------------------------------------------------------------
    def _on_change(self, _change: object) -> None:
        self.update()

    def _render_reveal(self) -> None:
        value = self._reveal_body() if self.predict.committed else ""
        if value != self._reveal_html.value:
            self._reveal_html.value = value

    def _prediction_line(self) -> str:
        e = self.predict.entry
        assert e is not None
        first = self.predict.label_for(e.first)
        line = f"You predicted <b>{lw.esc(first)}</b> {_verdict(e.first, self.expected)}"
        if e.revised:
            line += (f"; revised to <b>{lw.esc(self.predict.label_for(e.current))}</b> "
                     f"{_verdict(e.current, self.expected)}")
        return line

    def _set_details(self, html: str) -> None:
        if html != self.details.value:
            self.details.value = html

    def _set_readout(self, html: str) -> None:
        if html != self.readout.value:
            self.readout.value = html


class _LabLike:
    """What a part needs from its lab (for type checkers only)."""

    track: Track
    store: AnswerStore
    gate_explore: bool
