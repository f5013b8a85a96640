"""Chart helpers: bqplot scales, figures and marks, and cheap updates.

* :func:`figure` -- a Figure with labelled axes and units, sized for a notebook column;
  :func:`make_scale` / :func:`set_domain` for fixed-domain scales, :func:`log_domain` /
  :func:`lin_top` to size them from data.
* marks -- lines, bars, scatter, vertical / horizontal marker lines
  (:func:`vline_mark`, :func:`set_vline`, ...).
* :func:`update_marks` -- change several marks' data in one ``hold_sync()`` block each,
  skipping values that did not move.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping, Sequence

import bqplot as bq
import ipywidgets as ipw
import numpy as np

from labkit.ui.html import PALETTE, SERIES


def make_scale(kind: str = "linear", lo: float | None = None, hi: float | None = None,
               **kwargs: object) -> bq.Scale:
    """A bqplot scale: ``linear`` | ``log`` | ``ordinal``, with an optional fixed domain."""
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
           y_label: str, title: str = "", height: int = 300, legend: bool = False,
           x_tick_format: str | None = None, y_tick_format: str | None = None,
           x_tick_values: Sequence[float] | None = None,
           legend_location: str = "top-left") -> bq.Figure:
    """A Figure with labelled axes (put units in the labels), sized for a notebook column."""
    ax_kw: dict[str, object] = {}
    if x_tick_format:
        ax_kw["tick_format"] = x_tick_format
    if x_tick_values is not None:
        ax_kw["tick_values"] = np.asarray(x_tick_values, dtype=float)
    x_axis = bq.Axis(scale=x_scale, label=x_label, side="bottom", label_offset="36px",
                     **ax_kw)
    y_kw: dict[str, object] = {"tick_format": y_tick_format} if y_tick_format else {}
    y_axis = bq.Axis(scale=y_scale, label=y_label, side="left", label_offset="52px", **y_kw)
    fig = bq.Figure(marks=list(marks), axes=[x_axis, y_axis], title=title,
                    fig_margin={"top": 40, "bottom": 50, "left": 72, "right": 20},
                    legend_location=legend_location,
                    layout=ipw.Layout(width="100%", height=f"{height}px", min_width="320px"),
                    animation_duration=0)
    return fig


def line_mark(x: object, y: object, x_scale: bq.Scale, y_scale: bq.Scale, *,
              colors: Sequence[str] = SERIES, labels: Sequence[str] | None = None,
              line_style: str = "solid", stroke_width: float = 2.5,
              legend: bool = False, **kwargs: object) -> bq.Lines:
    """Lines (one curve, or several when ``y`` is 2-D)."""
    return bq.Lines(x=x, y=y, scales={"x": x_scale, "y": y_scale}, colors=list(colors),
                    labels=list(labels or []), line_style=line_style,
                    stroke_width=stroke_width, display_legend=legend, **kwargs)


def bar_mark(x: object, y: object, x_scale: bq.Scale, y_scale: bq.Scale, *,
             colors: Sequence[str] = SERIES, labels: Sequence[str] | None = None,
             kind: str = "stacked", legend: bool = False, **kwargs: object) -> bq.Bars:
    """Bars; a 2-D ``y`` (series x categories) is stacked or grouped (``kind``)."""
    return bq.Bars(x=x, y=y, scales={"x": x_scale, "y": y_scale}, colors=list(colors),
                   labels=list(labels or []), type=kind, display_legend=legend,
                   padding=0.25, **kwargs)


def scatter_mark(x: object, y: object, x_scale: bq.Scale, y_scale: bq.Scale, *,
                 color: str = PALETTE["red"], size: int = 80, **kwargs: object) -> bq.Scatter:
    return bq.Scatter(x=x, y=y, scales={"x": x_scale, "y": y_scale}, colors=[color],
                      default_size=size, **kwargs)


def vline_mark(x: float, x_scale: bq.Scale, *, color: str = PALETTE["red"],
               line_style: str = "dashed", label: str | None = None,
               legend: bool = False) -> bq.Lines:
    """A vertical marker line at ``x`` spanning the full plot height (own 0..1 y scale)."""
    unit = bq.LinearScale(min=0.0, max=1.0)
    return bq.Lines(x=[float(x), float(x)], y=[0.0, 1.0], scales={"x": x_scale, "y": unit},
                    colors=[color], line_style=line_style, stroke_width=2,
                    labels=[label] if label else [], display_legend=legend)


def vlines_mark(xs: Sequence[float], x_scale: bq.Scale, *, color: str = PALETTE["light"],
                line_style: str = "dotted") -> bq.Lines:
    """Several fixed vertical rules (e.g. bucket boundaries) in one mark."""
    unit = bq.LinearScale(min=0.0, max=1.0)
    xv = np.asarray([[float(x), float(x)] for x in xs])
    yv = np.tile([0.0, 1.0], (len(xs), 1))
    return bq.Lines(x=xv, y=yv, scales={"x": x_scale, "y": unit}, colors=[color] * len(xs),
                    line_style=line_style, stroke_width=1.5)


def hline_mark(y: float, y_scale: bq.Scale, *, color: str = PALETTE["red"],
               line_style: str = "dashed", label: str | None = None,
               legend: bool = False) -> bq.Lines:
    """A horizontal rule at ``y`` spanning the full plot width (own 0..1 x scale)."""
    unit = bq.LinearScale(min=0.0, max=1.0)
    return bq.Lines(x=[0.0, 1.0], y=[float(y), float(y)], scales={"x": unit, "y": y_scale},
                    colors=[color], line_style=line_style, stroke_width=2,
                    labels=[label] if label else [], display_legend=legend)


def _differs(old: object, new: object) -> bool:
    if isinstance(old, np.ndarray) or isinstance(new, np.ndarray):
        a, b = np.asarray(old), np.asarray(new)
        return a.shape != b.shape or a.dtype.kind != b.dtype.kind or not np.array_equal(a, b)
    try:
        return bool(old != new)
    except ValueError:  # ambiguous comparisons: treat as changed
        return True


def update_marks(updates: Mapping[ipw.Widget, Mapping[str, object]] |
                 Iterable[tuple[ipw.Widget, Mapping[str, object]]]) -> None:
    """Set traits of several marks/scales/widgets in one ``hold_sync()`` block each.

    Unchanged values are skipped, so a callback pays only for what really moved.
    """
    items = updates.items() if isinstance(updates, Mapping) else updates
    pending = [(w, {k: v for k, v in t.items() if _differs(getattr(w, k), v)})
               for w, t in items]
    pending = [(w, t) for w, t in pending if t]
    with contextlib.ExitStack() as stack:
        for w, _ in pending:
            stack.enter_context(w.hold_sync())
        for w, traits in pending:
            for k, v in traits.items():
                setattr(w, k, v)


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
