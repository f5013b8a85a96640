"""TODO doc."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from labkit.core.format import (
    fmt_count,
    fmt_si,
    fmt_time,
    format_bytes,
    tex_num,
)
from labkit.core.grids import PRECISIONS, pow2
from labkit.core.units import bits_to_bytes
from labkit.labs.accelerators.base import Part, feedback_map
from labkit.labs.common import CheckSpec, Spec, _cards
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.phases import (
    cnn_compute_precision,
    cnn_inference_time,
)
from labkit.physics.roofline import (
    balance_context,
    critical_batch,
    decode_roofline,
    get_mode,
    knee_batch,
    memory_budget,
)
from labkit.plans.design import MODES
from labkit.registries.hardware import Hardware
from labkit.ui import widgets as lw
from labkit.ui.charts import lin_top, log_domain

# -- Part A: the roofline -----------------------------------------------------------------------

_TERMS = ("weight fetch", "compute", "KV read", "overhead")
_TERM_COLORS = [lw.PALETTE["blue"], lw.PALETTE["orange"], lw.PALETTE["purple"],
                lw.PALETTE["grey"], "#222222"]
BATCH_OPTIONS = tuple(pow2(1024))


class PartALM(Part):
    """Decode roofline of a transformer: weight fetch, compute and KV read vs batch and context,
    with B*, L* and the knee; peak vs achievable side by side."""

    letter = "A"

    def _setup(self) -> None:
        tr, m = self.track, self.model
        self.tp = tr.devices_per_replica
        self.ctx0 = int(tr.context_tokens)  # type: ignore[arg-type]
        self.b0 = int(tr.batch_size)
        opts = sorted(set(BATCH_OPTIONS) | {self.b0})
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
        self.bgrid = np.geomspace(1, max(opts), 61)
        self.cgrid = np.geomspace(256, m.max_context, 61)
        d0 = decode_roofline(self.hw, m, self.b0, self.ctx0, tr.weight_bits, tr.kv_bits,
                             tp=self.tp, mode="peak")
        self.default_point = d0
        self._expected = str(d0.regime)

        labels = [*_TERMS, "total"]
        bx, by = lw.make_scale("log", 1, max(opts)), lw.make_scale("log", 1e-4, 1.0)
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

        gx, gy = lw.make_scale("log", 256, m.max_context), lw.make_scale("log", 1.0, 10.0)
        self.sg_y = gy
        self.m_gain = lw.line_mark(self.cgrid, np.ones(self.cgrid.size), gx, gy,
                                   colors=[lw.PALETTE["teal"]],
                                   labels=[f"gain B=1 → {max(opts)}"], legend=True)
        self.m_gain_l = lw.vline_mark(256.0, gx, color=lw.PALETTE["red"], label="L*",
                                      legend=True)
        self.m_gain_pt = lw.scatter_mark([256.0], [1.0], gx, gy)
        self.figures["gain"] = lw.figure(
            [self.m_gain, self.m_gain_l, self.m_gain_pt], gx, gy,
            x_label="context S (tokens, log)", y_label="batching gain (x, log)",
            title="Short context: batching pays. Long context: it stalls", legend=True,
            legend_location="bottom-left", x_tick_format=".3~s", y_tick_format=".3~g")

        px, py = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.sp_y = py
        self.m_pk = lw.bar_mark(list(MODES), np.zeros((4, 2)), px, py,
                                colors=_TERM_COLORS[:4], labels=list(_TERMS), legend=True)
        self.m_pk_slo = lw.hline_mark(tr.slo_s * 1e3, py, color=lw.PALETTE["red"],
                                      label="TPOT SLO", legend=True)
        self.figures["modes"] = lw.figure(
            [self.m_pk, self.m_pk_slo], px, py, x_label="roofline",
            y_label="time per step (ms)", title="Peak vs achievable at your point",
            legend=True, legend_location="top-left")
        self._callout("oom", "danger")
        self._callout("slo", "danger")
        self._callout("kv_floor", "warn")
        self._callout("boundary", "success")

    def _hook(self) -> str:
        tr = self.track
        bs = critical_batch(self.hw, self.model, tr.weight_bits, mode="peak")
        ls = balance_context(self.hw, self.model, tr.kv_bits, mode="peak")
        return (f"{self.model.name} decodes on {self.hw.name}. Reading the weights once per "
                f"step pays off only past B* = {bs:,.0f} sequences; past L* = {ls:,.0f} tokens "
                f"each sequence's own KV read outweighs its compute. Where does the track's "
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
        q = ("Past the balance context L*, what does doubling the batch do to the time per "
             "generated token?")
        opts = [("Almost nothing: each sequence brings its own KV read, a floor batching "
                 "cannot amortise", "kv_floor"),
                ("Halves it: the weights are shared by twice the sequences", "halves"),
                ("Doubles it: twice the work per step", "doubles"),
                ("Makes the step compute-bound", "compute")]
        good = ("Right: per token = W/(B BW) + 2N/C + S kv_bpt/BW. Only the first term falls "
                "with B; past L* the last one dominates, so batching stalls on the KV floor "
                "(the paper: 19x at 8k context, 28% at 1M).")
        bad = ("Not quite: per token = W/(B BW) + 2N/C + S kv_bpt/BW. Only the weight term "
               "falls with B; past L* the per-sequence KV read dominates and stays.")
        return q, opts, "kv_floor", feedback_map(opts, "kv_floor", good, bad)

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr, hw, m = self.track, self.hw, self.model
        b, ctx = int(s["batch"]), int(s["context"])  # type: ignore[call-overload]
        mode, view = str(s["mode"]), str(s["view"])
        wb, kb = int(s["weight_bits"]), int(s["kv_bits"])  # type: ignore[call-overload]
        other = "achievable" if mode == "peak" else "peak"
        suf = "_step_s" if view == "step" else "_s"
        rb = decode_roofline(hw, m, self.bgrid, ctx, wb, kb, tp=self.tp, mode=mode)
        rbo = decode_roofline(hw, m, self.bgrid, ctx, wb, kb, tp=self.tp, mode=other)
        rc = decode_roofline(hw, m, b, self.cgrid, wb, kb, tp=self.tp, mode=mode)
        top = float(self.bgrid[-1])
        g1 = decode_roofline(hw, m, 1, self.cgrid, wb, kb, tp=self.tp, mode=mode)
        gn = decode_roofline(hw, m, top, self.cgrid, wb, kb, tp=self.tp, mode=mode)
        gain = np.asarray(g1.per_token_s) / np.asarray(gn.per_token_s)
        here = {md: decode_roofline(hw, m, b, ctx, wb, kb, tp=self.tp, mode=md) for md in MODES}
        pt = here[mode]

        def rows(r: object) -> np.ndarray:
            total = "step_s" if view == "step" else "per_token_s"
            out = np.vstack([np.asarray(getattr(r, k + suf), dtype=float)
                             for k in ("weight", "compute", "kv", "overhead")]
                            + [np.asarray(getattr(r, total), dtype=float)]) * 1e3
            out[3][out[3] <= 0] = np.nan  # peak mode has no overhead term
            return out

        yb, yc = rows(rb), rows(rc)
        yo = np.asarray(rbo.step_s if view == "step" else rbo.per_token_s) * 1e3
        b_star = critical_batch(hw, m, wb, mode=mode)
        l_star = balance_context(hw, m, kb, mode=mode)
        knee = knee_batch(hw, m, ctx, wb, kb, mode=mode)
        total_here = float(pt.step_s if view == "step" else pt.per_token_s) * 1e3
        lo_b, hi_b = log_domain(np.concatenate([yb.ravel(), yo]))
        lo_c, hi_c = log_domain(yc)
        bars = np.asarray([[float(here[md].weight_step_s), float(here[md].compute_step_s),
                            float(here[md].kv_step_s), float(here[md].overhead_step_s)]
                           for md in MODES]).T * 1e3
        slo_ms = tr.slo_s * 1e3
        bar_top = lin_top(bars.sum(axis=0), floor=1e-3, pad=1.3)
        show_slo = tr.slo_kind == "tpot" and slo_ms <= 3.0 * bar_top
        upd: dict = {
            self.m_b: {"y": yb}, self.m_b_other: {"y": yo},
            self.sb_y: {"min": lo_b, "max": hi_b},
            self.m_bstar: {"x": [b_star, b_star], "visible": bool(b_star <= top)},
            self.m_knee: ({"x": [knee, knee], "visible": True} if knee is not None
                          and knee <= top else {"visible": False}),
            self.m_b_pt: {"x": [float(b)], "y": [total_here]},
            self.m_c: {"y": yc}, self.sc_y: {"min": lo_c, "max": hi_c},
            self.m_lstar: {"x": [l_star, l_star],
                           "visible": bool(256 <= l_star <= m.max_context)},
            self.m_c_pt: {"x": [float(ctx)], "y": [float(total_here)]},
            self.m_gain: {"y": gain},
            self.sg_y: dict(zip(("min", "max"), log_domain(gain, 1.3), strict=True)),
            self.m_gain_l: {"x": [l_star, l_star],
                            "visible": bool(256 <= l_star <= m.max_context)},
            self.m_gain_pt: {"x": [float(ctx)],
                             "y": [float(np.interp(np.log(ctx), np.log(self.cgrid), gain))]},
            self.m_pk: {"y": bars},
            self.sp_y: {"max": max(bar_top, 1.15 * slo_ms if show_slo else 0.0)},
            self.m_pk_slo: {"visible": show_slo},
        }
        lw.update_marks(upd)
        mem = memory_budget(hw, m, ctx, b, wb, kb, tp=self.tp)
        gain_here = float(np.interp(np.log(ctx), np.log(self.cgrid), gain))
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
            "used_bytes": float(mem.used_bytes), "capacity_bytes": float(mem.capacity_bytes),
            "achievable_over_peak": float(here["achievable"].step_s / here["peak"].step_s),
            "expected": self._expected,
        }
        self._set_readout(_cards([
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
            ("batching gain here", f"{gain_here:.3g}x", f"B = 1 → {int(top)} at {ctx:,} tokens",
             lw.PALETTE["teal"]),
        ]))
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
        self.callouts["kv_floor"].set(
            ctx > l_star, "Past L*: batching stalls on the KV floor",
            f"At {ctx:,} tokens (L* = {l_star:,.0f}) each sequence's KV read "
            f"({fmt_time(float(pt.kv_s))} per token) outweighs its compute; B = 1 → {int(top)} only "
            f"cuts the per-token time {gain_here:.3g}x here (vs {float(gain[0]):.3g}x at 256 "
            "tokens).",
            "shrink kv_bpt (fewer KV bytes: 8- or 4-bit KV, GQA/MLA) or shard the sequence "
            "(CP); route long contexts to their own pool")
        ok = not mem.over_budget and not over_slo
        self.callouts["boundary"].set(
            ok and ctx <= l_star, f"{str(pt.regime).capitalize()} and within the limits",
            f"Below L*: batching still pays here ({gain_here:.3g}x from B = 1). "
            + ("" if knee is None else f"Past the knee (B ≈ {knee:,.0f}) the step turns "
                                       "compute-bound; ")
            + f"memory {format_bytes(float(mem.used_bytes))} of "
              f"{format_bytes(mem.capacity_bytes)} per device.")
        d = get_mode(mode)
        n_act = self.model.block_params_active
        ai = hw.flops() * d.flop_efficiency / (hw.memory_bandwidth * d.bandwidth_efficiency)
        kvb = kv_bytes_per_token(m, kb)
        self.math.update(
            f"<p>Machine balance ({mode}): $\\mathrm{{AI}} = C/W = {tex_num(ai)}$ FLOP/byte "
            f"({tex_num(hw.flops() * d.flop_efficiency)} FLOP/s over "
            f"{tex_num(hw.memory_bandwidth * d.bandwidth_efficiency)} B/s).</p>"
            f"$$B^* = \\frac{{\\mathrm{{AI}}\\,b}}{{2}} = \\frac{{{tex_num(ai)} \\times "
            f"{bits_to_bytes(wb):g}}}{{2}}"
            + (f" \\times {m.moe_sparsity:.3g}" if m.is_moe else "")
            + f" = {tex_num(b_star)}\\ \\text{{sequences}}$$"
            f"$$L^* = \\frac{{2N}}{{\\mathrm{{AI}}\\cdot \\mathrm{{kv\\_bpt}}}} = "
            f"\\frac{{2 \\times {tex_num(n_act)}}}{{{tex_num(ai)} \\times {tex_num(kvb)}}}"
            f" = {tex_num(l_star)}\\ \\text{{tokens}}$$"
            "<p>One step of B sequences at context S, terms added (no overlap):</p>"
            "$$t_{\\text{step}} = \\frac{W_{\\text{bytes}}}{BW} + \\frac{2NB}{C} + "
            "\\frac{B\\,S\\,\\mathrm{kv\\_bpt}}{BW} = "
            f"{tex_num(float(pt.weight_step_s) * 1e3)} + "
            f"{tex_num(float(pt.compute_step_s) * 1e3)} + "
            f"{tex_num(float(pt.kv_step_s) * 1e3)}"
            + (f" + {tex_num(float(pt.overhead_step_s) * 1e3)}" if mode == "achievable"
               else "")
            + f" = {tex_num(step * 1e3)}\\ \\text{{ms}}$$"
            + ("<p>Knee (compute-bound once memory traffic and compute overlap): "
               f"$B_{{\\text{{knee}}}} = B^*/(1 - S/L^*) = {tex_num(knee)}$.</p>"
               if knee is not None else
               "<p>S ≥ L*: no knee, no batch makes the step compute-bound.</p>")
            + f"<p>Achievable / peak step time here: "
              f"{self.results['achievable_over_peak']:.3g}x (derated bandwidth and FLOP/s, "
              "the LM head, a fixed per-step overhead). Source: "
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
                f"{fmt_time(r['per_token_s'])} per token.</div>"  # type: ignore[arg-type]
                "<div style='color:#5d6d7e'>Why: the weights are read once per step whatever "
                "the batch, so below B* they dominate; every sequence reads its own KV, so past "
                "L* that floor stays however many sequences share a step. Real systems sit "
                f"above the roofline: {r['achievable_over_peak']:.2g}x the peak step here "
                "(derated bandwidth and FLOP/s, the LM head, per-step overhead).</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Roofline: at {r['batch']} sequence(s) and {r['context_tokens']:,} tokens the "
                f"step is {r['regime']} ({r['mode']}); B* = {r['b_star']:,.0f}, L* = "
                f"{r['l_star']:,.0f} tokens; batching 1 → 1024 cuts the per-token time "
                f"{r['batching_gain']:.3g}x at this context (vs {r['gain_long']:.3g}x at the "
                "longest).")


class PartACNN(Part):
    """The classic roofline of a CNN pass: attainable FLOP/s vs arithmetic intensity, with
    the model's point per precision and batch."""

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
        ais = [float(r.flops / r.bytes_moved) for b in (1, self.bmax)
               for r in (cnn_inference_time(hw, m, wb, b, "peak") for wb in PRECISIONS)]
        ridge = max(hw.peak_flops.values()) / hw.memory_bandwidth
        self.ai_lo = 10 ** math.floor(math.log10(min(min(ais), ridge) / 10))
        self.ai_hi = 10 ** math.ceil(math.log10(max(max(ais), ridge) * 10))
        self.ai_grid = np.geomspace(self.ai_lo, self.ai_hi, 80)
        self.precs = sorted(hw.peak_flops, key=lambda p: hw.peak_flops[p])
        y_hi = 10 ** math.ceil(math.log10(max(hw.peak_flops.values()) * 3))
        y_lo = 10 ** math.floor(math.log10(hw.memory_bandwidth * 0.5 * self.ai_lo))
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
        tx, ty = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.st_y = ty
        self.m_time = lw.bar_mark(["compute", "memory", "overhead", "latency"], np.zeros(4),
                                  tx, ty, colors=[lw.PALETTE["orange"], lw.PALETTE["blue"],
                                                  lw.PALETTE["grey"], lw.PALETTE["red"]],
                                  color_mode="no_group", label_display=True,
                                  label_display_format=".3~g")
        self.m_dead = lw.hline_mark(tr.slo_s * 1e3, ty, color=lw.PALETTE["red"],
                                    label="deadline", legend=True)
        self.figures["time"] = lw.figure(
            [self.m_time, self.m_dead], tx, ty, x_label="one pass (compute and memory overlap)",
            y_label="time (ms)", title="Where one pass's time goes", height=280)
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
        self._callout("deadline", "danger")
        self._callout("memory_bound", "warn")
        self._callout("boundary", "success")

    def _hook(self) -> str:
        d0 = self.default_point
        ai = float(d0.flops / d0.bytes_moved)
        prec = _cnn_precision(self.hw, self.track.weight_bits)
        ridge = self.hw.flops(prec) / self.hw.memory_bandwidth
        return (f"{self.model.name} does {fmt_si(self.model.flops_per_inference, 'FLOP')} per "
                f"input and moves {format_bytes(float(d0.bytes_moved))}: {ai:,.3g} FLOP per "
                f"byte, against the {self.hw.name}'s ridge at {ridge:,.3g}. Which side of the "
                "ridge is it on, and what moves it?")

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

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr, hw, m = self.track, self.hw, self.model
        wb, b, mode = int(s["weight_bits"]), int(s["batch"]), str(s["mode"])  # type: ignore[call-overload]
        d = get_mode(mode)
        bw = hw.memory_bandwidth * d.bandwidth_efficiency
        roofs = np.vstack([np.minimum(hw.peak_flops[p] * d.flop_efficiency,
                                      self.ai_grid * bw) for p in self.precs])
        r = cnn_inference_time(hw, m, wb, b, mode)
        ai = float(r.flops / r.bytes_moved)
        prec = _cnn_precision(hw, wb)
        c_eff = hw.flops(prec) * d.flop_efficiency
        ridge = c_eff / bw
        attain = min(c_eff, ai * bw)
        achieved = float(r.flops) / float(r.latency_s)
        sweep = cnn_inference_time(hw, m, wb, self.batches, mode)
        ai_sweep = np.asarray(sweep.flops) / np.asarray(sweep.bytes_moved)
        times = np.asarray([float(r.compute_s), float(r.memory_s), float(r.overhead_s),
                            float(r.latency_s)]) * 1e3
        dead_ms = tr.slo_s * 1e3
        t_top = lin_top(times, floor=1e-3)
        lo_a, hi_a = log_domain(np.concatenate([ai_sweep, [ridge]]), 2.0)
        lw.update_marks({
            self.m_roofs: {"y": roofs},
            self.m_ridge: {"x": [ridge, ridge]},
            self.m_att: {"x": [ai], "y": [attain]},
            self.m_ach: {"x": [ai], "y": [achieved]},
            self.m_time: {"y": times},
            self.st_y: {"max": max(t_top, 1.1 * dead_ms if dead_ms <= 3 * t_top else 0.0)},
            self.m_dead: {"visible": dead_ms <= 3 * t_top},
            self.m_ai: {"y": ai_sweep}, self.sa_y: {"min": lo_a, "max": hi_a},
            self.m_bal: {"y": [ridge, ridge]},
            self.m_ai_pt: {"x": [float(b)], "y": [ai]},
        })
        lat = float(r.latency_s)
        self.results = {
            "regime": str(r.regime), "mode": mode, "weight_bits": wb, "batch": b,
            "compute_precision": prec, "ai_flop_per_byte": ai, "ridge_flop_per_byte": ridge,
            "attainable_flops": attain, "achieved_flops": achieved,
            "compute_s": float(r.compute_s), "memory_s": float(r.memory_s),
            "overhead_s": float(r.overhead_s), "latency_s": lat,
            "per_inference_s": float(r.per_inference_s), "bytes_moved": float(r.bytes_moved),
            "deadline_s": tr.slo_s, "expected": self._expected,
        }
        self._set_readout(_cards([
            ("regime", str(r.regime), f"{mode} roofline, {prec} arithmetic",
             lw.PALETTE["red"]),
            ("arithmetic intensity", f"{ai:,.3g} FLOP/B", f"ridge at {ridge:,.3g}",
             lw.PALETTE["blue"]),
            ("attainable", fmt_si(attain, "FLOP/s"), f"achieved {fmt_si(achieved, 'FLOP/s')}",
             lw.PALETTE["orange"]),
            ("pass latency", fmt_time(lat), f"{b} input(s); {fmt_time(float(r.per_inference_s))} each",
             lw.PALETTE["purple"]),
            ("deadline", fmt_time(tr.slo_s), f"{lat / tr.slo_s:.1%} used", lw.PALETTE["grey"]),
        ]))
        self.callouts["deadline"].set(
            lat > tr.slo_s, "Deadline missed",
            f"A pass over {b} input(s) takes {fmt_time(lat)}; every input in it waits for the whole "
            f"pass, against a {fmt_time(tr.slo_s)} deadline.",
            "fewer inputs per pass or lower-precision arithmetic")
        self.callouts["memory_bound"].set(
            str(r.regime) == "memory-bound", "Memory-bound: the device waits on bytes",
            f"{format_bytes(float(r.bytes_moved))} per pass at {fmt_count(bw / 1e9)} GB/s "
            f"({fmt_time(float(r.memory_s))}) outlasts the arithmetic ({fmt_time(float(r.compute_s))}).",
            "batch more inputs per pass or lower the weight precision")
        self.callouts["boundary"].set(
            lat <= tr.slo_s and str(r.regime) == "compute-bound",
            f"Compute-bound, {lat / tr.slo_s:.1%} of the deadline",
            f"The point is right of the ridge ({ai:,.3g} vs {ridge:,.3g} FLOP/B): only more "
            "FLOP/s or fewer FLOP help now. "
            + (f"A fixed overhead of {fmt_time(float(r.overhead_s))} per pass and derated FLOP/s "
               "are why real passes sit under the roof." if mode == "achievable" else
               "Switch to the achievable roofline to see why real passes sit under it."))
        self.math.update(
            "<p>One pass over B inputs (weights read once, activations per input):</p>"
            f"$$\\mathrm{{AI}} = \\frac{{B \\cdot F}}{{W_b + B\\,A}} = "
            f"\\frac{{{b} \\times {tex_num(m.flops_per_inference)}}}"
            f"{{{tex_num(float(r.bytes_moved))}}} = {tex_num(ai)}\\ \\text{{FLOP/B}}$$"
            f"$$P = \\min(C, \\mathrm{{AI}}\\cdot BW) = \\min({tex_num(c_eff)}, "
            f"{tex_num(ai)} \\times {tex_num(bw)}) = {tex_num(attain)}\\ \\text{{FLOP/s}}$$"
            f"$$t = \\max\\left(\\frac{{BF}}{{C}}, \\frac{{W_b + BA}}{{BW}}\\right) + o = "
            f"\\max({tex_num(float(r.compute_s) * 1e3)}, {tex_num(float(r.memory_s) * 1e3)})"
            f" + {tex_num(float(r.overhead_s) * 1e3)} = {tex_num(lat * 1e3)}\\ \\text{{ms}}$$"
            f"<p>Ridge C/BW = {ridge:,.3g} FLOP/B ({prec}). Source: "
            "<code>labkit.physics.phases.cnn_inference_time</code>.</p>")

    def _reveal_body(self) -> str:
        d = self.default_point
        r = self.results
        return (f"{self._computed_line()}"
                f"<div>At the defaults: compute {fmt_time(float(d.compute_s))} vs memory "
                f"{fmt_time(float(d.memory_s))} per pass.</div>"
                f"<div>With your settings: <b>{r['regime']}</b>, {fmt_time(r['latency_s'])} per "  # type: ignore[arg-type]
                "pass.</div><div style='color:#5d6d7e'>Why: a CNN reuses each weight across "
                "every pixel or frame it slides over, so its FLOP per byte is high; a small "
                "device can still be compute-bound at a tiny absolute FLOP/s, because its "
                "bandwidth is tiny too. Real passes sit under the roof by a fixed overhead.</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Roofline: at {r['weight_bits']}-bit, {r['batch']} input(s) per pass, the "
                f"model sits at {r['ai_flop_per_byte']:,.3g} FLOP/B vs a ridge of "
                f"{r['ridge_flop_per_byte']:,.3g}: {r['regime']}, {fmt_time(r['latency_s'])} per "  # type: ignore[arg-type]
                f"pass of a {fmt_time(r['deadline_s'])} deadline.")  # type: ignore[arg-type]


def _cnn_precision(hw: Hardware, weight_bits: int) -> str:
    return cnn_compute_precision(hw, weight_bits)
