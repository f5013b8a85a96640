"""Lab 2 Part B, wearable scenario: flash, SRAM, duty cycle and battery life."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit import ui as lw
from labkit.core.format import (
    fmt_count,
    fmt_energy,
    fmt_time,
    format_bytes,
    tex_num,
)
from labkit.labs.accelerators.base import Part, feedback_map, precision_floor_note
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
from labkit.plans.design import (
    DESIGN_MODE,
    DUTY_STEPS,
    active_seconds,
    design_defaults,
    ring_split,
    ring_window,
)
from labkit.ui.charts import lin_top


@dataclass(frozen=True)
class RingEvaluation:
    """The ring at one precision, duty and SRAM buffer: fit, energy and battery life."""

    window: dict[str, float]   # :func:`ring_window`: bytes of weights, flash, SRAM, ...
    split: edge.SplitCost      # the on-device cut at that duty
    daily_mwh: float
    sram_bytes_used: float
    fails: dict[str, bool]
    first: str
    floor: float               # the least duty the product accepts
    battery_days: float


class PartBWearable(Part):
    """A wearable MCU: weights in flash, windows in SRAM, the duty cycle and battery life.

    Refresh steps: the flash/SRAM bars read the weight precision and the windows buffered;
    the battery-life curve and the energy-per-day bars the precision and the duty (not the
    buffer); the readout, callouts and math peek every control.
    """

    letter = "B"

    def _setup(self) -> None:
        tr = self.track
        prof = edge.edge_profile(self.hw.id)
        if prof is None or prof.battery is None:
            raise ValueError(f"{self.hw.id} needs an edge profile with a battery")
        self.battery = edge.get_battery(prof.battery)
        self.interval_s = float(design_defaults(tr)["interval_ms"]) / 1e3
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["duty"] = lw.float_control("Share of windows processed (duty)", 1.0, 0.01, 1.0, 0.01,
                                     ".0%")
        c["windows"] = lw.int_control("Windows buffered in SRAM", 1, 1, 8)
        self.duties = np.asarray(DUTY_STEPS)
        d0 = self._evaluate(tr.weight_bits, 1.0, 1)
        self.default_eval = d0
        self._expected = d0.first
        self._setup_fit_chart()
        self._setup_life_chart()
        ex, ey = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_day = ey
        self.m_day = lw.bar_mark(["spotter", "rest of the ring"], np.zeros(2), ex, ey,
                                 colors=[lw.PALETTE["orange"], lw.PALETTE["grey"]],
                                 color_mode="no_group", label_display=True,
                                 label_display_format=".3~g")
        self.m_day_b = lw.hline_mark(tr.daily_budget, ey, color=lw.PALETTE["red"],
                                     label="spotter budget", legend=True)
        self.figures["day"] = lw.figure(
            [self.m_day, self.m_day_b], ex, ey, x_label="consumer", y_label="mWh per day",
            title="Energy per day", height=280)
        for name in ("flash", "sram", "energy", "coverage"):
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _setup_fit_chart(self) -> None:
        fx, fy = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_fit = fy
        self.m_fit = lw.bar_mark(["flash: weights", "SRAM: windows + activations"],
                                 np.zeros(2), fx, fy, colors=[lw.PALETTE["blue"]] * 2,
                                 color_mode="no_group", label_display=True,
                                 label_display_format=".0f")
        self.m_fit_l = lw.hline_mark(100.0, fy, color=lw.PALETTE["red"], label="capacity",
                                     legend=True)
        self.figures["fit"] = lw.figure(
            [self.m_fit, self.m_fit_l], fx, fy, x_label="memory",
            y_label="% of capacity", title="Weights in flash, windows in SRAM", height=280)

    def _setup_life_chart(self) -> None:
        tr = self.track
        lx = lw.make_scale("linear", 0.0, 1.0)
        ly = lw.make_scale("linear", 0.0, 1.0)
        self.s_life = ly
        self.m_life = lw.line_mark(self.duties, np.ones(self.duties.size), lx, ly,
                                   colors=[lw.PALETTE["teal"]], labels=["battery life"],
                                   legend=True)
        self.m_life_t = lw.hline_mark(self.battery.target_days, ly, color=lw.PALETTE["red"],
                                      label=f"promised {self.battery.target_days:g} days",
                                      legend=True)
        self.m_life_f = lw.vline_mark(tr.min_demand_rate_per_s / tr.demand_rate_per_s, lx,
                                      color=lw.PALETTE["grey"], line_style="dotted",
                                      label="least duty the product accepts",
                                      legend=True)
        self.m_life_pt = lw.scatter_mark([1.0], [1.0], lx, ly)
        self.figures["life"] = lw.figure(
            [self.m_life, self.m_life_t, self.m_life_f, self.m_life_pt], lx, ly,
            x_label="share of windows processed (duty)", y_label="days on one charge",
            title="Battery life vs how often the ring listens", legend=True,
            legend_location="bottom-left", x_tick_format=".0%", height=280)

    def _evaluate(self, wb: int, duty: float, windows: int) -> RingEvaluation:
        tr = self.track
        rw = ring_window(tr, wb)
        sp = ring_split(tr, wb, "on_device", self.interval_s, duty)
        per_day = duty * tr.demand_rate_per_s * active_seconds(tr)
        daily = sp.energy_j * per_day / edge.J_PER_MWH
        sram = windows * rw["window_bytes"] + rw["activation_bytes"]
        floor = tr.min_demand_rate_per_s / tr.demand_rate_per_s
        fails = {"flash": rw["weights_bytes"] > rw["flash_bytes"],
                 "sram": sram > rw["sram_bytes"], "energy": daily > tr.daily_budget,
                 "coverage": duty < floor - 1e-9}
        first = next((k for k in ("flash", "sram", "energy", "coverage") if fails[k]), "none")
        return RingEvaluation(rw, sp, daily, sram, fails, first, floor,
                              edge.battery_life_days(self.battery, daily))

    def _hook(self) -> str:
        tr = self.track
        return (f"Weights sit in {format_bytes(float(self.hw.flash_bytes or 0))} of flash, each "
                f"window and its activations in {format_bytes(self.hw.usable_memory_bytes)} of "
                f"SRAM, and the spotter may spend {tr.budget_text} a day of a "
                f"{fmt_count(self.battery.capacity_mwh)} mWh battery. Does it fit, and how often "
                "can it listen?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: {tr.weight_bits}-bit weights, every window processed on the "
             "ring (front end + model), one window buffered. Which constraint fails first?")
        return q, [("Flash: the weights do not fit", "flash"),
                   ("SRAM: the window and its activations do not fit", "sram"),
                   ("Energy: the spotter's daily budget", "energy"),
                   ("None: it fits and lasts", "none")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = ("When the spotter is over its energy budget, which lever fixes it without new "
             "hardware?")
        opts = [("Process fewer windows (duty cycle) or hand work off to the phone",
                 "duty"),
                ("Buffer more windows in SRAM", "buffer"),
                ("Use 32-bit weights for accuracy", "precision_up"),
                ("Nothing: energy is fixed by the battery", "nothing")]
        good = ("Right: energy per day = energy per window x windows processed per day; the "
                "duty cycle scales it directly (down to the least share the product accepts), "
                "and Part C prices the BLE hand-off.")
        bad = ("Not quite: energy per day = energy per window x windows per day. Buffering "
               "changes SRAM, not energy; higher precision costs more.")
        return q, opts, "duty", feedback_map(opts, "duty", good, bad)

    # -- shared values ---------------------------------------------------------------------
    @computed(ALL)
    def _ev(self, s: Settings) -> RingEvaluation:
        return self._evaluate(int(s["weight_bits"]), float(s["duty"]), int(s["windows"]))

    def _fit(self, ev: RingEvaluation) -> np.ndarray:
        """Flash and SRAM use, % of capacity."""
        rw = ev.window
        return np.asarray([100 * rw["weights_bytes"] / rw["flash_bytes"],
                           100 * ev.sram_bytes_used / rw["sram_bytes"]])

    def _windows_per_day(self) -> float:
        return self.track.demand_rate_per_s * active_seconds(self.track)

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on("weight_bits", "windows")
    def _draw_fit(self, s: Settings) -> None:
        fit = self._fit(self._ev(s))
        lw.update_marks({
            self.m_fit: {"y": fit, "colors": [lw.PALETTE["red"] if x > 100 else
                                              lw.PALETTE["blue"] for x in fit]},
            self.s_fit: {"max": lin_top(np.concatenate([fit, [100.0]]), pad=1.2)},
        })

    @depends_on("weight_bits", "duty")
    def _draw_energy(self, s: Settings) -> None:
        """Battery life over the duty cycle, your point on it, and energy per day."""
        tr = self.track
        ev = self._ev(s)
        duty, sp = float(s["duty"]), ev.split
        # energy per day = active energy x windows processed + link idle power x the day
        # (wearable_split's idle share per window times the windows it is spread over)
        active_j = sp.energy_j - sp.idle_j
        idle_w = sp.idle_j * duty * tr.demand_rate_per_s
        life = self.battery.capacity_mwh / (
            self.battery.other_mwh_per_day
            + (active_j * self.duties * self._windows_per_day() + idle_w * active_seconds(tr))
            / edge.J_PER_MWH)
        other = self.battery.other_mwh_per_day
        lw.update_marks({
            self.m_life: {"y": life},
            self.s_life: {"max": lin_top(np.concatenate([life, [self.battery.target_days]]),
                                          pad=1.15)},
            self.m_life_pt: {"x": [duty], "y": [float(ev.battery_days)]},
            self.m_day: {"y": [float(ev.daily_mwh), other]},
            self.s_day: {"max": lin_top([float(ev.daily_mwh), other, tr.daily_budget],
                                         pad=1.2)},
        })

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        tr = self.track
        ev = self._ev(s)
        rw, sp = ev.window, ev.split
        fit = self._fit(ev)
        daily, days = float(ev.daily_mwh), float(ev.battery_days)
        self.results = {
            "weight_bits": int(s["weight_bits"]), "duty": float(s["duty"]),
            "windows_buffered": int(s["windows"]),
            "weights_bytes": rw["weights_bytes"], "flash_bytes": rw["flash_bytes"],
            "sram_bytes_used": ev.sram_bytes_used, "sram_bytes": rw["sram_bytes"],
            "energy_per_window_j": sp.energy_j, "front_end_j": sp.front_end_j,
            "model_j": sp.model_j, "link_idle_j": sp.idle_j,
            "daily_mwh": daily, "battery_days": days, "target_days": self.battery.target_days,
            "fails": ev.fails, "first_failure": ev.first, "expected": self._expected,
        }
        self._set_details(precision_floor_note(self.hw, self.model, int(s["weight_bits"]),
                                               self._noun(), 1, DESIGN_MODE))
        self._set_readout(metric_cards([
            ("flash", f"{fit[0]:.3g}%", f"{format_bytes(rw['weights_bytes'])} weights",
             lw.PALETTE["blue"]),
            ("SRAM", f"{fit[1]:.3g}%", f"{int(s['windows'])} window(s) + activations",
             lw.PALETTE["purple"]),
            ("per window", fmt_energy(sp.energy_j),
             f"front end + model, {fmt_time(sp.latency_s)}", lw.PALETTE["orange"]),
            ("spotter", f"{fmt_count(daily)} mWh/day", f"budget {tr.budget_text}",
             lw.PALETTE["red"]),
            ("battery life", f"{days:.3g} days", f"promised {self.battery.target_days:g}",
             lw.PALETTE["teal"]),
        ]))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        ev = self._ev(s)
        rw, fails = ev.window, ev.fails
        duty, win = float(s["duty"]), int(s["windows"])
        daily, days = float(ev.daily_mwh), float(ev.battery_days)
        self.callouts["flash"].set(
            fails["flash"], "Weights do not fit in flash",
            f"{format_bytes(rw['weights_bytes'])} vs {format_bytes(rw['flash_bytes'])}.",
            "lower the weight precision")
        self.callouts["sram"].set(
            fails["sram"], "Out of SRAM",
            f"{win} window(s) of {format_bytes(tr.window_bytes)} + activations "
            f"{format_bytes(rw['activation_bytes'])} = "
            f"{format_bytes(ev.sram_bytes_used)} vs {format_bytes(rw['sram_bytes'])}.",
            "buffer fewer windows, or a lower-precision datapath (smaller activations)")
        self.callouts["energy"].set(
            fails["energy"], "Over the energy budget",
            f"{fmt_count(duty * self._windows_per_day())} windows/day x "
            f"{fmt_energy(ev.split.energy_j)} = "
            f"{fmt_count(daily)} mWh/day vs {tr.budget_text}: the battery lasts "
            f"{days:.3g} days, not {self.battery.target_days:g}.",
            "process fewer windows (duty), or hand work to the phone (Part C)")
        self.callouts["coverage"].set(
            fails["coverage"], "Listening too rarely",
            f"{duty:.0%} of windows is below the {ev.floor:.0%} the product needs.",
            "raise the duty cycle")
        self.callouts["boundary"].set(
            not any(fails.values()), "Fits and lasts",
            f"{days:.3g} days on a charge; the spotter uses {daily / tr.daily_budget:.0%} of "
            "its budget.")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        ev = self._ev(s)
        per_window = ev.split.energy_j
        daily, days = float(ev.daily_mwh), float(ev.battery_days)
        self.math.update(
            f"$$E_{{\\text{{window}}}} = P\\,(t_{{\\text{{front}}}} + t_{{\\text{{model}}}}) + "
            f"\\frac{{E_{{\\text{{event}}}}}}{{T_{{\\text{{conn}}}}\\,r}} = "
            f"{tex_num(per_window)}\\ \\text{{J}}$$"
            f"$$E_{{\\text{{day}}}} = d \\cdot r \\cdot 86400 \\cdot E_{{\\text{{window}}}} = "
            f"{float(s['duty']):.2f} \\times {fmt_count(self._windows_per_day())} \\times "
            f"{tex_num(per_window)} / 3.6 = {tex_num(daily)}\\ \\text{{mWh}}$$"
            f"$$\\text{{life}} = \\frac{{{fmt_count(self.battery.capacity_mwh)}}}"
            f"{{{fmt_count(self.battery.other_mwh_per_day)} + {tex_num(daily)}}} = "
            f"{days:.3g}\\ \\text{{days}}$$"
            f"<p>The phone link is kept at a {self.interval_s * 1e3:g} ms connection interval. "
            "Source: <code>labkit.physics.edge.wearable_split</code>, "
            "<code>labkit.physics.edge.battery_life_days</code>, "
            "<code>labkit.physics.phases.cnn_inference_time</code>.</p>")

    def _reveal_body(self) -> str:
        d = self.default_eval
        tr = self.track
        fit = self._fit(d)
        walls = [k for k, failed in d.fails.items() if failed]
        return (f"{self._computed_line()}"
                f"<div>At the defaults the spotter needs {fmt_count(float(d.daily_mwh))} "
                f"mWh/day: the battery lasts {float(d.battery_days):.3g} days.</div>"
                "<div style='color:#5d6d7e'>Why: the "
                f"{fmt_count(self.model.params_total)}-parameter model's {tr.weight_bits}-bit "
                f"weights fill {fit[0]:.3g}% of flash and one window with its activations "
                f"{fit[1]:.3g}% of SRAM, while processing "
                f"every window all day costs {float(d.daily_mwh) / tr.daily_budget:.3g}x the "
                f"{tr.budget_text} budget. At the defaults "
                + (f"{' and '.join(walls)} fail{'s' if len(walls) == 1 else ''}"
                   if walls else "nothing fails") + ".</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Capacity on the ring: at {r['weight_bits']}-bit and {r['duty']:.0%} duty the "
                f"spotter spends {fmt_count(r['daily_mwh'])} mWh/day "
                f"(budget {fmt_count(self.track.daily_budget)}) and the ring lasts "
                f"{r['battery_days']:.3g} days; first failure: {r['first_failure']}.")
