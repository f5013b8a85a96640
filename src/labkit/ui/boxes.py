"""The HTML widgets of a live notebook: status callouts, math peeks, disclosures and
reveal gates (a headless build imports none of this: :mod:`labkit.ui.headless`).

* :class:`Callout` -- an HTML status box (made through :func:`labkit.ui.html.callout`);
* :class:`MathPeek` -- an accordion with live LaTeX formulas and the current numbers;
* :class:`More` -- a collapsed disclosure of a part's further controls or charts;
* :class:`RevealGate` -- holds content out of the page until it is opened.
"""

from __future__ import annotations

import ipywidgets as ipw

from labkit.ui.headless import ShowOrClear
from labkit.ui.html import callout_html, check_kind, esc

# -- callouts -------------------------------------------------------------------------------

class Callout(ShowOrClear, ipw.HTML):  # type: ignore[misc, unused-ignore]  # ipywidgets: no stubs
    """A status box of one ``kind``: ``danger`` | ``warn`` | ``success`` | ``info``.

    ``show(title, detail, recovery)`` fills and displays it (``active`` True); ``clear()``
    empties and hides it. ``danger`` (OOM, SLO miss, over budget) has a red border, a ✖ and
    a FAILURE badge; ``success`` -- the boundary to watch -- a green border, ✔ and its own
    badge, so the two can never be confused. ``title``/``detail`` may contain trusted HTML.
    """

    value: str

    def __init__(self, kind: str = "info", **kwargs: object) -> None:
        check_kind(kind)
        super().__init__(value="", layout=ipw.Layout(display="none", width="auto"), **kwargs)
        self.kind = kind
        self.active = False
        self.title = ""
        self.detail = ""
        self.recovery: str | None = None
        self.add_class(f"labkit-callout-{kind}")

    def show(self, title: str, detail: str = "", recovery: str | None = None) -> None:
        value = callout_html(self.kind, title, detail, recovery)
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

