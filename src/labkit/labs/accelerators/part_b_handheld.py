"""Lab 2 Part B, handheld scenario: what fits beside the OS, and its speed and energy."""

from __future__ import annotations

import math

import numpy as np

from labkit import ui as lw
from labkit.core.format import (
    fmt_count,
    fmt_energy,
    fmt_pct,
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
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.roofline import (
    get_mode,
)
from labkit.plans.design import DESIGN_MODE, active_seconds, handheld_curves, handheld_metrics
from labkit.ui.charts import lin_top, log_domain


class PartBHandheld(Part):
    """On-device LM: what fits beside the OS, tokens/s and energy as the context grows.

    Refresh steps: the memory and speed curves read only the precisions; the energy curve
    the precisions and requests per day; the "you are here" points the precisions, the
    conversation length and the requests; the readout, callouts and math peek every control.
    """

    letter = "B"

    def _setup(self) -> None:
        tr, m, hw = self.track, self.model, self.hw
        self.ctx0 = int(tr.context_tokens or 0)
        self.req0 = tr.demand_rate_per_s * active_seconds(tr)
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["kv_bits"] = lw.precision_control("KV-cache precision", tr.kv_bits,
                                            sorted({4, 8, 16, tr.kv_bits}))
        c["context"] = lw.context_control(self.ctx0, m.max_context, 512,
                                          "Conversation length (tokens)")
        c["requests"] = lw.log_control("Requests per day", self.req0, max(1.0, self.req0 / 10),
                                       self.req0 * 10, readout_format=".3g")
        lo = max(int(tr.output_tokens or 0) + 64, 512)
        self.grid = np.unique(np.concatenate([np.geomspace(lo, m.max_context, 48).round(),
                                              [self.ctx0]])).astype(int)
        self._curves: dict[tuple[int, int], dict[str, np.ndarray]] = {}
        self.usable = hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction)
        first = self._first_failure(tr.weight_bits, tr.kv_bits, self.req0)
        self.default_first = first
        self._expected = first[0]
        self._setup_memory_chart()
        self._setup_speed_chart()
        self._setup_energy_chart()
        for name in ("memory", "tpot", "ttft", "energy"):
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _setup_memory_chart(self) -> None:
        hw = self.hw
        gx = lw.make_scale("log", float(self.grid[0]), float(self.grid[-1]))
        my = lw.make_scale("linear", 0.0, 1.0)
        self.s_mem = my
        self.m_mem = lw.line_mark(self.grid, np.ones(self.grid.size), gx, my,
                                  colors=[lw.PALETTE["blue"]], labels=["weights + KV"],
                                  legend=True)
        self.m_usable = lw.hline_mark(self.usable / 1e9, my, color=lw.PALETTE["red"],
                                      label="app may use", legend=True)
        self.m_ram = lw.hline_mark(hw.memory_bytes / 1e9, my, color=lw.PALETTE["grey"],
                                   label="RAM (OS + apps above red)", legend=True)
        self.m_mem_pt = lw.scatter_mark([float(self.ctx0)], [1.0], gx, my)
        self.figures["memory"] = lw.figure(
            [self.m_mem, self.m_usable, self.m_ram, self.m_mem_pt], gx, my,
            x_label="conversation length (tokens, log)", y_label="memory (GB)",
            title="What fits beside the OS", legend=True, legend_location="top-left",
            x_tick_format=".3~s", height=280)

    def _setup_speed_chart(self) -> None:
        tx = lw.make_scale("log", float(self.grid[0]), float(self.grid[-1]))
        ty = lw.make_scale("linear", 0.0, 1.0)
        self.s_tps = ty
        self.m_tps = lw.line_mark(self.grid, np.ones((2, self.grid.size)), tx, ty,
                                  colors=[lw.PALETTE["orange"], lw.PALETTE["purple"]],
                                  labels=["tokens/s (1 / TPOT)", "time to first token (s x 10)"],
                                  legend=True)
        self.m_tps_slo = lw.hline_mark(1.0 / self.track.slo_s, ty, color=lw.PALETTE["red"],
                                       label="SLO tokens/s (and TTFT limit x 10)", legend=True)
        self.m_tps_pt = lw.scatter_mark([float(self.ctx0)], [1.0], tx, ty)
        self.figures["speed"] = lw.figure(
            [self.m_tps, self.m_tps_slo, self.m_tps_pt], tx, ty,
            x_label="conversation length (tokens, log)", y_label="tokens/s · TTFT (s x 10)",
            title="Streaming speed and first-token delay", legend=True,
            legend_location="top-right", x_tick_format=".3~s", height=280)

    def _setup_energy_chart(self) -> None:
        ex = lw.make_scale("log", float(self.grid[0]), float(self.grid[-1]))
        ey = lw.make_scale("log", 1.0, 10.0)
        self.s_en = ey
        self.m_en = lw.line_mark(self.grid, np.ones(self.grid.size), ex, ey,
                                 colors=[lw.PALETTE["teal"]], labels=["energy per day"],
                                 legend=True)
        self.m_en_b = lw.hline_mark(self.track.daily_budget, ey, color=lw.PALETTE["red"],
                                    label="daily budget", legend=True)
        self.m_en_pt = lw.scatter_mark([float(self.ctx0)], [1.0], ex, ey)
        self.figures["energy"] = lw.figure(
            [self.m_en, self.m_en_b, self.m_en_pt], ex, ey,
            x_label="conversation length (tokens, log)", y_label="mWh per day (log)",
            title="Battery spent per day", legend=True, legend_location="top-left",
            x_tick_format=".3~s", y_tick_format=".3~g", height=280)

    def _curves_for(self, wb: int, kb: int) -> dict[str, np.ndarray]:
        key = (wb, kb)
        if key not in self._curves:
            self._curves[key] = handheld_curves(self.track, wb, kb, self.grid)
        return self._curves[key]

    def _limit_contexts(self, wb: int, kb: int, requests: float) -> dict[str, float | None]:
        """The shortest conversation (tokens) at which each limit fails; None: not on the
        grid."""
        tr = self.track
        cv = self._curves_for(wb, kb)
        fails = {"memory": cv["memory_bytes"] > self.usable, "tpot": cv["tpot_s"] > tr.slo_s,
                 "ttft": cv["ttft_s"] > float(tr.ttft_slo_s or math.inf),
                 "energy": cv["energy_j"] * requests / edge.J_PER_MWH > tr.daily_budget}
        return {name: (float(self.grid[np.flatnonzero(f)[0]]) if f.any() else None)
                for name, f in fails.items()}

    def _first_failure(self, wb: int, kb: int, requests: float) -> tuple[str, float | None]:
        first, at = "none", None
        for name, where in self._limit_contexts(wb, kb, requests).items():
            if where is not None and (at is None or where < at):
                first, at = name, where
        return first, at

    def _hook(self) -> str:
        hw = self.hw
        return (f"The {hw.name}'s OS leaves one app about {format_bytes(self.usable)} of "
                f"{format_bytes(hw.memory_bytes)}. As a conversation grows, its KV cache, "
                "its prompt pass and its battery cost grow with it. Which limit does a longer "
                "conversation hit first?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: {tr.weight_bits}-bit weights, {tr.kv_bits}-bit KV, "
             f"{self.req0:,.0f} requests a day of {tr.output_tokens} output tokens. As the "
             "conversation grows past its default length, which limit fails first?")
        return q, [("Memory: weights + KV no longer fit beside the OS", "memory"),
                   ("TPOT: replies stream slower than the SLO", "tpot"),
                   ("TTFT: the prompt pass takes longer than the first-token limit", "ttft"),
                   ("Energy: the day's requests spend more than the battery budget",
                    "energy")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "Why does an on-device LM's time per token grow with the conversation?"
        opts = [("Every token reads all the weights and the whole KV cache, and the KV "
                 "grows with the context", "bytes"),
                ("The phone's FLOP/s drop as it warms up", "thermal"),
                ("The attention compute is quadratic per token", "quadratic"),
                ("iOS swaps the model out", "swap")]
        good = ("Right: decode is memory-bound; TPOT = (weight bytes + S x kv_bpt) / BW, so "
                "lower-precision weights and KV are the lever.")
        bad = ("Not quite: decode reads the weights plus the whole KV cache for every token; "
               "the KV term grows with the context S.")
        return q, opts, "bytes", feedback_map(opts, "bytes", good, bad)

    # -- shared values ---------------------------------------------------------------------
    @computed("weight_bits", "kv_bits")
    def _cv(self, s: Settings) -> dict[str, np.ndarray]:
        """The curves over the conversation-length grid (cached per precision pair)."""
        return self._curves_for(int(s["weight_bits"]), int(s["kv_bits"]))

    @computed("weight_bits", "kv_bits", "context")
    def _here(self, s: Settings) -> dict[str, float]:
        """Memory, speed and energy at your conversation length."""
        return handheld_metrics(self.track, int(s["weight_bits"]), int(s["kv_bits"]),
                                int(s["context"]))

    @computed("weight_bits", "kv_bits", "requests")
    def _first(self, s: Settings) -> tuple[str, float | None]:
        """The first limit to fail as the conversation grows, and where."""
        return self._first_failure(int(s["weight_bits"]), int(s["kv_bits"]),
                                   float(s["requests"]))

    def _daily(self, s: Settings) -> float:
        return self._here(s)["energy_j"] * float(s["requests"]) / edge.J_PER_MWH

    def _fails(self, s: Settings) -> dict[str, bool]:
        tr = self.track
        here = self._here(s)
        return {"memory": here["memory_bytes"] > self.usable,
                "tpot": here["tpot_s"] > tr.slo_s,
                "ttft": here["ttft_s"] > float(tr.ttft_slo_s or math.inf),
                "energy": self._daily(s) > tr.daily_budget}

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on("_cv")
    def _draw_memory_and_speed(self, s: Settings) -> None:
        tr = self.track
        cv = self._cv(s)
        tps = 1.0 / cv["tpot_s"]
        mem_gb = cv["memory_bytes"] / 1e9
        lw.update_marks({
            self.m_mem: {"y": mem_gb},
            self.s_mem: {"max": lw.nice_up(max(
                self.hw.memory_bytes / 1e9 * 1.15,
                min(float(mem_gb.max()), 4 * self.hw.memory_bytes / 1e9)))},
            self.m_tps: {"y": np.vstack([tps, cv["ttft_s"] * 10])},
            self.s_tps: {"max": lin_top(np.concatenate([tps, [1.0 / tr.slo_s]]), pad=1.2)},
        })

    @depends_on("_cv", "requests")
    def _draw_energy(self, s: Settings) -> None:
        daily_curve = self._cv(s)["energy_j"] * float(s["requests"]) / edge.J_PER_MWH
        lo_e, hi_e = log_domain(np.concatenate([daily_curve, [self.track.daily_budget]]), 1.5)
        lw.update_marks({self.m_en: {"y": daily_curve}, self.s_en: {"min": lo_e, "max": hi_e}})

    @depends_on("_here", "requests")
    def _draw_points(self, s: Settings) -> None:
        here = self._here(s)
        ctx = float(s["context"])
        lw.update_marks({
            self.m_mem_pt: {"x": [ctx], "y": [here["memory_bytes"] / 1e9]},
            self.m_tps_pt: {"x": [ctx], "y": [1.0 / here["tpot_s"]]},
            self.m_en_pt: {"x": [ctx], "y": [self._daily(s)]},
        })

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        tr = self.track
        here = self._here(s)
        daily = self._daily(s)
        first, at = self._first(s)
        prof = edge.edge_profile(self.hw.id)
        battery = (edge.get_battery(prof.battery) if prof is not None and prof.battery
                   else None)
        share = None if battery is None else daily / battery.capacity_mwh
        self.results = {
            "weight_bits": int(s["weight_bits"]), "kv_bits": int(s["kv_bits"]),
            "context_tokens": int(s["context"]), "requests_per_day": float(s["requests"]),
            **{k: float(val) for k, val in here.items()}, "daily_mwh": daily,
            "battery_share_per_day": share, "fails": self._fails(s), "first_failure": first,
            "first_failure_context": at, "expected": self._expected,
        }
        self._set_readout(metric_cards([
            ("memory", format_bytes(here["memory_bytes"]), f"of {format_bytes(self.usable)}",
             lw.PALETTE["blue"]),
            ("streaming", f"{1 / here['tpot_s']:.3g} tokens/s",
             f"SLO {1 / tr.slo_s:.3g}", lw.PALETTE["orange"]),
            ("first token", fmt_time(here["ttft_s"]), f"limit {fmt_time(tr.ttft_slo_s)}",
             lw.PALETTE["purple"]),
            ("energy", f"{fmt_count(daily)} mWh/day",
             f"{fmt_pct(share)} of the battery; "
             f"{fmt_energy(here['energy_j'] / max(1, int(tr.output_tokens or 1)))} per output "
             "token", lw.PALETTE["teal"]),
            ("first to fail", first, "as conversations grow" if at is None else
             f"from {int(at):,} tokens", lw.PALETTE["red"]),
        ]))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        here = self._here(s)
        ctx, req = int(s["context"]), float(s["requests"])
        daily = self._daily(s)
        fails = self._fails(s)
        first, at = self._first(s)
        self.callouts["memory"].set(
            fails["memory"], "Out of memory beside the OS",
            f"{format_bytes(here['weights_bytes'])} weights + {format_bytes(here['kv_bytes'])} "
            f"KV exceed the {format_bytes(self.usable)} the OS leaves the app.",
            "lower the weight or KV precision, or cap the conversation")
        self.callouts["tpot"].set(
            fails["tpot"], "Streams slower than the SLO",
            f"{here['tpot_s'] * 1e3:.3g} ms per token at {ctx:,} tokens vs "
            f"{tr.slo_s * 1e3:g} ms.", "lower precision (fewer bytes per token) or shorter "
                                       "conversations")
        self.callouts["ttft"].set(
            fails["ttft"], "First token too slow",
            f"The prompt pass over {int(here['prompt_tokens']):,} tokens takes "
            f"{here['ttft_s']:.3g} s vs {tr.ttft_slo_s} s.",
            "cap the prompt (summarise older turns), or reuse a cached prefix")
        self.callouts["energy"].set(
            fails["energy"], "Over the battery budget",
            f"{fmt_count(req)} requests x {fmt_energy(here['energy_j'])} = {fmt_count(daily)} "
            f"mWh/day vs {tr.budget_text}.", "lower precision, shorter replies or "
                                                         "fewer requests on the device")
        self.callouts["boundary"].set(
            not any(fails.values()), "Everything fits at this length",
            f"Next wall: {first}" + ("" if at is None else f" from {int(at):,} tokens") + ".")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        here = self._here(s)
        ctx, req = int(s["context"]), float(s["requests"])
        kvb = kv_bytes_per_token(self.model, int(s["kv_bits"]))
        bw = self.hw.memory_bandwidth * get_mode(DESIGN_MODE, self.hw).bandwidth_efficiency
        self.math.update(
            f"$$M(S) = W + S\\,\\mathrm{{kv\\_bpt}} = {tex_num(here['weights_bytes'])} + "
            f"{ctx} \\times {tex_num(kvb)} = {tex_num(here['memory_bytes'])}\\ \\text{{B}}"
            + (f"\\ \\le {tex_num(self.usable)}$$" if here["memory_bytes"] <= self.usable
               else f"\\ > {tex_num(self.usable)}\\ \\text{{(out of memory)}}$$")
            + f"$$\\mathrm{{TPOT}}(S) \\approx \\frac{{W + S\\,\\mathrm{{kv\\_bpt}}}}{{BW}} + o = "
            f"{here['tpot_s'] * 1e3:.3g}\\ \\text{{ms}}\\quad (BW = {tex_num(bw)}\\ "
            "\\text{B/s})$$"
            f"$$E_{{\\text{{day}}}} = n \\cdot P\\,(t_{{\\text{{prefill}}}} + "
            f"t_{{\\text{{decode}}}}) = {fmt_count(req)} \\times {tex_num(here['energy_j'])}\\ "
            f"\\text{{J}} = {tex_num(self._daily(s))}\\ \\text{{mWh}}$$"
            "<p>Source: <code>labkit.physics.phases.request_phases</code>, "
            "<code>labkit.physics.roofline.decode_roofline</code> (achievable), "
            "<code>labkit.plans.serving.resident_weight_bytes</code>.</p>")

    def _reveal_body(self) -> str:
        name, at = self.default_first
        tr = self.track
        walls = self._limit_contexts(tr.weight_bits, tr.kv_bits, self.req0)
        where = "; ".join(f"{k} from {int(x):,}" if x is not None
                          else f"{k} not within {int(self.grid[-1]):,}"
                          for k, x in walls.items())
        return (f"{self._computed_line()}"
                f"<div>At the defaults, {name} fails first"
                + ("" if at is None else f", from about {int(at):,} tokens") + ".</div>"
                "<div style='color:#5d6d7e'>Why: memory grows by "
                f"{format_bytes(kv_bytes_per_token(self.model, tr.kv_bits))} of KV per token, "
                "the prompt pass with every prompt token, and the battery pays for all of it. "
                f"As the conversation grows each limit fails at ({where} tokens).</div>")

    def takeaway(self) -> str:
        r = self.results
        where = ("" if r["first_failure_context"] is None
                 else f" from {int(r['first_failure_context']):,} tokens")
        return (f"Capacity on the phone: at {r['context_tokens']:,} tokens "
                f"({r['weight_bits']}-bit weights, {r['kv_bits']}-bit KV) the model uses "
                f"{format_bytes(r['memory_bytes'])} and {fmt_count(r['daily_mwh'])} mWh/day; "
                f"{r['first_failure']} is the first wall{where}.")
