"""Text contrast (WCAG 2.1 AA, 1.4.3): every coloured text a part renders -- readouts,
cards, callouts of every kind, tables, math peeks, reveals, question widgets and the
synthesis -- is at least 4.5:1 against the background it sits on (the nearest enclosing
``background``, white when none)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from labkit import ui as lw
from labkit.core.answers import AnswerStore
from labkit.labs.registry import LABS
from labkit.tracks import TRACKS

AA = 4.5
_COLOR = re.compile(r"(?:^|;)\s*color\s*:\s*(#[0-9a-fA-F]{3,6})\b")
_BG = re.compile(r"background(?:-color)?\s*:\s*(#[0-9a-fA-F]{3,6})\b")
_VOID = {"br", "hr", "img", "input", "meta", "link", "col", "wbr"}


def _luminance(hexa: str) -> float:
    h = hexa.lstrip("#")
    h = "".join(c * 2 for c in h) if len(h) == 3 else h
    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(int(h[i:i + 2], 16) / 255) for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg: str, bg: str) -> float:
    hi, lo = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


class _Reader(HTMLParser):
    """(text colour, background, text) of every coloured element with text in it."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, str | None, str]] = [("", None, "#ffffff")]
        self.found: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        style = dict(attrs).get("style") or ""
        _, color, bg = self.stack[-1]
        c, b = _COLOR.search(style), _BG.search(style)
        entry = (tag, c.group(1) if c else color, b.group(1) if b else bg)
        if tag not in _VOID:
            self.stack.append(entry)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data: str) -> None:
        _, color, bg = self.stack[-1]
        if color and data.strip():
            self.found.append((color, bg, data.strip()[:40]))


def low_contrast(html_text: str) -> list[str]:
    r = _Reader()
    r.feed(html_text)
    return sorted({f"{fg} on {bg} ({contrast(fg, bg):.2f}:1): {t!r}" for fg, bg, t in r.found
                   if contrast(fg, bg) < AA})


def test_the_reader_finds_low_contrast_text_and_its_background():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert low_contrast("<span style='color:#7f8c8d'>grey</span>")            # 3.48:1
    assert not low_contrast("<span style='color:#566573'>grey</span>")
    assert low_contrast("<div style='background:#111'><b style='color:#566573'>x</b></div>")
    assert not low_contrast("<div style='color:#7f8c8d'><span style='color:#222'>x</span></div>")


def test_every_text_colour_and_callout_kind_meets_aa():
    for name, colour in lw.TEXT.items():
        assert not low_contrast(f"<span style='color:{colour}'>{name}</span>"), name
    for kind in lw.CALLOUT_KINDS:
        c = lw.Callout(kind)
        c.show("Title", "detail", "recovery")
        assert not low_contrast(c.value), (kind, low_contrast(c.value))


@pytest.mark.parametrize("lab_id", list(LABS))
@pytest.mark.parametrize("track", list(TRACKS))
def test_every_coloured_text_a_part_renders_meets_aa(tmp_path, monkeypatch, lab_id, track):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    lab = LABS[lab_id].lab(track, store=AnswerStore(tmp_path / "a.json"), gate_explore=False)
    pages = {"header": lab.header().value}
    for p in lab.parts():
        pages |= {f"{p.letter} banner": p.banner().value, f"{p.letter} readout": p.readout.value,
                  f"{p.letter} details": p.details.value, f"{p.letter} math": p.math.body}
        pages |= {f"{p.letter} callout {n}": c.value for n, c in p.callouts.items() if c.active}
        p.predict.commit(p.expected)
        p.checkpoint.commit(p.checkpoint.options[0])
        pages[f"{p.letter} reveal"] = p._reveal_html.value
        for q in (p.predict, p.checkpoint):
            pages |= {f"{p.letter} {q.kind_label} {n}": getattr(q, n).value
                      for n in ("status", "check_html", "feedback_html", "credit_html")}
    pages |= {f"synthesis {i}": getattr(w, "value", "") for i, w in
              enumerate(lab.synthesis(write=False).children)
              if isinstance(getattr(w, "value", None), str)}
    bad = {k: low_contrast(v) for k, v in pages.items() if low_contrast(v)}
    assert not bad, "\n".join(f"{k}: {v}" for k, v in bad.items())
