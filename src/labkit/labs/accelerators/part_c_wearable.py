"""Lab 2 Part C, wearable scenario: where the ring cuts its pipeline."""

from __future__ import annotations

import numpy as np

from labkit import ui as lw
from labkit.core.format import (
    fmt_count,
    fmt_energy,
    fmt_time,
    format_bytes,
    tex_num,
)
from labkit.labs.accelerators.base import Part, feedback_map
from labkit.labs.common import (
    ALL,
    CheckSpec,
    Settings,
    Spec,
    computed,
    depends_on,
    metric_cards,
)
from labkit.physics import edge
from labkit.plans.design import INTERVALS_MS, active_seconds, ring_split
from labkit.ui.charts import lin_top, log_domain


class PartCWearable(Part):
    """Where the ring cuts its pipeline: run the model, send features, or send raw audio.

    Refresh steps: the three cuts are priced once per connection interval and duty (a
    shared value); the energy-per-day vs interval chart reads only those two controls; the
    energy and latency bars (which mark your cut), readout, callouts and math peek read
    every control.
    """

    letter = "C"

    def _setup(self) -> None:
        tr = self.track
        self.iv0 = 100.0
        prof = edge.edge_profile(self.hw.id)
        if prof is None or not prof.offload_links:
            raise ValueError(f"{self.hw.id} needs an edge profile with an offload link")
        self.link = prof.offload_links[0]
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
        best = self._best(self._costs(self.iv0 / 1e3, 1.0))
        self._expected = best or "none"
        self.iv_grid = np.asarray(INTERVALS_MS, dtype=float)
        self._setup_bar_charts()
        ix = lw.make_scale("log", float(INTERVALS_MS[0]), float(INTERVALS_MS[-1]))
        iy = lw.make_scale("log", 0.1, 100.0)
        self.s_i = iy
        self.m_i = lw.line_mark(self.iv_grid, np.ones((3, self.iv_grid.size)), ix, iy,
                                colors=[lw.PALETTE["orange"], lw.PALETTE["blue"],
                                        lw.PALETTE["red"]], labels=list(edge.SPLITS),
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
        for name in ("deadline", "energy", "link", "coverage"):
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _setup_bar_charts(self) -> None:
        ex, ey = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_e = ey
        self.m_e = lw.bar_mark(list(edge.SPLITS), np.zeros((4, 3)), ex, ey,
                               colors=[lw.PALETTE["purple"], lw.PALETTE["orange"],
                                       lw.PALETTE["blue"], lw.PALETTE["grey"]],
                               labels=["front end (MFCC)", "model", "radio bytes", "link idle"],
                               legend=True)
        self.figures["energy"] = lw.figure(
            [self.m_e], ex, ey, x_label="where the pipeline is cut (◀ yours)",
            y_label="ring energy per window (mJ)", title="Energy per window", legend=True,
            legend_location="top-right", height=280)
        lx, ly = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_l = ly
        self.m_l = lw.bar_mark(list(edge.SPLITS), np.zeros(3), lx, ly,
                               colors=[lw.PALETTE["green"]] * 3, color_mode="no_group",
                               label_display=True, label_display_format=".0f")
        self.m_l_d = lw.hline_mark(self.track.slo_s * 1e3, ly, color=lw.PALETTE["red"],
                                   label="deadline", legend=True)
        self.figures["latency"] = lw.figure(
            [self.m_l, self.m_l_d], lx, ly, x_label="where the pipeline is cut",
            y_label="worst-case latency (ms)", title="Decision latency", height=280)

    def _costs(self, interval_s: float, duty: float) -> dict[str, edge.SplitCost]:
        return {sp: ring_split(self.track, self.wb, sp, interval_s, duty) for sp in edge.SPLITS}

    def _best(self, costs: dict[str, edge.SplitCost]) -> str | None:
        """The cheapest cut that meets the deadline (None: none does)."""
        ok = {k: c for k, c in costs.items() if c.latency_s <= self.track.slo_s}
        return min(ok, key=lambda k: ok[k].energy_j) if ok else None

    def _hook(self) -> str:
        prof = edge.edge_profile(self.hw.id)
        lk = edge.get_link(prof.offload_links[0]) if prof else None
        return (f"The phone is never far: over {lk.name if lk else 'BLE'} the ring could send "
                f"a {format_bytes(self.track.window_bytes)} audio window, or "
                f"{format_bytes(prof.feature_bytes if prof else 0)} of features, and let the "
                "phone classify it. Bytes cost radio energy; keeping the link responsive costs "
                "energy too. Where should the ring cut its pipeline?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: every window processed, the phone link at a "
             f"{self.iv0:g} ms connection interval. Which cut spends the least ring energy "
             f"while still deciding within {tr.slo_s * 1e3:g} ms?")
        return q, [("Run the model on the ring, send only the decision", "on_device"),
                   ("Compute features on the ring, send them", "features"),
                   ("Send the raw audio window", "raw"),
                   ("None meets the deadline", "none")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "Why can sending features cost the ring less energy than running the model?"
        opts = [("A few hundred bytes over BLE cost less than tens of milliseconds of MCU "
                 "compute, if the link's idle cost stays small", "bytes_vs_compute"),
                ("Radios use no energy", "free"),
                ("The phone's battery pays for the ring", "phone"),
                ("Features are compressed audio", "compressed")]
        good = ("Right: 490 B x 0.2 uJ/B is about 0.1 mJ, vs about 0.7 mJ of model compute. "
                "But raw audio is 65x more bytes and misses the deadline, and a short "
                "connection interval costs energy every interval.")
        bad = ("Not quite: the ring pays for every byte it sends (about 0.2 uJ/B over BLE) and "
               "for every connection event; a small feature vector is cheaper than the model.")
        return q, opts, "bytes_vs_compute", feedback_map(opts, "bytes_vs_compute", good, bad)

    # -- shared values ---------------------------------------------------------------------
    @computed("interval", "duty")
    def _priced(self, s: Settings) -> dict[str, edge.SplitCost]:
        """Every cut at your connection interval and duty."""
        return self._costs(float(s["interval"]) / 1e3, float(s["duty"]))

    def _best_split(self, s: Settings) -> str | None:
        return self._best(self._priced(s))

    def _per_day(self, s: Settings) -> float:
        tr = self.track
        return float(s["duty"]) * tr.demand_rate_per_s * active_seconds(tr)

    def _daily(self, s: Settings) -> float:
        return self._priced(s)[str(s["split"])].energy_j * self._per_day(s) / edge.J_PER_MWH

    def _fails(self, s: Settings) -> dict[str, bool]:
        tr = self.track
        mine = self._priced(s)[str(s["split"])]
        floor = tr.min_demand_rate_per_s / tr.demand_rate_per_s
        return {"deadline": mine.latency_s > tr.slo_s, "energy": self._daily(s) > tr.daily_budget,
                "link": mine.link_utilisation > tr.max_utilisation,
                "coverage": float(s["duty"]) < floor - 1e-9}

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_bars(self, s: Settings) -> None:
        tr = self.track
        split = str(s["split"])
        costs = self._priced(s)
        e_bars = np.asarray([[c.front_end_j, c.model_j, c.radio_j, c.idle_j]
                             for c in costs.values()]).T * 1e3
        lat = np.asarray([c.latency_s for c in costs.values()]) * 1e3
        names = [f"{k} ◀" if k == split else k for k in edge.SPLITS]
        lw.update_marks({
            self.m_e: {"x": names, "y": e_bars},
            self.s_e: {"max": lin_top(e_bars.sum(axis=0), floor=1e-3, pad=1.3)},
            self.m_l: {"x": names, "y": lat,
                       "colors": [lw.PALETTE["red"] if x > tr.slo_s * 1e3 else
                                  lw.PALETTE["green"] for x in lat]},
            self.s_l: {"max": lin_top(np.concatenate([lat, [tr.slo_s * 1e3]]), pad=1.2)},
        })

    @depends_on("_priced")
    def _draw_interval(self, s: Settings) -> None:
        tr = self.track
        interval = float(s["interval"])
        per_day = self._per_day(s)
        # the link's idle share scales with 1 / interval; the rest of a window does not
        idle = np.asarray([edge.ble_idle_power_w(iv / 1e3, self.link) for iv in INTERVALS_MS])
        curves = np.vstack([(c.energy_j - c.idle_j) * per_day + idle * active_seconds(tr)
                            for c in self._priced(s).values()]) / edge.J_PER_MWH
        lo, hi = log_domain(np.concatenate([curves.ravel(), [tr.daily_budget]]), 1.6)
        lw.update_marks({
            self.m_i: {"y": curves}, self.s_i: {"min": lo, "max": hi},
            self.m_i_pt: {"x": [interval, interval]},
        })

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        tr = self.track
        split, interval, duty = str(s["split"]), float(s["interval"]), float(s["duty"])
        costs = self._priced(s)
        mine = costs[split]
        daily = self._daily(s)
        best = self._best_split(s)
        self.results = {
            "split": split, "interval_ms": interval, "duty": duty, "energy_per_window_j":
            mine.energy_j, "latency_s": mine.latency_s, "bytes_sent": mine.bytes_sent,
            "daily_mwh": daily, "link_utilisation": mine.link_utilisation,
            "best_split": best, "fails": self._fails(s), "expected": self._expected,
            "splits": {k: c.as_dict() for k, c in costs.items()},
        }
        self._set_readout(metric_cards([
            ("your cut", split.replace("_", " "), f"{format_bytes(mine.bytes_sent)} per window",
             lw.PALETTE["blue"]),
            ("per window", fmt_energy(mine.energy_j), f"{fmt_time(mine.latency_s)} to decide",
             lw.PALETTE["orange"]),
            ("per day", f"{fmt_count(daily)} mWh",  # J_PER_MWH above: always mWh
             f"budget {tr.budget_text}", lw.PALETTE["teal"]),
            ("cheapest in time", "none" if best is None else self.option_label("split", best),
             f"at {interval:g} ms, {duty:.0%} duty", lw.PALETTE["green"]),
        ]))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        duty = float(s["duty"])
        mine = self._priced(s)[str(s["split"])]
        daily, fails, best = self._daily(s), self._fails(s), self._best_split(s)
        floor = tr.min_demand_rate_per_s / tr.demand_rate_per_s
        self.callouts["deadline"].set(
            fails["deadline"], "Deadline missed",
            f"{fmt_time(mine.latency_s)} = device {fmt_time(mine.front_end_s + mine.model_s)} + "
            f"wait for the link {fmt_time(mine.wait_s)} + airtime {fmt_time(mine.transfer_s)} + "
            f"phone {fmt_time(mine.host_s)}, vs {fmt_time(tr.slo_s)}.",
            "a shorter connection interval, fewer bytes, or decide on the ring")
        self.callouts["energy"].set(
            fails["energy"], "Over the energy budget",
            f"{fmt_count(self._per_day(s))} windows x {fmt_energy(mine.energy_j)} = "
            f"{fmt_count(daily)} mWh/day vs {tr.budget_text}.",
            "a longer interval, a cheaper cut, or lower duty")
        self.callouts["link"].set(
            fails["link"], "The BLE link is saturated",
            f"{format_bytes(mine.bytes_sent * duty * tr.demand_rate_per_s)}/s needs "
            f"{mine.link_utilisation:.0%} of the link's airtime (max "
            f"{tr.max_utilisation:.0%}).", "send features, not raw audio")
        self.callouts["coverage"].set(
            fails["coverage"], "Listening too rarely",
            f"{duty:.0%} of windows is below {floor:.0%}.", "raise the duty cycle")
        self.callouts["boundary"].set(
            not any(fails.values()), "Meets the deadline within budget",
            f"{fmt_count(daily)} mWh/day of {tr.budget_text}; "
            + ("the cheapest cut that meets the deadline here is "
               f"{best.replace('_', ' ')}" if best else "no cut meets the deadline here") + ".")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        mine = self._priced(s)[str(s["split"])]
        lk = edge.get_link(self.link)
        self.math.update(
            "$$E_{\\text{window}} = P\\,(t_{\\text{front}} + t_{\\text{model}}) + "
            "n_{\\text{bytes}}\\,e_{\\text{byte}} + \\frac{E_{\\text{event}}}{T\\,r}$$"
            f"$$= {tex_num(mine.front_end_j)} + {tex_num(mine.model_j)} + "
            f"{tex_num(mine.bytes_sent)} \\times {tex_num(lk.up_j_per_byte)} + "
            f"{tex_num(mine.idle_j)} = {tex_num(mine.energy_j)}\\ \\text{{J}}$$"
            "$$t_{\\text{worst}} = t_{\\text{front}} + t_{\\text{model}} + "
            "[T + n/\\text{goodput} + t_{\\text{phone}}]_{\\text{offloaded}} = "
            f"{tex_num(mine.latency_s * 1e3)}\\ \\text{{ms}}$$"
            f"<p>BLE: {lw.esc(lk.sources['up_j_per_byte'])}. Source: "
            "<code>labkit.physics.edge.wearable_split</code>.</p>")

    def _reveal_body(self) -> str:
        r = self.results
        return (f"{self._computed_line()}"
                f"<div>With your settings the cheapest cut in time is "
                f"<b>{str(r['best_split'] or 'none').replace('_', ' ')}</b>.</div>"
                "<div style='color:#5d6d7e'>Why: the model costs ~70 ms of a 10 mW MCU per "
                "window; 490 bytes of features cost a fraction of that over BLE. Raw audio is "
                "32 kB: too much energy and too much airtime for the deadline. A shorter "
                "connection interval answers sooner but pays an empty event every interval."
                "</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Hand-off: cutting at '{str(r['split']).replace('_', ' ')}' with a "
                f"{r['interval_ms']:g} ms interval costs {fmt_energy(r['energy_per_window_j'])} "
                f"per window and {fmt_time(r['latency_s'])} to decide "
                f"({fmt_count(r['daily_mwh'])} mWh/day); the cheapest cut that meets the "
                f"deadline there is {str(r['best_split'] or 'none').replace('_', ' ')}.")
