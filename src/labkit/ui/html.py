"""HTML building blocks for the labs: escaping, colours, status callouts, math peeks, gates.

* :func:`esc` -- HTML-escape any value for interpolation into widget HTML.
* :data:`PALETTE` / :data:`SERIES` -- the named colours and the series colour cycle.
* :func:`callout_html` -- a status box's markup; failures (``danger``) look nothing like
  the ``success`` "boundary to watch" state.

The widgets themselves (callouts, math peeks, reveal gates) live in :mod:`labkit.ui.boxes`,
which a headless build never imports; :func:`labkit.ui.callouts.callout` makes a callout.
"""

from __future__ import annotations

import html

PALETTE = {
    "blue": "#1f6fb2", "orange": "#d9822b", "green": "#2e8b57", "red": "#c0392b",
    "purple": "#7d3c98", "grey": "#7f8c8d", "light": "#a6acaf", "teal": "#138d90",
}
SERIES = ("#1f6fb2", "#d9822b", "#2e8b57", "#7d3c98", "#c0392b", "#138d90")
TEXT = {"grey": "#566573", "green": "#17703f", "amber": "#935116", "red": "#a93226",
        "blue": "#1f6fb2"}
"""Colours for text: each at least 4.5:1 against white and every callout background
(WCAG 2.1 AA for normal text; :data:`PALETTE` is for marks and borders)."""

CALLOUT_KINDS = ("danger", "warn", "success", "info")
_CALLOUT_STYLE = {
    #         border     background  icon  badge                badge text
    "danger": ("#c0392b", "#fdecea", "✖", "FAILURE", TEXT["red"]),
    "warn": ("#b9770e", "#fef5e7", "⚠", "WARNING", TEXT["amber"]),
    "success": ("#1e8449", "#eafaf1", "✔", "BOUNDARY TO WATCH", TEXT["green"]),
    "info": ("#2471a3", "#ebf5fb", "ℹ", "NOTE", TEXT["blue"]),
}


def esc(text: object) -> str:
    """HTML-escape any value for safe interpolation into widget HTML."""
    return html.escape(str(text), quote=True)



def check_kind(kind: str) -> str:
    """``kind`` if it is one of :data:`CALLOUT_KINDS`, else a ``ValueError`` naming it."""
    if kind not in _CALLOUT_STYLE:
        raise ValueError(f"kind must be one of {', '.join(CALLOUT_KINDS)}; got {kind!r}")
    return kind


def callout_html(kind: str, title: str, detail: str = "", recovery: str | None = None) -> str:
    """A callout's markup: ``title``/``detail``/``recovery`` are trusted HTML."""
    border, bg, icon, badge, ink = _CALLOUT_STYLE[check_kind(kind)]
    rec = (f"<div style='margin-top:4px'><b>Recovery:</b> {recovery}</div>"
           if recovery else "")
    return (f"<div class='labkit-callout labkit-callout-{kind}' style='border-left:6px "
            f"solid {border};background:{bg};padding:8px 12px;margin:6px 0;border-radius:4px'>"
            f"<div><span style='color:{ink};font-weight:700'>{icon} {badge}</span> "
            f"<b>{title}</b></div>"
            f"<div style='margin-top:4px'>{detail}</div>{rec}</div>")
