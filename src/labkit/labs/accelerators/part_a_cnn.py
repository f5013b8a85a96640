"""Lab 2 Part A for a CNN track: the classic roofline of one pass."""

from __future__ import annotations

import math

import numpy as np

from labkit import ui as lw
from labkit.core.format import fmt_count, fmt_si, fmt_time, format_bytes, tex_num
from labkit.core.grids import PRECISIONS
from labkit.labs.accelerators.base import Part, feedback_map, precision_floor_note
from labkit.labs.accelerators.measured_points import RooflinePoints
from labkit.labs.common import (
    ALL,
    CheckSpec,
    Settings,
    Spec,
    computed,
    depends_on,
    metric_cards,
)
from labkit.physics.derating import device_class_of
from labkit.physics.phases import CnnRoofline, cnn_compute_precision, cnn_inference_time
from labkit.physics.roofline import get_mode
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

    def _setup(self) -> None:
        tr, hw, m = self.track, self.hw, self.model
        self.bmax = max(16, 4 * tr.batch_size)
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["batch"] = lw.int_control("Inputs per pass (batch)", 1, 1, self.bmax)
        c["mode"] = lw.choice_control("Roofline", [("peak", "peak"),
                                                   ("achievable (real system)", "achievable")],
                                      "peak", style="toggle")
        d0 = cnn_inference_time(hw, m, tr.weight_bits, 1, "peak")
        self.default_point = d0
        self._expected = str(d0.regime)
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
        ais = [float(r.flops / r.bytes_moved) for b in (1, self.bmax)
               for r in (cnn_inference_time(hw, m, wb, b, "peak") for wb in PRECISIONS)]
        ais += [ai for _, ai, _ in measured]
        ridge = max(hw.peak_flops.values()) / hw.memory_bandwidth
        self.ai_lo = 10 ** math.floor(math.log10(min(min(ais), ridge) / 10))
        self.ai_hi = 10 ** math.ceil(math.log10(max(max(ais), ridge) * 10))
        self.ai_grid = np.geomspace(self.ai_lo, self.ai_hi, 80)
        self.precs = sorted(hw.peak_flops, key=lambda p: hw.peak_flops[p])
        y_hi = 10 ** math.ceil(math.log10(max(hw.peak_flops.values()) * 3))
        y_lo = 10 ** math.floor(math.log10(min([hw.memory_bandwidth * 0.5 * self.ai_lo]
                                               + [f / 2 for _, _, f in measured])))
        xs, ys = lw.make_scale("log", self.ai_lo, self.ai_hi), lw.make_scale("log", y_lo, y_hi)
        self.m_roofs = lw.line_mark(self.ai_grid, np.ones((len(self.precs), 80)), xs, ys,
                                    colors=lw.SERIES[:len(self.precs)],
                                    labels=[f"roof {p}" for p in self.precs], legend=True)
        self.m_ridge = lw.vline_mark(1.0, xs, color=lw.PALETTE["grey"], line_style="dotted",
                                     label="ridge (your precision)", legend=True)
        self.m_att = lw.scatter_mark([1.0], [1.0], xs, ys, color=lw.PALETTE["red"])
        self.m_ach = lw.scatter_mark([1.0], [1.0], xs, ys, color=lw.PALETTE["orange"],
                                     marker="diamond")
        self.figures["roofline"] = lw.figure(
            [self.m_roofs, self.m_ridge, self.m_att, self.m_ach], xs, ys,
            x_label="arithmetic intensity (FLOP per byte, log)",
            y_label="attainable FLOP/s (log)",
            title="The roofline (red: its bound; orange: achieved with overhead)",
            legend=True, legend_location="bottom-right",
            x_tick_format=".2~g", y_tick_format=".2~e")
        self.measured.attach(self.figures["roofline"], xs, ys)
        lw.update_marks(self.measured.draw(hw)[1])

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

    def _hook(self) -> str:
        # Numbers that decide the prediction (the pass's FLOP per byte against the ridge)
        # stay for the reveal: the hook gives the two quantities, not their ratio.
        return (f"{self.model.name} does {fmt_si(self.model.flops_per_inference, 'FLOP')} per "
                f"input on the {self.hw.name}. A pass is compute-bound when its FLOP per byte "
                "moved passes the device's ridge (peak FLOP/s over bandwidth). Which side of "
                "the ridge is it on, and what moves it?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: one {tr.weight_bits}-bit pass over one input on the "
             f"{lw.esc(self.hw.name)} (peak roofline). Is it memory- or compute-bound?")
        return q, [("Memory-bound: moving weights and activations takes longer",
                    "memory-bound"),
                   ("Compute-bound: the arithmetic takes longer", "compute-bound")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "What moves a CNN pass to the right on the roofline (more FLOP per byte moved)?"
        opts = [("Batching inputs (the weights are read once per pass) or lower-precision "
                 "weights (fewer bytes)", "intensity"),
                ("A faster clock", "clock"),
                ("More memory bandwidth", "bandwidth"),
                ("A longer deadline", "deadline")]
        good = ("Right: AI = FLOP / bytes. Batching shares one weight read among several "
                "inputs and lower precision shrinks the bytes; the device's FLOP/s and "
                "bandwidth move the roof, not the point.")
        bad = ("Not quite: the point's x is the model's FLOP per byte. Only what changes the "
               "bytes per FLOP (batching, precision) moves it; hardware moves the roof.")
        return q, opts, "intensity", feedback_map(opts, "intensity", good, bad)

    # -- shared values ---------------------------------------------------------------------
    def _bw(self, s: Settings) -> float:
        return self.hw.memory_bandwidth * get_mode(str(s["mode"]), self.hw,
                                                   "cnn").bandwidth_efficiency

    def _c_eff(self, s: Settings) -> float:
        prec = cnn_compute_precision(self.hw, int(s["weight_bits"]))
        return self.hw.flops(prec) * get_mode(str(s["mode"]), self.hw,
                                              "cnn").cnn_flop_efficiency(prec)

    def _ridge(self, s: Settings) -> float:
        return self._c_eff(s) / self._bw(s)

    @computed(ALL)
    def _pass(self, s: Settings) -> CnnRoofline:
        """One pass at your precision, batch and roofline."""
        return cnn_inference_time(self.hw, self.model, int(s["weight_bits"]), int(s["batch"]),
                                  str(s["mode"]))

    def _ai(self, s: Settings) -> float:
        r = self._pass(s)
        return float(r.flops / r.bytes_moved)

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on("mode")
    def _draw_roofs(self, s: Settings) -> None:
        hw = self.hw
        d = get_mode(str(s["mode"]), hw, "cnn")
        bw = self._bw(s)
        roofs = np.vstack([np.minimum(hw.peak_flops[p] * d.cnn_flop_efficiency(p),
                                      self.ai_grid * bw) for p in self.precs])
        lw.update_marks({self.m_roofs: {"y": roofs}})

    @depends_on("weight_bits", "mode")
    def _draw_intensity(self, s: Settings) -> None:
        """The ridge and the model's intensity over every batch size."""
        ridge = self._ridge(s)
        sweep = cnn_inference_time(self.hw, self.model, int(s["weight_bits"]), self.batches,
                                   str(s["mode"]))
        ai_sweep = np.asarray(sweep.flops) / np.asarray(sweep.bytes_moved)
        lo_a, hi_a = log_domain(np.concatenate([ai_sweep, [ridge]]), 2.0)
        lw.update_marks({
            self.m_ridge: {"x": [ridge, ridge]},
            self.m_ai: {"y": ai_sweep}, self.sa_y: {"min": lo_a, "max": hi_a},
            self.m_bal: {"y": [ridge, ridge]},
        })

    @depends_on(ALL)
    def _draw_point(self, s: Settings) -> None:
        """Your pass: its point on the roofline and intensity charts, and its time bars."""
        r = self._pass(s)
        ai = self._ai(s)
        attain = min(self._c_eff(s), ai * self._bw(s))
        achieved = float(r.flops) / float(r.latency_s)
        times = np.asarray([float(r.compute_s), float(r.memory_s), float(r.overhead_s),
                            float(r.latency_s)]) * 1e3
        dead_ms = self.track.slo_s * 1e3
        t_top = lin_top(times, floor=1e-3)
        lw.update_marks({
            self.m_att: {"x": [ai], "y": [attain]},
            self.m_ach: {"x": [ai], "y": [achieved]},
            self.m_time: {"y": times},
            self.st_y: {"max": lw.nice_up(max(t_top, 1.1 * dead_ms if dead_ms <= 3 * t_top
                                              else 0.0))},
            self.m_dead: {"visible": dead_ms <= 3 * t_top},
            self.m_ai_pt: {"x": [float(s["batch"])], "y": [ai]},
        })

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        tr = self.track
        wb, b, mode = int(s["weight_bits"]), int(s["batch"]), str(s["mode"])
        r = self._pass(s)
        ai, ridge = self._ai(s), self._ridge(s)
        prec = cnn_compute_precision(self.hw, wb)
        attain = min(self._c_eff(s), ai * self._bw(s))
        achieved = float(r.flops) / float(r.latency_s)
        lat = float(r.latency_s)
        self.results = {
            "regime": str(r.regime), "mode": mode, "weight_bits": wb, "batch": b,
            "compute_precision": prec, "ai_flop_per_byte": ai, "ridge_flop_per_byte": ridge,
            "attainable_flops": attain, "achieved_flops": achieved,
            "compute_s": float(r.compute_s), "memory_s": float(r.memory_s),
            "overhead_s": float(r.overhead_s), "latency_s": lat,
            "per_inference_s": float(r.per_inference_s), "bytes_moved": float(r.bytes_moved),
            "deadline_s": tr.slo_s, "expected": self._expected,
            "achievable_over_peak": self._achievable_over_peak(s),
            **self.measured.summary(self.hw).as_results(),
        }
        self._set_details(precision_floor_note(self.hw, self.model, wb, self._noun(), b, mode)
                          + self.measured.html(self.hw))
        self._set_readout(metric_cards([
            ("regime", str(r.regime), f"{mode} roofline, {prec} arithmetic",
             lw.PALETTE["red"]),
            ("arithmetic intensity", f"{ai:,.3g} FLOP/B", f"ridge at {ridge:,.3g}",
             lw.PALETTE["blue"]),
            ("attainable", fmt_si(attain, "FLOP/s"), f"achieved {fmt_si(achieved, 'FLOP/s')}",
             lw.PALETTE["orange"]),
            ("pass latency", fmt_time(lat),
             f"{b} input(s); {fmt_time(float(r.per_inference_s))} each", lw.PALETTE["purple"]),
            ("deadline", fmt_time(tr.slo_s), f"{lat / tr.slo_s:.1%} used", lw.PALETTE["grey"]),
        ]))

    def _achievable_over_peak(self, s: Settings) -> float:
        wb, b = int(s["weight_bits"]), int(s["batch"])
        return float(cnn_inference_time(self.hw, self.model, wb, b, "achievable").latency_s
                     / cnn_inference_time(self.hw, self.model, wb, b, "peak").latency_s)

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        b, mode = int(s["batch"]), str(s["mode"])
        r = self._pass(s)
        ai, ridge = self._ai(s), self._ridge(s)
        lat = float(r.latency_s)
        self.callouts["deadline"].set(
            lat > tr.slo_s, "Deadline missed",
            f"A pass over {b} input(s) takes {fmt_time(lat)}; every input in it waits for the "
            f"whole pass, against a {fmt_time(tr.slo_s)} deadline.",
            "fewer inputs per pass or lower-precision arithmetic")
        self.callouts["memory_bound"].set(
            str(r.regime) == "memory-bound", "Memory-bound: the device waits on bytes",
            f"{format_bytes(float(r.bytes_moved))} per pass at {fmt_count(self._bw(s) / 1e9)} "
            f"GB/s ({fmt_time(float(r.memory_s))}) outlasts the arithmetic "
            f"({fmt_time(float(r.compute_s))}).",
            "batch more inputs per pass or lower the weight precision")
        self.callouts["boundary"].set(
            lat <= tr.slo_s and str(r.regime) == "compute-bound",
            f"Compute-bound, {lat / tr.slo_s:.1%} of the deadline",
            f"The point is right of the ridge ({ai:,.3g} vs {ridge:,.3g} FLOP/B): only more "
            "FLOP/s or fewer FLOP help now. "
            + (f"A fixed overhead of {fmt_time(float(r.overhead_s))} per pass and derated "
               "FLOP/s are why real passes sit under the roof." if mode == "achievable" else
               "Switch to the achievable roofline to see why real passes sit under it."))

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        b = int(s["batch"])
        r = self._pass(s)
        ai, ridge = self._ai(s), self._ridge(s)
        c_eff, bw = self._c_eff(s), self._bw(s)
        attain = min(c_eff, ai * bw)
        lat = float(r.latency_s)
        prec = cnn_compute_precision(self.hw, int(s["weight_bits"]))
        frac, tail_note = self._compute_tex(s, r)
        self.math.update(
            "<p>One pass over B inputs (weights read once, activations per input):</p>"
            f"$$\\mathrm{{AI}} = \\frac{{B \\cdot F}}{{W_b + B\\,A}} = "
            f"\\frac{{{b} \\times {tex_num(self.model.flops_per_inference)}}}"
            f"{{{tex_num(float(r.bytes_moved))}}} = {tex_num(ai)}\\ \\text{{FLOP/B}}$$"
            f"$$P = \\min(C, \\mathrm{{AI}}\\cdot BW) = \\min({tex_num(c_eff)}, "
            f"{tex_num(ai)} \\times {tex_num(bw)}) = {tex_num(attain)}\\ \\text{{FLOP/s}}$$"
            f"$$t = \\max\\left({frac}, \\frac{{W_b + BA}}{{BW}}\\right) "
            f"+ o = \\max({tex_num(float(r.compute_s) * 1e3)}, "
            f"{tex_num(float(r.memory_s) * 1e3)}) + {tex_num(float(r.overhead_s) * 1e3)} = "
            f"{tex_num(lat * 1e3)}\\ \\text{{ms}}$$" + tail_note
            + f"<p>Ridge C/BW = {ridge:,.3g} FLOP/B ({prec}). Source: "
            "<code>labkit.physics.phases.cnn_inference_time</code>.</p>")

    def _compute_tex(self, s: Settings, r: CnnRoofline) -> tuple[str, str]:
        """The compute term of the pass ``r`` as TeX and a sentence: FLOP over C, plus each
        fused layer's tile tail when the pass charges one, or over the FP32 rate when the
        engine kept the CUDA-core kernels (the physics says which)."""
        d = get_mode(str(s["mode"]), self.hw, "cnn")
        layers = self.model.kernel_layers
        if bool(r.cuda_cores):
            fp32 = self.hw.flops("fp32") * d.cnn_flop_efficiency("fp32")
            return ("\\frac{BF}{C_{\\text{FP32}}}",
                    f"<p>Here the CUDA-core (FP32) kernels, at $C_{{\\text{{FP32}}}} = "
                    f"{tex_num(fp32)}$ FLOP/s, beat the tensor cores with their tile tails "
                    f"({layers} layers x {tex_num(d.layer_tail_flop)} FLOP), and the engine "
                    "keeps them.</p>")
        if float(r.tail_flops) <= 0:
            return "\\frac{BF}{C}", ""
        return ("\\frac{BF + L\\,f_{\\text{tail}}}{C}",
                f"<p>$L\\,f_{{\\text{{tail}}}} = {layers} \\times "
                f"{tex_num(d.layer_tail_flop)}$ FLOP: each of the {layers} fused layers ends on "
                "a partial wave of tensor-core tiles, idle compute the pass pays at its own "
                "rate (it shrinks on a bigger GPU; FP32 on the CUDA cores has none).</p>")

    def _reveal_body(self) -> str:
        d = self.default_point
        r = self.results
        hw, tr = self.hw, self.track
        prec = cnn_compute_precision(hw, tr.weight_bits)
        ai = float(d.flops / d.bytes_moved)
        ridge = hw.flops(prec) / hw.memory_bandwidth
        return (f"{self._computed_line()}"
                f"<div>At the defaults: compute {fmt_time(float(d.compute_s))} vs memory "
                f"{fmt_time(float(d.memory_s))} per pass.</div>"
                f"<div>With your settings: <b>{r['regime']}</b>, {fmt_time(r['latency_s'])} per "
                "pass.</div><div style='color:#5d6d7e'>Why: a CNN reuses each weight across "
                f"every position it slides over: one {tr.weight_bits}-bit pass does "
                f"{ai:,.3g} FLOP per byte moved, {'above' if ai >= ridge else 'below'} the "
                f"{lw.esc(hw.name)}'s ridge of {ridge:,.3g} ({fmt_si(hw.flops(prec), 'FLOP/s')} "
                f"over {fmt_si(hw.memory_bandwidth, 'B/s')}). The ridge is a ratio, so a small "
                "device with a tiny FLOP/s and a tiny bandwidth can still be compute-bound. "
                "Real passes sit under the roof: achievable takes "
                f"{r['achievable_over_peak']:.2g}x the peak pass here (the "
                f"{lw.esc(device_class_of(hw).label)} class's derating); "
                f"{lw.esc(r['real_systems'])}.</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Roofline: at {r['weight_bits']}-bit, {r['batch']} input(s) per pass, the "
                f"model sits at {r['ai_flop_per_byte']:,.3g} FLOP/B vs a ridge of "
                f"{r['ridge_flop_per_byte']:,.3g}: {r['regime']}, {fmt_time(r['latency_s'])} per "
                f"pass of a {fmt_time(r['deadline_s'])} deadline.")
