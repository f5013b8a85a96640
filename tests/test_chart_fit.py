"""Chart text a student can read (labkit.ui.chart_fit): a y-axis title longer than the plot is
tall keeps its full words on screen (the header) and an axis form that fits; ordinal x tick
labels too wide for their bars turn, with room below them; the right margin holds the last
x tick label; bar value labels sit clear of the x axis. Estimates, as bqplot draws in
Chromium: 12 px tick text, 14 px axis titles, about 6 px a character (6.5 assumed here)."""

from __future__ import annotations

import html
import math
import re

import bqplot as bq
import ipywidgets as ipw
import numpy as np
import pytest

from labkit import ui as lw
from labkit.core.answers import AnswerStore
from labkit.labs.registry import LABS
from labkit.tracks import TRACKS
from labkit.ui import chart_fit as charts

CHAR_PX = 6.5           # a character of an axis title or a tick label
DIGIT_PX = 6.7          # a digit of a tick label, as measured ("365" is 20 px wide)
LINE_PX = 13            # a line of tick text
TURNED_CHAR_PX = 5.5    # how deep turned labels reach ("utilisation (capped)": 105 px long)
LABEL_PX = 12           # a bar's value label
HALF_PX = 1000 / 2      # a figure in a row of two at a 1400 px page
LAB1_C = "tail latency / SLO (capped at 4.00; the table has the true value)"
LAB1_D = ("value / limit (above 1 fails; capped at 3: off scale or n/a, the table has "
          "the value)")
LAB2_D = ["layout", "memory (capped)", "TPOT (capped)", "quality", "daily cost",
          "TTFT (capped)", "utilisation (capped)"]


def _px(value: str) -> float:
    assert value.endswith("px"), value
    return float(value[:-2])


def _plot_height(fig: bq.Figure) -> float:
    m = fig.fig_margin
    return _px(fig.layout.height) - m["top"] - m["bottom"]


def _y_axis(fig: bq.Figure) -> bq.Axis:
    return next(a for a in fig.axes if a.side == "left")


def _x_axis(fig: bq.Figure) -> bq.Axis:
    return next(a for a in fig.axes if a.side == "bottom")


def _title_fits(fig: bq.Figure) -> bool:
    """The y title, centred on the plot, stays inside the figure: it reaches as far above
    the plot as below it, so the top margin bounds it."""
    m = fig.fig_margin
    room = _plot_height(fig) + 2 * min(m["top"], m["bottom"])
    return len(str(_y_axis(fig).label)) * CHAR_PX <= room


def _shown_text(fig: bq.Figure) -> str:
    """The words a student can read around a figure: its header and its axis titles."""
    header = html.unescape(re.sub(r"<[^>]+>", " ", fig.labkit_header.value))
    return " ".join(" ".join([header, *(str(a.label) for a in fig.axes)]).split())


def _bars(names, values, hi=4.0, **kw):
    xs, ys = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, hi)
    bars = lw.bar_mark(names, np.asarray(values, dtype=float), xs, ys,
                       colors=[lw.PALETTE["green"]] * len(names), color_mode="no_group", **kw)
    return bars, xs, ys


def _line_figure() -> bq.Figure:
    xs, ys = lw.make_scale("linear", 0, 1), lw.make_scale("linear", 0, 1)
    return lw.figure([lw.line_mark([0, 1], [0, 1], xs, ys)], xs, ys, x_label="x", y_label="y")


def _tick_problems(fig: bq.Figure, width_px: float) -> list[str]:
    """Problems of an ordinal x axis drawn ``width_px`` wide: labels wider than their bars
    and not turned, turned labels closer than a line, or a bottom margin too shallow."""
    axis = _x_axis(fig)
    names = [str(v) for m in fig.marks if m.scales.get("x") is axis.scale
             for v in np.asarray(m.x).tolist()]
    names = list(dict.fromkeys(names))
    m = fig.fig_margin
    band = (width_px - m["left"] - m["right"]) / len(names)
    widest = max(len(n) for n in names) * CHAR_PX
    out = []
    if not axis.tick_rotate:
        if widest > band:
            out.append(f"{widest:.0f} px labels unturned in {band:.0f} px bars")
        return out
    a = math.radians(abs(axis.tick_rotate))
    if band * math.sin(a) < LINE_PX:
        out.append(f"turned {axis.tick_rotate}: neighbours {band * math.sin(a):.0f} px apart")
    if axis.tick_style.get("text-anchor") != "end":
        out.append(f"turned labels anchored {axis.tick_style}")
    drop = max(len(n) for n in names) * TURNED_CHAR_PX * math.sin(a)
    offset = _px(axis.label_offset)
    if offset < drop + 9 or m["bottom"] < offset + 8:
        out.append(f"drop {drop:.0f}, title at {offset:.0f}, bottom margin {m['bottom']}")
    first = band / 2 - len(names[0]) * CHAR_PX * math.cos(a)
    if first < -m["left"]:
        out.append(f"first label reaches {-first:.0f} px left; margin {m['left']}")
    return out


# -- the y-axis title ---------------------------------------------------------------------

def test_a_long_y_title_fits_its_axis_and_keeps_every_word_in_the_header():
    bars, xs, ys = _bars(["none", "static", "dynamic", "continuous"], [4, 4, 4, 0.83])
    fig = lw.figure([bars], xs, ys, x_label="batching policy", y_label=LAB1_C,
                    title="p99 TPOT against the SLO (dashed: the limit)", height=260)
    shown = str(_y_axis(fig).label)
    assert shown != LAB1_C and _title_fits(fig), (shown, fig.fig_margin, fig.layout.height)
    assert shown.startswith("tail latency / SLO")     # the quantity stays on the axis
    assert LAB1_C in _shown_text(fig)                  # and every word is on screen
    assert "axis" in html.unescape(fig.labkit_header.value).lower()
    assert _plot_height(fig) == 260 - 66               # the plot keeps its height
    assert lw.figure_name(fig).startswith("p99 TPOT")


def test_a_title_too_long_for_any_margin_is_cut_at_a_clause_and_fits():
    bars, xs, ys = _bars(["memory", "SLO", "quality", "cost"], [0.5, 3, 0.5, 3], hi=4.5)
    fig = lw.figure([bars], xs, ys, x_label="guardrail", y_label=LAB1_D, height=320)
    shown = str(_y_axis(fig).label)
    assert _title_fits(fig), (shown, fig.fig_margin)
    assert shown == "value / limit (above 1 fails; capped at 3)"
    assert LAB1_D in _shown_text(fig)
    assert lw.figure_name(fig) == LAB1_D               # no title: the full axis title names it


def test_a_title_a_little_too_long_gets_room_above_instead_of_losing_words():
    label = "padding waste (% of slot-steps)"
    bars, xs, ys = _bars(["none", "static", "dynamic", "continuous"], [0, 80, 80, 0], hi=100)
    fig = lw.figure([bars], xs, ys, x_label="batching policy", y_label=label, height=220)
    assert str(_y_axis(fig).label) == label and _title_fits(fig), fig.fig_margin
    assert fig.fig_margin["top"] > charts.FIG_MARGIN["top"]
    assert _plot_height(fig) == 220 - 66
    assert "labkit-axis-note" not in fig.labkit_header.value


def test_a_short_title_leaves_the_figure_as_it_was():
    xs, ys = lw.make_scale("linear", 0, 10), lw.make_scale("linear", 0, 1)
    fig = lw.figure([lw.line_mark([0, 10], [0, 1], xs, ys)], xs, ys, x_label="days",
                    y_label="cost (USD)", title="Cost")
    assert [a.label for a in fig.axes] == ["days", "cost (USD)"]
    assert fig.fig_margin == charts.FIG_MARGIN and fig.layout.height == "300px"
    assert "labkit-axis-note" not in fig.labkit_header.value


def test_a_y_title_set_later_is_fitted_and_a_short_one_drops_the_note():
    xs, ys = lw.make_scale("linear", 0, 10), lw.make_scale("linear", 0, 1)
    fig = lw.figure([lw.line_mark([0, 10], [0, 1], xs, ys)], xs, ys, x_label="x",
                    y_label="time (ms)", title="T", height=240)
    axis = _y_axis(fig)
    lw.update_marks({axis: {"label": LAB1_C}})
    assert axis.label != LAB1_C and _title_fits(fig)
    assert LAB1_C in _shown_text(fig)
    lw.update_marks({axis: {"label": LAB1_C}})        # the same title again: still fitted
    assert axis.label != LAB1_C and LAB1_C in _shown_text(fig)
    lw.update_marks({axis: {"label": "time (s)"}})
    assert axis.label == "time (s)" and "labkit-axis-note" not in fig.labkit_header.value


@pytest.mark.parametrize("room", [4, 12, 20, 35, 60])
def test_short_label_fits_its_room_and_uses_only_the_words_it_was_given(room):
    for text in (LAB1_C, LAB1_D, "padding waste (% of slot-steps)",
                 "a very-long-single-word-title-without-spaces-at-all"):
        short = charts.short_label(text, room)
        assert len(short) <= max(room, 4), (text, room, short)
        words = short.removesuffix(charts.ELLIPSIS).replace("(", " ").replace(")", " ")
        assert all(w in text for w in words.split()), (text, short)
        if len(text) <= room:
            assert short == text


# -- ordinal x tick labels ----------------------------------------------------------------

def test_long_category_names_in_a_half_width_chart_turn_and_get_room_below():
    bars, xs, ys = _bars(LAB2_D, [0.01, 3, 3, 0, 0.02, 3, 3], hi=4.0)
    fig = lw.figure([bars], xs, ys, x_label="constraint", y_label="use of the limit",
                    title="Your design against every constraint", height=300)
    row = lw.frame_figures(ipw.HBox([fig, _line_figure()]))
    assert row.children[0] is lw.framed(fig)
    axis = _x_axis(fig)
    assert axis.tick_rotate < 0, "labels that overlap must turn"
    assert not _tick_problems(fig, HALF_PX), _tick_problems(fig, HALF_PX)
    assert fig.fig_margin["bottom"] > charts.FIG_MARGIN["bottom"]
    assert _plot_height(fig) == 300 - 66               # the figure grows; the plot does not


def test_short_category_names_stay_level_and_a_full_width_chart_needs_no_turn():
    bars, xs, ys = _bars(["none", "static", "dynamic", "continuous"], [1, 2, 3, 0.5])
    fig = lw.figure([bars], xs, ys, x_label="batching policy", y_label="ratio")
    lw.frame_figures(fig)
    assert _x_axis(fig).tick_rotate == 0 and not _tick_problems(fig, 1000)
    wide, wx, wy = _bars(LAB2_D[:5], [1] * 5)
    alone = lw.figure([wide], wx, wy, x_label="constraint", y_label="use")
    lw.frame_figures(ipw.VBox([alone]))                # a row of one: the whole width
    assert _x_axis(alone).tick_rotate == 0, "5 bars of 180 px hold these names level"
    assert not _tick_problems(alone, 1000)
    lw.frame_figures(ipw.HBox([alone, _line_figure()]))  # half the width: they turn
    assert _x_axis(alone).tick_rotate < 0 and not _tick_problems(alone, HALF_PX)


def test_new_category_names_refit_the_axis():
    bars, xs, ys = _bars(["a", "b", "c"], [1, 2, 3])
    fig = lw.figure([bars], xs, ys, x_label="what", y_label="how many")
    lw.frame_figures(ipw.HBox([fig, ipw.HTML("table")]))
    assert _x_axis(fig).tick_rotate == 0
    lw.update_marks({bars: {"x": ["a rather long first name", "another long name here",
                                  "and a third long one"]}})
    assert _x_axis(fig).tick_rotate < 0 and not _tick_problems(fig, HALF_PX)
    lw.update_marks({bars: {"x": ["a", "b", "c"]}})
    assert _x_axis(fig).tick_rotate == 0
    assert _x_axis(fig).tick_style.get("text-anchor") == "middle"


def test_framing_twice_keeps_one_frame_per_figure():
    bars, xs, ys = _bars(["a", "b"], [1, 2])
    fig = lw.figure([bars], xs, ys, x_label="x", y_label="y", title="t")
    row = lw.frame_figures(ipw.HBox([fig]))
    again = lw.frame_figures(row)
    assert again.children[0] is lw.framed(fig)
    assert lw.framed(fig).children == (fig.labkit_header, fig)


# -- the right margin ---------------------------------------------------------------------

@pytest.mark.parametrize(("lo", "hi", "fmt", "ticks"), [
    (10.0, 100000.0, ".6~g", [10, 100, 1000, 10000, 100000]),
    (1.0, 1024.0, ".0f", None),
    (0.01, 365.0, ".3~g", [0.01, 0.1, 1, 7, 30, 365]),
])
def test_the_right_margin_holds_the_last_x_tick_label(lo, hi, fmt, ticks):
    xs, ys = lw.make_scale("log", lo, hi), lw.make_scale("linear", 0, 1)
    fig = lw.figure([lw.line_mark([lo, hi], [0, 1], xs, ys)], xs, ys, x_label="x",
                    y_label="y", x_tick_format=fmt, x_tick_values=ticks)
    lw.frame_figures(ipw.HBox([fig, ipw.HTML("the other chart")]))
    axis = _x_axis(fig)
    last = float(np.asarray(axis.tick_values)[-1])
    text = lw.tick_labels(axis)[-1]
    assert "e" not in text, text
    m = fig.fig_margin
    plot_w = HALF_PX - m["left"] - m["right"]
    inside = (math.log10(hi) - math.log10(last)) / (math.log10(hi) - math.log10(lo)) * plot_w
    assert len(text) * DIGIT_PX / 2 + 2 <= m["right"] + inside, (text, m)


def test_the_right_margin_follows_a_log_scale_that_widens():
    xs, ys = lw.make_scale("log", 1.0, 100.0), lw.make_scale("linear", 0, 1)
    fig = lw.figure([lw.line_mark([1, 100], [0, 1], xs, ys)], xs, ys, x_label="x",
                    y_label="y", x_tick_format=".6~g")
    assert fig.fig_margin["right"] == charts.FIG_MARGIN["right"]
    lw.set_domain(xs, 1.0, 100_000.0)
    text = lw.tick_labels(_x_axis(fig))[-1]
    assert text == "100000"
    assert fig.fig_margin["right"] >= len(text) * DIGIT_PX / 2 + 2


# -- bar value labels ---------------------------------------------------------------------

def _label_mark(fig: bq.Figure) -> bq.Label:
    marks = [m for m in fig.marks if isinstance(m, bq.Label)]
    assert len(marks) == 1, fig.marks
    return marks[0]


def _px_above_axis(fig: bq.Figure, y: float, lo: float, hi: float) -> float:
    plot = _plot_height(fig)
    pad = fig.padding_y
    return plot * pad + (y - lo) / (hi - lo) * plot * (1 - 2 * pad)


def _label_problems(fig: bq.Figure, values, lo: float, hi: float) -> list[str]:
    """A value label across the x axis, out of the plot, or across its bar's end."""
    labels = _label_mark(fig)
    plot, out = _plot_height(fig), []
    foot = _px_above_axis(fig, max(lo, 0.0), lo, hi)
    for v, y in zip(values, np.asarray(labels.y, dtype=float), strict=True):
        centre = _px_above_axis(fig, y, lo, hi)
        end = _px_above_axis(fig, min(max(v, lo), hi), lo, hi)
        bottom, top = centre - LABEL_PX / 2, centre + LABEL_PX / 2
        if bottom < foot + 1:
            out.append(f"{v}: the label touches the x axis ({bottom:.1f} px)")
        if top > plot:
            out.append(f"{v}: the label leaves the plot ({top:.1f} > {plot:.0f} px)")
        if not (top <= end or bottom >= end):
            out.append(f"{v}: the label lies across its bar's end")
    return out


def test_value_labels_of_tiny_bars_sit_above_the_x_axis_and_long_bars_keep_theirs_inside():
    values = [0.0, 0.03, 1.5, 4.0]
    bars, xs, ys = _bars(["none", "static", "dynamic", "continuous"], values, hi=4.0,
                         label_display=True, label_display_format=".2f")
    fig = lw.figure([bars], xs, ys, x_label="policy", y_label="ratio", height=260)
    labels = _label_mark(fig)
    assert not bars.label_display                      # bqplot's own labels: off
    assert list(labels.text) == ["0.00", "0.03", "1.50", "4.00"]
    assert list(labels.x) == ["none", "static", "dynamic", "continuous"]
    assert not _label_problems(fig, values, 0.0, 4.0), _label_problems(fig, values, 0.0, 4.0)
    ys_ = np.asarray(labels.y, dtype=float)
    assert ys_[0] > 0 and ys_[1] > 0.03               # above the short bars
    assert ys_[2] < 1.5 and ys_[3] < 4.0              # inside the long ones
    values = [2.0, 0.01, 0.0, 3.0]
    lw.update_marks({bars: {"y": np.asarray(values)}})
    assert list(labels.text) == ["2.00", "0.01", "0.00", "3.00"]
    assert not _label_problems(fig, values, 0.0, 4.0)
    lw.update_marks({bars: {"visible": False}})
    assert not labels.visible


def test_value_labels_follow_the_scale_and_never_write_e_notation():
    bars, xs, ys = _bars(["a", "b"], [123456.0, 50.0], hi=200000.0, label_display=True,
                         label_display_format=".3~g")
    fig = lw.figure([bars], xs, ys, x_label="x", y_label="y")
    labels = _label_mark(fig)
    assert list(labels.text) == ["123456", "50"]       # d3's .3~g would write 1.23e+5
    before = np.asarray(labels.y, dtype=float).copy()
    lw.set_domain(ys, 0.0, 20_000_000.0)               # the bars shrink to a few pixels
    after = np.asarray(labels.y, dtype=float)
    assert not np.allclose(before, after)
    assert not _label_problems(fig, [123456.0, 50.0], 0.0, 2e7)
    assert after[0] > 123456.0                          # now above its bar
    assert charts.value_label_text(".2f", float("nan")) == ""


def test_value_labels_on_a_log_axis_are_placed_in_decades():
    xs, ys = lw.make_scale("ordinal"), lw.make_scale("log", 1.0, 1000.0)
    bars = lw.bar_mark(["a", "b"], np.asarray([1.05, 300.0]), xs, ys, base=1.0,
                       label_display=True, label_display_format=".3~g")
    fig = lw.figure([bars], xs, ys, x_label="x", y_label="y (log)")
    y = np.asarray(_label_mark(fig).y, dtype=float)
    assert np.all(np.isfinite(y)) and list(_label_mark(fig).text) == ["1.05", "300"]
    plot = _plot_height(fig) * (1 - 2 * fig.padding_y)
    px = (np.log10(y) - 0) / 3 * plot                    # above the axis, in pixels
    bar = np.log10([1.05, 300.0]) / 3 * plot
    assert px[0] - LABEL_PX / 2 >= bar[0] + 1            # above the stub of a bar
    assert px[1] + LABEL_PX / 2 <= bar[1]                # inside the tall one


def test_bars_without_value_labels_get_no_label_mark():
    bars, xs, ys = _bars(["a", "b"], [1.0, 2.0])
    fig = lw.figure([bars], xs, ys, x_label="x", y_label="y")
    assert not any(isinstance(m, bq.Label) for m in fig.marks)


# -- every chart of every lab ---------------------------------------------------------------

@pytest.mark.parametrize("lab_id", sorted(LABS))
def test_every_chart_of_every_track_fits_its_text(lab_id, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    problems = []
    for track in TRACKS:
        lab = LABS[lab_id].lab(track, store=AnswerStore(tmp_path / f"{track}.json"))
        for letter in "ABCD":
            part = lab.part(letter)
            assert part.explore is not None            # laid out: each figure knows its row
            for name, fig in part.figures.items():
                where = f"{track}/{letter}/{name}"
                fit = fig.labkit_fit
                if not _title_fits(fig):
                    problems.append(f"{where}: y title {_y_axis(fig).label!r} too long")
                if fit.y_full and fit.y_full not in _shown_text(fig):
                    problems.append(f"{where}: {fit.y_full!r} not on screen")
                if isinstance(_x_axis(fig).scale, bq.OrdinalScale):
                    problems += [f"{where}: {p}" for p in _tick_problems(fig, fit.width_px)]
    assert not problems, "\n".join(problems)
