"""Fitting a figure's text to its size, and bar values clear of the axis.

* :data:`FIG_MARGIN` -- the plot margins every figure starts from;
* :class:`ChartFit` -- a long y title in full in the header (short on the axis), ordinal
  x labels turned when wider than their bars, a right margin that holds the last tick;
* :class:`BarValueLabels` -- bar values as a Label mark placed by
  :func:`value_label_positions` (inside a bar's end, or beyond it where bqplot's would
  cross the x axis).

The pixel figures are estimates of how Chromium draws bqplot's text
(``tests/test_chart_layout.py`` pins them).
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from labkit.core.format import d3_format
from labkit.ui.headless import LazyModule
from labkit.ui.sync import update_marks

if TYPE_CHECKING:
    import bqplot as bq
else:
    bq = LazyModule("bqplot")  # imported on first use: never in a headless run

FIG_MARGIN = {"top": 16, "bottom": 50, "left": 72, "right": 20}
"""Plot margins (px): no title or legend inside the SVG, so the top needs little room."""

def plain_g(fmt: str, ticks: Sequence[float]) -> str:
    """A ``g`` format with the digits to write ticks below 10^6 in full (``100``, not
    ``1e+2``); any other format as it is."""
    m = re.fullmatch(r"(,?)\.(\d+)(~?)g", fmt)
    if m is None:
        return fmt
    top = max(abs(t) for t in ticks)
    digits = min(6, max(int(m.group(2)), math.floor(math.log10(top)) + 1 if top >= 1 else 1))
    return f"{m.group(1)}.{digits}{m.group(3)}g"


# -- fitting a figure's text to its size (estimates of how Chromium draws bqplot's text) ----

CONTENT_PX = 1000       # a cell's output at a 1400 px page; a row of n figures: 1/n each
TICK_CHAR_PX = 6.5      # a character of a 12 px tick label (lower-case words: ~5.5 drawn)
TITLE_CHAR_PX = 6.5     # a character of a 14 px axis title (~6 drawn)
DIGIT_PX = 7.0          # a digit of a tick label ("365" is 20 px long)
DROP_CHAR_PX = 6.0      # a character of a turned label, for how far below the axis it ends
TICK_LINE_PX = 14       # a line of tick text: turned labels stay this far apart
TICK_ROTATIONS = (30, 45, 60, 90)   # angles tried, in order, for labels wider than bars
MAX_EXTRA_LEFT = 40     # px of left margin turned labels may add before a steeper angle
MAX_EXTRA_TOP = 24      # px of top margin a long y title may add before it is shortened
AXIS_NOTE, ELLIPSIS = "Vertical axis: ", "…"  # the header's words before a y title in full
_X_LABEL_OFFSET, _TICK_PAD = 36, 9  # px below the x axis: its title; its tick labels
_BELOW_TITLE = FIG_MARGIN["bottom"] - _X_LABEL_OFFSET


def text_px(text: str, char_px: float = TICK_CHAR_PX) -> float:
    """An estimate of the width (px) of ``text`` on a chart (digits :data:`DIGIT_PX`)."""
    digits = sum(c.isdigit() for c in text)
    return (len(text) - digits) * char_px + digits * max(char_px, DIGIT_PX)


def short_label(text: str, max_chars: int) -> str:
    """``text`` in at most ``max_chars`` characters, cut where its words allow: its head
    with the leading clauses of its closing parenthesis (clauses end at ``;`` ``:`` ``,``;
    the last ones go first: ``"a / b (capped at 4; the table has ...)"`` -> ``"a / b
    (capped at 4)"``), else the head, else the head's first words and an ellipsis."""
    text = " ".join(str(text).split())
    if len(text) <= max_chars:
        return text
    head, paren, rest = text.partition(" (")
    inner = rest.removesuffix(")")
    cuts = [m.start() for m in re.finditer(r"[;:,]", inner)] if paren else []
    for c in [*(f"{head} ({inner[:i].strip()})" for i in reversed(cuts)), head]:
        if len(c) <= max_chars and not c.endswith(" ()"):
            return c
    words = head.split(" ")
    starts = (" ".join(words[:n]) for n in range(len(words), 0, -1))  # longest first
    return next((f + ELLIPSIS for f in starts if len(f) < max_chars),
                head[:max(1, max_chars - 1)] + ELLIPSIS)


class ChartFit:
    """Lays a figure's text out for ``width_px`` (from :func:`frame_figures`), keeping the
    plot as tall as ``figure(height=...)`` made it (the figure grows instead): a y title
    longer than the plot gets a deeper top margin (it is centred on the plot), then shows
    :func:`short_label` on the axis and :attr:`y_full` in the header; ordinal x labels
    wider than their bars turn, with room below; the right margin holds the last x tick
    label. It runs again when the y title, the x ticks or domain or the categories change.
    """

    def __init__(self, fig: bq.Figure, x_axis: bq.Axis, y_axis: bq.Axis, *, height: int) -> None:
        self.fig, self.x_axis, self.y_axis = fig, x_axis, y_axis
        self.plot_height = float(height - FIG_MARGIN["top"] - FIG_MARGIN["bottom"])
        self.width_px = float(CONTENT_PX)
        self.y_full = self.y_shown = str(y_axis.label or "")
        self.rotation, self.value_labels = 0, list[BarValueLabels]()
        self._busy, self._watched = False, set[int]()
        self._ordinal = isinstance(x_axis.scale, bq.OrdinalScale)
        y_axis.observe(self._on_y_label, names="label")
        x_axis.observe(self.apply, names=["tick_values", "tick_format"])
        if self._ordinal:  # its labels are the marks' categories
            fig.observe(self.apply, names="marks")
        else:
            x_axis.scale.observe(self.apply, names=["min", "max"])

    def _on_y_label(self, change: Mapping[str, object]) -> None:
        if not self._busy and change["new"] != self.y_shown:
            self.y_full = str(change["new"] or "")
            self.apply()

    def categories(self) -> list[str]:
        """The ordinal x axis's labels: the x values of the marks on its scale (watched)."""
        out: list[str] = []
        for mark in self.fig.marks:
            if mark.scales.get("x") is not self.x_axis.scale or np.ndim(mark.x) != 1:
                continue
            if id(mark) not in self._watched:
                self._watched.add(id(mark))
                mark.observe(self.apply, names="x")
            out += [str(v) for v in np.asarray(mark.x).tolist() if str(v) not in out]
        return out

    def _turned(self, texts: Sequence[str]) -> tuple[int, int, int]:
        """(angle, left margin, x title offset) for ordinal tick labels ``texts``."""
        left = FIG_MARGIN["left"]
        band = (self.width_px - left - FIG_MARGIN["right"]) / max(1, len(texts))
        if not texts or max(text_px(t) for t in texts) + 8 <= band:
            return 0, left, _X_LABEL_OFFSET
        for angle in TICK_ROTATIONS:  # the first that keeps them apart and the left small
            a, need = math.radians(angle), left
            for _ in range(2):  # a wider left margin narrows the bars: once more
                band = (self.width_px - need - FIG_MARGIN["right"]) / len(texts)
                reach = max(text_px(t) * math.cos(a) - (i + 0.5) * band
                            for i, t in enumerate(texts))
                need = max(left, math.ceil(reach + 4))
            if band * math.sin(a) >= TICK_LINE_PX and need - left <= MAX_EXTRA_LEFT:
                break
        drop = (max(text_px(t, DROP_CHAR_PX) for t in texts) * math.sin(a)
                + TICK_LINE_PX * math.cos(a))
        return angle, need, max(_X_LABEL_OFFSET, math.ceil(_TICK_PAD + drop + 16))

    def _right_margin(self, plot_w: float, texts: Sequence[str]) -> int:
        """The right margin that holds the last x tick label centred on its tick."""
        axis, scale, need = self.x_axis, self.x_axis.scale, 0.0
        if self._ordinal and texts and not self.rotation:
            need = (text_px(texts[-1]) - plot_w / len(texts)) / 2
        elif not self._ordinal and None not in (scale.min, scale.max) and scale.max > scale.min:
            lo, hi = float(scale.min), float(scale.max)
            ticks = np.asarray(hi if axis.tick_values is None else axis.tick_values,
                               dtype=float).ravel()
            ticks = ticks[(ticks >= lo - 1e-9 * abs(lo)) & (ticks <= hi + 1e-9 * abs(hi))]
            f = math.log10 if isinstance(scale, bq.LogScale) and lo > 0 else float
            with contextlib.suppress(ValueError):  # no tick, or a format d3_format lacks
                t = float(ticks.max())
                need = (text_px(d3_format(str(axis.tick_format or ",.6~g"), t)) / 2
                        - (f(hi) - f(t)) / (f(hi) - f(lo)) * plot_w)
        return max(FIG_MARGIN["right"], math.ceil(need + 6))

    def apply(self, _change: object = None) -> None:
        """Lay the figure's text out again (only what changed is sent)."""
        if self._busy:
            return
        self._busy = True
        try:
            m, x_traits = dict(FIG_MARGIN), {}
            room = (self.plot_height + 2 * (m["top"] + MAX_EXTRA_TOP) - 4) / TITLE_CHAR_PX
            self.y_shown = short_label(self.y_full, max(4, math.floor(room)))
            over = (text_px(self.y_shown, TITLE_CHAR_PX) - self.plot_height) / 2 + 2
            m["top"] = max(m["top"], math.ceil(over))
            texts = self.categories() if self._ordinal else []
            if self._ordinal:
                self.rotation, m["left"], offset = self._turned(texts)
                m["bottom"] = offset + _BELOW_TITLE
                x_traits = {"tick_rotate": -self.rotation, "label_offset": f"{offset}px",
                            "tick_style": {"text-anchor": "end" if self.rotation else "middle"}}
            m["right"] = self._right_margin(self.width_px - m["left"] - m["right"], texts)
            height = self.plot_height + m["top"] + m["bottom"]
            update_marks([(self.fig, {"fig_margin": m}), (self.x_axis, x_traits),
                          (self.fig.layout, {"height": f"{height:.0f}px"}),
                          (self.y_axis, {"label": self.y_shown})])
            header = self.fig.labkit_header  # made by figure() before its ChartFit
            header.axis_note = self.y_full if self.y_shown != self.y_full else ""
            header.render()
        finally:
            self._busy = False
        for labels in self.value_labels:
            labels.refresh()


# -- value labels on bars --------------------------------------------------------------------

VALUE_LABEL_PX, VALUE_LABEL_GAP, VALUE_LABEL_INK = 12, 3, "#222222"


def value_label_positions(values: Sequence[float], lo: float, hi: float, plot_px: float, *,
                          base: float = 0.0, pad: float = 0.025) -> list[float]:
    """Where (data units) to centre bar value labels on a linear axis [lo, hi] ``plot_px``
    tall (``pad``: ``padding_y``): :data:`VALUE_LABEL_GAP` px inside a bar's end when the
    bar holds one (as bqplot draws them), else as far beyond it (where bqplot's would cross
    the x axis) unless the plot's edge leaves no room. A value not finite gets ``base``."""
    if not (hi > lo and plot_px > 0):
        return [float(base)] * len(values)
    per_px = (hi - lo) / (plot_px * (1 - 2 * pad))
    need, holds = VALUE_LABEL_GAP + VALUE_LABEL_PX / 2, 2 * VALUE_LABEL_GAP + VALUE_LABEL_PX
    foot, out = min(max(float(base), lo), hi), []
    for v in map(float, values):
        if not math.isfinite(v):
            out.append(float(base))
            continue
        end, up = min(max(v, lo), hi), (1.0 if v >= base else -1.0)
        beyond = ((hi - end) if up > 0 else (end - lo)) / per_px + plot_px * pad
        outside = abs(end - foot) / per_px < holds and beyond >= holds
        out.append(end + up * need * per_px * (1.0 if outside else -1.0))
    return out


def value_label_text(fmt: str, value: float) -> str:
    """``value`` as a bar's label writes it: ``fmt``, a ``g`` format widened to write a
    value below 10^6 in full (no e+); "" when it is not finite."""
    v = float(value)
    if not math.isfinite(v):
        return ""
    with contextlib.suppress(ValueError):
        return d3_format(plain_g(fmt, [v]) if v else fmt, v)
    return d3_format(",.6~g", v)


class BarValueLabels:
    """The value labels of a 1-D vertical Bars mark made with ``label_display=True`` (which
    bqplot draws inward from a bar's end, however short) as a :class:`bqplot.Label` placed
    by :func:`value_label_positions`, following the bars and the y scale's domain."""

    def __init__(self, bars: bq.Bars, fig: bq.Figure) -> None:
        self.bars, self.fig, self.fmt = bars, fig, str(bars.label_display_format or ".2f")
        bars.label_display = False
        self.mark = bq.Label(x=np.asarray(bars.x), y=np.zeros(np.size(bars.x)),
                             text=[""] * np.size(bars.x), scales=dict(bars.scales),
                             colors=[VALUE_LABEL_INK], default_size=VALUE_LABEL_PX,
                             font_weight="normal", align="middle", enable_hover=False)
        bars.observe(self.refresh, names=["x", "y", "visible", "base", "label_display_format"])
        bars.scales["y"].observe(self.refresh, names=["min", "max"])
        fig.labkit_fit.value_labels.append(self)
        self.refresh()

    @staticmethod
    def wanted(mark: bq.Mark) -> bool:
        return (isinstance(mark, bq.Bars) and bool(mark.label_display)
                and mark.orientation == "vertical" and np.ndim(mark.y) <= 1)

    def refresh(self, _change: object = None) -> None:
        """Place and write the labels for the bars as they are now."""
        self.fmt = str(self.bars.label_display_format or ".2f")
        values = np.asarray(self.bars.y, dtype=float).ravel()
        xs = np.asarray(self.bars.x)[:values.size]
        values, scale = values[:xs.size], self.bars.scales["y"]
        base, finite = float(self.bars.base or 0.0), values[np.isfinite(values)].tolist()
        lo = float(scale.min) if scale.min is not None else min([base, *finite])
        hi = float(scale.max) if scale.max is not None else max([base, *finite])
        plot, pad = self.fig.labkit_fit.plot_height, float(self.fig.padding_y or 0.0)
        if isinstance(scale, bq.LogScale) and lo > 0:  # place in decades: linear there
            logs = np.log10(np.where(values > 0, values, lo)).tolist()
            ys = [10.0 ** t for t in value_label_positions(
                logs, math.log10(lo), math.log10(hi), plot, base=math.log10(max(base, lo)),
                pad=pad)]
        else:
            ys = value_label_positions(values.tolist(), lo, hi, plot, base=base, pad=pad)
        update_marks({self.mark: {
            "x": xs, "y": np.asarray(ys, dtype=float), "visible": bool(self.bars.visible),
            "text": np.asarray([value_label_text(self.fmt, v) for v in values.tolist()])}})

