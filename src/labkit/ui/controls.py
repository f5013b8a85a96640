"""Control helpers: sliders, toggles and dropdowns whose bounds make invalid states
unreachable (precision from a fixed list, devices >= 1, context within the model's
``max_context``).

Built inside a headless build (:func:`labkit.ui.headless.active`) each helper returns the
control's stand-in from :mod:`labkit.ui.text_controls` (same values, same validation, no
widget: ipywidgets is never imported); otherwise the ipywidgets control.
:func:`control_kind` tells the kinds apart for both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from labkit.core.format import fmt_tokens
from labkit.core.grids import PRECISIONS, context_options
from labkit.ui import text_controls as tc
from labkit.ui.headless import active

if TYPE_CHECKING:
    import ipywidgets as ipw

    from labkit.ui.log_slider import GridLogSlider

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


_WIDGETS = {"int": "IntSlider", "float": "FloatSlider", "choice_toggle": "ToggleButtons",
            "choice_slider": "SelectionSlider", "choice_dropdown": "Dropdown"}
_STAND_INS: dict[str, type[tc.TextControl]] = {
    "int": tc.TextIntSlider, "float": tc.TextFloatSlider, "choice_toggle": tc.TextSelection,
    "choice_slider": tc.TextSelectionSlider, "choice_dropdown": tc.TextSelection}
_WIDTH = {"width": "460px"}


def _control(kind: str, layout: dict[str, str], **traits: Any) -> Any:
    """The control of ``kind`` (a key of :data:`_WIDGETS`): its stand-in in a headless
    build, else the ipywidgets control laid out by ``layout``."""
    if active():
        return _STAND_INS[kind](**traits)
    import ipywidgets as ipw

    return getattr(ipw, _WIDGETS[kind])(layout=ipw.Layout(**layout), **traits)


def control_kind(ctl: Any) -> str:
    """``"choice"`` (it has options), ``"log"`` (a log slider: ``min``/``max`` are
    exponents of its ``base``), ``"int"`` or ``"float"`` -- for a widget or its stand-in."""
    if getattr(ctl, "options", None) is not None:
        return "choice"
    if hasattr(ctl, "base"):
        return "log"
    return "int" if type(ctl.value) is int else "float"


def toggle_buttons(description: str, options: Sequence[tuple[str, object]],
                   value: object) -> ipw.ToggleButtons:
    """ToggleButtons whose buttons are all as wide as the longest label (none truncated)."""
    labels = [str(label) for label, _ in options]
    return _control("choice_toggle", {"max_width": "100%"}, options=list(options),
                    value=value, description=description,
                    style={**DESC_STYLE, "button_width": toggle_width(labels)})


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
    return _control("int", _WIDTH, value=v, min=int(lo), max=int(hi), step=int(step),
                    description=description, style=DESC_STYLE)


def devices_control(value: int, max_devices: int,
                    description: str = "Devices per replica") -> ipw.IntSlider:
    """Devices per replica: 1..max_devices (never 0, never past the fast domain)."""
    return int_control(description, value, 1, max(1, int(max_devices)))


def float_control(description: str, value: float, lo: float, hi: float,
                  step: float, readout_format: str = ".2f") -> ipw.FloatSlider:
    """A float slider over [lo, hi]; ``value`` is clamped into it."""
    v = float(np.clip(value, lo, hi))
    return _control("float", _WIDTH, value=v, min=float(lo), max=float(hi),
                    step=float(step), description=description,
                    readout_format=readout_format, style=DESC_STYLE)


def log_grid(value: float, lo: float, hi: float, steps: int) -> tuple[float, float, float]:
    """(min, max, step) exponents of a base-10 grid of about ``steps`` stops within
    [lo, hi] that passes exactly through ``value`` (so the front end keeps it)."""
    elo, ehi, ev = math.log10(lo), math.log10(hi), math.log10(value)
    step = (ehi - elo) / steps
    below = math.floor((ev - elo) / step + 1e-9)
    above = math.floor((ehi - ev) / step + 1e-9)
    return ev - below * step, ev + above * step, step


def log_control(description: str, value: float, lo: float, hi: float,
                steps: int = 60,
                readout_format: str = ".3g") -> GridLogSlider | tc.TextLogSlider:
    """A base-10 log slider from ``lo`` to ``hi`` (both > 0) with about ``steps`` stops,
    laid so that ``value`` (clamped into the range) is one of them."""
    if not (0 < lo < hi):
        raise ValueError(f"need 0 < lo < hi; got {lo}, {hi}")
    if steps < 1:
        raise ValueError(f"steps must be >= 1; got {steps}")
    v = float(np.clip(value, lo, hi))
    emin, emax, step = log_grid(v, lo, hi, steps)
    traits = {"value": v, "base": 10, "min": emin, "max": emax, "step": step, "anchor": v,
              "description": description, "readout_format": readout_format,
              "style": DESC_STYLE}
    slider: GridLogSlider | tc.TextLogSlider
    if active():
        slider = tc.TextLogSlider(**traits)
    else:
        import ipywidgets as ipw

        from labkit.ui.log_slider import GridLogSlider

        slider = GridLogSlider(layout=ipw.Layout(**_WIDTH), **traits)
    slider.value = v
    return slider


def control_values(ctl: ipw.ValueWidget) -> list[object]:
    """Every value a control offers: its options, every stop of a slider (a log slider's
    stops laid through its starting value, :class:`GridLogSlider`'s ``anchor``)."""
    opts = getattr(ctl, "options", None)
    if opts:
        return [o[1] if isinstance(o, tuple) else o for o in opts]
    step = float(ctl.step)
    kind = control_kind(ctl)
    if kind == "log":
        anchor = float(getattr(ctl, "anchor", ctl.value))
        a = math.log(anchor, ctl.base)
        lo = round((float(ctl.min) - a) / step)
        hi = round((float(ctl.max) - a) / step)
        return [float(anchor * ctl.base ** (k * step)) for k in range(lo, hi + 1)]
    vals = np.arange(float(ctl.min), float(ctl.max) + step / 2, step)
    if kind == "int":
        return [round(float(x)) for x in vals]
    return [round(float(x), 6) for x in vals]


def selection_control(description: str, options: Sequence[tuple[str, object]],
                      value: object) -> ipw.SelectionSlider:
    return _control("choice_slider", _WIDTH, options=list(options), value=value,
                    description=description, style=DESC_STYLE, continuous_update=True)


def choice_control(description: str, options: Sequence[tuple[str, object]], value: object,
                   style: str = "dropdown") -> ipw.Dropdown | ipw.ToggleButtons:
    """A fixed set of choices as a Dropdown or ToggleButtons."""
    if style == "toggle":
        return toggle_buttons(description, options, value)
    return _control("choice_dropdown", _WIDTH, options=list(options), value=value,
                    description=description, style=DESC_STYLE)


def context_control(value: int, max_context: int, min_context: int = 256,
                    description: str = "Context (tokens)") -> ipw.SelectionSlider:
    """Context length within [min_context, the model's max_context] (no overflow reachable)."""
    opts = context_options(max_context, value, min_context)
    return selection_control(description, [(fmt_tokens(v), v) for v in opts], value)
