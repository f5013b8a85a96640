"""Kernel-side widget components for the labs (ipywidgets 8 + bqplot, no custom JS).

One namespace for the labs -- ``from labkit import ui as lw``; ``lw.Callout``,
``lw.figure``, ... -- gathered from focused modules:

* :mod:`labkit.ui.html` -- :func:`esc`, :data:`PALETTE` / :data:`SERIES`;
  :func:`callout` (:mod:`labkit.ui.callouts`) makes a status box, live or headless;
* :mod:`labkit.ui.boxes` -- the widgets :class:`Callout`, :class:`MathPeek`, :class:`More`,
  :class:`RevealGate`;
* :mod:`labkit.ui.questions` -- :class:`Prediction`, :class:`Checkpoint` and their base
  :class:`Question` (commit, lock, revise beside the first answer, restore from the file;
  what committing is worth, a self-check tick, a :class:`Refusal` for a bad answer);
* :mod:`labkit.ui.charts` -- bqplot scales, figures, marks, :func:`update_marks`,
  :func:`log_domain` / :func:`lin_top`, log-axis ticks, the title-and-legend header above
  each plot (:func:`framed`);
* :mod:`labkit.ui.controls` -- sliders, toggles and dropdowns whose bounds keep invalid
  states unreachable, :func:`context_control`.

A headless build (:mod:`labkit.ui.headless`) never imports ipywidgets, anywidget or bqplot:
the widget classes (:data:`_LAZY`: the boxes, :class:`ChartHeader`, :class:`KeyGuard`) are
imported from their modules on first use, which only a live notebook makes.
"""

from typing import TYPE_CHECKING, Any

from labkit.core.format import fmt_tokens as format_tokens
from labkit.core.grids import PRECISIONS, context_options
from labkit.ui.callouts import callout
from labkit.ui.charts import (
    LOG_TICK_FORMAT,
    MAX_LOG_TICKS,
    bar_mark,
    figure,
    figure_name,
    figures_in,
    frame_figures,
    framed,
    hline_mark,
    lin_top,
    line_mark,
    log_domain,
    log_ticks,
    make_scale,
    nice_up,
    scatter_mark,
    set_domain,
    set_hline,
    set_vline,
    tick_labels,
    tooltip,
    update_marks,
    vline_mark,
    vlines_mark,
)
from labkit.ui.controls import (
    DESC_STYLE,
    choice_control,
    context_control,
    control_kind,
    devices_control,
    float_control,
    int_control,
    log_control,
    precision_control,
    selection_control,
    toggle_buttons,
    toggle_width,
)
from labkit.ui.headless import (
    LIVE,
    Sink,
    TextBox,
    TextCallout,
    TextChoice,
    TextMath,
    TextView,
    building,
    plain_text,
)
from labkit.ui.html import (
    CALLOUT_KINDS,
    PALETTE,
    SERIES,
    TEXT,
    esc,
)
from labkit.ui.questions import (
    Check,
    Checkpoint,
    Options,
    Prediction,
    Question,
    Refusal,
    credit_text,
)

if TYPE_CHECKING:
    from labkit.ui.boxes import Callout, MathPeek, More, RevealGate
    from labkit.ui.chart_header import ChartHeader
    from labkit.ui.keyguard import KeyGuard

_LAZY = {"Callout": "labkit.ui.boxes", "MathPeek": "labkit.ui.boxes",
         "More": "labkit.ui.boxes", "RevealGate": "labkit.ui.boxes",
         "ChartHeader": "labkit.ui.chart_header", "KeyGuard": "labkit.ui.keyguard"}
"""The widget classes: imported from their module on first use (never headless)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'labkit.ui' has no attribute {name!r}")

__all__ = [
    "CALLOUT_KINDS",
    "DESC_STYLE",
    "LIVE",
    "LOG_TICK_FORMAT",
    "MAX_LOG_TICKS",
    "PALETTE",
    "PRECISIONS",
    "SERIES",
    "TEXT",
    "Callout",
    "ChartHeader",
    "Check",
    "Checkpoint",
    "KeyGuard",
    "MathPeek",
    "More",
    "Options",
    "Prediction",
    "Question",
    "Refusal",
    "RevealGate",
    "Sink",
    "TextBox",
    "TextCallout",
    "TextChoice",
    "TextMath",
    "TextView",
    "bar_mark",
    "building",
    "callout",
    "choice_control",
    "context_control",
    "context_options",
    "control_kind",
    "credit_text",
    "devices_control",
    "esc",
    "figure",
    "figure_name",
    "figures_in",
    "float_control",
    "format_tokens",
    "frame_figures",
    "framed",
    "hline_mark",
    "int_control",
    "lin_top",
    "line_mark",
    "log_control",
    "log_domain",
    "log_ticks",
    "make_scale",
    "nice_up",
    "plain_text",
    "precision_control",
    "scatter_mark",
    "selection_control",
    "set_domain",
    "set_hline",
    "set_vline",
    "tick_labels",
    "toggle_buttons",
    "toggle_width",
    "tooltip",
    "update_marks",
    "vline_mark",
    "vlines_mark",
]
