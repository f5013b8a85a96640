"""Lab 2 Part A for a CNN track: the classic roofline of one pass."""

from __future__ import annotations

import math

import numpy as np

from labkit import ui as lw
from labkit.core.grids import PRECISIONS
from labkit.labs.accelerators import decisions
from labkit.labs.accelerators import part_a_cnn_spec as spec
from labkit.labs.accelerators.base import Part, precision_floor_note
from labkit.labs.accelerators.measured_points import RooflinePoints
from labkit.labs.accelerators.part_a_results import stack_results
from labkit.labs.accelerators.part_a_spec import hint
from labkit.labs.accelerators.stack_text import stack_cards
from labkit.labs.common import (
    ALL,
    CheckSpec,
    Settings,
    Spec,
    computed,
    depends_on,
    metric_cards,
)
from labkit.plans.measured import device_class_label
from labkit.plans.moves import Move
from labkit.plans.roofline import (
    CnnView,
    cnn_fixes,
    cnn_intensity,
    cnn_roofs,
    cnn_view,
)
from labkit.plans.stacks import stack_choices, stack_spread
from labkit.plans.workload import front_end_s
from labkit.ui.charts import lin_top, log_domain


class PartACNN(Part):
    """The classic roofline of a CNN pass: attainable FLOP/s vs arithmetic intensity, with
    the model's point per precision and batch.

    Published cases that ran on the track's device sit on the roofline as measured points
    (:mod:`~labkit.labs.accelerators.measured_points`, drawn once: the device is fixed),
    with a table of them under the charts, or a sentence when the device has none.

    Refresh steps: the roofs read only the roofline mode; the ridge and the intensity
    sweep over batch sizes the mode and weight precision (not the batch); the points, the
    time bars, readout, details, callouts and math peek read every control.
    """

    letter = "A"
    _decision = decisions.part_a_cnn

    def _setup(self) -> None:
        tr, hw, m = self.track, self.hw, self.model
        self.bmax = max(16, 4 * tr.batch_size)
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["batch"] = lw.int_control("Inputs per pass (batch)", 1, 1, self.bmax)
        c["mode"] = lw.choice_control("Roofline", spec.MODE_OPTIONS, "peak", style="toggle")
        self._add_stack_control("cnn")
        self.default_point = cnn_view(hw, m, tr.weight_bits, 1, "peak")
        self._expected = self.default_point.regime
        self._start_at(*decisions.a_cnn_start(self))
        self.batches = np.arange(1, self.bmax + 1, dtype=float)
        self.measured = RooflinePoints([hw], m, tr.output_unit)
        self._setup_roofline_chart()
        self._setup_time_chart()
        self._setup_intensity_chart()
        self._callout("deadline", "danger")
        self._callout("memory_bound", "warn")
        self._callout("boundary", "success")

    def _setup_roofline_chart(self) -> None:
        hw, m = self.hw, self.model
        measured = self.measured.xy(hw)  # published cases on this device: (case, AI, FLOP/s)
        ais = [float(a) for wb in PRECISIONS
               for a in cnn_intensity(hw, m, wb, np.asarray([1.0, self.bmax]), "peak")[0]]
        ais += [ai for _, ai, _ in measured]
        ridge = max(hw.peak_flops.values()) / hw.memory_bandwidth
        self.ai_lo = 10 ** math.floor(math.log10(min(min(ais), ridge) / 10))
        self.ai_hi = 10 ** math.ceil(math.log10(max(max(ais), ridge) * 10))
        self.ai_grid = np.geomspace(self.ai_lo, self.ai_hi, 80)
        self.precs = sorted(hw.peak_flops, key=lambda p: hw.peak_flops[p])
        y_hi = 10 ** math.ceil(math.log10(max(hw.peak_flops.values()) * 3))
        y_lo = 10 ** math.floor(math.log10(min([hw.memory_bandwidth * 0.5 * self.ai_lo]
                                               + [f / 2 for _, _, f in measured]
                                               + [f / 2 for f in self._band_floors()])))
        xs, ys = lw.make_scale("log", self.ai_lo, self.ai_hi), lw.make_scale("log", y_lo, y_hi)
        self.m_roofs = lw.line_mark(self.ai_grid, np.ones((len(self.precs), 80)), xs, ys,
                                    colors=lw.SERIES[:len(self.precs)],
                                    labels=[f"roof {p}" for p in self.precs], legend=True)
        self.m_ridge = lw.vline_mark(1.0, xs, color=lw.PALETTE["grey"], line_style="dotted",
                                     label="ridge (your precision)", legend=True)
        self.m_att = lw.scatter_mark([1.0], [1.0], xs, ys, color=lw.PALETTE["red"])
        self.m_ach = lw.scatter_mark([1.0], [1.0], xs, ys, color=lw.PALETTE["orange"],
                                     marker="diamond")
        self.m_band = lw.line_mark([1.0, 1.0], [1.0, 1.0], xs, ys, colors=[lw.PALETTE["teal"]],
                                   stroke_width=8, opacities=[0.45], legend=True,
                                   labels=["real systems (band around achievable)"])
        self.figures["roofline"] = lw.figure(
            [self.m_roofs, self.m_ridge, self.m_band, self.m_att, self.m_ach], xs, ys,
            x_label="arithmetic intensity (FLOP per byte, log)",
            y_label="attainable FLOP/s (log)",
            title="The roofline (red: its bound; orange: achieved with overhead)",
            legend=True, legend_location="bottom-right",
            x_tick_format=".2~g")
        self.measured.attach(self.figures["roofline"], xs, ys)
        lw.update_marks(self.measured.draw(hw)[1])

    def _band_floors(self) -> list[float]:
        """The slowest end of the band (FLOP/s) of one input at each offered precision on
        the slowest stack offered, so the roofline's scale holds every band it can draw."""
        slow = max(stack_choices(self.hw, "cnn"),
                   key=lambda c: c.scale * (c.band.high if c.band else 1.0))
        bands = [cnn_view(self.hw, self.model, int(wb), 1, "achievable", slow.id).band_flops
                 for _, wb in self.controls["weight_bits"].options]
        return [b[0] for b in bands if b is not None]

    def _setup_time_chart(self) -> None:
        tx, ty = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.st_y = ty
        self.m_time = lw.bar_mark(["compute", "memory", "overhead", "latency"], np.zeros(4),
                                  tx, ty, colors=[lw.PALETTE["orange"], lw.PALETTE["blue"],
                                                  lw.PALETTE["grey"], lw.PALETTE["red"]],
                                  color_mode="no_group", label_display=True,
                                  label_display_format=".3~g")
        self.m_dead = lw.hline_mark(self.track.slo_s * 1e3, ty, color=lw.PALETTE["red"],
                                    label="deadline", legend=True)
        self.figures["time"] = lw.figure(
            [self.m_time, self.m_dead], tx, ty, x_label="one pass (compute and memory overlap)",
            y_label="time (ms)", title="Where one pass's time goes", height=280)

    def _setup_intensity_chart(self) -> None:
        ax, ay = lw.make_scale("linear", 1, self.bmax), lw.make_scale("log", 1.0, 10.0)
        self.sa_y = ay
        self.m_ai = lw.line_mark(self.batches, np.ones(self.batches.size), ax, ay,
                                 colors=[lw.PALETTE["blue"]], labels=["model AI"], legend=True)
        self.m_bal = lw.hline_mark(1.0, ay, color=lw.PALETTE["grey"],
                                   label="machine balance", legend=True)
        self.m_ai_pt = lw.scatter_mark([1.0], [1.0], ax, ay)
        self.figures["intensity"] = lw.figure(
            [self.m_ai, self.m_bal, self.m_ai_pt], ax, ay, x_label="inputs per pass",
            y_label="FLOP per byte (log)", title="Batching reads the weights once per pass",
            legend=True, legend_location="top-left", x_tick_format="d", height=280)

    # -- the declarative side (part_a_cnn_spec) ---------------------------------------------
    def _hook(self) -> str:
        return spec.hook(self.model, self.hw)

    def _prediction_spec(self) -> Spec:
        return spec.prediction_spec(self.track, self.hw)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.checkpoint_spec(stack_spread())

    def _reveal_body(self) -> str:
        return spec.reveal_body(self._computed_line(), self.default_point, self.results,
                                self.hw, self.track.weight_bits, device_class_label(self.hw))

    def takeaway(self) -> str:
        return spec.takeaway(self.results)

    # -- computed values (plans) -------------------------------------------------------------
    @computed(ALL)
    def _view(self, s: Settings) -> CnnView:
        """One pass at your precision, batch and roofline."""
        return cnn_view(self.hw, self.model, int(s["weight_bits"]), int(s["batch"]),
                        str(s["mode"]), self._stack(s))

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on("mode", "stack")
    def _draw_roofs(self, s: Settings) -> None:
        roofs = cnn_roofs(self.hw, self.precs, self.ai_grid, str(s["mode"]), self._stack(s))
        lw.update_marks({self.m_roofs: {"y": roofs}})

    @depends_on("weight_bits", "mode", "stack")
    def _draw_intensity(self, s: Settings) -> None:
        """The ridge and the model's intensity over every batch size."""
        ai_sweep, ridge = cnn_intensity(self.hw, self.model, int(s["weight_bits"]),
                                        self.batches, str(s["mode"]), self._stack(s))
        lo_a, hi_a = log_domain(np.concatenate([ai_sweep, [ridge]]), 2.0)
        lw.update_marks({
            self.m_ridge: {"x": [ridge, ridge]},
            self.m_ai: {"y": ai_sweep}, self.sa_y: {"min": lo_a, "max": hi_a},
            self.m_bal: {"y": [ridge, ridge]},
        })

    @depends_on(ALL)
    def _draw_point(self, s: Settings) -> None:
        """Your pass: its point on the roofline and intensity charts, and its time bars."""
        v = self._view(s)
        r = v.pass_
        times = np.asarray([float(r.compute_s), float(r.memory_s), float(r.overhead_s),
                            v.latency_s]) * 1e3
        dead_ms = self.track.slo_s * 1e3
        t_top = lin_top(times, floor=1e-3)
        band = v.band_flops
        lw.update_marks({
            self.m_band: ({"x": [v.ai_flop_per_byte] * 2, "y": list(band), "visible": True}
                          if band is not None else {"visible": False}),
            self.m_att: {"x": [v.ai_flop_per_byte], "y": [v.attainable_flops]},
            self.m_ach: {"x": [v.ai_flop_per_byte], "y": [v.achieved_flops]},
            self.m_time: {"y": times},
            self.st_y: {"max": lw.nice_up(max(t_top, 1.1 * dead_ms if dead_ms <= 3 * t_top
                                              else 0.0))},
            self.m_dead: {"visible": dead_ms <= 3 * t_top},
            self.m_ai_pt: {"x": [float(v.batch)], "y": [v.ai_flop_per_byte]},
        })

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        tr, v = self.track, self._view(s)
        r = v.pass_
        self.results = {
            "regime": v.regime, "mode": v.mode, "weight_bits": v.weight_bits,
            "batch": v.batch, "compute_precision": v.precision,
            "ai_flop_per_byte": v.ai_flop_per_byte,
            "ridge_flop_per_byte": v.ridge_flop_per_byte,
            "attainable_flops": v.attainable_flops, "achieved_flops": v.achieved_flops,
            "compute_s": float(r.compute_s), "memory_s": float(r.memory_s),
            "overhead_s": float(r.overhead_s), "latency_s": v.latency_s,
            "per_inference_s": float(r.per_inference_s), "bytes_moved": float(r.bytes_moved),
            "deadline_s": tr.slo_s, "expected": self._expected,
            "achievable_over_peak": v.achievable_over_peak,
            **self.measured.summary(self.hw, v.stack).as_results(),
            **stack_results(v.stack, v.band_s),
        }
        self._set_details(precision_floor_note(self.hw, self.model, v.weight_bits,
                                               self._noun(), v.batch, v.mode, self._stack(s))
                          + self.measured.html(self.hw, v.stack))
        self._set_readout(metric_cards(
            spec.cards(v, tr.slo_s) + stack_cards(v.stack, v.band_s, "one pass (achievable)")))

    @computed(ALL)
    def _fixes(self, s: Settings) -> dict[str, tuple[Move, ...]]:
        """For the deadline and a memory-bound pass, the controls that alone fix it."""
        keys = ("weight_bits", "batch")
        opts = {"weight_bits": [v for _, v in self.controls["weight_bits"].options],
                "batch": list(range(1, self.bmax + 1))}
        return cnn_fixes(self.hw, self.model, {k: int(s[k]) for k in keys}, str(s["mode"]),
                         self.track.slo_s, opts, self._stack(s))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr, v, fixes = self.track, self._view(s), self._fixes(s)
        labels = {k: str(c.description) for k, c in self.controls.items()}
        self.callouts["deadline"].set(v.latency_s > tr.slo_s, *spec.deadline_text(v, tr.slo_s),
                                      hint(fixes.get("deadline", ()), labels))
        self.callouts["memory_bound"].set(v.regime == "memory-bound",
                                          *spec.memory_bound_text(v),
                                          hint(fixes.get("memory_bound", ()), labels))
        self.callouts["boundary"].set(v.latency_s <= tr.slo_s and v.regime == "compute-bound",
                                      *spec.boundary_text(v, tr.slo_s, front_end_s(tr)))

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        self.math.update(spec.math_html(self._view(s), self.model.flops_per_inference,
                                        device_class_label(self.hw)))
