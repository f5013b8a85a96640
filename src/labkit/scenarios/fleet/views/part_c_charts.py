"""Lab 2 Part C, fleet scenario: the charts (memory and step bars, the Pareto cloud, the
"when to stop" sweep) and their refresh steps, bound to :class:`~..plan.sizing.LayoutEval`
and :class:`~..plan.sizing.StopSweep` fields. Only finite numbers reach a mark: a
layout that does not exist is left out of a sweep, never drawn as NaN."""

from __future__ import annotations

import numpy as np

import labkit.scenarios.fleet.views.part_c_paper as paper
from labkit import ui as lw
from labkit.labs.accelerators.base import Part
from labkit.labs.common import ALL, Settings, depends_on
from labkit.scenarios.fleet.plan.sizing import (
    DESIGN_MAX_DEVICES,
    FleetLayouts,
    LayoutEval,
    layout_label,
)
from labkit.ui.charts import lin_top, log_domain

PLACEHOLDER = [1.0]
"""A hidden mark's data (finite; the mark is not visible)."""


class FleetCCharts(Part):
    """Part C's figures and the refresh steps that draw them (subclass: :class:`PartCFleet`,
    which provides ``plans``, ``_layout`` and ``opts``)."""

    plans: FleetLayouts
    opts: dict[str, list[int]]

    def _layout(self, s: Settings) -> LayoutEval:
        raise NotImplementedError

    def _setup_bar_charts(self) -> None:
        tr, hw = self.track, self.hw
        mx, my = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_mem = my
        self.m_mem = lw.bar_mark(["your layout", "next"], np.zeros((3, 2)), mx, my,
                                 colors=[lw.PALETTE["blue"], lw.PALETTE["purple"],
                                         lw.PALETTE["grey"]],
                                 labels=["weights", "KV", "transient"], legend=True)
        self.m_mem_cap = lw.hline_mark(hw.usable_memory_bytes / 1e9, my,
                                       color=lw.PALETTE["red"],
                                       label=("usable after the reserve"
                                              if tr.memory_reserve_fraction > 0 else "usable"),
                                       legend=True)
        self.figures["memory"] = lw.figure(
            [self.m_mem, self.m_mem_cap], mx, my, x_label="layout",
            y_label="GB on the binding device", title="Per-device memory", legend=True,
            legend_location="top-right", height=280)
        tx, ty = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_time = ty
        self.m_time = lw.bar_mark(["your layout", "next"], np.zeros((5, 2)), tx, ty,
                                  colors=[lw.PALETTE["orange"], lw.PALETTE["red"],
                                          lw.PALETTE["purple"], lw.PALETTE["teal"],
                                          lw.PALETTE["green"]],
                                  labels=["roofline", "TP all-reduce", "CP ring", "PP hand-off",
                                          "EP all-to-all"], legend=True)
        self.m_time_slo = lw.hline_mark(tr.slo_s * 1e3, ty, color=lw.PALETTE["red"],
                                        label="TPOT budget", legend=True)
        self.figures["time"] = lw.figure(
            [self.m_time, self.m_time_slo], tx, ty, x_label="layout",
            y_label="ms per decode step", title="The decode step: compute vs communication",
            legend=True, legend_location="top-right", height=280)

    def _setup_pareto_chart(self) -> None:
        px = lw.make_scale("log", 1, DESIGN_MAX_DEVICES)
        py = lw.make_scale("log", 1e-3, 1.0)
        self.s_par = py
        self.m_all = lw.scatter_mark(PLACEHOLDER, PLACEHOLDER, px, py,
                                     color=lw.PALETTE["light"], size=16)
        self.m_front = lw.line_mark(PLACEHOLDER, PLACEHOLDER, px, py,
                                    colors=[lw.PALETTE["blue"]], labels=["Pareto frontier"],
                                    legend=True, marker="circle", marker_size=30)
        self.m_par_slo = lw.hline_mark(self.track.slo_s * 1e3, py, color=lw.PALETTE["red"],
                                       label="TPOT budget", legend=True)
        self.m_par_me = lw.scatter_mark(PLACEHOLDER, PLACEHOLDER, px, py,
                                        color=lw.PALETTE["red"], size=120)
        self.figures["pareto"] = lw.figure(
            [self.m_all, self.m_front, self.m_par_slo, self.m_par_me], px, py,
            x_label="devices (log)", y_label="ms per decode step (log)",
            title="Every layout that fits (grey), the frontier (blue), yours (red)",
            legend=True, legend_location="top-right", x_tick_format=".0f",
            y_tick_format=".2~g", height=300)

    def _setup_stop_chart(self) -> None:
        m, hw = self.model, self.hw
        sx = lw.make_scale("log", 1, 64)
        sy = lw.make_scale("log", 1e-3, 1.0)
        self.s_stop_x, self.s_stop_y = sx, sy
        self.m_stop = lw.line_mark(PLACEHOLDER, PLACEHOLDER, sx, sy,
                                   colors=[lw.PALETTE["orange"]], labels=["ms per step"],
                                   legend=True, marker="circle", marker_size=24)
        self.m_stop_comm = lw.line_mark(PLACEHOLDER, PLACEHOLDER, sx, sy,
                                        colors=[lw.PALETTE["red"]],
                                        labels=["of which communication"], legend=True,
                                        marker="circle", marker_size=24)
        self.m_stop_kv = lw.vline_mark(float(m.kv_heads or 1), sx, color=lw.PALETTE["purple"],
                                       line_style="dotted", label="KV heads run out",
                                       legend=True)
        self.m_stop_dom = lw.vline_mark(float(hw.domain_size), sx, color=lw.PALETTE["grey"],
                                        line_style="dotted", label="leaves the fast domain",
                                        legend=True)
        self.m_stop_rule = lw.vline_mark(float(hw.domain_size), sx, color=lw.PALETTE["teal"],
                                         line_style="dashed",
                                         label="the paper's stop rule fires", legend=True)
        self.figures["stop"] = lw.figure(
            [self.m_stop, self.m_stop_comm, self.m_stop_kv, self.m_stop_dom, self.m_stop_rule],
            sx, sy, x_label="degree of the axis to add (log)", y_label="ms (log)",
            title="When to stop adding the axis", legend=True, legend_location="top-right",
            x_tick_format=".0f", y_tick_format=".2~g", height=300)

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_bars(self, s: Settings) -> None:
        """Memory and step of your layout and the next one, and your point."""
        lay = self._layout(s)
        cfg, cfg2, slo = lay.config, lay.next_config, lay.preset.slo
        ax = lay.preset.axis.upper()
        names = [f"yours: {layout_label(lay.degrees)}",
                 f"+{ax}: {layout_label(lay.next_degrees)}" if cfg2 is not None
                 else f"+{ax}: not a layout"]
        mem_y = np.asarray([paper.memory_gb(cfg), paper.memory_gb(cfg2)]).T
        tim_y = np.asarray([paper.time_ms(cfg), paper.time_ms(cfg2)]).T
        lw.update_marks({
            self.m_mem: {"x": names, "y": mem_y},
            self.s_mem: {"max": lin_top(np.concatenate([mem_y.sum(axis=0),
                                                         [self.hw.usable_memory_bytes / 1e9]]),
                                         pad=1.25)},
            self.m_time: {"x": names, "y": tim_y},
            self.s_time: {"max": lin_top(np.concatenate([tim_y.sum(axis=0), [slo * 1e3]]),
                                          floor=1e-3, pad=1.25)},
            self.m_par_me: ({"x": [float(cfg.devices)], "y": [cfg.per_token_latency_s * 1e3],
                             "visible": True} if cfg is not None else {"visible": False}),
        })

    @depends_on("symptom", "model")
    def _draw_pareto(self, s: Settings) -> None:
        """Every layout that fits this workload, the frontier and the SLO lines."""
        key, mid = str(s["symptom"]), str(s["model"])
        table, _ = self.plans.table_for(mid, key)
        slo = self.plans.presets_for(self.plans.models[mid])[key].slo
        fit = np.flatnonzero(table.fits)
        lat = np.asarray(table.per_token_latency_s) * 1e3
        sr = self.plans.search_for(mid, key)
        fx = [float(c.devices) for c in sr.frontier] if sr is not None else PLACEHOLDER
        fy = [c.per_token_latency_s * 1e3 for c in sr.frontier] if sr is not None else PLACEHOLDER
        pts = lat[fit] if fit.size else np.asarray(PLACEHOLDER)
        lo, hi = log_domain(np.concatenate([pts, [slo * 1e3]]), 1.6)
        lw.update_marks({
            self.m_time_slo: {"y": [slo * 1e3, slo * 1e3]},
            self.m_par_slo: {"y": [slo * 1e3, slo * 1e3]},
            self.m_all: {"x": np.asarray(table.devices, dtype=float)[fit]
                         if fit.size else np.asarray(PLACEHOLDER), "y": pts,
                         "visible": bool(fit.size)},
            self.m_front: {"x": fx, "y": fy, "visible": sr is not None},
            self.s_par: {"min": lo, "max": hi},
        })

    @depends_on(ALL)
    def _draw_stop(self, s: Settings) -> None:
        """The step as the symptom's axis grows, the other degrees fixed."""
        lay = self._layout(s)
        sw = self.plans.sweep(lay, self.opts[lay.preset.axis])
        ys = list(sw.step_ms) + list(sw.comm_ms)
        lo, hi = log_domain(np.asarray(ys), 2.0) if ys else (1e-3, 1.0)
        has, has_comm = bool(sw.degrees), bool(sw.comm_degrees)
        lw.update_marks({
            self.m_stop: {"x": list(sw.degrees) if has else PLACEHOLDER,
                          "y": list(sw.step_ms) if has else PLACEHOLDER, "visible": has},
            self.m_stop_comm: {"x": list(sw.comm_degrees) if has_comm else PLACEHOLDER,
                               "y": list(sw.comm_ms) if has_comm else PLACEHOLDER,
                               "visible": has_comm},
            self.s_stop_x: {"min": 1.0, "max": sw.max_degree},
            self.s_stop_y: {"min": lo, "max": hi},
            self.m_stop_kv: ({"x": [sw.kv_heads, sw.kv_heads], "visible": True}
                             if sw.kv_heads is not None else {"visible": False}),
            self.m_stop_dom: ({"x": [sw.domain_degree, sw.domain_degree], "visible": True}
                              if sw.domain_degree is not None else {"visible": False}),
            self.m_stop_rule: ({"x": [float(sw.rule_degree)] * 2, "visible": True}
                               if sw.rule_degree is not None else {"visible": False}),
        })
