"""What a student reads, for every lab, track and part, at the defaults and at each
control's ends: no raw LaTeX outside math, no NaN or inf, no "= 0 ms" left by rounding, no
internal id of a track, device or model where a name belongs."""

from __future__ import annotations

import html
import re

import ipywidgets as ipw

from labkit.registries.hardware import HARDWARE
from labkit.registries.models import MODELS
from labkit.tracks import TRACKS

_MATH = re.compile(r"\$\$.*?\$\$|\$.*?\$|\\\(.*?\\\)", re.S)
_TAG = re.compile(r"<[^>]+>")
_ZERO = re.compile(r"= 0(?:\.0+)? ?(?:ns|us|µs|ms|s|mWh|Wh|mJ|J|B|kB|MB|GB|tokens)\b")
_IDS = sorted(set(TRACKS) | set(HARDWARE) | set(MODELS))
_ID = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(i) for i in _IDS) + r")(?![\w-])")


def _plain(text: str) -> str:
    """The prose around the math: typeset formulas and tags removed, entities decoded."""
    return html.unescape(_TAG.sub(" ", _MATH.sub(" ", text or "")))


def _texts(part) -> dict[str, str]:
    out = {"readout": part.readout.value, "details": part.details.value,
           "math": part.math.body}
    out.update({f"callout {n}": c.value for n, c in part.callouts.items() if c.active})
    return out


def _problems(texts: dict[str, str]) -> list[str]:
    found = []
    for where, text in texts.items():
        plain = _plain(text)
        code_free = re.sub(r"<code>.*?</code>", " ", text or "", flags=re.S)
        if "\\" in plain:
            i = plain.index("\\")
            found.append(f"{where}: raw LaTeX ...{plain[max(0, i - 40):i + 40]}...")
        if re.search(r"\b(?:nan|inf)\b", plain, re.I):
            found.append(f"{where}: NaN/inf in {plain[:120]!r}")
        if m := _ZERO.search(plain):
            found.append(f"{where}: a rounded zero {m.group(0)!r}")
        if m := _ID.search(_plain(code_free)):
            found.append(f"{where}: internal id {m.group(0)!r}")
    return found


def _ends(ctl: ipw.ValueWidget) -> list[object]:
    opts = getattr(ctl, "options", None)
    if opts:
        values = [o[1] if isinstance(o, tuple) else o for o in opts]
        return [values[0], values[-1]]
    if isinstance(ctl, ipw.FloatLogSlider):
        return [ctl.base ** ctl.min, ctl.base ** ctl.max]
    return [ctl.min, ctl.max]


def test_every_shown_sentence_is_clean(any_lab):
    lab = any_lab
    found = []
    for letter in "ABCD":
        part = lab.part(letter)
        found += [f"{letter} defaults, {p}" for p in _problems(_texts(part))]
        for name, ctl in part.controls.items():
            if ctl.disabled:
                continue
            start = ctl.value
            for value in _ends(ctl):
                ctl.value = value
                found += [f"{letter} {name}={value!r}, {p}" for p in _problems(_texts(part))]
            ctl.value = start
    assert not found, "\n".join(found[:20])
