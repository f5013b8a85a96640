"""A figure's title and legend as HTML above the plot: :class:`ChartHeader` (made by
:func:`labkit.ui.charts.figure`; a headless build makes none)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import ipywidgets as ipw

from labkit.ui.chart_fit import AXIS_NOTE
from labkit.ui.html import esc

if TYPE_CHECKING:
    import bqplot as bq
else:
    from labkit.ui.headless import LazyModule

    bq = LazyModule("bqplot")

_DASH = {"solid": "solid", "dashed": "dashed", "dotted": "dotted", "dash_dotted": "dashed"}
_WATCHED = ["labels", "colors", "visible", "line_style", "display_legend"]


def _swatch(mark: bq.Mark, color: str) -> str:
    """A small HTML sample of ``mark`` drawn in ``color``: a line, a dot or a box."""
    if isinstance(mark, bq.Lines):
        dash = _DASH.get(str(mark.line_style), "solid")
        dot = (f"<span style='display:inline-block;width:7px;height:7px;border-radius:50%;"
               f"background:{color};margin-left:-14px;vertical-align:middle'></span>"
               if mark.marker else "")
        return (f"<span style='display:inline-block;width:22px;border-top:3px {dash} {color};"
                f"vertical-align:middle'></span>{dot}")
    radius = "50%" if isinstance(mark, bq.Scatter) else "2px"
    return (f"<span style='display:inline-block;width:10px;height:10px;border-radius:{radius};"
            f"background:{color};vertical-align:middle'></span>")


class ChartHeader(ipw.HTML):  # type: ignore[misc, unused-ignore]  # ipywidgets: no stubs
    """A figure's title and legend as HTML above the plot area (outside the data).

    The legend lists the figure's marks made with ``display_legend`` (bqplot's own legend,
    drawn inside the plot over the curves, is switched off) and follows their labels,
    colours, line styles and visibility: a hidden mark leaves the legend.
    """

    value: str

    def __init__(self, fig: bq.Figure, title: str = "", *, legend: bool | None = None,
                 align: str = "flex-start") -> None:
        super().__init__(value="", layout=ipw.Layout(width="100%"))
        self.add_class("labkit-chart-header")
        self.fig, self.chart_title, self.align = fig, title, align
        self.axis_note = ""  # the y title in full when its axis shows a short form
        self.show_legend = legend is not False
        self.legend_marks: list[bq.Mark] = []
        self._watched: set[int] = set()
        fig.observe(lambda _c: self._adopt(), names="marks")
        self._adopt()

    def entries(self) -> list[tuple[str, str, bq.Mark]]:
        """(label, colour, mark) of every legend entry shown now."""
        if not self.show_legend:
            return []
        out = []
        for mark in self.legend_marks:
            if not mark.visible:
                continue
            colors = list(mark.colors) or ["#000000"]
            out += [(str(lab), str(colors[i % len(colors)]), mark)
                    for i, lab in enumerate(mark.labels or []) if str(lab)]
        return out

    def render(self, _change: object = None) -> None:
        title = (f"<div class='labkit-chart-title' style='font-weight:700;font-size:1.05em;"
                 f"line-height:1.3'>{esc(self.chart_title)}</div>" if self.chart_title else "")
        items = "".join(f"<span class='labkit-legend-item' style='white-space:nowrap'>"
                        f"{_swatch(mark, color)} {esc(label)}</span>"
                        for label, color, mark in self.entries())
        legend = (f"<div class='labkit-legend' style='display:flex;flex-wrap:wrap;gap:2px 14px;"
                  f"justify-content:{self.align};font-size:0.85em;margin-top:2px'>{items}"
                  f"</div>" if items else "")
        note = (f"<div class='labkit-axis-note' style='font-size:0.85em;color:#444;"
                f"line-height:1.3;margin-top:1px'>{AXIS_NOTE}{esc(self.axis_note)}</div>"
                if self.axis_note else "")
        value = (f"<div style='padding:2px 20px 0 72px'>{title}{note}{legend}</div>"
                 if title or legend or note else "")
        if value != self.value:
            self.value = value

    def _adopt(self) -> None:
        for mark in self.fig.marks:
            if id(mark) not in self._watched:
                self._watched.add(id(mark))
                mark.observe(self._on_mark, names=_WATCHED)
            self._take_legend(mark)
        self.render()

    def _take_legend(self, mark: bq.Mark) -> None:
        if mark.display_legend:
            mark.display_legend = False
            if mark not in self.legend_marks:
                self.legend_marks.append(mark)

    def _on_mark(self, change: Mapping[str, object]) -> None:
        if change["name"] == "display_legend":
            self._take_legend(change["owner"])
        self.render()
