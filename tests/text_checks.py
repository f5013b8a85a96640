"""What a student reads must be clean: no raw LaTeX outside math, no NaN or inf, no
"= 0 ms" left by rounding, no internal id of a track, device or model where a name belongs.
Shared by the widget sweep (tests/labs/test_displayed_text.py) and the executed-notebook
check (tests/test_notebooks.py)."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping

import ipywidgets as ipw

from labkit.registries.hardware import HARDWARE
from labkit.registries.models import MODELS
from labkit.tracks import TRACKS

_MATH = re.compile(r"\$\$.*?\$\$|\$.*?\$|\\\(.*?\\\)|\\\[.*?\\\]", re.S)
_TAG = re.compile(r"<[^>]+>")
_CODE = re.compile(r"<code>.*?</code>|<pre>.*?</pre>|```.*?```|`[^`\n]*`", re.S)
_ZERO = re.compile(r"= 0(?:\.0+)? ?(?:ns|us|µs|ms|s|mWh|Wh|mJ|J|B|kB|MB|GB|tokens)\b")
_WORDS = {"robotaxi"}  # ids that are also the English word a sentence may use
_IDS = sorted((set(TRACKS) | set(HARDWARE) | set(MODELS)) - _WORDS)
_ID = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(i) for i in _IDS) + r")(?![\w-])")


_ENOTATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][+-]?\d+\b")
_WH = re.compile(r"(?<![\w/])(?:[kmµu]?Wh)\b")
_JOULE = re.compile(r"(?<![\w/])(?:[kmµu]?J)\b(?!/)")


def energy_units(text: str) -> set[str]:
    """The energy unit families a text uses: 'Wh' (mWh, Wh, kWh), 'J' (µJ, mJ, J, kJ)."""
    prose = plain(_CODE.sub(" ", text or ""))
    return ({"Wh"} if _WH.search(prose) else set()) | ({"J"} if _JOULE.search(prose) else set())


def plain(text: str) -> str:
    """The prose around the math: typeset formulas and tags removed, entities decoded."""
    return html.unescape(_TAG.sub(" ", _MATH.sub(" ", text or "")))


def problems(texts: Mapping[str, str]) -> list[str]:
    """One line per problem found in ``texts`` (where -> HTML or Markdown text)."""
    found = []
    for where, text in texts.items():
        prose = plain(_CODE.sub(" ", text or ""))
        if "\\" in prose:
            i = prose.index("\\")
            found.append(f"{where}: raw LaTeX ...{prose[max(0, i - 40):i + 40]}...")
        if re.search(r"\b(?:nan|inf)\b", prose, re.I):
            found.append(f"{where}: NaN/inf in {prose[:120]!r}")
        if m := _ZERO.search(prose):
            found.append(f"{where}: a rounded zero {m.group(0)!r}")
        if m := _ID.search(prose):
            found.append(f"{where}: internal id {m.group(0)!r}")
        if m := _ENOTATION.search(prose):
            found.append(f"{where}: e-notation {m.group(0)!r} in student text")
        if len(energy_units(text)) > 1 and "math" not in where:   # a derivation converts
            found.append(f"{where}: two energy units (Wh and J) in one text: {prose[:160]!r}")
    return found


def control_ends(ctl: ipw.ValueWidget) -> list[object]:
    """A control's two extreme values (first and last option, or slider min and max)."""
    opts = getattr(ctl, "options", None)
    if opts:
        values = [o[1] if isinstance(o, tuple) else o for o in opts]
        return [values[0], values[-1]]
    if isinstance(ctl, ipw.FloatLogSlider):
        return [ctl.base ** ctl.min, ctl.base ** ctl.max]
    return [ctl.min, ctl.max]
