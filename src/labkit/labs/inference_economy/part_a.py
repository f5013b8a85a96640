"""Lab 1 Part A: two amounts (setup vs serving) and the cost crossover.

The view: controls and charts bound to :func:`labkit.plans.economy.crossover_point`
(every number); the text is :mod:`~labkit.labs.inference_economy.part_a_spec`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from labkit import ui as lw
from labkit.core.format import fmt_num, fmt_time, format_bytes, tex_num
from labkit.core.grids import PRECISIONS
from labkit.core.units import SECONDS_PER_HOUR
from labkit.labs.common import (
    ALL,
    CheckSpec,
    Settings,
    Spec,
    computed,
    depends_on,
    metric_cards,
    remembered,
)
from labkit.labs.inference_economy import decisions
from labkit.labs.inference_economy import part_a_spec as spec
from labkit.labs.inference_economy.base import (
    DAYS_BUCKET_MAX,
    WEEKS_BUCKET_MAX,
    Part,
    cost_noun,
    crossover_bucket,
    event_noun,
    fmt_cost,
    fmt_days,
)
from labkit.labs.inference_economy.hints import find_fixes, hint_text
from labkit.plans.deployment import Quantity
from labkit.plans.economy import (
    CrossoverPoint,
    EventCost,
    busy_daily_cost,
    crossover_point,
    event_cost,
    precision_floor,
)
from labkit.plans.serving import LeverFix, track_capacity
from labkit.registries.models import get_model

CHART_TICKS = (1e-4, 1e-3, 1e-2, 0.1, 1, 7, 30, 365)   # days on the crossover chart's axis
BUDGET = "budget"


class PartA(Part):
    """Setup vs recurring cost, and where one request's time goes (prefill vs decode).

    Refresh steps: the crossover chart reads every control; the phase chart only the
    demand, output length and weight precision (the saving changes the bill, not the
    time); the readout, callouts and math peek read every control.
    """

    shows = (("cost_per_event", "cost_per_event"), ("cost_per_day_busy", "daily_cost"),
             ("ttft", "prefill_s"), ("tpot", "tpot_s"))

    def shown(self) -> Mapping[str, Quantity]:
        """A CNN's input pass is not a time to first token: only a model's is shown as one."""
        out = super().shown()
        return out if self.track.is_transformer else {
            k: q for k, q in out.items() if k not in ("ttft", "tpot")}

    letter = "A"
    _decision = decisions.part_a

    def _setup(self) -> None:
        tr = self.track
        self.is_lm = tr.is_transformer
        self._events: dict[tuple[int, int], EventCost] = {}
        self.bits_options = sorted({b for b in PRECISIONS
                                    if not track_capacity(tr, weight_bits=b).oom}
                                   | {tr.weight_bits})
        out_hi = self._setup_controls()
        self.default: CrossoverPoint = crossover_point(tr)
        self.default_phases = self.default.phases
        self._expected = crossover_bucket(self.default.crossover_days, tr.horizon_days)
        self._setup_crossover_chart(out_hi)
        self._setup_phase_chart()
        self.cost_by_bits = {b: event_cost(tr, weight_bits=b).total for b in self.bits_options}
        start = decisions.a_start(self)
        self._start_at(start, decisions.a_start_note(self, start))
        self.callouts["budget"] = lw.callout("danger")
        self.callouts["boundary"] = lw.callout("success")
        self.callouts["floor"] = lw.callout("info")

    def _setup_controls(self) -> int | None:
        """The controls; returns the largest output length (None for a CNN)."""
        tr = self.track
        d0 = tr.demand_rate_per_s
        # down to a tenth of the default, or to the least share the product accepts
        lo = min(d0 / 10, tr.min_demand_rate_per_s)
        self.controls["demand"] = lw.log_control(f"Demand ({event_noun(tr)}s/s)", d0, lo,
                                                 d0 * 10)
        out_hi = None
        if self.is_lm:
            out0 = int(tr.output_tokens or 0)
            model = get_model(tr.model_id)
            out_hi = int(min(4 * out0, model.max_context - int(tr.prompt_tokens or 0)))
            out_hi -= out_hi % 16
            self.controls["output_tokens"] = lw.int_control(
                "Output tokens per request", out0, 16, out_hi, 16)
        self.controls["saving_pct"] = lw.float_control(
            "Optimisation saving on cost per event (%)", 0.0, 0.0, 50.0, 5.0, ".0f")
        self.controls["weight_bits"] = lw.precision_control(
            "Weight precision", tr.weight_bits, self.bits_options)
        return out_hi

    def _setup_crossover_chart(self, out_hi: int | None) -> None:
        tr = self.track
        # Fixed log-log domain spanning every reachable setting, so a change moves the line.
        outs = (16, out_hi) if self.is_lm else (None,)
        cpes = [event_cost(tr, weight_bits=b, output_tokens=n).total
                for b in self.bits_options for n in outs]
        ev = tr.events_per_day
        max_daily, min_daily = max(cpes) * ev * 10, min(cpes) * ev / 10 * 0.5
        horizon = float(tr.horizon_days)
        t_min = tr.setup_cost / max_daily if max_daily > 0 else horizon
        self.x_lo = 10 ** math.floor(math.log10(max(1e-5, min(1 / 24, t_min / 3))))
        y_lo = 10 ** math.floor(math.log10(max(1e-12, min(tr.setup_cost / 10,
                                                          min_daily * self.x_lo))))
        y_hi = 10 ** math.ceil(math.log10(max(tr.setup_cost * 10, max_daily * horizon)))
        self.days = np.geomspace(self.x_lo, horizon, 240)
        xs = lw.make_scale("log", self.x_lo, horizon)
        ys = lw.make_scale("log", y_lo, y_hi)
        rules = [d for d in (1.0, DAYS_BUCKET_MAX, WEEKS_BUCKET_MAX) if self.x_lo < d < horizon]
        self.m_rules = lw.vlines_mark(rules, xs)
        setup_label = f"one-time setup ({fmt_cost(tr.setup_cost, tr.cost_unit)})"
        self.m_setup = lw.hline_mark(tr.setup_cost, ys, color=lw.PALETTE["orange"],
                                     label=setup_label, legend=True)
        y0 = self.default.daily_cost * self.days
        self.m_default = lw.line_mark(self.days, y0, xs, ys, colors=[lw.PALETTE["grey"]],
                                      line_style="dashed", labels=["track defaults"],
                                      legend=True, stroke_width=2)
        self.m_current = lw.line_mark(self.days, y0, xs, ys, colors=[lw.PALETTE["blue"]],
                                      labels=["your settings"], legend=True)
        self.m_cross = lw.vline_mark(self.x_lo, xs, color=lw.PALETTE["red"])
        self.m_cross_pt = lw.scatter_mark([self.x_lo], [tr.setup_cost], xs, ys)
        ticks = [t for t in CHART_TICKS if self.x_lo <= t <= horizon]
        self.figures["crossover"] = lw.figure(
            [self.m_rules, self.m_setup, self.m_default, self.m_current, self.m_cross,
             self.m_cross_pt], xs, ys, x_label=spec.chart_x_label(),
            y_label=f"cumulative cost ({tr.cost_unit}, log; {self.default.daily_basis} basis)",
            title=f"Cumulative recurring {cost_noun(tr)} vs the one-time setup",
            legend=True, x_tick_values=ticks, x_tick_format=".3~g",
            height=320)

    def _setup_phase_chart(self) -> None:
        noun = event_noun(self.track)
        labels = self.default_phases.phase_labels
        self.phase_names = [labels["prefill"], labels["decode"]]
        bx = lw.make_scale("ordinal")
        by = lw.make_scale("linear", 0.0, 100.0)
        self.m_phase = lw.bar_mark(self.phase_names, [50.0, 50.0], bx, by,
                                   colors=[lw.PALETTE["teal"], lw.PALETTE["purple"]],
                                   color_mode="no_group", label_display=True,
                                   label_display_format=".1f")
        self.figures["phases"] = lw.figure(
            [self.m_phase], bx, by, x_label=f"phase of one {noun} (model only)",
            y_label="share of the model's time (%)",
            title=f"Where one {noun}'s model time goes", height=260)

    def _prediction_spec(self) -> Spec:
        return spec.prediction_spec(self.track)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.checkpoint_spec(self.track, self.default_phases)

    # -- shared values ---------------------------------------------------------------------
    def event(self, s: Mapping[str, object]) -> EventCost:
        """The cost of one event at the settings' precision and output length (cached)."""
        key = (int(str(s["weight_bits"])), int(str(s.get("output_tokens", 0) or 0)))
        if key not in self._events:
            self._events[key] = event_cost(self.track, weight_bits=key[0],
                                           output_tokens=key[1] if self.is_lm else None)
        return self._events[key]

    def point(self, s: Mapping[str, object]) -> CrossoverPoint:
        """Part A's computed figures at settings ``s``."""
        return crossover_point(
            self.track, demand_rate_per_s=float(str(s["demand"])),
            weight_bits=int(str(s["weight_bits"])),
            output_tokens=s.get("output_tokens") if self.is_lm else None,
            saving=float(str(s["saving_pct"])) / 100.0, event=self.event(s))

    @computed(ALL)
    def _point(self, s: Settings) -> CrossoverPoint:
        return self.point(s)

    @computed("demand", "weight_bits", "output_tokens")
    def _phases_point(self, s: Settings) -> CrossoverPoint:
        return self.point({**s, "saving_pct": 0.0})

    def failed(self, s: Mapping[str, object]) -> tuple[str, ...]:
        """Part A's one check: the busy-basis daily cost within the daily budget."""
        daily = busy_daily_cost(self.track, self.event(s).total, float(str(s["demand"])),
                                float(str(s["saving_pct"])) / 100.0)
        return (BUDGET,) if daily > self.track.daily_budget else ()

    @computed(ALL)
    def _fixes(self, s: Settings) -> dict[str, LeverFix]:
        return find_fixes(s, self.controls, remembered(self, self.failed)) if self.failed(s) else {}

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on("_point")
    def _draw_crossover(self, s: Settings) -> None:
        tr = self.track
        daily = self._point(s).daily_cost
        t_plot = tr.setup_cost / daily if daily > 0 else None
        visible = t_plot is not None and t_plot <= tr.horizon_days
        upd: dict = {self.m_current: {"y": daily * self.days},
                     self.m_cross_pt: {"visible": visible}}
        if visible:
            upd[self.m_cross] = {"x": [t_plot, t_plot], "visible": True}
            upd[self.m_cross_pt] = {"x": [t_plot], "y": [tr.setup_cost], "visible": True}
        else:
            upd[self.m_cross] = {"visible": False}
        lw.update_marks(upd)

    @depends_on("_phases_point")
    def _draw_phases(self, s: Settings) -> None:
        ph = self._phases_point(s).phases
        total = ph.prefill_s + ph.decode_s
        lw.update_marks({self.m_phase: {"y": [100.0 * ph.prefill_s / total,
                                              100.0 * ph.decode_s / total]}})

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results, readout cards and the parts table."""
        p = self._point(s)
        ph = p.phases
        bucket = crossover_bucket(p.crossover_days, self.track.horizon_days)
        self.results = {
            "cost_per_event": p.event.total, "effective_cost_per_event":
            p.effective_cost_per_event, "events_per_day": p.events_per_day,
            "cost_parts": {c.name: c.cost for c in p.event.parts},
            "cost_basis": p.event.basis, "daily_basis": p.daily_basis,
            "daily_cost": p.daily_cost, "daily_budget": p.daily_budget,
            "budget_ratio": p.budget_ratio, "crossover_days": p.crossover_days,
            "bucket": bucket, "annual_savings": p.annual_savings,
            "prefill_s": ph.prefill_s, "decode_s": ph.decode_s, "tpot_s": p.tpot_s,
            "binding_phase": ph.binding_phase, "binding_label": ph.binding_label,
            "weight_bytes": p.weight_bytes, "cost_unit": self.track.cost_unit,
            "default_crossover_days": self.default.crossover_days, "expected": self._expected,
        }
        self._set_readout(metric_cards(self._cards(p, bucket)))
        self._set_details(spec.parts_table(p.event))

    def _cards(self, p: CrossoverPoint, bucket: str) -> list[tuple[str, str, str, str]]:
        tr = self.track
        u, ph = tr.cost_unit, p.phases
        noun = event_noun(tr)
        phase_note = (f"{fmt_time(ph.prefill_s)} vs {fmt_time(ph.decode_s)}"
                      + spec.front_end_note(tr) + ", " + spec.time_basis(tr, p.weight_bits))
        if p.tpot_s is not None:
            phase_note += (f"; TPOT (mean per output token after the first, the context "
                           f"growing from the prompt as the reply streams) {fmt_time(p.tpot_s)}")
        return [
            (f"cost per {noun}", fmt_cost(p.effective_cost_per_event, u),
             f"before saving {fmt_cost(p.event.total, u)}; "
             + " + ".join(c.name for c in p.event.parts), lw.PALETTE["blue"]),
            (f"recurring per day ({p.daily_basis})", fmt_cost(p.daily_cost, u),
             spec.daily_note(tr, p), lw.PALETTE["orange"]),
            ("crossover", fmt_days(p.crossover_days, tr.horizon_days), f"bucket: {bucket}",
             lw.PALETTE["red"]),
            ("binding phase", ph.binding_label, phase_note, lw.PALETTE["purple"]),
            ("weights", format_bytes(p.weight_bytes), f"at {p.weight_bits}-bit",
             lw.PALETTE["teal"]),
        ]

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        p = self._point(s)
        fix = self._fixes(s).get(BUDGET)
        title, detail = spec.budget_text(self.track, p)
        self.callouts["budget"].set(p.over_budget, title, detail,
                                    None if fix is None else hint_text(self.controls, fix))
        self._set_floor(s)
        title, detail = spec.boundary_text(self.track, p)
        self.callouts["boundary"].set(not p.over_budget, title, detail)

    def floor_peers(self, bits: int) -> list[int]:
        """Other offered weight precisions whose cost per event equals ``bits``'s."""
        f = precision_floor(self.track, bits, self.bits_options)
        return [] if f is None else list(f.peers)

    def _set_floor(self, s: Settings) -> None:
        """Say why a lower precision saves nothing, where it does not (a CNN's INT8 floor)."""
        f = precision_floor(self.track, int(s["weight_bits"]), self.bits_options)
        if f is None:
            self.callouts["floor"].clear()
            return
        self.callouts["floor"].show(*spec.floor_text(self.track, f))

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        tr = self.track
        p = self._point(s)
        c_ev = r"c_{\text{event}}"
        n_day = r"N_{\text{day}}"
        terms = (tex_num(tr.setup_cost, sig=4), tex_num(p.event.total, sig=4),
                 f"{1 - p.saving:.2f}", tex_num(p.events_per_day, sig=4))   # they give t*
        t_tex = "\\infty" if p.daily_cost == 0 else tex_num(tr.setup_cost / p.daily_cost, sig=3)
        self.math.update(
            "<p>Recurring cost grows linearly; the setup is paid once:</p>"
            f"$$C(t) = {c_ev}\\,(1-s)\\,{n_day}\\,t, \\qquad t^* = "
            f"\\frac{{C_{{\\text{{setup}}}}}}{{{c_ev}\\,(1-s)\\,{n_day}}} = "
            f"\\frac{{{terms[0]}}}{{{terms[1]} \\times {terms[2]} \\times {terms[3]}}} = "
            f"{t_tex}\\ \\text{{days}}$$"
            f"<p>Cost of one {event_noun(tr)} ({p.event.basis}), the sum of its parts:</p>"
            f"{self._cost_tex(p.event)}"
            f"<p>Annual saving of s = {p.saving:.0%}: "
            f"{fmt_cost(p.annual_savings, tr.cost_unit)}.</p>{spec.payback_tex(tr, p)}"
            "<p>Source: "
            "<code>labkit.plans.economy.crossover_point</code>, "
            "<code>labkit.plans.economy.event_cost</code>.</p>")

    def _cost_tex(self, ev: EventCost) -> str:
        """The cost of one event from its busy time per part, as display math."""
        tr = self.track
        u = tr.cost_unit
        c_ev = r"c_{\text{event}}"
        times = " + ".join(tex_num(c.busy_s) for c in ev.parts)
        if u == "USD":
            pre, dec = ev.parts
            times = (f"{tex_num(pre.busy_s)} + \\frac{{{tex_num(dec.busy_s * ev.batch)}}}"
                     f"{{{ev.batch}}}")
            rate = (f"\\frac{{{tr.devices_per_replica} \\times "
                    f"{fmt_num(tr.price_per_device_hour)}}}{{{tex_num(SECONDS_PER_HOUR)}}}")
            return (f"$${c_ev} = \\frac{{d\\,p}}{{{tex_num(SECONDS_PER_HOUR)}}}"
                    f"\\left(t_{{\\text{{prefill}}}} + "
                    f"\\frac{{t_{{\\text{{decode}}}}}}{{B}}\\right) = {rate}\\left({times}"
                    f"\\right) = {tex_num(ev.total)}\\ \\text{{USD}}$$")
        times = " + ".join(tex_num(c.busy_s, sig=4) for c in ev.parts)   # terms that give it
        return (f"$${c_ev} = \\frac{{d\\,P\\,\\sum_i t_i}}{{J_{{\\text{{{u}}}}}}} = "
                f"\\frac{{{tr.devices_per_replica} \\times {tex_num(tr.power_w, sig=4)}\\ "
                f"\\text{{W}} "
                f"\\times ({times})\\ \\text{{s}}}}{{{tex_num(tr.joules_per_cost_unit)}\\ "
                f"\\text{{J}}}} = {tex_num(ev.total)}\\ \\text{{{u}}}$$")

    def _reveal_body(self) -> str:
        r = self.results
        body = spec.reveal_text(self.track, self.default, self._point(self.settings()),
                                self.predict.label_for(self._expected), str(r["bucket"]))
        return f"<div>{self._prediction_line()}.</div>{body}"
