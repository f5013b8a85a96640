"""Lab 2 Part A for a transformer track: the decode roofline (the CNN one is
:mod:`labkit.labs.accelerators.part_a_cnn`)."""

from __future__ import annotations

import numpy as np

from labkit import ui as lw
from labkit.core.format import (
    fmt_count,
    fmt_time,
    format_bytes,
)
from labkit.core.grids import pow2
from labkit.labs.accelerators.base import (
    Part,
    feedback_map,
    paper_ms,
    rules_table_html,
    thousands,
    tokens_label,
)
from labkit.labs.accelerators.measured_points import DecodePoints
from labkit.labs.accelerators.part_a_text import (
    DecodePoint,
    math_html,
    memory_html,
    serving_html,
    shares,
)
from labkit.labs.common import (
    ALL,
    CheckSpec,
    Settings,
    Spec,
    computed,
    depends_on,
    metric_cards,
)
from labkit.physics.roofline import (
    PAPER_BATCHES,
    PAPER_HARDWARE,
    PAPER_MAX_CONTEXT,
    PAPER_MODEL,
    DecodeRoofline,
    MemoryBudget,
    balance_context,
    critical_batch,
    decode_roofline,
    derating_contributions,
    doubling_saving,
    knee_batch,
    memory_budget,
    regime_rule,
    serving_batch,
)
from labkit.plans.design import MODES
from labkit.registries.hardware import Hardware, get_hardware
from labkit.ui.charts import lin_top, log_domain

# -- Part A: the roofline -----------------------------------------------------------------------

_TERMS = ("weight fetch", "compute", "KV read", "overhead")
_TERM_COLORS = [lw.PALETTE["blue"], lw.PALETTE["orange"], lw.PALETTE["purple"],
                lw.PALETTE["grey"], "#222222"]
BATCH_OPTIONS = tuple(pow2(1024))
STALL = 0.10  # batching has stalled where doubling the batch saves less than this per token


class PartALM(Part):
    """Decode roofline of a transformer: weight fetch, compute and KV read vs batch and context,
    with B*, L*, the knee and the paper's serving batch 2B*; peak vs achievable side by side.
    On the paper's model a "device" toggle swaps in the paper's PE (one PE, context to 1M
    tokens) so section 5.1's worked example can be read off the readout.

    Refresh steps: the batch sweep reads the context, roofline and precisions (not the
    batch), and moves the device's measured points (``measured_points``); the context sweep
    the batch, roofline and precisions; the gain curve the roofline and precisions; the
    peak-vs-achievable bars the batch, context and precisions (not the roofline toggle);
    "per token / per step" re-slices the sweeps. The device toggle reaches every step. The
    points, readout, callouts, rules and measured tables and math peek read every control.
    """

    letter = "A"

    def _setup(self) -> None:
        tr, m = self.track, self.model
        self.tp = tr.devices_per_replica
        self.ctx0 = int(tr.context_tokens or 0)
        self.b0 = int(tr.batch_size)
        self.paper_hw: Hardware | None = (
            get_hardware(PAPER_HARDWARE)
            if m.id == PAPER_MODEL and self.hw.id != PAPER_HARDWARE else None)
        self._swapping = False
        opts = sorted(set(BATCH_OPTIONS) | {self.b0})
        self._setup_controls(opts)
        self.bgrid = np.geomspace(1, max(opts), 61)
        self.cgrids = {"track": np.geomspace(256, m.max_context, 61),
                       "paper": np.geomspace(256, max(PAPER_MAX_CONTEXT, m.max_context), 61)}
        self.cgrid = self.cgrids["track"]
        d0 = decode_roofline(self.hw, m, self.b0, self.ctx0, tr.weight_bits, tr.kv_bits,
                             tp=self.tp, mode="peak")
        self.default_point = d0
        self._expected = str(d0.regime)
        self._setup_batch_chart(max(opts))
        self._setup_context_chart()
        self._setup_gain_chart(max(opts))
        self._setup_modes_chart()
        self._callout("oom", "danger")
        self._callout("slo", "danger")
        self._callout("window", "warn")
        self._callout("stall", "warn")
        self._callout("boundary", "success")

    def _setup_controls(self, opts: list[int]) -> None:
        tr, m = self.track, self.model
        c = self.controls
        c["batch"] = lw.selection_control("Batch (sequences per decode step)",
                                          [(str(b), b) for b in opts], self.b0)
        c["context"] = lw.context_control(self.ctx0, m.max_context, 256,
                                          "Context per sequence (tokens)")
        self._ctx_options = {"track": list(c["context"].options)}
        if self.paper_hw is not None:
            c["device"] = lw.choice_control(
                "Device", [(f"{self.hw.name} (track, {self.tp} per replica)", "track"),
                           (f"one {self.paper_hw.name}, §5.1", "paper")],
                "track", style="toggle")
            paper = lw.context_control(self.ctx0, max(PAPER_MAX_CONTEXT, m.max_context), 256)
            self._ctx_options["paper"] = [
                (label if v <= m.max_context else f"{tokens_label(v)} (past the model's window)", v)
                for label, v in paper.options]
            c["device"].observe(self._swap_context_range, names="value")
        c["mode"] = lw.choice_control("Roofline", [("peak (paper)", "peak"),
                                                   ("achievable (real system)", "achievable")],
                                      "peak", style="toggle")
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["kv_bits"] = lw.precision_control("KV-cache precision", tr.kv_bits,
                                            sorted({4, 8, 16, tr.kv_bits}))
        c["view"] = lw.choice_control("Show time", [("per token", "token"),
                                                    ("per step", "step")], "token",
                                      style="toggle")

    def _swap_context_range(self, change: dict[str, object]) -> None:
        """Give the context slider the device's range (the paper's reaches 1M tokens),
        keeping the value where it still exists; the device's own refresh redraws."""
        ctl = self.controls["context"]
        opts = self._ctx_options[str(change["new"])]
        value = min(int(ctl.value), int(opts[-1][1]))
        self._swapping = True
        try:
            ctl.options = opts
            ctl.value = value
        finally:
            self._swapping = False

    def _on_change(self, change: dict[str, object]) -> None:  # type: ignore[override]
        if not self._swapping:
            super()._on_change(change)

    def _setup_batch_chart(self, b_max: int) -> None:
        labels = [*_TERMS, "total"]
        bx, by = lw.make_scale("log", 1, b_max), lw.make_scale("log", 1e-4, 1.0)
        self.sb_y = by
        self.m_b = lw.line_mark(self.bgrid, np.ones((5, self.bgrid.size)), bx, by,
                                colors=_TERM_COLORS, labels=labels, legend=True)
        self.m_b_other = lw.line_mark(self.bgrid, np.ones(self.bgrid.size), bx, by,
                                      colors=[lw.PALETTE["light"]], line_style="dashed",
                                      labels=["total, other mode"], legend=True, stroke_width=2)
        self.m_bstar = lw.vline_mark(1.0, bx, color=lw.PALETTE["red"], label="B*", legend=True)
        self.m_serve = lw.vline_mark(2.0, bx, color=lw.PALETTE["teal"], line_style="dashed",
                                     label="2B* (paper's serving batch)", legend=True)
        self.m_knee = lw.vline_mark(1.0, bx, color=lw.PALETTE["green"], line_style="dotted",
                                    label="knee", legend=True)
        self.m_b_pt = lw.scatter_mark([1.0], [1.0], bx, by)
        self.figures["batch"] = lw.figure(
            [self.m_b, self.m_b_other, self.m_bstar, self.m_serve, self.m_knee, self.m_b_pt],
            bx, by, x_label="batch B (sequences, log)", y_label="time (ms, log)",
            title="Decode time vs batch at your context", legend=True,
            legend_location="top-right", x_tick_format=".0f", y_tick_format=".2~g")
        self.measured = DecodePoints([self.hw, self.paper_hw], self.model,
                                     self.track.output_unit).attach(self.figures["batch"], bx, by)

    def _setup_context_chart(self) -> None:
        m = self.model
        labels = [*_TERMS, "total"]
        cx, cy = lw.make_scale("log", 256, m.max_context), lw.make_scale("log", 1e-4, 1.0)
        self.sc_x, self.sc_y = cx, cy
        self.m_c = lw.line_mark(self.cgrid, np.ones((5, self.cgrid.size)), cx, cy,
                                colors=_TERM_COLORS, labels=labels, legend=True)
        self.m_lstar = lw.vline_mark(256.0, cx, color=lw.PALETTE["red"], label="L*",
                                     legend=True)
        self.m_c_pt = lw.scatter_mark([256.0], [1.0], cx, cy)
        self.figures["context"] = lw.figure(
            [self.m_c, self.m_lstar, self.m_c_pt], cx, cy,
            x_label="context S (tokens, log)", y_label="time (ms, log)",
            title="Decode time vs context at your batch", legend=True,
            legend_location="top-left", x_tick_format=".3~s", y_tick_format=".2~g")

    def _setup_gain_chart(self, b_max: int) -> None:
        m = self.model
        gx, gy = lw.make_scale("log", 256, m.max_context), lw.make_scale("log", 1.0, 10.0)
        self.sg_x, self.sg_y = gx, gy
        self.m_gain = lw.line_mark(self.cgrid, np.ones(self.cgrid.size), gx, gy,
                                   colors=[lw.PALETTE["teal"]],
                                   labels=[f"gain B=1 → {b_max}"], legend=True)
        self.m_gain_l = lw.vline_mark(256.0, gx, color=lw.PALETTE["red"], label="L*",
                                      legend=True)
        self.m_gain_pt = lw.scatter_mark([256.0], [1.0], gx, gy)
        self.figures["gain"] = lw.figure(
            [self.m_gain, self.m_gain_l, self.m_gain_pt], gx, gy,
            x_label="context S (tokens, log)", y_label="batching gain (x, log)",
            title=f"What batching B = 1 → {b_max} saves, along the context", legend=True,
            legend_location="bottom-left", x_tick_format=".3~s", y_tick_format=".3~g")

    def _setup_modes_chart(self) -> None:
        px, py = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.sp_y = py
        self.m_pk = lw.bar_mark(list(MODES), np.zeros((4, 2)), px, py,
                                colors=_TERM_COLORS[:4], labels=list(_TERMS), legend=True)
        self.m_pk_slo = lw.hline_mark(self.track.slo_s * 1e3, py, color=lw.PALETTE["red"],
                                      label="TPOT SLO", legend=True)
        self.figures["modes"] = lw.figure(
            [self.m_pk, self.m_pk_slo], px, py, x_label="roofline",
            y_label="time per step (ms)", title="Peak vs achievable at your point",
            legend=True, legend_location="top-left")

    def _hook(self) -> str:
        tr = self.track
        bs = critical_batch(self.hw, self.model, tr.weight_bits, mode="peak")
        ls = balance_context(self.hw, self.model, tr.kv_bits, mode="peak")
        return (f"{self.model.name} decodes on {self.hw.name}. At B* = {bs:,.0f} sequences a "
                f"step's compute catches up with its weight fetch; at L* = {ls:,.0f} tokens a "
                f"sequence's own KV read catches up with its compute. Where does the track's "
                f"operating point, {self.b0} sequence(s) at {self.ctx0:,} tokens, sit?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: one decode step of {self.b0} sequence(s) at {self.ctx0:,} "
             f"tokens of context, {tr.weight_bits}-bit weights and {tr.kv_bits}-bit KV on "
             f"{self.tp} x {lw.esc(self.hw.name)} (peak roofline). Which term is the largest?")
        return q, [("Memory-bound: fetching the weights dominates", "memory-bound"),
                   ("Compute-bound: the matrix multiplies dominate", "compute-bound"),
                   ("KV-bound: reading every sequence's KV cache dominates", "kv-bound")]

    def _checkpoint_spec(self) -> CheckSpec:
        pe, m = PAPER_HARDWARE, PAPER_MODEL
        b_star, l_star = critical_batch(pe, m), balance_context(pe, m)
        t = {s: np.asarray(decode_roofline(pe, m, np.asarray(PAPER_BATCHES, dtype=float),
                                           s).per_token_s) for s in (8192, PAPER_MAX_CONTEXT)}
        q = ("Per generated token, in units of one token's compute, a decode step costs "
             "B*/B + 1 + S/L* (weight fetch + compute + KV read). When does doubling the batch "
             "stop paying?")
        opts = [("When B*/B is small next to 1 + S/L*: the weight share is the only one a "
                 "bigger batch divides", "weight_share"),
                ("As soon as the context passes L*", "past_l_star"),
                ("Never: twice the sequences share the same weights, so it always halves",
                 "never"),
                ("Once the step is memory-bound", "memory_bound")]
        short, long = t[8192], t[PAPER_MAX_CONTEXT]
        good = ("Right: doubling B saves (B*/2B) / (B*/B + 1 + S/L*), under 10% once "
                "B > 4 B*/(1 + S/L*). Long context only lowers that batch: on the paper's "
                f"PE (B* = {b_star:.4g}) B = 1 → 256 is {short[0] / short[1]:.2g}x at 8k "
                f"tokens but {1 - long[1] / long[0]:.0%} at 1M "
                f"({PAPER_MAX_CONTEXT / l_star:.0f} L*).")
        bad = ("Not quite: per token = B*/B + 1 + S/L*. Only the weight share B*/B falls with "
               "B, so doubling stops paying once that share is small next to 1 + S/L*, past "
               "L* or not.")
        return q, opts, "weight_share", feedback_map(opts, "weight_share", good, bad)

    # -- the device a setting runs on ------------------------------------------------------
    def _paper(self, s: Settings) -> bool:
        return s.get("device") == "paper"

    def _hw_of(self, s: Settings) -> Hardware:
        return self.paper_hw if self._paper(s) and self.paper_hw is not None else self.hw

    def _tp_of(self, s: Settings) -> int:
        return 1 if self._paper(s) else self.tp

    def _cgrid(self, s: Settings) -> np.ndarray:
        return self.cgrids["paper" if self._paper(s) else "track"]

    # -- shared values ---------------------------------------------------------------------
    def _roofline(self, s: Settings, batch: object, ctx: object,
                  mode: str | None = None) -> DecodeRoofline:
        return decode_roofline(self._hw_of(s), self.model, batch, ctx, int(s["weight_bits"]),
                               int(s["kv_bits"]), tp=self._tp_of(s),
                               mode=mode or str(s["mode"]))

    @computed("device", "context", "mode", "weight_bits", "kv_bits")
    def _sweep_b(self, s: Settings) -> tuple[DecodeRoofline, DecodeRoofline]:
        """The batch sweep at your context, in your roofline and in the other one."""
        other = "achievable" if s["mode"] == "peak" else "peak"
        ctx = int(s["context"])
        return (self._roofline(s, self.bgrid, ctx),
                self._roofline(s, self.bgrid, ctx, other))

    @computed("device", "batch", "mode", "weight_bits", "kv_bits")
    def _sweep_c(self, s: Settings) -> DecodeRoofline:
        """The context sweep at your batch."""
        return self._roofline(s, int(s["batch"]), self._cgrid(s))

    @computed("device", "mode", "weight_bits", "kv_bits")
    def _gain(self, s: Settings) -> np.ndarray:
        """Per-token time at B = 1 over the largest batch, along the context grid."""
        g1 = self._roofline(s, 1, self._cgrid(s))
        gn = self._roofline(s, float(self.bgrid[-1]), self._cgrid(s))
        return np.asarray(g1.per_token_s) / np.asarray(gn.per_token_s)

    @computed("device", "batch", "context", "weight_bits", "kv_bits")
    def _here(self, s: Settings) -> dict[str, DecodeRoofline]:
        """Your operating point in each roofline mode."""
        b, ctx = int(s["batch"]), int(s["context"])
        return {md: self._roofline(s, b, ctx, md) for md in MODES}

    @computed("device", "mode", "weight_bits", "kv_bits")
    def _balance(self, s: Settings) -> tuple[float, float]:
        """(B*, L*)."""
        mode, hw = str(s["mode"]), self._hw_of(s)
        return (critical_batch(hw, self.model, int(s["weight_bits"]), mode=mode),
                balance_context(hw, self.model, int(s["kv_bits"]), mode=mode))

    @computed("device", "context", "mode", "weight_bits", "kv_bits")
    def _knee(self, s: Settings) -> float | None:
        return knee_batch(self._hw_of(s), self.model, int(s["context"]),
                          int(s["weight_bits"]), int(s["kv_bits"]), mode=str(s["mode"]),
                          tp=self._tp_of(s))

    @computed("device", "batch", "context", "mode", "weight_bits", "kv_bits")
    def _saving(self, s: Settings) -> float:
        """What doubling the batch saves per token at your point (your roofline)."""
        return float(doubling_saving(self._hw_of(s), self.model, int(s["batch"]),
                                     int(s["context"]), int(s["weight_bits"]),
                                     int(s["kv_bits"]), tp=self._tp_of(s),
                                     mode=str(s["mode"])))

    @computed("device", "context", "mode", "weight_bits", "kv_bits")
    def _serving(self, s: Settings) -> tuple[float, DecodeRoofline]:
        """The paper's serving batch 2B* and the roofline at B*, 2B* and 4B* (your context)."""
        sb = serving_batch(self._hw_of(s), self.model, int(s["weight_bits"]),
                           mode=str(s["mode"]))
        return sb, self._roofline(s, np.asarray([sb / 2, sb, 2 * sb]), int(s["context"]))

    @computed("device", "context", "mode", "weight_bits", "kv_bits")
    def _paper_pair(self, s: Settings) -> tuple[float, float]:
        """Per-token time at the paper's B = 1 and B = 256, your context and roofline, s."""
        r = self._roofline(s, np.asarray(PAPER_BATCHES, dtype=float), int(s["context"]))
        t = np.asarray(r.per_token_s)
        return float(t[0]), float(t[1])

    @computed("device", "batch", "context", "mode", "weight_bits", "kv_bits")
    def _point(self, s: Settings) -> DecodePoint:
        """Your operating point with what the prose quotes (see part_a_text)."""
        b_star, l_star = self._balance(s)
        return DecodePoint(self._hw_of(s), self.model, str(s["mode"]), int(s["batch"]),
                           int(s["context"]), int(s["weight_bits"]), int(s["kv_bits"]),
                           self._tp_of(s), self._here(s), b_star, l_star, self._knee(s),
                           self._saving(s))

    def _gain_here(self, s: Settings) -> float:
        return float(np.interp(np.log(int(s["context"])), np.log(self._cgrid(s)),
                               self._gain(s)))

    @staticmethod
    def _terms(r: DecodeRoofline, view: str) -> np.ndarray:
        """The four terms and the total of a sweep, in ms per token or per step."""
        suf = "_step_s" if view == "step" else "_s"
        total = "step_s" if view == "step" else "per_token_s"
        out = np.vstack([np.asarray(getattr(r, k + suf), dtype=float)
                         for k in ("weight", "compute", "kv", "overhead")]
                        + [np.asarray(getattr(r, total), dtype=float)]) * 1e3
        out[3][out[3] <= 0] = np.nan  # peak mode has no overhead term
        return out

    def _l_star_visible(self, l_star: float, s: Settings) -> bool:
        return bool(256 <= l_star <= float(self._cgrid(s)[-1]))

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on("_sweep_b", "view", "_balance", "_knee")
    def _draw_batch_sweep(self, s: Settings) -> None:
        rb, rbo = self._sweep_b(s)
        view = str(s["view"])
        yb = self._terms(rb, view)
        yo = np.asarray(rbo.step_s if view == "step" else rbo.per_token_s) * 1e3
        b_star, _ = self._balance(s)
        knee = self._knee(s)
        top = float(self.bgrid[-1])
        y_pts, pts = self.measured.draw(self._hw_of(s), view)
        lo_b, hi_b = log_domain(np.concatenate([yb.ravel(), yo, y_pts]))
        lw.update_marks({
            self.m_b: {"y": yb}, self.m_b_other: {"y": yo}, **pts,
            self.sb_y: {"min": lo_b, "max": hi_b},
            self.m_bstar: {"x": [b_star, b_star], "visible": bool(b_star <= top)},
            self.m_serve: {"x": [2 * b_star, 2 * b_star], "visible": bool(2 * b_star <= top)},
            self.m_knee: ({"x": [knee, knee], "visible": True} if knee is not None
                          and knee <= top else {"visible": False}),
        })

    @depends_on("_sweep_c", "view", "_balance")
    def _draw_context_sweep(self, s: Settings) -> None:
        yc = self._terms(self._sweep_c(s), str(s["view"]))
        _, l_star = self._balance(s)
        lo_c, hi_c = log_domain(yc)
        grid = self._cgrid(s)
        lw.update_marks({
            self.sc_x: {"max": float(grid[-1])},
            self.m_c: {"x": grid, "y": yc}, self.sc_y: {"min": lo_c, "max": hi_c},
            self.m_lstar: {"x": [l_star, l_star], "visible": self._l_star_visible(l_star, s)},
        })

    @depends_on("_gain", "_balance")
    def _draw_gain(self, s: Settings) -> None:
        gain = self._gain(s)
        _, l_star = self._balance(s)
        grid = self._cgrid(s)
        lw.update_marks({
            self.sg_x: {"max": float(grid[-1])},
            self.m_gain: {"x": grid, "y": gain},
            self.sg_y: dict(zip(("min", "max"), log_domain(gain, 1.3), strict=True)),
            self.m_gain_l: {"x": [l_star, l_star], "visible": self._l_star_visible(l_star, s)},
        })

    @depends_on("_here", "mode", "view", "_gain")
    def _draw_points(self, s: Settings) -> None:
        """Your point on the batch, context and gain charts."""
        pt = self._here(s)[str(s["mode"])]
        b, ctx = int(s["batch"]), int(s["context"])
        total_here = float(pt.step_s if s["view"] == "step" else pt.per_token_s) * 1e3
        lw.update_marks({
            self.m_b_pt: {"x": [float(b)], "y": [total_here]},
            self.m_c_pt: {"x": [float(ctx)], "y": [float(total_here)]},
            self.m_gain_pt: {"x": [float(ctx)], "y": [self._gain_here(s)]},
        })

    @depends_on("_here")
    def _draw_modes(self, s: Settings) -> None:
        here = self._here(s)
        tr = self.track
        bars = np.asarray([[float(here[md].weight_step_s), float(here[md].compute_step_s),
                            float(here[md].kv_step_s), float(here[md].overhead_step_s)]
                           for md in MODES]).T * 1e3
        slo_ms = tr.slo_s * 1e3
        bar_top = lin_top(bars.sum(axis=0), floor=1e-3, pad=1.3)
        show_slo = tr.slo_kind == "tpot" and slo_ms <= 3.0 * bar_top
        lw.update_marks({
            self.m_pk: {"y": bars},
            self.sp_y: {"max": lw.nice_up(max(bar_top, 1.15 * slo_ms if show_slo else 0.0))},
            self.m_pk_slo: {"visible": show_slo},
        })

    @computed("device", "batch", "context", "weight_bits", "kv_bits")
    def _memory(self, s: Settings) -> MemoryBudget:
        return memory_budget(self._hw_of(s), self.model, int(s["context"]), int(s["batch"]),
                             int(s["weight_bits"]), int(s["kv_bits"]), tp=self._tp_of(s))

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        b, ctx, mode = int(s["batch"]), int(s["context"]), str(s["mode"])
        wb, kb = int(s["weight_bits"]), int(s["kv_bits"])
        here = self._here(s)
        pt = here[mode]
        b_star, l_star = self._balance(s)
        knee = self._knee(s)
        gain = self._gain(s)
        mem = self._memory(s)
        gain_here = self._gain_here(s)
        step = float(pt.step_s)
        hw = self._hw_of(s)
        sb, srv = self._serving(s)
        t1, t256 = self._paper_pair(s)
        self.results = {
            "regime": str(pt.regime), "mode": mode, "batch": b, "context_tokens": ctx,
            "weight_bits": wb, "kv_bits": kb, "tp": self._tp_of(s),
            "device": "paper" if self._paper(s) else "track", "hardware": hw.name,
            "weight_step_s": float(pt.weight_step_s), "compute_step_s": float(pt.compute_step_s),
            "kv_step_s": float(pt.kv_step_s), "overhead_step_s": float(pt.overhead_step_s),
            "step_s": step, "per_token_s": float(pt.per_token_s),
            "tokens_per_s": float(pt.tokens_per_s), "b_star": b_star, "l_star": l_star,
            "knee_batch": knee, "batching_gain": gain_here, "gain_short": float(gain[0]),
            "gain_long": float(gain[-1]), "over_memory": bool(mem.over_budget),
            "doubling_saving": self._saving(s), "stalled": self._saving(s) < STALL,
            "used_bytes": float(mem.used_bytes), "capacity_bytes": float(mem.capacity_bytes),
            "achievable_over_peak": float(here["achievable"].step_s / here["peak"].step_s),
            "regime_rule": regime_rule(b, ctx, b_star, l_star),
            "kv_share_of_step": float(pt.kv_step_s) / step,
            "serving_batch": sb,
            "per_token_at_serving_s": float(np.asarray(srv.per_token_s)[1]),
            "per_token_at_b_star_s": float(np.asarray(srv.per_token_s)[0]),
            "per_token_b1_s": t1, "per_token_b256_s": t256,
            "past_model_window": ctx > self.model.max_context, "expected": self._expected,
            **self._real_systems(s),
        }
        cards = [
            ("regime", str(pt.regime), f"{mode} roofline, {self._tp_of(s)} x {hw.name}",
             lw.PALETTE["red"]),
            ("B* (critical batch)", f"{b_star:,.4g}", f"{wb}-bit weights", lw.PALETTE["blue"]),
            ("L* (balance context)", f"{l_star:,.0f} tokens",
             f"{kb}-bit KV; {thousands(l_star)}", lw.PALETTE["purple"]),
            ("knee", "none (S ≥ L*)" if knee is None else f"B = {knee:,.0f}",
             f"B*/(1 − S/L*); per token KV {fmt_time(float(pt.kv_s))} vs compute "
             f"{fmt_time(float(pt.compute_s))}", lw.PALETTE["green"]),
            ("time per token", paper_ms(float(pt.per_token_s)),
             f"step {fmt_time(step)} · {fmt_count(float(pt.tokens_per_s))} tokens/s",
             lw.PALETTE["orange"]),
            ("batching gain here", f"{gain_here:.3g}x",
             f"B = 1 → {int(self.bgrid[-1])} at {ctx:,} tokens", lw.PALETTE["teal"]),
        ]
        if self._paper(s):
            lo, hi = PAPER_BATCHES
            cut = (f"time per token cut {t1 / t256:.2g}x" if t1 / t256 >= 2
                   else f"time per token cut {1 - t256 / t1:.0%}")
            cards.append((f"paper §5.1: B = {lo} → {hi}", f"{paper_ms(t1)} → {paper_ms(t256)}",
                          f"{cut} at {ctx:,} tokens ({mode})", lw.PALETTE["grey"]))
        self._set_readout(metric_cards(cards))

    def _real_systems(self, s: Settings) -> dict[str, object]:
        """The results' record of where real systems sit: the published cases of the device
        on screen (else its class's, elsewhere), measured / achievable over them, and the
        two largest derating terms at your point (label, step seconds added)."""
        hw = self._hw_of(s)
        terms = sorted(derating_contributions(
            hw, self.model, int(s["batch"]), int(s["context"]), int(s["weight_bits"]),
            int(s["kv_bits"]), self._tp_of(s)), key=lambda t: -t.added_step_s)
        return {**self.measured.summary(hw).as_results(),
                "largest_derating_terms": [[t.label, t.added_step_s] for t in terms[:2]]}

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr, m = self.track, self.model
        b, ctx, mode = int(s["batch"]), int(s["context"]), str(s["mode"])
        pt = self._here(s)[mode]
        knee = self._knee(s)
        mem = self._memory(s)
        gain_here = self._gain_here(s)
        step = float(pt.step_s)
        top = int(self.bgrid[-1])
        self.callouts["oom"].set(
            bool(mem.over_budget), "Out of memory: this batch does not fit",
            f"{b} sequences x {ctx:,} tokens need {format_bytes(float(mem.used_bytes))} per "
            f"device (weights {format_bytes(float(mem.weights_bytes))}, KV "
            f"{format_bytes(float(mem.kv_bytes))}) of {format_bytes(mem.capacity_bytes)}. The "
            "roofline is only a speed limit; the point is not reachable"
            + (" on one PE: the paper reads B* and L* off a single PE, and both are ratios of "
               "its FLOP/s to its bandwidth, whatever its memory holds." if self._paper(s)
               else "."),
            "lower the batch or the context, or the KV precision"
            + ("; Part B sizes how many PEs hold the model" if self._paper(s) else ""))
        over_slo = tr.slo_kind == "tpot" and step > tr.slo_s
        self.callouts["slo"].set(
            over_slo, "TPOT SLO missed",
            f"One step of {b} sequences takes {fmt_time(step)} ({mode}); every sequence waits a "
            f"whole step per token, against {fmt_time(tr.slo_s)}.",
            "a smaller batch or context, lower precision, or more devices per replica")
        self.callouts["window"].set(
            ctx > m.max_context, f"Past {m.name}'s {m.max_context:,}-token window",
            f"{ctx:,} tokens is {ctx / m.max_context:.3g}x the context the model was trained "
            "for. The paper evaluates it analytically (the roofline arithmetic holds for any "
            "S); a deployment would need a model trained that far.")
        self._set_stall_and_boundary(s, pt, knee, mem, gain_here, top, over_slo)

    def _set_stall_and_boundary(self, s: Settings, pt: DecodeRoofline, knee: float | None,
                                mem: MemoryBudget, gain_here: float, top: int,
                                over_slo: bool) -> None:
        saving = self._saving(s)
        w, k, o = shares(pt)
        divided = "weight fetch and overhead" if o > 0 else "weight fetch"
        floor = (f"The KV read is the floor here (S/L* = {k:.3g} > 1): fewer KV bytes (8- or "
                 "4-bit KV, GQA/MLA) or context parallelism lower it."
                 if k > 1 else "Compute is the floor here: more FLOP/s (or fewer weights per "
                               "token) lower it; batching does not.")
        self.callouts["stall"].set(
            saving < STALL, f"Batching has stalled: doubling the batch saves {saving:.0%} "
                            "per token",
            f"Per token, in units of one token's compute: {w:.3g} (weight fetch) + 1 (compute) "
            f"+ {k:.3g} (KV read)" + (f" + {o:.3g} (overhead)" if o > 0 else "")
            + f"; a bigger batch divides only the {divided}. B = 1 → {top} cuts "
              f"the time per token {gain_here:.3g}x at this context. " + floor,
            "past this point the batch is set by the SLO and memory, not by speed per token")
        ok = not mem.over_budget and not over_slo
        b = float(s["batch"])
        overlapped = float(pt.compute_step_s) >= float(pt.weight_step_s + pt.kv_step_s)
        if knee is None:
            knee_text = ""
        elif overlapped:
            knee_text = (f"Compute ({fmt_time(float(pt.compute_step_s))} per step) already "
                         "outlasts all memory traffic (weights + KV); ")
        else:
            knee_text = (f"Compute would outlast all memory traffic only from the knee, "
                         f"B ≈ {knee:,.0f}; ")
        self.callouts["boundary"].set(
            ok and saving >= STALL, f"{str(pt.regime).capitalize()} and within the limits",
            f"Batching still pays here: doubling the batch would save {saving:.0%} per token "
            f"(the {divided} share {w + o:.3g} against the floor 1 + S/L* = "
            f"{1 + k:.3g}). " + knee_text
            + f"memory {format_bytes(float(mem.used_bytes))} of "
              f"{format_bytes(mem.capacity_bytes)} per device at B = {b:,.0f}.")

    @depends_on(ALL)
    def _show_rules(self, s: Settings) -> None:
        """Regime rules (your row marked), KV share, 2B* and the device's measured cases."""
        self._set_details(self._rules_html(s) + self._memory_and_serving_html(s)
                          + self.measured.html(self._hw_of(s)))

    def _rules_html(self, s: Settings) -> str:
        b_star, l_star = self._balance(s)
        return rules_table_html(int(s["batch"]), int(s["context"]), b_star, l_star)

    def _memory_and_serving_html(self, s: Settings) -> str:
        tr = self.track
        sb, srv = self._serving(s)
        point = self._point(s)
        return memory_html(point) + serving_html(
            point, sb, srv, tr.slo_s if tr.slo_kind == "tpot" else None)

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        self.math.update(math_html(self._point(s)))

    def _reveal_body(self) -> str:
        d = self.default_point
        terms = {"weight fetch": float(d.weight_step_s), "compute": float(d.compute_step_s),
                 "KV read": float(d.kv_step_s)}
        parts = ", ".join(f"{k} {fmt_time(val)}" for k, val in terms.items())
        r = self.results
        return (f"{self._computed_line()}"
                f"<div>At the defaults one step spends {parts}.</div>"
                f"<div>With your settings: <b>{r['regime']}</b> ({r['mode']}, "
                f"{lw.esc(r['hardware'])}), {fmt_time(r['per_token_s'])} per token.</div>"
                "<div style='color:#5d6d7e'>Why: the weights are read once per step whatever "
                "the batch, so their share of the time per token, B*/B, falls as the batch "
                "grows; every sequence reads its own KV, a share S/L* no batch divides; "
                "compute's share is 1. Batching pays while B*/B is large next to 1 + S/L*: "
                f"doubling the batch saves {r['doubling_saving']:.0%} per token at your "
                "settings. Real systems sit above the roofline: achievable is "
                f"{r['achievable_over_peak']:.2g}x the peak step here{self._largest_terms()}"
                f"; {lw.esc(r['real_systems'])}.</div>")

    def _largest_terms(self) -> str:
        """``; its largest derating terms: X (+1.2 ms) and Y (+0.3 ms)`` (the results')."""
        terms = [f"{lw.esc(label)} (+{fmt_time(sec)})"
                 for label, sec in self.results["largest_derating_terms"]]
        if not terms:
            return ""
        return (f"; its largest derating term{'s' if len(terms) > 1 else ''}: "
                f"{' and '.join(terms)}")

    def takeaway(self) -> str:
        r = self.results
        return (f"Roofline: at {r['batch']} sequence(s) and {r['context_tokens']:,} tokens the "
                f"step is {r['regime']} ({r['mode']}, {r['hardware']}); B* = "
                f"{r['b_star']:,.4g}, L* = {r['l_star']:,.0f} tokens; batching 1 → "
                f"{int(self.bgrid[-1])} cuts the per-token time {r['batching_gain']:.3g}x at "
                f"this context (vs {r['gain_long']:.3g}x at the longest).")
