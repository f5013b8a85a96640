"""Control helpers: sliders, toggles and dropdowns whose bounds make invalid states
unreachable (precision from a fixed list, devices >= 1, context within the model's
``max_context``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import ipywidgets as ipw
import numpy as np
import traitlets

from labkit.core.format import fmt_tokens
from labkit.core.grids import PRECISIONS, context_options

DESC_STYLE = {"description_width": "initial"}
"""Widget style that shows a description in full (no truncation)."""

TOGGLE_CHAR_PX = 7.5
"""Width of one character of a toggle button's label (px, JupyterLab's 13 px UI font; wide
enough for lower-case text and digits)."""
TOGGLE_PAD_PX = 24
"""A toggle button's horizontal padding, border and icon room (px)."""
TOGGLE_DEFAULT_PX = 148
"""ipywidgets' width of a toggle button given no ``button_width`` (300 px / 2 - 2 px margin)."""


def toggle_width(labels: Sequence[str]) -> str:
    """One CSS width for toggle buttons that shows the longest of ``labels`` in full."""
    longest = max((len(str(lab)) for lab in labels), default=1)
    return f"{math.ceil(TOGGLE_CHAR_PX * longest + TOGGLE_PAD_PX)}px"


def fitted_label(label: str, width: str) -> str:
    """What of ``label`` a toggle button ``width`` wide shows (the rest is cut off).

    ``width`` in px (``"64px"``), ``"auto"`` (the label's own width) or ``""`` (unset:
    ipywidgets' :data:`TOGGLE_DEFAULT_PX`).
    """
    w = str(width).strip() or f"{TOGGLE_DEFAULT_PX}px"
    if w in ("auto", "initial"):
        return label
    if not w.endswith("px"):
        raise ValueError(f"width must be in px or 'auto'; got {width!r}")
    fits = max(0, math.floor((float(w[:-2]) - TOGGLE_PAD_PX) / TOGGLE_CHAR_PX))
    return label if len(label) <= fits else label[:max(0, fits - 1)] + "…"


def toggle_buttons(description: str, options: Sequence[tuple[str, object]],
                   value: object) -> ipw.ToggleButtons:
    """ToggleButtons whose buttons are all as wide as the longest label (none truncated)."""
    labels = [str(label) for label, _ in options]
    return ipw.ToggleButtons(options=list(options), value=value, description=description,
                             style={**DESC_STYLE, "button_width": toggle_width(labels)},
                             layout=ipw.Layout(max_width="100%"))


def precision_control(description: str, value: int,
                      options: Sequence[int] = PRECISIONS) -> ipw.ToggleButtons:
    """Storage precision from a fixed list of bit widths (no invalid precision reachable)."""
    opts = sorted({int(b) for b in options})
    if any(b not in PRECISIONS for b in opts):
        raise ValueError(f"precision options must be among {PRECISIONS}; got {opts}")
    if int(value) not in opts:
        raise ValueError(f"value {value} is not among the options {opts}")
    return toggle_buttons(description, [(f"{b}-bit", b) for b in opts], int(value))


def int_control(description: str, value: int, lo: int, hi: int,
                step: int = 1) -> ipw.IntSlider:
    """An integer slider over [lo, hi]; ``value`` is clamped into it."""
    if lo > hi:
        raise ValueError(f"lo {lo} > hi {hi}")
    v = int(np.clip(value, lo, hi))
    return ipw.IntSlider(value=v, min=int(lo), max=int(hi), step=int(step),
                       description=description, style=DESC_STYLE, layout=ipw.Layout(width="460px"))


def devices_control(value: int, max_devices: int,
                    description: str = "Devices per replica") -> ipw.IntSlider:
    """Devices per replica: 1..max_devices (never 0, never past the fast domain)."""
    return int_control(description, value, 1, max(1, int(max_devices)))


def float_control(description: str, value: float, lo: float, hi: float,
                  step: float, readout_format: str = ".2f") -> ipw.FloatSlider:
    """A float slider over [lo, hi]; ``value`` is clamped into it."""
    v = float(np.clip(value, lo, hi))
    return ipw.FloatSlider(value=v, min=float(lo), max=float(hi), step=float(step),
                         description=description, readout_format=readout_format,
                         style=DESC_STYLE, layout=ipw.Layout(width="460px"))


class GridLogSlider(ipw.FloatLogSlider):
    """A FloatLogSlider whose value sits exactly on its own grid of stops.

    The front end keeps the slider's *position* (the exponent) on ``min + k * step`` and,
    when it renders, sends back ``base ** position`` computed in JavaScript; a value off that
    grid (or the float noise of the round trip) would come back as another number and move
    every figure a student sees before they touch anything. :func:`log_control` lays the grid
    through the starting value, and this class maps a value within a thousandth of a stop
    of a grid point to that point's exact value (the starting value itself at its stop).
    """

    anchor = traitlets.Float(1.0).tag(sync=False)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict[str, object]) -> float:
        """ipywidgets' clamp into [base**min, base**max], then the snap to the grid."""
        v = float(super()._validate_value(proposal))
        if not (v > 0 and math.isfinite(v)) or self.step <= 0:
            return v
        k = (math.log(v, self.base) - math.log(self.anchor, self.base)) / self.step
        if abs(k - round(k)) > SNAP_STOPS:
            return v
        return float(self.anchor * self.base ** (round(k) * self.step))


SNAP_STOPS = 1e-3
"""How close (in stops) to a grid point a log slider's value is taken as that point."""


def log_grid(value: float, lo: float, hi: float, steps: int) -> tuple[float, float, float]:
    """(min, max, step) exponents of a base-10 grid of about ``steps`` stops within
    [lo, hi] that passes exactly through ``value`` (so the front end keeps it)."""
    elo, ehi, ev = math.log10(lo), math.log10(hi), math.log10(value)
    step = (ehi - elo) / steps
    below = math.floor((ev - elo) / step + 1e-9)
    above = math.floor((ehi - ev) / step + 1e-9)
    return ev - below * step, ev + above * step, step


def log_control(description: str, value: float, lo: float, hi: float,
                steps: int = 60, readout_format: str = ".3g") -> GridLogSlider:
    """A base-10 log slider from ``lo`` to ``hi`` (both > 0) with about ``steps`` stops,
    laid so that ``value`` (clamped into the range) is one of them."""
    if not (0 < lo < hi):
        raise ValueError(f"need 0 < lo < hi; got {lo}, {hi}")
    if steps < 1:
        raise ValueError(f"steps must be >= 1; got {steps}")
    v = float(np.clip(value, lo, hi))
    emin, emax, step = log_grid(v, lo, hi, steps)
    slider = GridLogSlider(value=v, base=10, min=emin, max=emax, step=step, anchor=v,
                           description=description, readout_format=readout_format,
                           style=DESC_STYLE, layout=ipw.Layout(width="460px"))
    slider.value = v
    return slider


def control_values(ctl: ipw.ValueWidget) -> list[object]:
    """Every value a control offers: its options, every stop of a slider (a log slider's
    stops laid through its starting value, :class:`GridLogSlider`'s ``anchor``)."""
    opts = getattr(ctl, "options", None)
    if opts:
        return [o[1] if isinstance(o, tuple) else o for o in opts]
    step = float(ctl.step)
    if isinstance(ctl, ipw.FloatLogSlider):
        anchor = float(getattr(ctl, "anchor", ctl.value))
        a = math.log(anchor, ctl.base)
        lo = round((float(ctl.min) - a) / step)
        hi = round((float(ctl.max) - a) / step)
        return [float(anchor * ctl.base ** (k * step)) for k in range(lo, hi + 1)]
    vals = np.arange(float(ctl.min), float(ctl.max) + step / 2, step)
    if isinstance(ctl, ipw.IntSlider):
        return [round(float(x)) for x in vals]
    return [round(float(x), 6) for x in vals]


def selection_control(description: str, options: Sequence[tuple[str, object]],
                      value: object) -> ipw.SelectionSlider:
    return ipw.SelectionSlider(options=list(options), value=value, description=description,
                             style=DESC_STYLE, layout=ipw.Layout(width="460px"),
                             continuous_update=True)


def choice_control(description: str, options: Sequence[tuple[str, object]], value: object,
                   style: str = "dropdown") -> ipw.Dropdown | ipw.ToggleButtons:
    """A fixed set of choices as a Dropdown or ToggleButtons."""
    if style == "toggle":
        return toggle_buttons(description, options, value)
    return ipw.Dropdown(options=list(options), value=value, description=description,
                      style=DESC_STYLE, layout=ipw.Layout(width="460px"))



def context_control(value: int, max_context: int, min_context: int = 256,
                    description: str = "Context (tokens)") -> ipw.SelectionSlider:
    """Context length within [min_context, the model's max_context] (no overflow reachable)."""
    opts = context_options(max_context, value, min_context)
    return selection_control(description, [(fmt_tokens(v), v) for v in opts], value)
