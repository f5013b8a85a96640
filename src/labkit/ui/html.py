"""HTML building blocks for the labs: escaping, colours, status callouts, math peeks, gates.

* :func:`esc` -- HTML-escape any value for interpolation into widget HTML.
* :data:`PALETTE` / :data:`SERIES` -- the named colours and the series colour cycle.
* :class:`Callout` -- an HTML status box; failures (``danger``) look nothing like the
  ``success`` "boundary to watch" state.
* :class:`MathPeek` -- an accordion with live LaTeX formulas and the current numbers.
* :class:`RevealGate` -- holds content out of the page until it is opened.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as ipw

from labkit.ui.headless import ShowOrClear, TextCallout, active

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



# -- callouts -------------------------------------------------------------------------------

class Callout(ShowOrClear, ipw.HTML):  # type: ignore[misc, unused-ignore]  # ipywidgets: no stubs
    """A status box of one ``kind``: ``danger`` | ``warn`` | ``success`` | ``info``.

    ``show(title, detail, recovery)`` fills and displays it (``active`` True); ``clear()``
    empties and hides it. ``danger`` (OOM, SLO miss, over budget) has a red border, a ✖ and
    a FAILURE badge; ``success`` -- the boundary to watch -- a green border, ✔ and its own
    badge, so the two can never be confused. ``title``/``detail`` may contain trusted HTML.
    """

    value: str

    def __new__(cls, kind: str = "info", **kwargs: object) -> Any:
        """A :class:`~labkit.ui.headless.TextCallout` (no widget) in a headless build."""
        if active():
            if kind not in _CALLOUT_STYLE:
                raise ValueError(f"kind must be one of {', '.join(CALLOUT_KINDS)}; "
                                 f"got {kind!r}")
            return TextCallout(kind)
        return super().__new__(cls, kind, **kwargs)

    def __init__(self, kind: str = "info", **kwargs: object) -> None:
        if kind not in _CALLOUT_STYLE:
            raise ValueError(f"kind must be one of {', '.join(CALLOUT_KINDS)}; got {kind!r}")
        super().__init__(value="", layout=ipw.Layout(display="none", width="auto"), **kwargs)
        self.kind = kind
        self.active = False
        self.title = ""
        self.detail = ""
        self.recovery: str | None = None
        self.add_class(f"labkit-callout-{kind}")

    def show(self, title: str, detail: str = "", recovery: str | None = None) -> None:
        border, bg, icon, badge, ink = _CALLOUT_STYLE[self.kind]
        rec = (f"<div style='margin-top:4px'><b>Recovery:</b> {recovery}</div>"
               if recovery else "")
        value = (
            f"<div class='labkit-callout labkit-callout-{self.kind}' style='border-left:6px "
            f"solid {border};background:{bg};padding:8px 12px;margin:6px 0;border-radius:4px'>"
            f"<div><span style='color:{ink};font-weight:700'>{icon} {badge}</span> "
            f"<b>{title}</b></div>"
            f"<div style='margin-top:4px'>{detail}</div>{rec}</div>")
        self.title, self.detail, self.recovery = title, detail, recovery
        if value != self.value or not self.active:
            with self.hold_sync():
                self.value = value
                self.layout.display = None
        self.active = True

    def clear(self) -> None:
        if self.active or self.value:
            with self.hold_sync():
                self.value = ""
                self.layout.display = "none"
        self.active = False
        self.title, self.detail, self.recovery = "", "", None


# -- math peek ----------------------------------------------------------------------------

class MathPeek(ipw.Accordion):  # type: ignore[misc, unused-ignore]  # ipywidgets: no stubs
    """A collapsed accordion titled ``title`` holding an HTMLMath body (LaTeX with $...$).

    The formulas reach the browser only while the accordion is open: a collapsed peek keeps
    its latest body in the kernel (``body``) and sends it when the student opens it, so a
    slider move never makes the browser re-typeset LaTeX nobody is looking at (measured by
    ``benchmarks/bench_browser.py``: the largest single cost of a move).
    """

    def __init__(self, title: str, body: str = "", **kwargs: object) -> None:
        self._body = body
        self.html = ipw.HTMLMath(value="")
        super().__init__(children=[self.html], **kwargs)
        self.set_title(0, title)
        self.selected_index = None
        self.title = title
        self.observe(self._on_toggle, names="selected_index")

    @property
    def is_open(self) -> bool:
        return self.selected_index is not None

    @property
    def body(self) -> str:
        """The current formulas (what the accordion shows when open)."""
        return self._body

    def update(self, body: str) -> None:
        self._body = body
        if self.is_open and body != self.html.value:
            self.html.value = body

    def _on_toggle(self, _change: object) -> None:
        if self.is_open and self.html.value != self._body:
            self.html.value = self._body


class More(ipw.Accordion):  # type: ignore[misc, unused-ignore]  # ipywidgets: no stubs
    """A collapsed disclosure: a part's controls or charts beyond the few it opens with,
    titled with what it holds (``"More controls: KV-cache precision, View"``), one click
    (or Enter on its header) away."""

    def __init__(self, what: str, names: list[str], children: list[ipw.Widget]) -> None:
        super().__init__(children=[ipw.VBox(children)])
        self.title = f"More {what}: {', '.join(names)}"
        self.set_title(0, self.title)
        self.selected_index = None
        self.add_class("labkit-more")

    @property
    def is_open(self) -> bool:
        return self.selected_index is not None


# -- reveal gate ----------------------------------------------------------------------------

class RevealGate(ipw.VBox):  # type: ignore[misc, unused-ignore]  # ipywidgets: no stubs
    """Holds ``content`` out of the page until opened; shows ``message`` meanwhile.

    The content widget is not a child until :meth:`reveal` (so nothing it shows is in the
    DOM before, and bqplot figures are laid out at full size when they appear).
    """

    def __init__(self, content: ipw.Widget, message: str = "Commit your prediction first.",
                 **kwargs: object) -> None:
        self.content = content
        self.placeholder = ipw.HTML(
            value=f"<div class='labkit-gate' style='color:#566573;font-style:italic;"
                  f"padding:6px 0'>{esc(message)}</div>")
        self.revealed = False
        super().__init__(children=[self.placeholder], **kwargs)
        self.add_class("labkit-reveal-gate")

    def reveal(self) -> None:
        """Show the content (idempotent)."""
        if not self.revealed:
            self.children = [self.content]
            self.revealed = True

    def conceal(self) -> None:
        """Show the placeholder again (idempotent)."""
        if self.revealed:
            self.children = [self.placeholder]
            self.revealed = False

