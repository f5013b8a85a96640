"""Lab 2 Part C, wearable scenario: where the ring cuts its pipeline.

The numbers are :mod:`..plan.window`'s (:func:`~..plan.window.ring_cuts`,
:func:`~..plan.window.ring_best_cut`, :func:`~..plan.window.ring_interval_curves`);
the text is :mod:`.spec`'s."""

from __future__ import annotations

import numpy as np

import labkit.scenarios.wearable.views.spec as spec
from labkit import ui as lw
from labkit.core.format import fmt_count, fmt_energy, fmt_pct, fmt_time, format_bytes, tex_num
from labkit.core.units import J_PER_MWH
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.edge_view import (
    lever_text,
    levers_for,
    limits_decision,
    tex_count,
    tex_eq,
)
from labkit.labs.common import (
    ALL,
    CheckSpec,
    Decision,
    Settings,
    Spec,
    computed,
    depends_on,
    metric_cards,
)
from labkit.plans.design import INTERVALS_MS, active_seconds
from labkit.registries.edge import edge_profile, get_link
from labkit.scenarios.wearable.plan.window import (
    FRONT_END_NAME,
    SPLITS,
    WEARABLE_INTERVAL_S,
    SplitCost,
    ring_best_cut,
    ring_cuts,
    ring_interval_curves,
)
from labkit.ui.charts import lin_top, log_domain

LIMITS = ("deadline", "energy", "link", "coverage")
MS = 1e3  # the latency chart and math peek in ms
UWH_J = 3.6e-3  # J per µWh: the energy chart in the unit the cards use


class PartCWearable(Part):
    """Where the ring cuts its pipeline: run the model, send features, or send raw audio.

    Refresh steps: the three cuts are priced once per connection interval and duty (a
    shared value); the energy-per-day vs interval chart reads only those two controls; the
    energy and latency bars (which mark your cut), readout, callouts and math peek read
    every control.
    """

    shows = (
        ("energy_per_inference", "energy_per_window_j"),
        ("cost_per_day_busy", "daily_mwh"),
    )

    def shown_basis(self, name: str) -> str:
        """The window's energy with the link's (Lab 1 counts the ring's compute only)."""
        return spec.ENERGY_BASIS


    letter = "C"

    def _setup(self) -> None:
        tr = self.track
        self.iv0 = WEARABLE_INTERVAL_S * MS
        prof = edge_profile(self.hw.id)
        if prof is None or not prof.offload_links:
            raise ValueError(f"{self.hw.id} needs an edge profile with an offload link")
        self.link = get_link(prof.offload_links[0])
        self.feature_bytes = prof.feature_bytes
        c = self.controls
        c["split"] = lw.choice_control("Cut the pipeline", [
            ("run the model on the ring", "on_device"), ("send features to the phone",
                                                         "features"),
            ("send raw audio to the phone", "raw")], "on_device", style="toggle")
        c["interval"] = lw.selection_control("BLE connection interval (ms)",
                                             [(f"{x:g}", x) for x in INTERVALS_MS], self.iv0)
        c["duty"] = lw.float_control("Share of windows processed (duty)", 1.0, 0.01, 1.0, 0.01,
                                     ".0%")
        self.wb = tr.weight_bits
        self.default_cuts = ring_cuts(tr, self.wb, self.iv0, 1.0)
        self._expected = ring_best_cut(tr, self.default_cuts) or "none"
        self.floor = tr.min_demand_rate_per_s / tr.demand_rate_per_s
        self.levers: dict[str, tuple[str, object] | None] = {}
        self.iv_grid = np.asarray(INTERVALS_MS, dtype=float)
        self._setup_bar_charts()
        ix = lw.make_scale("log", float(INTERVALS_MS[0]), float(INTERVALS_MS[-1]))
        iy = lw.make_scale("log", 0.1, 100.0)
        self.s_i = iy
        self.m_i = lw.line_mark(self.iv_grid, np.ones((3, self.iv_grid.size)), ix, iy,
                                colors=[lw.PALETTE["orange"], lw.PALETTE["blue"],
                                        lw.PALETTE["red"]], labels=list(SPLITS),
                                legend=True, marker="circle", marker_size=20)
        self.m_i_b = lw.hline_mark(tr.daily_budget, iy, color=lw.PALETTE["green"],
                                   label="daily budget", legend=True)
        self.m_i_pt = lw.vline_mark(self.iv0, ix, color=lw.PALETTE["grey"],
                                    label="your interval", legend=True)
        self.figures["interval"] = lw.figure(
            [self.m_i, self.m_i_b, self.m_i_pt], ix, iy,
            x_label="BLE connection interval (ms, log)",
            y_label="ring mWh per day (log)", title="Energy per day vs the link's interval",
            legend=True, legend_location="top-right", x_tick_format=".3~g",
            y_tick_format=".3~g", height=280)
        for name in LIMITS:
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _setup_bar_charts(self) -> None:
        ex, ey = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_e = ey
        self.m_e = lw.bar_mark(list(SPLITS), np.zeros((4, 3)), ex, ey,
                               colors=[lw.PALETTE["purple"], lw.PALETTE["orange"],
                                       lw.PALETTE["blue"], lw.PALETTE["grey"]],
                               labels=[FRONT_END_NAME, "model", "BLE payload",
                                       "BLE link idle"], legend=True)
        self.figures["energy"] = lw.figure(
            [self.m_e], ex, ey, x_label="where the pipeline is cut (◀ yours)",
            y_label="ring energy per window (µWh)", title="Energy per window", legend=True,
            legend_location="top-right", height=280)
        lx, ly = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_l = ly
        self.m_l = lw.bar_mark(list(SPLITS), np.zeros(3), lx, ly,
                               colors=[lw.PALETTE["green"]] * 3, color_mode="no_group",
                               label_display=True, label_display_format=".0f")
        self.m_l_d = lw.hline_mark(self.track.slo_s * MS, ly, color=lw.PALETTE["red"],
                                   label="deadline", legend=True)
        self.figures["latency"] = lw.figure(
            [self.m_l, self.m_l_d], lx, ly, x_label="where the pipeline is cut",
            y_label="worst-case latency (ms)", title="Decision latency", height=280)

    def _hook(self) -> str:
        return spec.c_hook(self.link.name, self.track.window_bytes, self.feature_bytes)

    def _prediction_spec(self) -> Spec:
        return spec.c_prediction(self.track, self.iv0 / MS)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.c_checkpoint(self.default_cuts, self.link, self.track.slo_s)

    # -- shared values ---------------------------------------------------------------------
    @computed("interval", "duty")
    def _priced(self, s: Settings) -> dict[str, SplitCost]:
        """Every cut at your connection interval and duty."""
        return ring_cuts(self.track, self.wb, float(s["interval"]), float(s["duty"]))

    def _per_day(self, s: Settings) -> float:
        tr = self.track
        return float(s["duty"]) * tr.demand_rate_per_s * active_seconds(tr)

    def _daily(self, s: Settings) -> float:
        return self._priced(s)[str(s["split"])].energy_j * self._per_day(s) / J_PER_MWH

    def _check(self, s: Settings) -> dict[str, bool]:
        """Which limit fails with settings ``s`` (also the recovery hints' check)."""
        tr = self.track
        cuts = ring_cuts(tr, self.wb, float(s["interval"]), float(s["duty"]))
        mine = cuts[str(s["split"])]
        daily = mine.energy_j * self._per_day(s) / J_PER_MWH
        return {"deadline": mine.latency_s > tr.slo_s, "energy": daily > tr.daily_budget,
                "link": mine.link_utilisation > tr.max_utilisation,
                "coverage": float(s["duty"]) < self.floor - 1e-9}

    def _decision(self, s: Settings) -> Decision:
        """The cut with the least ring energy per window that decides in time."""
        best = ring_best_cut(self.track, self._priced(s))
        fails = {"deadline": self._check(s)["deadline"],
                 "costlier": best is not None and str(s["split"]) != best}
        return limits_decision(spec.c_task(self.track), fails, spec.LIMIT_WORDS)

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_bars(self, s: Settings) -> None:
        tr = self.track
        split = str(s["split"])
        costs = self._priced(s)
        e_bars = np.asarray([[c.front_end_j, c.model_j, c.radio_j, c.idle_j]
                             for c in costs.values()]).T / UWH_J
        lat = np.asarray([c.latency_s for c in costs.values()]) * MS
        names = [f"{k} ◀" if k == split else k for k in SPLITS]
        lw.update_marks({
            self.m_e: {"x": names, "y": e_bars},
            self.s_e: {"max": lin_top(e_bars.sum(axis=0), floor=1e-3, pad=1.3)},
            self.m_l: {"x": names, "y": lat,
                       "colors": [lw.PALETTE["red"] if x > tr.slo_s * MS else
                                  lw.PALETTE["green"] for x in lat]},
            self.s_l: {"max": lin_top(np.concatenate([lat, [tr.slo_s * MS]]), pad=1.2)},
        })

    @depends_on("_priced")
    def _draw_interval(self, s: Settings) -> None:
        tr = self.track
        interval = float(s["interval"])
        curves = ring_interval_curves(tr, self.wb, float(s["duty"]), self.iv_grid)
        lo, hi = log_domain(np.concatenate([curves.ravel(), [tr.daily_budget]]), 1.6)
        lw.update_marks({
            self.m_i: {"y": curves}, self.s_i: {"min": lo, "max": hi},
            self.m_i_pt: {"x": [interval, interval]},
        })

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        split, interval, duty = str(s["split"]), float(s["interval"]), float(s["duty"])
        costs = self._priced(s)
        mine = costs[split]
        daily = self._daily(s)
        best = ring_best_cut(self.track, costs)
        self.results = {
            "split": split, "interval_ms": interval, "duty": duty, "energy_per_window_j":
            mine.energy_j, "front_end_j": mine.front_end_j, "model_j": mine.model_j,
            "radio_j": mine.radio_j, "link_idle_j": mine.idle_j, "latency_s": mine.latency_s,
            "bytes_sent": mine.bytes_sent, "daily_mwh": daily,
            "link_utilisation": mine.link_utilisation, "best_split": best,
            "fails": self._check(s), "expected": self._expected,
            "splits": {k: c.as_dict() for k, c in costs.items()},
        }
        self._set_readout(metric_cards([
            ("your cut", split.replace("_", " "), f"{format_bytes(mine.bytes_sent)} per window",
             lw.PALETTE["blue"]),
            ("energy per window", fmt_energy(mine.energy_j),
             f"front end {fmt_energy(mine.front_end_j)} + model {fmt_energy(mine.model_j)} + "
             f"BLE {fmt_energy(mine.radio_j + mine.idle_j)}; {fmt_time(mine.latency_s)} to "
             "decide", lw.PALETTE["orange"]),
            ("per day", f"{fmt_count(daily)} mWh", f"budget {self.track.budget_text}",
             lw.PALETTE["teal"]),
            ("cheapest in time", "none" if best is None else self.option_label("split", best),
             f"at {fmt_time(interval / MS)}, {fmt_pct(duty)} duty", lw.PALETTE["green"]),
        ]))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        duty = float(s["duty"])
        mine = self._priced(s)[str(s["split"])]
        fails = self._check(s)
        daily, best = self._daily(s), ring_best_cut(tr, self._priced(s))
        self.levers = levers_for(self, s, fails, self._check, ("split", "interval", "duty"))
        hint = {k: lever_text(self, self.levers.get(k)) for k in LIMITS}
        self.callouts["deadline"].set(
            fails["deadline"], "Deadline missed",
            f"{fmt_time(mine.latency_s)} = device {fmt_time(mine.front_end_s + mine.model_s)} + "
            f"wait for the link {fmt_time(mine.wait_s)} + airtime {fmt_time(mine.transfer_s)} + "
            f"phone {fmt_time(mine.host_s)}, vs {fmt_time(tr.slo_s)}.", hint["deadline"])
        self.callouts["energy"].set(
            fails["energy"], "Over the energy budget",
            f"{fmt_count(self._per_day(s))} windows x {fmt_energy(mine.energy_j)} = "
            f"{fmt_count(daily)} mWh/day vs {tr.budget_text}.", hint["energy"])
        self.callouts["link"].set(
            fails["link"], "The BLE link is saturated",
            f"{format_bytes(mine.bytes_sent * duty * tr.demand_rate_per_s)}/s needs "
            f"{fmt_pct(mine.link_utilisation)} of the link's airtime (max "
            f"{fmt_pct(tr.max_utilisation)}).", hint["link"])
        self.callouts["coverage"].set(
            fails["coverage"], "Listening too rarely",
            f"{fmt_pct(duty)} of windows is below {fmt_pct(self.floor)}.", hint["coverage"])
        self.callouts["boundary"].set(
            not any(fails.values()), "Meets the deadline within budget",
            f"{fmt_count(daily)} mWh/day of {tr.budget_text}; "
            + ("the cheapest cut that meets the deadline here is "
               f"{best.replace('_', ' ')}" if best else "no cut meets the deadline here") + ".")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        m = self._priced(s)[str(s["split"])]
        lk = self.link
        self.math.update(
            tex_eq("E_{\\text{window}} = P\\,t_{\\text{front}} + P\\,t_{\\text{model}} + "
                   "n_{\\text{bytes}}\\,e_{\\text{byte}} + \\frac{E_{\\text{event}}}{T\\,r}",
                   f"{tex_num(m.front_end_j)} + {tex_num(m.model_j)} + "
                   f"{tex_count(m.bytes_sent)} \\times {tex_num(lk.up_j_per_byte)} + "
                   f"{tex_num(m.idle_j)}", m.energy_j, "J")
            + tex_eq("t_{\\text{worst}} = t_{\\text{front}} + t_{\\text{model}} + "
                     "[T + n/\\text{goodput} + t_{\\text{phone}}]_{\\text{offloaded}}",
                     f"{tex_num(m.front_end_s * MS)} + {tex_num(m.model_s * MS)} + "
                     f"{tex_num(m.wait_s * MS)} + {tex_num(m.transfer_s * MS)} + "
                     f"{tex_num(m.host_s * MS)}", m.latency_s * MS, "ms")
            + f"<p>{FRONT_END_NAME} + model + {spec.ENERGY_BASIS}, per window. BLE: "
              f"{lw.esc(lk.sources['up_j_per_byte'])}. Source: "
              "<code>labkit.scenarios.wearable.plan.window.ring_cuts</code>.</p>")

    def _reveal_body(self) -> str:
        s: Settings = self.settings()
        best = ring_best_cut(self.track, self._priced(s))
        return (f"{self._computed_line()}"
                f"<div>With your settings the cheapest cut in time is "
                f"<b>{str(best or 'none').replace('_', ' ')}</b>.</div>"
                "<div style='color:#5d6d7e'>"
                + spec.c_why(self._priced(s), float(self.hw.power_w or 0.0), self.track.slo_s)
                + "</div>")

    def takeaway(self) -> str:
        s: Settings = self.settings()
        split = str(s["split"])
        return spec.c_takeaway(split.replace("_", " "), float(s["interval"]) / MS,
                               self._priced(s)[split], self._daily(s),
                               ring_best_cut(self.track, self._priced(s)))
