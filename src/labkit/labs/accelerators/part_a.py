"""Lab 2 Part A for a transformer track: the decode roofline (the CNN one is
:mod:`labkit.labs.accelerators.part_a_cnn`)."""

from __future__ import annotations

import numpy as np

from labkit import ui as lw
from labkit.core.format import (
    fmt_count,
    fmt_time,
    format_bytes,
    tex_num,
)
from labkit.core.grids import pow2
from labkit.core.units import bits_to_bytes
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
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.roofline import (
    DecodeRoofline,
    MemoryBudget,
    balance_context,
    critical_batch,
    decode_roofline,
    doubling_saving,
    get_mode,
    knee_batch,
    memory_budget,
)
from labkit.plans.design import MODES
from labkit.ui.charts import lin_top, log_domain

# -- Part A: the roofline -----------------------------------------------------------------------

_TERMS = ("weight fetch", "compute", "KV read", "overhead")
_TERM_COLORS = [lw.PALETTE["blue"], lw.PALETTE["orange"], lw.PALETTE["purple"],
                lw.PALETTE["grey"], "#222222"]
BATCH_OPTIONS = tuple(pow2(1024))
STALL = 0.10  # batching has stalled where doubling the batch saves less than this per token


class PartALM(Part):
    """Decode roofline of a transformer: weight fetch, compute and KV read vs batch and context,
    with B*, L* and the knee; peak vs achievable side by side.

    Refresh steps: the batch sweep reads the context, roofline and precisions (not the
    batch); the context sweep the batch, roofline and precisions (not the context); the
    batching-gain curve only the roofline and precisions; the peak-vs-achievable bars the
    batch, context and precisions (not the roofline toggle); "per token / per step" only
    re-slices the sweeps. The points, readout, callouts and math peek read every control.
    """

    letter = "A"

    def _setup(self) -> None:
        tr, m = self.track, self.model
        self.tp = tr.devices_per_replica
        self.ctx0 = int(tr.context_tokens or 0)
        self.b0 = int(tr.batch_size)
        opts = sorted(set(BATCH_OPTIONS) | {self.b0})
        self._setup_controls(opts)
        self.bgrid = np.geomspace(1, max(opts), 61)
        self.cgrid = np.geomspace(256, m.max_context, 61)
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
        self._callout("stall", "warn")
        self._callout("boundary", "success")

    def _setup_controls(self, opts: list[int]) -> None:
        tr, m = self.track, self.model
        c = self.controls
        c["batch"] = lw.selection_control("Batch (sequences per decode step)",
                                          [(str(b), b) for b in opts], self.b0)
        c["context"] = lw.context_control(self.ctx0, m.max_context, 256,
                                          "Context per sequence (tokens)")
        c["mode"] = lw.choice_control("Roofline", [("peak (paper)", "peak"),
                                                   ("achievable (real system)", "achievable")],
                                      "peak", style="toggle")
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["kv_bits"] = lw.precision_control("KV-cache precision", tr.kv_bits,
                                            sorted({4, 8, 16, tr.kv_bits}))
        c["view"] = lw.choice_control("Show time", [("per token", "token"),
                                                    ("per step", "step")], "token",
                                      style="toggle")

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
        self.m_knee = lw.vline_mark(1.0, bx, color=lw.PALETTE["green"], line_style="dotted",
                                    label="knee", legend=True)
        self.m_b_pt = lw.scatter_mark([1.0], [1.0], bx, by)
        self.figures["batch"] = lw.figure(
            [self.m_b, self.m_b_other, self.m_bstar, self.m_knee, self.m_b_pt], bx, by,
            x_label="batch B (sequences, log)", y_label="time (ms, log)",
            title="Decode time vs batch at your context", legend=True,
            legend_location="top-right", x_tick_format=".0f", y_tick_format=".2~g")

    def _setup_context_chart(self) -> None:
        m = self.model
        labels = [*_TERMS, "total"]
        cx, cy = lw.make_scale("log", 256, m.max_context), lw.make_scale("log", 1e-4, 1.0)
        self.sc_y = cy
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
        self.sg_y = gy
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
        q = ("Per generated token, in units of one token's compute, a decode step costs "
             "B*/B + 1 + S/L* (weight fetch + compute + KV read). When does doubling the batch "
             "stop paying?")
        opts = [("When B*/B is small next to 1 + S/L*: the weight share is the only one a "
                 "bigger batch divides", "weight_share"),
                ("As soon as the context passes L*", "past_l_star"),
                ("Never: twice the sequences share the same weights, so it always halves",
                 "never"),
                ("Once the step is memory-bound", "memory_bound")]
        good = ("Right: doubling B saves (B*/2B) / (B*/B + 1 + S/L*), under 10% once "
                "B > 4 B*/(1 + S/L*). Long context only lowers that batch: on the paper's "
                "PE (B* = 31) B = 1 → 256 is 19x at 8k tokens but 28% at 1M (78 L*).")
        bad = ("Not quite: per token = B*/B + 1 + S/L*. Only the weight share B*/B falls with "
               "B, so doubling stops paying once that share is small next to 1 + S/L*, past "
               "L* or not.")
        return q, opts, "weight_share", feedback_map(opts, "weight_share", good, bad)

    # -- shared values ---------------------------------------------------------------------
    def _roofline(self, s: Settings, batch: object, ctx: object,
                  mode: str | None = None) -> DecodeRoofline:
        return decode_roofline(self.hw, self.model, batch, ctx, int(s["weight_bits"]),
                               int(s["kv_bits"]), tp=self.tp, mode=mode or str(s["mode"]))

    @computed("context", "mode", "weight_bits", "kv_bits")
    def _sweep_b(self, s: Settings) -> tuple[DecodeRoofline, DecodeRoofline]:
        """The batch sweep at your context, in your roofline and in the other one."""
        other = "achievable" if s["mode"] == "peak" else "peak"
        ctx = int(s["context"])
        return (self._roofline(s, self.bgrid, ctx),
                self._roofline(s, self.bgrid, ctx, other))

    @computed("batch", "mode", "weight_bits", "kv_bits")
    def _sweep_c(self, s: Settings) -> DecodeRoofline:
        """The context sweep at your batch."""
        return self._roofline(s, int(s["batch"]), self.cgrid)

    @computed("mode", "weight_bits", "kv_bits")
    def _gain(self, s: Settings) -> np.ndarray:
        """Per-token time at B = 1 over the largest batch, along the context grid."""
        g1 = self._roofline(s, 1, self.cgrid)
        gn = self._roofline(s, float(self.bgrid[-1]), self.cgrid)
        return np.asarray(g1.per_token_s) / np.asarray(gn.per_token_s)

    @computed("batch", "context", "weight_bits", "kv_bits")
    def _here(self, s: Settings) -> dict[str, DecodeRoofline]:
        """Your operating point in each roofline mode."""
        b, ctx = int(s["batch"]), int(s["context"])
        return {md: self._roofline(s, b, ctx, md) for md in MODES}

    @computed("mode", "weight_bits", "kv_bits")
    def _balance(self, s: Settings) -> tuple[float, float]:
        """(B*, L*)."""
        mode = str(s["mode"])
        return (critical_batch(self.hw, self.model, int(s["weight_bits"]), mode=mode),
                balance_context(self.hw, self.model, int(s["kv_bits"]), mode=mode))

    @computed("context", "mode", "weight_bits", "kv_bits")
    def _knee(self, s: Settings) -> float | None:
        return knee_batch(self.hw, self.model, int(s["context"]), int(s["weight_bits"]),
                          int(s["kv_bits"]), mode=str(s["mode"]))

    @computed("batch", "context", "mode", "weight_bits", "kv_bits")
    def _saving(self, s: Settings) -> float:
        """What doubling the batch saves per token at your point (your roofline)."""
        return float(doubling_saving(self.hw, self.model, int(s["batch"]), int(s["context"]),
                                     int(s["weight_bits"]), int(s["kv_bits"]), tp=self.tp,
                                     mode=str(s["mode"])))

    @staticmethod
    def _shares(pt: DecodeRoofline) -> tuple[float, float, float]:
        """Per-token weight, KV and overhead time in units of the compute time (B*/B, S/L*
        and o for a dense model)."""
        c = float(pt.compute_s)
        return float(pt.weight_s) / c, float(pt.kv_s) / c, float(pt.overhead_s) / c

    def _gain_here(self, s: Settings) -> float:
        return float(np.interp(np.log(int(s["context"])), np.log(self.cgrid), self._gain(s)))

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

    def _l_star_visible(self, l_star: float) -> bool:
        return bool(256 <= l_star <= self.model.max_context)

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
        lo_b, hi_b = log_domain(np.concatenate([yb.ravel(), yo]))
        lw.update_marks({
            self.m_b: {"y": yb}, self.m_b_other: {"y": yo},
            self.sb_y: {"min": lo_b, "max": hi_b},
            self.m_bstar: {"x": [b_star, b_star], "visible": bool(b_star <= top)},
            self.m_knee: ({"x": [knee, knee], "visible": True} if knee is not None
                          and knee <= top else {"visible": False}),
        })

    @depends_on("_sweep_c", "view", "_balance")
    def _draw_context_sweep(self, s: Settings) -> None:
        yc = self._terms(self._sweep_c(s), str(s["view"]))
        _, l_star = self._balance(s)
        lo_c, hi_c = log_domain(yc)
        lw.update_marks({
            self.m_c: {"y": yc}, self.sc_y: {"min": lo_c, "max": hi_c},
            self.m_lstar: {"x": [l_star, l_star], "visible": self._l_star_visible(l_star)},
        })

    @depends_on("_gain", "_balance")
    def _draw_gain(self, s: Settings) -> None:
        gain = self._gain(s)
        _, l_star = self._balance(s)
        lw.update_marks({
            self.m_gain: {"y": gain},
            self.sg_y: dict(zip(("min", "max"), log_domain(gain, 1.3), strict=True)),
            self.m_gain_l: {"x": [l_star, l_star], "visible": self._l_star_visible(l_star)},
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

    @computed("batch", "context", "weight_bits", "kv_bits")
    def _memory(self, s: Settings) -> MemoryBudget:
        return memory_budget(self.hw, self.model, int(s["context"]), int(s["batch"]),
                             int(s["weight_bits"]), int(s["kv_bits"]), tp=self.tp)

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
        self.results = {
            "regime": str(pt.regime), "mode": mode, "batch": b, "context_tokens": ctx,
            "weight_bits": wb, "kv_bits": kb, "tp": self.tp,
            "weight_step_s": float(pt.weight_step_s), "compute_step_s": float(pt.compute_step_s),
            "kv_step_s": float(pt.kv_step_s), "overhead_step_s": float(pt.overhead_step_s),
            "step_s": step, "per_token_s": float(pt.per_token_s),
            "tokens_per_s": float(pt.tokens_per_s), "b_star": b_star, "l_star": l_star,
            "knee_batch": knee, "batching_gain": gain_here, "gain_short": float(gain[0]),
            "gain_long": float(gain[-1]), "over_memory": bool(mem.over_budget),
            "doubling_saving": self._saving(s), "stalled": self._saving(s) < STALL,
            "used_bytes": float(mem.used_bytes), "capacity_bytes": float(mem.capacity_bytes),
            "achievable_over_peak": float(here["achievable"].step_s / here["peak"].step_s),
            "expected": self._expected,
        }
        self._set_readout(metric_cards([
            ("regime", str(pt.regime), f"{mode} roofline", lw.PALETTE["red"]),
            ("B* (critical batch)", f"{b_star:,.0f}", f"{wb}-bit weights", lw.PALETTE["blue"]),
            ("L* (balance context)", f"{l_star:,.0f} tokens", f"{kb}-bit KV",
             lw.PALETTE["purple"]),
            ("knee", "none (S ≥ L*)" if knee is None else f"B = {knee:,.0f}",
             "compute-bound from here" if knee is not None else "no batch is compute-bound",
             lw.PALETTE["green"]),
            ("time per token", fmt_time(float(pt.per_token_s)),
             f"step {fmt_time(step)} · {fmt_count(float(pt.tokens_per_s))} tokens/s",
             lw.PALETTE["orange"]),
            ("batching gain here", f"{gain_here:.3g}x",
             f"B = 1 → {int(self.bgrid[-1])} at {ctx:,} tokens", lw.PALETTE["teal"]),
        ]))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
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
            "roofline is only a speed limit; the point is not reachable.",
            "lower the batch or the context, or the KV precision")
        over_slo = tr.slo_kind == "tpot" and step > tr.slo_s
        self.callouts["slo"].set(
            over_slo, "TPOT SLO missed",
            f"One step of {b} sequences takes {fmt_time(step)} ({mode}); every sequence waits a "
            f"whole step per token, against {fmt_time(tr.slo_s)}.",
            "a smaller batch or context, lower precision, or more devices per replica")
        saving = self._saving(s)
        w, k, o = self._shares(pt)
        floor = (f"The KV read is the floor here (S/L* = {k:.3g} > 1): fewer KV bytes (8- or "
                 "4-bit KV, GQA/MLA) or context parallelism lower it."
                 if k > 1 else "Compute is the floor here: only more FLOP/s lowers it.")
        self.callouts["stall"].set(
            saving < STALL, f"Batching has stalled: doubling the batch saves {saving:.0%} "
                            "per token",
            f"Per token, in units of one token's compute: {w:.3g} (weight fetch, the only "
            f"share a bigger batch divides) + 1 (compute) + {k:.3g} (KV read)"
            + (f" + {o:.3g} (overhead)" if o > 0 else "")
            + f". B = 1 → {top} cuts the time per token {gain_here:.3g}x at this context. "
            + floor,
            "past this point the batch is set by the SLO and memory, not by speed per token")
        ok = not mem.over_budget and not over_slo
        self.callouts["boundary"].set(
            ok and saving >= STALL, f"{str(pt.regime).capitalize()} and within the limits",
            f"Batching still pays here: doubling the batch would save {saving:.0%} per token "
            f"(the weight share {w:.3g} against 1 + S/L* = {1 + k:.3g}). "
            + ("" if knee is None else f"Past the knee (B ≈ {knee:,.0f}) compute outlasts all "
                                       "memory traffic; ")
            + f"memory {format_bytes(float(mem.used_bytes))} of "
              f"{format_bytes(mem.capacity_bytes)} per device.")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        hw, m = self.hw, self.model
        mode, wb, kb = str(s["mode"]), int(s["weight_bits"]), int(s["kv_bits"])
        here = self._here(s)
        pt = here[mode]
        b_star, l_star = self._balance(s)
        knee = self._knee(s)
        d = get_mode(mode)
        n_act = m.block_params_active
        ai = hw.flops() * d.flop_efficiency / (hw.memory_bandwidth * d.bandwidth_efficiency)
        kvb = kv_bytes_per_token(m, kb)
        w, k, o = self._shares(pt)
        saving, ctx = self._saving(s), int(s["context"])
        ai_txt = f"{ai:,.1f}".replace(",", "{,}")  # a decimal, so AI x b / 2 shows B* exactly
        self.math.update(
            f"<p>Machine balance ({mode}): $\\mathrm{{AI}} = C/W = {tex_num(ai)}$ FLOP/byte "
            f"(${tex_num(hw.flops() * d.flop_efficiency)}$ FLOP/s over "
            f"${tex_num(hw.memory_bandwidth * d.bandwidth_efficiency)}$ B/s).</p>"
            f"$$B^* = \\frac{{\\mathrm{{AI}}\\,b}}{{2}} = \\frac{{{ai_txt} \\times "
            f"{bits_to_bytes(wb):g}}}{{2}}"
            + (f" \\times {m.moe_sparsity:.3g}" if m.is_moe else "")
            + f" = {tex_num(b_star)}\\ \\text{{sequences}}$$"
            f"$$L^* = \\frac{{2N}}{{\\mathrm{{AI}}\\cdot \\mathrm{{kv\\_bpt}}}} = "
            f"\\frac{{2 \\times {tex_num(n_act)}}}{{{ai_txt} \\times {tex_num(kvb)}}}"
            f" = {tex_num(l_star)}\\ \\text{{tokens}}$$"
            "<p>One step of B sequences at context S, terms added (no overlap):</p>"
            "$$t_{\\text{step}} = \\frac{W_{\\text{bytes}}}{BW} + \\frac{2NB}{C} + "
            "\\frac{B\\,S\\,\\mathrm{kv\\_bpt}}{BW} = "
            f"{tex_num(float(pt.weight_step_s) * 1e3)} + "
            f"{tex_num(float(pt.compute_step_s) * 1e3)} + "
            f"{tex_num(float(pt.kv_step_s) * 1e3)}"
            + (f" + {tex_num(float(pt.overhead_step_s) * 1e3)}" if mode == "achievable"
               else "")
            + f" = {tex_num(float(pt.step_s) * 1e3)}\\ \\text{{ms}}$$"
            + f"<p>Per token, in units of one token's compute ($2N/C$ = "
              f"${tex_num(float(pt.compute_s) * 1e3)}$ ms): "
              f"$t/(2N/C) = {tex_num(w)} + 1 + {tex_num(k)}"
            + (f" + {tex_num(o)}" if o > 0 else "")
            + "$ (weight share, B*/B for a dense model at peak; compute; KV share, S/L*"
            + ("; overhead" if o > 0 else "")
            + f"). Doubling the batch divides only the first: it saves {saving:.1%} here. "
              "At peak that saving is $\\frac{B^*/2B}{B^*/B + 1 + S/L^*}$, under 10% once "
              f"$B > 4B^*/(1 + S/L^*) = {tex_num(4 * b_star / (1 + ctx / l_star))}$.</p>"
            + ("<p>Knee, the batch whose compute time equals all its memory time (the same "
               "added terms): $2NB/C = W/BW + B\\,S\\,\\mathrm{kv\\_bpt}/BW \\Rightarrow "
               f"B_{{\\text{{knee}}}} = B^*/(1 - S/L^*) = {tex_num(knee)}$.</p>"
               if knee is not None else
               "<p>S ≥ L*: the KV read alone outlasts the compute, so no batch has compute "
               "time equal to all its memory time (no knee).</p>")
            + f"<p>Achievable / peak step time here: "
              f"{float(here['achievable'].step_s / here['peak'].step_s):.3g}x (derated "
              "bandwidth and FLOP/s, the LM head, a fixed per-step overhead). Source: "
              "<code>labkit.physics.roofline.decode_roofline</code>, <code>critical_batch</code>, "
              "<code>balance_context</code>, <code>knee_batch</code>.</p>")

    def _reveal_body(self) -> str:
        d = self.default_point
        terms = {"weight fetch": float(d.weight_step_s), "compute": float(d.compute_step_s),
                 "KV read": float(d.kv_step_s)}
        parts = ", ".join(f"{k} {fmt_time(val)}" for k, val in terms.items())
        r = self.results
        return (f"{self._computed_line()}"
                f"<div>At the defaults one step spends {parts}.</div>"
                f"<div>With your settings: <b>{r['regime']}</b> ({r['mode']}), "
                f"{fmt_time(r['per_token_s'])} per token.</div>"
                "<div style='color:#5d6d7e'>Why: the weights are read once per step whatever "
                "the batch, so their share of the time per token, B*/B, falls as the batch "
                "grows; every sequence reads its own KV, a share S/L* no batch divides; "
                "compute's share is 1. Batching pays while B*/B is large next to 1 + S/L*: "
                f"doubling the batch saves {r['doubling_saving']:.0%} per token at your "
                "settings. Real systems sit above the roofline: "
                f"{r['achievable_over_peak']:.2g}x the peak step here (derated bandwidth and "
                "FLOP/s, the LM head, per-step overhead).</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Roofline: at {r['batch']} sequence(s) and {r['context_tokens']:,} tokens the "
                f"step is {r['regime']} ({r['mode']}); B* = {r['b_star']:,.0f}, L* = "
                f"{r['l_star']:,.0f} tokens; batching 1 → 1024 cuts the per-token time "
                f"{r['batching_gain']:.3g}x at this context (vs {r['gain_long']:.3g}x at the "
                "longest).")
