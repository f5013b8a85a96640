"""Kernel-side widget components for the labs (ipywidgets 8 + bqplot, no custom JS).

One namespace for the labs -- ``from labkit import ui as lw``; ``lw.Callout``,
``lw.figure``, ... -- gathered from focused modules:

* :mod:`labkit.ui.html` -- :func:`esc`, :data:`PALETTE` / :data:`SERIES`, :class:`Callout`,
  :class:`MathPeek`, :class:`RevealGate`;
* :mod:`labkit.ui.questions` -- :class:`Prediction`, :class:`Checkpoint` and their base
  :class:`Question` (commit, lock, revise beside the first answer, restore from the file;
  what committing is worth, a self-check tick, a :class:`Refusal` for a bad answer);
* :mod:`labkit.ui.charts` -- bqplot scales, figures, marks, :func:`update_marks`,
  :func:`log_domain` / :func:`lin_top`, log-axis ticks, the title-and-legend header above
  each plot (:func:`framed`);
* :mod:`labkit.ui.controls` -- sliders, toggles and dropdowns whose bounds keep invalid
  states unreachable, :func:`context_control`.
"""

from labkit.core.format import fmt_tokens as format_tokens
from labkit.core.grids import PRECISIONS, context_options
from labkit.ui.charts import (
    LOG_TICK_FORMAT,
    MAX_LOG_TICKS,
    ChartHeader,
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
    update_marks,
    vline_mark,
    vlines_mark,
)
from labkit.ui.controls import (
    DESC_STYLE,
    choice_control,
    context_control,
    devices_control,
    float_control,
    int_control,
    log_control,
    precision_control,
    selection_control,
    toggle_buttons,
    toggle_width,
)
from labkit.ui.html import (
    CALLOUT_KINDS,
    PALETTE,
    SERIES,
    TEXT,
    Callout,
    MathPeek,
    More,
    RevealGate,
    esc,
)
from labkit.ui.keyguard import KeyGuard
from labkit.ui.questions import (
    Check,
    Checkpoint,
    Options,
    Prediction,
    Question,
    Refusal,
    credit_text,
)

__all__ = [
    "CALLOUT_KINDS",
    "DESC_STYLE",
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
    "bar_mark",
    "choice_control",
    "context_control",
    "context_options",
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
    "precision_control",
    "scatter_mark",
    "selection_control",
    "set_domain",
    "set_hline",
    "set_vline",
    "tick_labels",
    "toggle_buttons",
    "toggle_width",
    "update_marks",
    "vline_mark",
    "vlines_mark",
]
