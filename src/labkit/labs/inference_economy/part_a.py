"""Lab 1 Part A: two amounts (setup vs serving) and the cost crossover."""

from __future__ import annotations

import math

import numpy as np

from labkit import ui as lw
from labkit.core.format import fmt_num, fmt_time, format_bytes, tex_num
from labkit.core.grids import PRECISIONS
from labkit.labs.common import ALL, Settings, computed, depends_on, metric_cards
from labkit.labs.inference_economy.base import (
    DAYS_BUCKET_MAX,
    WEEKS_BUCKET_MAX,
    Part,
    cost_basis,
    cost_noun,
    crossover_bucket,
    crossover_days,
    event_noun,
    fmt_cost,
    fmt_days,
)
from labkit.physics.economy import Crossover
from labkit.physics.memory import resident_weight_bytes
from labkit.physics.phases import RequestPhases, cnn_compute_precision, cnn_inference_time
from labkit.plans.economy import track_crossover
from labkit.plans.serving import (
    track_capacity,
)
from labkit.plans.workload import track_phases
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track, custom_track

# -- Part A ---------------------------------------------------------------------------------

class PartA(Part):
    """Setup vs recurring cost, and where one request's time goes (prefill vs decode).

    Refresh steps: the crossover chart reads every control; the phase chart only the
    demand, output length and weight precision (the saving changes the bill, not the
    time); the readout, callouts and math peek read every control.
    """

    letter = "A"

    def _setup(self) -> None:
        tr = self.track
        self.is_lm = tr.is_transformer
        self.bits_options = sorted({b for b in PRECISIONS
                                    if not track_capacity(tr, weight_bits=b).oom}
                                   | {tr.weight_bits})
        out_hi = self._setup_controls()
        self.default: Crossover = track_crossover(tr)
        self.default_phases: RequestPhases = track_phases(tr)
        self._expected = crossover_bucket(crossover_days(self.default), tr.horizon_days)
        self._setup_crossover_chart(out_hi)
        self._setup_phase_chart()
        self.cost_by_bits = {b: custom_track(tr, weight_bits=b).cost_per_event
                             for b in self.bits_options}
        self.callouts["budget"] = lw.Callout("danger")
        self.callouts["boundary"] = lw.Callout("success")
        self.callouts["floor"] = lw.Callout("info")

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
        cpes = [custom_track(tr, weight_bits=b, **({"output_tokens": n} if n else {}))
                .cost_per_event for b in self.bits_options for n in outs]
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
        self.x_scale, self.y_scale = xs, ys
        rules = [d for d in (1.0, DAYS_BUCKET_MAX, WEEKS_BUCKET_MAX) if self.x_lo < d < horizon]
        self.m_rules = lw.vlines_mark(rules, xs)
        setup_label = f"one-time setup ({fmt_cost(tr.setup_cost, tr.cost_unit)})"
        self.m_setup = lw.hline_mark(tr.setup_cost, ys, color=lw.PALETTE["orange"],
                                     label=setup_label, legend=True)
        self.m_default = lw.line_mark(self.days, self.default.daily_cost * self.days, xs, ys,
                                      colors=[lw.PALETTE["grey"]], line_style="dashed",
                                      labels=["track defaults"], legend=True, stroke_width=2)
        self.m_current = lw.line_mark(self.days, self.default.daily_cost * self.days, xs, ys,
                                      colors=[lw.PALETTE["blue"]], labels=["your settings"],
                                      legend=True)
        self.m_cross = lw.vline_mark(self.x_lo, xs, color=lw.PALETTE["red"])
        self.m_cross_pt = lw.scatter_mark([self.x_lo], [tr.setup_cost], xs, ys)
        ticks = [t for t in (1e-4, 1e-3, 1e-2, 0.1, 1, 7, 30, 365) if self.x_lo <= t <= horizon]
        self.figures["crossover"] = lw.figure(
            [self.m_rules, self.m_setup, self.m_default, self.m_current, self.m_cross,
             self.m_cross_pt], xs, ys,
            x_label="days since launch (log scale; dotted: 1 day, 2 and 10 weeks)",
            y_label=f"cumulative cost ({tr.cost_unit}, log)",
            title=f"Cumulative recurring {cost_noun(tr)} vs the one-time setup",
            legend=True, x_tick_values=ticks, x_tick_format=".3~g", y_tick_format=".2~e",
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
            [self.m_phase], bx, by, x_label=f"phase of one {noun}",
            y_label="share of the request's time (%)",
            title=f"Where one {noun}'s time goes", height=260)

    def _prediction_spec(self) -> tuple[str, list[tuple[str, str]]]:
        tr = self.track
        h = tr.horizon_days
        q = (f"{lw.esc(tr.label)}: at the track's default settings, when does the cumulative "
             f"recurring {cost_noun(tr)} ({tr.cost_unit}) overtake the one-time setup budget "
             f"of {fmt_cost(tr.setup_cost, tr.cost_unit)}?")
        return q, [
            ("Days: within two weeks of launch", "days"),
            ("Weeks: between two and ten weeks", "weeks"),
            (f"Months: after ten weeks, within the {h}-day horizon", "months"),
            (f"Never within the {h}-day horizon: setup dominates", "never"),
        ]

    def _checkpoint_spec(self) -> tuple[str, list[tuple[str, str]], str, dict[str, str]]:
        tr = self.track
        ph = self.default_phases
        noun = event_noun(tr)
        pre, dec = ph.phase_labels["prefill"], ph.phase_labels["decode"]
        q = (f"{lw.esc(tr.label)}: at the track's default settings, which phase takes most of "
             f"one {noun}'s time once it is live?")
        opts = [(f"The {pre}: the one-time pass over the input", "prefill"),
                (f"The {dec}: the repeated output loop", "decode")]
        why = (f"at the defaults the {pre} takes {fmt_time(ph.prefill_s)} and the {dec} "
               f"{fmt_time(ph.decode_s)}, so the {ph.binding_label} binds")
        good = f"Right: {why}."
        bad = f"Not quite: {why}. The phase chart shows the split at your settings."
        return q, opts, ph.binding_phase, {v: (good if v == ph.binding_phase else bad)
                                           for _, v in opts}

    # -- shared values ---------------------------------------------------------------------
    @computed("demand", "weight_bits", "output_tokens")
    def _custom(self, s: Settings) -> Track:
        """The track at the chosen demand, precision (and output length)."""
        kw: dict[str, object] = {"demand_rate_per_s": float(s["demand"]),
                                 "weight_bits": int(s["weight_bits"])}
        if self.is_lm:
            kw["output_tokens"] = int(s["output_tokens"])
        return custom_track(self.track, **kw)

    @computed("_custom", "saving_pct")
    def _crossover(self, s: Settings) -> Crossover:
        return track_crossover(self._custom(s), optimisation_saving=self._saving(s))

    @computed("_custom")
    def _phases(self, s: Settings) -> RequestPhases:
        return track_phases(self._custom(s))

    @staticmethod
    def _saving(s: Settings) -> float:
        return float(s["saving_pct"]) / 100.0

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on("_crossover")
    def _draw_crossover(self, s: Settings) -> None:
        tr = self.track
        daily = float(self._crossover(s).daily_cost)
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

    @depends_on("_phases")
    def _draw_phases(self, s: Settings) -> None:
        ph = self._phases(s)
        total = ph.prefill_s + ph.decode_s
        lw.update_marks({self.m_phase: {"y": [100.0 * ph.prefill_s / total,
                                              100.0 * ph.decode_s / total]}})

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results, readout cards and the budget callouts."""
        tr = self.track
        ct, cx, ph = self._custom(s), self._crossover(s), self._phases(s)
        t = crossover_days(cx)
        bucket = crossover_bucket(t, tr.horizon_days)
        daily = float(cx.daily_cost)
        # the same resident weights Part B (and the memory wall) count
        wbytes = resident_weight_bytes(get_model(tr.model_id), int(s["weight_bits"]))
        budget_ratio = daily / tr.daily_budget
        self.results = {
            "cost_per_event": ct.cost_per_event, "effective_cost_per_event":
            cx.effective_cost_per_event, "events_per_day": ct.events_per_day,
            "daily_cost": daily, "daily_budget": tr.daily_budget, "budget_ratio": budget_ratio,
            "crossover_days": t, "bucket": bucket, "annual_savings": float(cx.annual_savings),
            "prefill_s": ph.prefill_s, "decode_s": ph.decode_s, "tpot_s": ph.tpot_s,
            "binding_phase": ph.binding_phase, "binding_label": ph.binding_label,
            "weight_bytes": wbytes, "cost_unit": tr.cost_unit,
            "default_crossover_days": self.default.crossover_days, "expected": self._expected,
        }
        u = tr.cost_unit
        noun = event_noun(tr)
        self._set_readout(metric_cards([
            (f"cost per {noun}", fmt_cost(cx.effective_cost_per_event, u),
             f"before saving {fmt_cost(ct.cost_per_event, u)}", lw.PALETTE["blue"]),
            ("recurring per day", fmt_cost(daily, u),
             f"{fmt_num(ct.events_per_day)} {noun}s/day, {cost_basis(tr)}",
             lw.PALETTE["orange"]),
            ("crossover", fmt_days(t, tr.horizon_days), f"bucket: {bucket}",
             lw.PALETTE["red"]),
            ("binding phase", ph.binding_label,
             f"{fmt_time(ph.prefill_s)} vs {fmt_time(ph.decode_s)}", lw.PALETTE["purple"]),
            ("weights", format_bytes(wbytes), f"at {s['weight_bits']}-bit",
             lw.PALETTE["teal"]),
        ]))
        over = daily > tr.daily_budget
        levers = "raise the optimisation saving, lower the weight precision"
        if self.is_lm:
            levers += ", shorten outputs"
        self.callouts["budget"].set(
            over, "Over the daily budget",
            f"The recurring {cost_noun(tr)} ({cost_basis(tr)}) is {fmt_cost(daily, u)}/day "
            f"against a budget of "
            f"{fmt_cost(tr.daily_budget, u)}/day ({budget_ratio:.2f}x).",
            f"{levers}, or serve less demand.")
        self._set_floor(s)
        self.callouts["boundary"].set(
            not over, f"Within the daily budget ({budget_ratio:.0%} used)",
            f"{fmt_cost(daily, u)}/day of {fmt_cost(tr.daily_budget, u)}; the recurring line "
            f"crosses the setup budget after {fmt_days(t, tr.horizon_days)}. Watch demand: "
            f"it scales the bill one for one.")

    def floor_peers(self, bits: int) -> list[int]:
        """Other offered weight precisions whose cost per event equals ``bits``'s."""
        c = self.cost_by_bits[bits]
        return [b for b in self.bits_options if b != bits and self.cost_by_bits[b] == c]

    def _set_floor(self, s: Settings) -> None:
        """Say why a lower precision saves nothing, where it does not (a CNN's INT8 floor)."""
        tr = self.track
        b = int(s["weight_bits"])
        peers = self.floor_peers(b)
        if not peers or self.is_lm:
            self.callouts["floor"].clear()
            return
        hw = get_hardware(tr.hardware_id)
        r = cnn_inference_time(hw, tr.model_id, b, 1)
        prec = cnn_compute_precision(hw, b).upper()
        same = " and ".join(f"{p}-bit" for p in peers)
        self.callouts["floor"].show(
            f"{b}-bit weights cost the same as {same}",
            f"{fmt_cost(self.cost_by_bits[b], tr.cost_unit)} per {event_noun(tr)} at each: "
            f"{lw.esc(hw.name)} runs them all on its {prec} datapath (narrower weights are "
            f"unpacked to it), and one pass is {r.regime} ({fmt_time(float(r.compute_s))} "
            f"of arithmetic vs {fmt_time(float(r.memory_s))} of memory traffic), so fewer "
            "weight bytes save no time and no energy. The lines do not move.")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        tr = self.track
        ct, cx, ph = self._custom(s), self._crossover(s), self._phases(s)
        saving = self._saving(s)
        daily = float(cx.daily_cost)
        c_ev = r"c_{\text{event}}"
        t_tex = "\\infty" if daily == 0 else tex_num(tr.setup_cost / daily)
        n_day = r"N_{\text{day}}"
        self.math.update(
            "<p>Recurring cost grows linearly; the setup is paid once:</p>"
            f"$$C(t) = {c_ev}\\,(1-s)\\,{n_day}\\,t, \\qquad t^* = "
            f"\\frac{{C_{{\\text{{setup}}}}}}{{{c_ev}\\,(1-s)\\,{n_day}}} = "
            f"\\frac{{{tex_num(tr.setup_cost)}}}{{{tex_num(ct.cost_per_event)} \\times "
            f"{1 - saving:.2f} \\times {tex_num(ct.events_per_day)}}} = {t_tex}"
            "\\ \\text{days}$$"
            f"<p>Cost of one {event_noun(tr)} from its busy time ({ph.phase_labels['prefill']} "
            f"{fmt_time(ph.prefill_s)}, {ph.phase_labels['decode']} {fmt_time(ph.decode_s)}):</p>"
            f"{self._cost_tex(ct, ph)}"
            f"<p>Annual saving of s = {saving:.0%}: "
            f"{fmt_cost(float(cx.annual_savings), tr.cost_unit)}. Source: "
            "<code>labkit.physics.economy.track_crossover</code>, "
            "<code>labkit.physics.phases.track_phases</code>.</p>")

    def _cost_tex(self, ct: Track, ph: RequestPhases) -> str:
        """The cost of one event from its busy time, as display math."""
        tr = self.track
        u = tr.cost_unit
        b_eff = tr.batch_size if u == "USD" else 1
        c_ev = r"c_{\text{event}}"
        if u == "USD":
            return (
                f"$${c_ev} = \\frac{{d\\,p}}{{3600}}\\left(t_{{\\text{{prefill}}}} + "
                f"\\frac{{t_{{\\text{{decode}}}}}}{{B}}\\right) = "
                f"\\frac{{{tr.devices_per_replica} \\times {tr.price_per_device_hour:g}}}{{3600}}"
                f"\\left({ph.prefill_s:.3g} + \\frac{{{ph.decode_s:.3g}}}{{{b_eff}}}\\right) = "
                f"{tex_num(ct.cost_per_event)}\\ \\text{{USD}}$$")
        busy = ph.prefill_s + ph.decode_s / b_eff
        return (
            f"$${c_ev} = \\frac{{d\\,P\\,(t_{{\\text{{in}}}} + t_{{\\text{{out}}}})}}"
            f"{{J_{{\\text{{{u}}}}}}} = \\frac{{{tr.devices_per_replica} \\times "
            f"{tr.power_w:g}\\ \\text{{W}} \\times {busy:.3g}\\ \\text{{s}}}}"
            f"{{{tr.joules_per_cost_unit:g}\\ \\text{{J}}}} = "
            f"{tex_num(ct.cost_per_event)}\\ \\text{{{u}}}$$")

    def _reveal_body(self) -> str:
        tr = self.track
        r = self.results
        d0 = crossover_days(self.default)
        daily0 = float(self.default.daily_cost)
        return (
            f"<div>{self._prediction_line()}.</div>"
            f"<div>At the track defaults: {fmt_cost(tr.setup_cost, tr.cost_unit)} / "
            f"{fmt_cost(daily0, tr.cost_unit)} per day = <b>{fmt_days(d0, tr.horizon_days)}</b>"
            f" → <b>{self.predict.label_for(self._expected)}</b>.</div>"
            f"<div>With your current settings: <b>{fmt_days(r['crossover_days'], tr.horizon_days)}"
            f"</b> (bucket: {r['bucket']}).</div>"
            f"<div style='color:#5d6d7e'>Why: the setup is paid once, the recurring cost every "
            f"day; t* = setup / daily cost, so demand and cost per event move it one for one. "
            f"Inside one {event_noun(tr)}, the {r['binding_label']} takes "
            f"{fmt_time(max(r['prefill_s'], r['decode_s']))} of "
            f"{fmt_time(r['prefill_s'] + r['decode_s'])}.</div>")
