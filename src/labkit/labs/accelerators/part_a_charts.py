"""Lab 2 Part A (transformer): the four charts' marks and figures, built once. The part
(:mod:`labkit.labs.accelerators.part_a`) moves them from plans results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from labkit import ui as lw
from labkit.core.format import fmt_count

if TYPE_CHECKING:
    import bqplot as bq
from labkit.plans.roofline import GAIN_FROM_BATCH, DecodeRoofline
from labkit.ui.charts import lin_top

TERMS = ("weight fetch", "compute", "KV read", "overhead")
TERM_COLORS = [lw.PALETTE["blue"], lw.PALETTE["orange"], lw.PALETTE["purple"],
               lw.PALETTE["grey"], "#222222"]
MODE_TERMS = (*TERMS, "TP comm")
"""The modes chart's stacked terms: the math peek's step terms, TP comm its own bar (never
folded into "overhead")."""
MODE_COLORS = [*TERM_COLORS[:4], lw.PALETTE["teal"]]


@dataclass(frozen=True)
class BatchChart:
    """Decode time vs batch: the terms, the other mode's total, the band real systems span
    around achievable, B*, 2B*, knee, you."""

    fig: bq.Figure
    x: bq.Scale
    y: bq.Scale
    terms: bq.Lines
    other: bq.Lines
    band: bq.Lines
    b_star: bq.Lines
    serve: bq.Lines
    knee: bq.Lines
    point: bq.Scatter


def batch_chart(grid: np.ndarray, b_max: int) -> BatchChart:
    bx, by = lw.make_scale("log", 1, b_max), lw.make_scale("log", 1e-4, 1.0)
    terms = lw.line_mark(grid, np.ones((5, grid.size)), bx, by, colors=TERM_COLORS,
                         labels=[*TERMS, "total"], legend=True)
    other = lw.line_mark(grid, np.ones(grid.size), bx, by, colors=[lw.PALETTE["light"]],
                         line_style="dashed", labels=["total, other mode"], legend=True,
                         stroke_width=2)
    band = lw.line_mark(grid, np.ones((2, grid.size)), bx, by,
                        colors=[lw.PALETTE["teal"]] * 2, stroke_width=0.5, fill="between",
                        fill_colors=[lw.PALETTE["teal"]], fill_opacities=[0.15],
                        labels=["real systems (band around achievable)"], legend=True,
                        visible=False)
    b_star = lw.vline_mark(1.0, bx, color=lw.PALETTE["red"], label="B* (this mode)",
                           legend=True)
    serve = lw.vline_mark(2.0, bx, color=lw.PALETTE["teal"], line_style="dashed",
                          label="2B* (paper's serving batch)", legend=True)
    knee = lw.vline_mark(1.0, bx, color=lw.PALETTE["green"], line_style="dotted",
                         label="knee", legend=True)
    point = lw.scatter_mark([1.0], [1.0], bx, by)
    fig = lw.figure([band, terms, other, b_star, serve, knee, point], bx, by,
                    x_label="batch B (sequences, log)", y_label="time (ms, log)",
                    title="Decode time vs batch at your context", legend=True,
                    legend_location="top-right", x_tick_format=".0f", y_tick_format=".2~g")
    return BatchChart(fig, bx, by, terms, other, band, b_star, serve, knee, point)


@dataclass(frozen=True)
class ContextChart:
    """Decode time vs context: the terms, L*, you."""

    fig: bq.Figure
    x: bq.Scale
    y: bq.Scale
    terms: bq.Lines
    l_star: bq.Lines
    point: bq.Scatter


def context_chart(grid: np.ndarray, c_max: int) -> ContextChart:
    cx, cy = lw.make_scale("log", 256, c_max), lw.make_scale("log", 1e-4, 1.0)
    terms = lw.line_mark(grid, np.ones((5, grid.size)), cx, cy, colors=TERM_COLORS,
                         labels=[*TERMS, "total"], legend=True)
    l_star = lw.vline_mark(256.0, cx, color=lw.PALETTE["red"], label="L* (this mode)",
                           legend=True)
    point = lw.scatter_mark([256.0], [1.0], cx, cy)
    fig = lw.figure([terms, l_star, point], cx, cy, x_label="context S (tokens, log)",
                    y_label="time (ms, log)", title="Decode time vs context at your batch",
                    legend=True, legend_location="top-left", x_tick_format=".3~s",
                    y_tick_format=".2~g")
    return ContextChart(fig, cx, cy, terms, l_star, point)


@dataclass(frozen=True)
class GainChart:
    """Batching gain along the context, B = 1 to the largest batch that fits there."""

    fig: bq.Figure
    x: bq.Scale
    y: bq.Scale
    gain: bq.Lines
    l_star: bq.Lines
    point: bq.Scatter


def gain_chart(grid: np.ndarray, c_max: int, b_max: int) -> GainChart:
    gx, gy = lw.make_scale("log", 256, c_max), lw.make_scale("log", 1.0, 10.0)
    top, one = fmt_count(b_max), fmt_count(GAIN_FROM_BATCH)
    gain = lw.line_mark(grid, np.ones(grid.size), gx, gy, colors=[lw.PALETTE["teal"]],
                        labels=[f"gain B = {one} → largest batch that fits (≤ {top})"],
                        legend=True)
    l_star = lw.vline_mark(256.0, gx, color=lw.PALETTE["red"], label="L* (this mode)",
                           legend=True)
    point = lw.scatter_mark([256.0], [1.0], gx, gy)
    fig = lw.figure([gain, l_star, point], gx, gy, x_label="context S (tokens, log)",
                    y_label="batching gain (x, log)",
                    title=f"What batching saves per token, B = {one} → the largest batch that "
                          f"fits memory (≤ {top})", legend=True,
                    legend_location="bottom-left", x_tick_format=".3~s", y_tick_format=".3~g")
    return GainChart(fig, gx, gy, gain, l_star, point)


@dataclass(frozen=True)
class ModesChart:
    """Peak vs achievable step at your point, stacked terms, and the TPOT SLO."""

    fig: bq.Figure
    y: bq.Scale
    bars: bq.Bars
    slo: bq.Lines


def modes_chart(modes: tuple[str, ...], slo_s: float) -> ModesChart:
    px, py = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
    bars = lw.bar_mark(list(modes), np.zeros((len(MODE_TERMS), 2)), px, py,
                       colors=MODE_COLORS, labels=list(MODE_TERMS), legend=True)
    slo = lw.hline_mark(slo_s * 1e3, py, color=lw.PALETTE["red"], label="TPOT SLO",
                        legend=True)
    fig = lw.figure([bars, slo], px, py, x_label="roofline", y_label="time per step (ms)",
                    title="Peak vs achievable step at your point", legend=True,
                    legend_location="top-left")
    return ModesChart(fig, py, bars, slo)


def sweep_terms(r: DecodeRoofline, view: str) -> np.ndarray:
    """The four terms and the total of a sweep, in ms per token (step ÷ B) or per step."""
    suf = "_step_s" if view == "step" else "_s"
    total = "step_s" if view == "step" else "per_token_s"
    out = np.vstack([np.asarray(getattr(r, k + suf), dtype=float)
                     for k in ("weight", "compute", "kv", "overhead")]
                    + [np.asarray(getattr(r, total), dtype=float)]) * 1e3
    out[3][out[3] <= 0] = np.nan  # peak mode has no overhead term
    return out


def time_axis_label(view: str) -> str:
    """The time charts' y label: per token is the step ÷ B, per step the whole step."""
    return ("time per token = step ÷ B (ms, log)" if view == "token"
            else "time per step (ms, log)")


def within(x: float, grid: np.ndarray) -> bool:
    """A vertical line at ``x`` is drawn only inside the chart's grid."""
    return bool(float(grid[0]) <= x <= float(grid[-1]))


def modes_updates(mc: ModesChart, here: Mapping[str, DecodeRoofline], modes: Sequence[str],
                  tpot_slo_s: float | None) -> dict[bq.Mark | bq.Scale, dict[str, object]]:
    """The modes chart at a point: each mode's stacked step terms (ms), the y range, and
    the TPOT SLO line where there is one and it is within 3x of the tallest bar."""
    bars = np.asarray([[float(here[md].weight_step_s), float(here[md].compute_step_s),
                        float(here[md].kv_step_s), float(here[md].overhead_step_s),
                        float(here[md].comm_step_s)] for md in modes]).T * 1e3
    bar_top = lin_top(bars.sum(axis=0), floor=1e-3, pad=1.3)
    slo_ms = (tpot_slo_s or 0.0) * 1e3
    show_slo = tpot_slo_s is not None and slo_ms <= 3.0 * bar_top
    return {mc.bars: {"y": bars},
            mc.y: {"max": lw.nice_up(max(bar_top, 1.15 * slo_ms if show_slo else 0.0))},
            mc.slo: {"visible": show_slo}}
