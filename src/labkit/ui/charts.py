"""Chart helpers: bqplot scales, figures and marks, and cheap updates.

* :func:`figure` -- a Figure with labelled axes and units, sized for a notebook column;
  :func:`make_scale` / :func:`set_domain` for fixed-domain scales, :func:`log_domain` /
  :func:`lin_top` to size them from data.
* marks -- lines, bars, scatter, vertical / horizontal marker lines
  (:func:`vline_mark`, :func:`set_vline`, ...).
* :class:`~labkit.ui.chart_header.ChartHeader` / :func:`framed` / :func:`frame_figures` --
  a figure's title and legend as HTML above the plot: never over the data, never under
  bqplot's toolbar, and wrapped instead of clipped when long.
* :func:`log_ticks` / :func:`tick_labels` -- a log axis ticks at 1-2-5, 1-3 or whole decades
  (at most :data:`MAX_LOG_TICKS`) with labels that differ, kept in step with its scale.
* :mod:`labkit.ui.chart_fit` fits each figure's text to its size (:class:`ChartFit`,
  :class:`BarValueLabels`); :mod:`labkit.ui.sync` holds :func:`update_marks`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from labkit.core.format import d3_format
from labkit.ui.chart_fit import (
    CONTENT_PX,
    FIG_MARGIN,
    BarValueLabels,
    ChartFit,
    plain_g,
)
from labkit.ui.headless import LazyModule, Sink, active
from labkit.ui.html import PALETTE, SERIES
from labkit.ui.sync import update_marks

if TYPE_CHECKING:
    import bqplot as bq
    import ipywidgets as ipw
else:
    bq = LazyModule("bqplot")  # imported on first use: never in a headless run
    ipw = LazyModule("ipywidgets")


def make_scale(kind: str = "linear", lo: float | None = None, hi: float | None = None,
               **kwargs: object) -> bq.Scale:
    """A bqplot scale: ``linear`` | ``log`` | ``ordinal``, with an optional fixed domain
    (a :class:`~labkit.ui.headless.Sink` in a headless build)."""
    if active():
        return Sink(min=lo, max=hi)
    if kind == "ordinal":
        return bq.OrdinalScale(**kwargs)
    cls = {"linear": bq.LinearScale, "log": bq.LogScale}[kind]
    kw = dict(kwargs)
    if lo is not None:
        kw["min"] = float(lo)
    if hi is not None:
        kw["max"] = float(hi)
    return cls(**kw)


def set_domain(scale: bq.Scale, lo: float, hi: float) -> None:
    """Set a scale's min/max explicitly (one sync), so a change is visible on the axis."""
    lo, hi = float(lo), float(hi)
    if scale.min != lo or scale.max != hi:
        with scale.hold_sync():
            scale.min, scale.max = lo, hi




def figure(marks: Sequence[bq.Mark], x_scale: bq.Scale, y_scale: bq.Scale, *, x_label: str,
           y_label: str, title: str = "", height: int = 300, legend: bool | None = None,
           x_tick_format: str | None = None, y_tick_format: str | None = None,
           x_tick_values: Sequence[float] | None = None,
           legend_location: str = "top-left") -> bq.Figure:
    """A Figure with labelled axes (put units in the labels), sized for a notebook column.

    ``title`` and the legend go to the figure's :class:`ChartHeader` (``fig.labkit_header``),
    shown above the plot by :func:`framed`: the legend lists the marks made with
    ``legend=True`` (``legend=False`` here: none), aligned as ``legend_location`` says
    (``*-left``, ``top`` / ``bottom``, ``*-right``). A log axis gets :func:`log_ticks` that
    follow its scale, labelled with its tick format when that tells them apart (else
    :data:`LOG_TICK_FORMAT`). :class:`ChartFit` (``fig.labkit_fit``) fits the axes' text to
    the figure; bars made with ``label_display=True`` get :class:`BarValueLabels`.
    """
    if legend_location not in _ALIGN:
        raise ValueError(f"legend_location must be one of {sorted(_ALIGN)}; "
                         f"got {legend_location!r}")
    if active():
        return Sink(marks=list(marks))
    x_kw: dict[str, object] = {"tick_format": x_tick_format} if x_tick_format else {}
    if x_tick_values is not None:
        x_kw["tick_values"] = np.asarray(x_tick_values, dtype=float)
    x_axis = bq.Axis(scale=x_scale, label=x_label, side="bottom", label_offset="36px",
                     **x_kw)
    y_kw: dict[str, object] = {"tick_format": y_tick_format} if y_tick_format else {}
    y_axis = bq.Axis(scale=y_scale, label=y_label, side="left", label_offset="52px", **y_kw)
    fig = bq.Figure(marks=list(marks), axes=[x_axis, y_axis], title="",
                    fig_margin=dict(FIG_MARGIN), legend_location=legend_location,
                    layout=ipw.Layout(width="100%", max_width="100%", height=f"{height}px",
                                      min_width="320px"),
                    animation_duration=0)
    _follow_log_scale(x_axis, x_tick_format, fixed=x_tick_values is not None)
    _follow_log_scale(y_axis, y_tick_format, fixed=False)
    from labkit.ui.chart_header import ChartHeader

    fig.labkit_header = ChartHeader(fig, title, legend=legend, align=_ALIGN[legend_location])
    fig.labkit_fit = ChartFit(fig, x_axis, y_axis, height=height)
    value_labels = [BarValueLabels(m, fig) for m in marks if BarValueLabels.wanted(m)]
    if value_labels:
        fig.marks = [*fig.marks, *(v.mark for v in value_labels)]
    fig.labkit_fit.apply()
    return fig


def line_mark(x: object, y: object, x_scale: bq.Scale, y_scale: bq.Scale, *,
              colors: Sequence[str] = SERIES, labels: Sequence[str] | None = None,
              line_style: str = "solid", stroke_width: float = 2.5,
              legend: bool = False, **kwargs: object) -> bq.Lines:
    """Lines (one curve, or several when ``y`` is 2-D)."""
    if active():
        return Sink()
    return bq.Lines(x=x, y=y, scales={"x": x_scale, "y": y_scale}, colors=list(colors),
                    labels=list(labels or []), line_style=line_style,
                    stroke_width=stroke_width, display_legend=legend, **kwargs)


def bar_mark(x: object, y: object, x_scale: bq.Scale, y_scale: bq.Scale, *,
             colors: Sequence[str] = SERIES, labels: Sequence[str] | None = None,
             kind: str = "stacked", legend: bool = False, **kwargs: object) -> bq.Bars:
    """Bars; a 2-D ``y`` (series x categories) is stacked or grouped (``kind``)."""
    if active():
        return Sink()
    return bq.Bars(x=x, y=y, scales={"x": x_scale, "y": y_scale}, colors=list(colors),
                   labels=list(labels or []), type=kind, display_legend=legend,
                   padding=0.25, **kwargs)


def scatter_mark(x: object, y: object, x_scale: bq.Scale, y_scale: bq.Scale, *,
                 color: str = PALETTE["red"], size: int = 80, **kwargs: object) -> bq.Scatter:
    if active():
        return Sink()
    return bq.Scatter(x=x, y=y, scales={"x": x_scale, "y": y_scale}, colors=[color],
                      default_size=size, **kwargs)


def vline_mark(x: float, x_scale: bq.Scale, *, color: str = PALETTE["red"],
               line_style: str = "dashed", label: str | None = None,
               legend: bool = False) -> bq.Lines:
    """A vertical marker line at ``x`` spanning the full plot height (own 0..1 y scale)."""
    if active():
        return Sink()
    unit = bq.LinearScale(min=0.0, max=1.0)
    return bq.Lines(x=[float(x), float(x)], y=[0.0, 1.0], scales={"x": x_scale, "y": unit},
                    colors=[color], line_style=line_style, stroke_width=2,
                    labels=[label] if label else [], display_legend=legend)


def vlines_mark(xs: Sequence[float], x_scale: bq.Scale, *, color: str = PALETTE["light"],
                line_style: str = "dotted") -> bq.Lines:
    """Several fixed vertical rules (e.g. bucket boundaries) in one mark."""
    if active():
        return Sink()
    unit = bq.LinearScale(min=0.0, max=1.0)
    xv = np.asarray([[float(x), float(x)] for x in xs])
    yv = np.tile([0.0, 1.0], (len(xs), 1))
    return bq.Lines(x=xv, y=yv, scales={"x": x_scale, "y": unit}, colors=[color] * len(xs),
                    line_style=line_style, stroke_width=1.5)


def hline_mark(y: float, y_scale: bq.Scale, *, color: str = PALETTE["red"],
               line_style: str = "dashed", label: str | None = None,
               legend: bool = False) -> bq.Lines:
    """A horizontal rule at ``y`` spanning the full plot width (own 0..1 x scale)."""
    if active():
        return Sink()
    unit = bq.LinearScale(min=0.0, max=1.0)
    return bq.Lines(x=[0.0, 1.0], y=[float(y), float(y)], scales={"x": unit, "y": y_scale},
                    colors=[color], line_style=line_style, stroke_width=2,
                    labels=[label] if label else [], display_legend=legend)


def tooltip(fields: Sequence[str], labels: Sequence[str]) -> bq.Tooltip:
    """A mark's tooltip (a :class:`~labkit.ui.headless.Sink` in a headless build)."""
    if active():
        return Sink()
    return bq.Tooltip(fields=list(fields), labels=list(labels))


def set_vline(mark: bq.Lines, x: float | None) -> None:
    """Move a :func:`vline_mark` to ``x`` (None hides it)."""
    if x is None or not math.isfinite(x):
        update_marks({mark: {"visible": False}})
    else:
        update_marks({mark: {"x": [float(x), float(x)], "visible": True}})


def set_hline(mark: bq.Lines, y: float) -> None:
    update_marks({mark: {"y": [float(y), float(y)]}})


# -- domains --------------------------------------------------------------------------------

# Axis ends snap to these mantissas: a scale's bounds then change only when the data crosses
# one (a slider move rarely moves an axis, and bqplot redraws no axis it was not sent).
_LINEAR_STEPS = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
_LOG_STEPS = (1.0, 2.0, 5.0, 10.0)


def nice_up(x: float, steps: tuple[float, ...] = _LINEAR_STEPS) -> float:
    """The smallest ``m * 10**k`` >= ``x`` with ``m`` in ``steps`` (x > 0; else x)."""
    if not (math.isfinite(x) and x > 0):
        return x
    decade = 10.0 ** math.floor(math.log10(x))
    for m in steps:
        if m * decade >= x * (1 - 1e-12):
            return m * decade
    return 10.0 * decade


def nice_down(x: float, steps: tuple[float, ...] = _LOG_STEPS) -> float:
    """The largest ``m * 10**k`` <= ``x`` with ``m`` in ``steps`` (x > 0; else x)."""
    if not (math.isfinite(x) and x > 0):
        return x
    decade = 10.0 ** math.floor(math.log10(x))
    for m in reversed(steps):
        if m * decade <= x * (1 + 1e-12):
            return m * decade
    return decade


def log_domain(values: object, pad: float = 1.6) -> tuple[float, float]:
    """A log axis holding ``values`` (positive, finite ones) with ``pad`` room each way,
    its ends snapped out to 1, 2, 5 x 10^k; (1e-3, 1) when nothing is positive."""
    a = np.asarray(values, dtype=float).ravel()
    a = a[np.isfinite(a) & (a > 0)]
    if a.size == 0:
        return 1e-3, 1.0
    lo, hi = float(a.min()) / pad, float(a.max()) * pad
    if not hi > lo:
        lo, hi = lo / 10, lo * 10
    return nice_down(lo), nice_up(hi, _LOG_STEPS)


def lin_top(values: object, floor: float = 1.0, pad: float = 1.25) -> float:
    """The top of a linear axis from 0: ``pad`` x the largest finite value (at least
    ``floor``), snapped up to 1, 1.5, 2, 3, 4, 5, 6, 8 x 10^k."""
    a = np.asarray(values, dtype=float).ravel()
    a = a[np.isfinite(a)]
    top = float(a.max()) * pad if a.size else floor
    return max(floor, nice_up(top))


# -- log-axis ticks -------------------------------------------------------------------------

LOG_TICK_FORMAT = ".3~s"
PLAIN_LOG_FORMAT = ",.3~g"
"""The labels of a log axis whose own tick format cannot tell its ticks apart (2k, 5k)."""
MAX_LOG_TICKS = 7
"""The most ticks :func:`log_ticks` puts on a log axis (labels stay clear of each other)."""


def log_ticks(lo: float | None, hi: float | None,
              max_ticks: int = MAX_LOG_TICKS) -> list[float]:
    """Tick values for a log axis over [lo, hi]: 1-2-5, else 1-3, else whole decades x 10^k
    in range (every n-th decade past ``max_ticks``); the ends when nothing nicer fits.

    [] when the range is not 0 < lo < hi.
    """
    if lo is None or hi is None or not (0 < lo < hi and math.isfinite(hi)):
        return []
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))

    def within(mantissas: Sequence[float]) -> list[float]:
        vals = (float(f"{m}e{k}") for k in range(k0, k1 + 1) for m in mantissas)
        return [v for v in vals if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]

    for mantissas in ((1, 2, 5), (1, 3), (1,)):
        ticks = within(mantissas)
        if 2 <= len(ticks) <= max_ticks:
            return ticks
    decades = within((1,))
    if len(decades) > max_ticks:
        return decades[::math.ceil(len(decades) / max_ticks)]
    fine = within((1, 1.5, 2, 3, 4, 5, 6, 8))
    return fine if 2 <= len(fine) <= max_ticks else [float(lo), float(hi)]


def tick_labels(axis: bq.Axis) -> list[str]:
    """The labels ``axis`` draws for its explicit ``tick_values`` ([] when it has none)."""
    values = axis.tick_values
    if values is None or axis.tick_format is None:
        return []
    return [d3_format(axis.tick_format, float(v)) for v in np.asarray(values).ravel()]


def default_log_format(ticks: Sequence[float]) -> str:
    """A log axis's tick format when its figure names none: plain numbers where every tick
    reads as one (0.001 to 999,999: ``0.1``, ``1``, ``10,000``), SI prefixes where the range
    needs them (:data:`LOG_TICK_FORMAT`: ``10M``, ``1G``) -- never e-notation."""
    lo, hi = min(ticks), max(ticks)
    return plain_g(PLAIN_LOG_FORMAT, ticks) if lo >= 1e-3 and hi < 1e6 else LOG_TICK_FORMAT


def _follow_log_scale(axis: bq.Axis, tick_format: str | None, *, fixed: bool) -> None:
    """Keep a log ``axis``'s ticks (unless ``fixed``) and format in step with its scale."""
    scale = axis.scale
    if not isinstance(scale, bq.LogScale):
        return

    def sync(_change: object = None) -> None:
        ticks = (list(np.asarray(axis.tick_values, dtype=float)) if fixed
                 else log_ticks(scale.min, scale.max))
        if not ticks:
            return
        fmt = plain_g(tick_format, ticks) if tick_format else default_log_format(ticks)
        labels = [d3_format(fmt, t) for t in ticks]
        if len(set(labels)) < len(labels):
            fmt = LOG_TICK_FORMAT
        update_marks({axis: {"tick_values": np.asarray(ticks, dtype=float),
                             "tick_format": fmt}})

    sync()
    if not fixed:
        scale.observe(sync, names=["min", "max"])


# -- title and legend above the plot --------------------------------------------------------

_ALIGN = {"top-left": "flex-start", "left": "flex-start", "bottom-left": "flex-start",
          "top": "center", "bottom": "center",
          "top-right": "flex-end", "right": "flex-end", "bottom-right": "flex-end"}

def framed(fig: bq.Figure) -> ipw.Widget:
    """``fig`` under its :class:`~labkit.ui.chart_header.ChartHeader` (one box per figure,
    made once); a figure without a header is returned as it is."""
    header = getattr(fig, "labkit_header", None)
    if header is None:
        return fig
    box = getattr(fig, "labkit_frame", None)
    if box is None:
        box = ipw.VBox([header, fig], layout=ipw.Layout(width="100%", max_width="100%",
                                                        flex="1 1 0%", overflow="hidden"))
        box.add_class("labkit-chart")
        fig.labkit_frame = box
    return box


def frame_figures(widget: ipw.Widget, *, width_px: float = CONTENT_PX) -> ipw.Widget:
    """``widget`` with every figure in it (itself, or inside boxes) :func:`framed`, each
    one's :class:`ChartFit` told its width: ``width_px``, shared out equally by a row
    (an ``HBox``)."""
    if isinstance(widget, bq.Figure) or "labkit-chart" in getattr(widget, "_dom_classes", ()):
        for fig in figures_in(widget):  # a figure, or one framed already: (re)fit it
            if (fit := getattr(fig, "labkit_fit", None)) is not None:
                fit.width_px = float(width_px)
                fit.apply()
        return framed(widget) if isinstance(widget, bq.Figure) else widget
    if isinstance(widget, ipw.Box):
        share = width_px / max(1, len(widget.children) if isinstance(widget, ipw.HBox) else 1)
        children = tuple(frame_figures(c, width_px=share) for c in widget.children)
        if children != tuple(widget.children):
            widget.children = children
    return widget


def figures_in(widget: ipw.Widget) -> list[bq.Figure]:
    """Every figure in ``widget`` (itself, or inside boxes), in order."""
    if isinstance(widget, bq.Figure):
        return [widget]
    return [f for c in getattr(widget, "children", ()) or () for f in figures_in(c)]


def figure_name(fig: bq.Figure) -> str:
    """What a student calls a figure: its header's title, else its y axis label (in full)."""
    header = getattr(fig, "labkit_header", None)
    title = str(getattr(header, "chart_title", "") or "")
    if title or getattr(getattr(fig, "labkit_fit", None), "y_full", ""):
        return title or str(fig.labkit_fit.y_full)
    labels = [str(a.label) for a in fig.axes if getattr(a, "orientation", "") == "vertical"]
    return labels[0] if labels and labels[0] else "chart"
