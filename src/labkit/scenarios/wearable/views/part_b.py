"""Lab 2 Part B, wearable scenario: flash, SRAM, duty cycle and battery life.

The numbers are :mod:`..plan.window`'s (:func:`~..plan.window.ring_design`,
:func:`~..plan.window.ring_life_curve`); energy per window is shown as its named parts
(front end + model + BLE). The text is :mod:`.spec`'s."""

from __future__ import annotations

import numpy as np

import labkit.scenarios.wearable.views.spec as spec
from labkit import ui as lw
from labkit.core.format import counted, fmt_count, fmt_pct, fmt_time, format_bytes, tex_num
from labkit.core.grids import PRECISIONS
from labkit.core.units import J_PER_MWH
from labkit.labs.accelerators.base import Part, precision_floor_note
from labkit.labs.accelerators.edge_view import lever_text, levers_for, limits_decision, tex_eq
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
from labkit.plans.design import DESIGN_MODE, DUTY_STEPS
from labkit.scenarios.wearable.plan.window import (
    RING_LIMITS,
    RingDesign,
    ring_design,
    ring_life_curve,
)
from labkit.tracks import Track
from labkit.ui.charts import lin_top

FULL = 100.0  # the fit chart's capacity line, % of each memory


def _design(track: Track, s: Settings) -> RingDesign:
    return ring_design(track, int(s["weight_bits"]), float(s["duty"]), int(s["windows"]))


class PartBWearable(Part):
    """A wearable MCU: weights in flash, windows in SRAM, the duty cycle and battery life.

    Refresh steps: the flash/SRAM bars read the weight precision and the windows buffered;
    the battery-life curve and the energy-per-day bars the precision and the duty (not the
    buffer); the readout, callouts and math peek every control.
    """

    shows = (
        ("energy_per_inference", "energy_per_window_j"),
        ("cost_per_day_busy", "daily_mwh"),
    )

    def shown_basis(self, name: str) -> str:
        """The window's energy with the link's (Lab 1 counts the ring's compute only)."""
        return spec.ENERGY_BASIS


    letter = "B"

    def _setup(self) -> None:
        tr = self.track
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["duty"] = lw.float_control("Share of windows processed (duty)", 1.0, 0.01, 1.0, 0.01,
                                     ".0%")
        c["windows"] = lw.int_control("Windows buffered in SRAM", 1, 1, 8)
        self.duties = np.asarray(DUTY_STEPS)
        d0 = ring_design(tr, tr.weight_bits, 1.0, 1)
        self.default_eval = d0
        self._expected = d0.first
        self.levers: dict[str, tuple[str, object] | None] = {}
        self._setup_fit_chart()
        self._setup_life_chart(d0)
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
        for name in RING_LIMITS:
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _setup_fit_chart(self) -> None:
        fx, fy = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_fit = fy
        self.m_fit = lw.bar_mark(["flash: weights", "SRAM: windows + activations"],
                                 np.zeros(2), fx, fy, colors=[lw.PALETTE["blue"]] * 2,
                                 color_mode="no_group", label_display=True,
                                 label_display_format=".0f")
        self.m_fit_l = lw.hline_mark(FULL, fy, color=lw.PALETTE["red"], label="capacity",
                                     legend=True)
        self.figures["fit"] = lw.figure(
            [self.m_fit, self.m_fit_l], fx, fy, x_label="memory",
            y_label="% of capacity", title="Weights in flash, windows in SRAM", height=280)

    def _setup_life_chart(self, d0: RingDesign) -> None:
        lx = lw.make_scale("linear", 0.0, 1.0)
        ly = lw.make_scale("linear", 0.0, 1.0)
        self.s_life = ly
        self.m_life = lw.line_mark(self.duties, np.ones(self.duties.size), lx, ly,
                                   colors=[lw.PALETTE["teal"]], labels=["battery life"],
                                   legend=True)
        self.m_life_t = lw.hline_mark(d0.target_days, ly, color=lw.PALETTE["red"],
                                      label=f"promised {fmt_count(d0.target_days)} days",
                                      legend=True)
        self.m_life_f = lw.vline_mark(d0.duty_floor, lx, color=lw.PALETTE["grey"],
                                      line_style="dotted",
                                      label="least duty the product accepts", legend=True)
        self.m_life_pt = lw.scatter_mark([1.0], [1.0], lx, ly)
        self.figures["life"] = lw.figure(
            [self.m_life, self.m_life_t, self.m_life_f, self.m_life_pt], lx, ly,
            x_label="share of windows processed (duty)", y_label="days on one charge",
            title="Battery life vs how often the ring listens", legend=True,
            legend_location="bottom-left", x_tick_format=".0%", height=280)

    def _hook(self) -> str:
        d = self.default_eval
        return spec.b_hook(d.flash_bytes, self.hw.usable_memory_bytes, self.track.budget_text,
                           d.battery_mwh)

    def _prediction_spec(self) -> Spec:
        return spec.b_prediction(self.track)

    def _checkpoint_spec(self) -> CheckSpec:
        widest = ring_design(self.track, max(PRECISIONS), 1.0, 1)
        return spec.b_checkpoint(self.default_eval.energy.energy_j, widest.energy.energy_j)

    # -- shared values ---------------------------------------------------------------------
    @computed(ALL)
    def _ev(self, s: Settings) -> RingDesign:
        return _design(self.track, s)

    def _decision(self, s: Settings) -> Decision:
        return limits_decision(spec.b_task(self.track), _design(self.track, s).fails,
                               spec.LIMIT_WORDS)

    @staticmethod
    def _fit(d: RingDesign) -> np.ndarray:
        """Flash and SRAM use, % of capacity."""
        return np.asarray([d.flash_share, d.sram_share]) * FULL

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on("weight_bits", "windows")
    def _draw_fit(self, s: Settings) -> None:
        fit = self._fit(self._ev(s))
        lw.update_marks({
            self.m_fit: {"y": fit, "colors": [lw.PALETTE["red"] if x > FULL else
                                              lw.PALETTE["blue"] for x in fit]},
            self.s_fit: {"max": lin_top(np.concatenate([fit, [FULL]]), pad=1.2)},
        })

    @depends_on("weight_bits", "duty")
    def _draw_energy(self, s: Settings) -> None:
        """Battery life over the duty cycle, your point on it, and energy per day."""
        d = self._ev(s)
        life = ring_life_curve(self.track, d.weight_bits, self.duties)
        lw.update_marks({
            self.m_life: {"y": life},
            self.s_life: {"max": lin_top(np.concatenate([life, [d.target_days]]), pad=1.15)},
            self.m_life_pt: {"x": [d.duty], "y": [d.battery_days]},
            self.m_day: {"y": [d.daily_mwh, d.other_mwh_per_day]},
            self.s_day: {"max": lin_top([d.daily_mwh, d.other_mwh_per_day, d.budget_mwh],
                                        pad=1.2)},
        })

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        d = self._ev(s)
        e = d.energy
        self.results = {
            "weight_bits": d.weight_bits, "duty": d.duty, "windows_buffered": d.windows_buffered,
            "weights_bytes": d.weights_bytes, "flash_bytes": d.flash_bytes,
            "sram_bytes_used": d.sram_bytes_used, "sram_bytes": d.sram_bytes,
            "energy_per_window_j": e.energy_j, "front_end_j": e.front_end_j,
            "model_j": e.model_j, "radio_j": e.radio_j, "link_idle_j": e.idle_j,
            "daily_mwh": d.daily_mwh, "battery_days": d.battery_days,
            "target_days": d.target_days, "fails": dict(d.fails), "first_failure": d.first,
            "expected": self._expected,
        }
        self._set_details(precision_floor_note(self.hw, self.model, d.weight_bits,
                                               self._noun(), 1, DESIGN_MODE))
        self._set_readout(metric_cards([
            ("flash", fmt_pct(d.flash_share), f"{format_bytes(d.weights_bytes)} weights",
             lw.PALETTE["blue"]),
            ("SRAM", fmt_pct(d.sram_share),
             f"{counted(d.windows_buffered, 'window')} + activations", lw.PALETTE["purple"]),
            ("energy per window", spec.energy_parts(e).rsplit(" = ", 1)[1],
             spec.energy_parts(e).rsplit(" = ", 1)[0], lw.PALETTE["orange"]),
            ("spotter", f"{fmt_count(d.daily_mwh)} mWh/day", f"budget {self.track.budget_text}",
             lw.PALETTE["red"]),
            ("battery life", f"{fmt_count(d.battery_days)} days",
             f"promised {fmt_count(d.target_days)}", lw.PALETTE["teal"]),
        ]))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        d = self._ev(s)
        self.levers = levers_for(self, s, d.fails, lambda t: _design(self.track, t).fails,
                                 ("duty", "weight_bits", "windows"))
        details = spec.b_details(d, self.track.budget_text)
        for name in RING_LIMITS:
            self.callouts[name].set(d.fails[name], spec.RING_TITLES[name], details[name],
                                    lever_text(self, self.levers.get(name)))
        self.callouts["boundary"].set(
            not any(d.fails.values()), "Fits and lasts",
            f"{fmt_count(d.battery_days)} days on a charge; the spotter uses "
            f"{fmt_pct(d.daily_mwh / d.budget_mwh)} of its budget.")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        d = self._ev(s)
        e = d.energy
        self.math.update(
            tex_eq("E_{\\text{window}} = P\\,t_{\\text{front}} + P\\,t_{\\text{model}} + "
                   "n_{\\text{bytes}}\\,e_{\\text{byte}} + \\frac{E_{\\text{event}}}"
                   "{T_{\\text{conn}}\\,r}",
                   f"{tex_num(e.front_end_j)} + {tex_num(e.model_j)} + {tex_num(e.radio_j)} + "
                   f"{tex_num(e.idle_j)}", e.energy_j, "J")
            + f"<p>{spec.energy_parts(e)} per window.</p>"
            + tex_eq("E_{\\text{day}} = d \\cdot n_{\\text{day}} \\cdot E_{\\text{window}} "
                     "/ (\\text{J per mWh})",
                     f"{tex_num(d.duty)} \\times {tex_num(d.windows_per_day / d.duty)} \\times "
                     f"{tex_num(e.energy_j)} / {tex_num(J_PER_MWH)}", d.daily_mwh, "mWh")
            + tex_eq("\\text{life} = \\frac{C}{E_{\\text{rest}} + E_{\\text{day}}}",
                     f"{tex_num(d.battery_mwh)} / ({tex_num(d.other_mwh_per_day)} + "
                     f"{tex_num(d.daily_mwh)})", d.battery_days, "days")
            + f"<p>The phone link is kept at a {fmt_time(e.interval_s)} connection "
              "interval. Source: <code>labkit.scenarios.wearable.plan.window.ring_design</code>, "
              "<code>labkit.scenarios.wearable.plan.window.window_energy</code>.</p>")

    def _reveal_body(self) -> str:
        return spec.b_reveal(self._computed_line(), self.default_eval, self.track,
                             float(self.model.params_total))

    def takeaway(self) -> str:
        return spec.b_takeaway(self._ev(self.settings()))
