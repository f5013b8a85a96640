"""Lab 2 Part C, fleet scenario: symptom -> parallelism axis, and when to stop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from labkit import ui as lw
from labkit.core.format import (
    fmt_time,
    format_bytes,
    tex_num,
)
from labkit.core.grids import pow2
from labkit.labs.accelerators.base import Part, feedback_map
from labkit.labs.common import (
    ALL,
    CheckSpec,
    Settings,
    Spec,
    computed,
    depends_on,
    html_table,
    metric_cards,
)
from labkit.physics.capacity import SLO_TARGETS
from labkit.physics.parallelism import ConfigTable, ParallelConfig, ParallelismSearch, search
from labkit.plans.design import DESIGN_MAX_DEVICES, DESIGN_MODE, fleet_table, not_candidate_reason
from labkit.ui.charts import lin_top, log_domain

# -- Part C: parallelism and hand-off -------------------------------------------------------------

AXES = ("tp", "cp", "pp", "dp", "ep")


def layout_label(degrees: Sequence[int]) -> str:
    """'TP4', 'TP2 x PP2', 'TP8 x DP4', '1 device' for (tp, cp, pp, dp, ep)."""
    parts = [f"{a.upper()}{d}" for a, d in zip(AXES, degrees, strict=True) if d > 1]
    return " x ".join(parts) if parts else "1 device"


@dataclass(frozen=True)
class Preset:
    """A workload that shows one symptom, and the axis the paper adds first for it."""

    label: str
    batch: int
    context: int
    slo: float
    axis: str
    first: str


@dataclass(frozen=True)
class Layout:
    """Your layout for a symptom: its row in the table and the one with the axis doubled."""

    key: str
    preset: Preset
    table: ConfigTable
    index: dict[tuple[int, ...], int]
    deg: tuple[int, ...]
    nxt: tuple[int, ...]
    cfg: ParallelConfig | None
    cfg2: ParallelConfig | None

    @property
    def devices(self) -> int:
        return self.deg[0] * self.deg[1] * self.deg[2] * self.deg[3]


class PartCFleet(Part):
    """Symptom -> axis: TP x CP x PP x DP (x EP) layouts, their per-device memory, the
    communication each axis sends on the link it crosses, the Pareto frontier, and when to
    stop adding an axis.

    Refresh steps: the cloud of layouts, the frontier and the SLO lines read only the
    symptom; the memory and time bars, the "when to stop" sweep, your point, the readout,
    callouts and math peek read the symptom and every degree.
    """

    letter = "C"

    def _setup(self) -> None:
        tr, m, hw = self.track, self.model, self.hw
        self.ctx0, self.b0 = int(tr.context_tokens or 0), int(tr.batch_size)
        self._setup_presets()
        long_ctx = m.max_context
        self.opts = {
            "tp": pow2(min(m.q_heads, 64)), "cp": pow2(min(long_ctx // 1024, 64)),
            "pp": pow2(min(m.layers, 64)), "dp": pow2(256),
            "ep": [e for e in pow2(m.experts_total) if m.experts_total % e == 0]
            if m.is_moe else [1],
        }
        self._setup_controls()
        wb, kb = tr.weight_bits, tr.kv_bits
        self.tables = {k: fleet_table(tr, wb, kb, p.context, p.batch)
                       for k, p in self.presets.items()}
        self.searches: dict[str, ParallelismSearch | None] = {}
        for k, p in self.presets.items():
            try:
                self.searches[k] = search(hw, m, p.context, p.batch, wb, kb,
                                          max_devices=DESIGN_MAX_DEVICES,
                                          latency_slo_s=p.slo, mode=DESIGN_MODE)
            except ValueError:
                self.searches[k] = None
        try:
            s0 = search(hw, m, self.ctx0, self.b0, wb, kb, max_devices=DESIGN_MAX_DEVICES,
                        latency_slo_s=tr.slo_s, mode=DESIGN_MODE)
            self.default_search: ParallelismSearch | None = s0
            self._expected = layout_label(s0.chosen.degrees)
        except ValueError:
            self.default_search, self._expected = None, "none fits"
        self._setup_bar_charts()
        self._setup_pareto_chart()
        self._setup_stop_chart()
        self._callout("diagnosis", "info")
        for name in ("not_candidate", "oom", "slo"):
            self._callout(name, "danger")
        for name in ("comm", "kv_heads", "scaleout"):
            self._callout(name, "warn")
        self._callout("boundary", "success")

    def _setup_presets(self) -> None:
        tr, m = self.track, self.model
        long_ctx = m.max_context
        voice = SLO_TARGETS["voice"].tpot_s
        tight = float(voice[0]) if voice is not None else tr.slo_s / 2
        self.presets: dict[str, Preset] = {}

        def add(key: str, label: str, batch: int, ctx: int, slo: float, axis: str,
                first: str) -> None:
            self.presets[key] = Preset(label, batch, min(ctx, long_ctx), slo, axis, first)

        add("weights", "Weight memory doesn't fit (the track's own workload)", self.b0,
            self.ctx0, tr.slo_s, "tp", "TP within a fast domain")
        add("long_kv", "KV of ONE long sequence", 1, long_ctx, tr.slo_s, "cp", "CP")
        add("many_kv", "KV for MANY sequences", 4 * self.b0, self.ctx0, tr.slo_s, "dp",
            "DP replicas")
        add("tpot", f"Single-request TPOT ({tight * 1e3:g} ms)", 1, self.ctx0, tight, "tp",
            "TP (up to about 8)")
        add("throughput", "Aggregate throughput", 16 * self.b0, self.ctx0, tr.slo_s, "dp",
            "outer DP")
        add("nodes", "Model spans multiple nodes", self.b0, 8 * self.ctx0, tr.slo_s, "pp",
            "TP inside a node, PP across nodes")
        if m.is_moe:
            add("moe", "MoE expert weight memory", self.b0, self.ctx0, tr.slo_s, "ep", "EP")

    def _setup_controls(self) -> None:
        c = self.controls
        c["symptom"] = lw.choice_control(
            "Dominant problem", [(p.label, k) for k, p in self.presets.items()], "weights")
        dflt = {"tp": self.track.devices_per_replica}
        for ax in AXES:
            if ax == "ep" and not self.model.is_moe:
                continue
            c[ax] = lw.selection_control(f"{ax.upper()} degree",
                                         [(str(x), x) for x in self.opts[ax]],
                                         dflt.get(ax, 1) if dflt.get(ax, 1) in self.opts[ax]
                                         else 1)

    def _setup_bar_charts(self) -> None:
        tr, hw = self.track, self.hw
        mx, my = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_mem = my
        self.m_mem = lw.bar_mark(["your layout", "next"], np.zeros((3, 2)), mx, my,
                                 colors=[lw.PALETTE["blue"], lw.PALETTE["purple"],
                                         lw.PALETTE["grey"]],
                                 labels=["weights", "KV", "transient"], legend=True)
        self.m_mem_cap = lw.hline_mark(hw.usable_memory_bytes / 1e9, my,
                                       color=lw.PALETTE["red"], label="usable", legend=True)
        self.figures["memory"] = lw.figure(
            [self.m_mem, self.m_mem_cap], mx, my, x_label="layout",
            y_label="GB on the binding device", title="Per-device memory", legend=True,
            legend_location="top-right", height=280)
        tx, ty = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_time = ty
        self.m_time = lw.bar_mark(["your layout", "next"], np.zeros((5, 2)), tx, ty,
                                  colors=[lw.PALETTE["orange"], lw.PALETTE["red"],
                                          lw.PALETTE["purple"], lw.PALETTE["teal"],
                                          lw.PALETTE["green"]],
                                  labels=["roofline", "TP all-reduce", "CP ring", "PP hand-off",
                                          "EP all-to-all"], legend=True)
        self.m_time_slo = lw.hline_mark(tr.slo_s * 1e3, ty, color=lw.PALETTE["red"],
                                        label="TPOT SLO", legend=True)
        self.figures["time"] = lw.figure(
            [self.m_time, self.m_time_slo], tx, ty, x_label="layout",
            y_label="ms per token", title="Time per token: compute vs communication",
            legend=True, legend_location="top-right", height=280)

    def _setup_pareto_chart(self) -> None:
        px = lw.make_scale("log", 1, DESIGN_MAX_DEVICES)
        py = lw.make_scale("log", 1e-3, 1.0)
        self.s_par = py
        self.m_all = lw.scatter_mark([1.0], [1.0], px, py, color=lw.PALETTE["light"], size=16)
        self.m_front = lw.line_mark([1.0], [1.0], px, py, colors=[lw.PALETTE["blue"]],
                                    labels=["Pareto frontier"], legend=True, marker="circle",
                                    marker_size=30)
        self.m_par_slo = lw.hline_mark(self.track.slo_s * 1e3, py, color=lw.PALETTE["red"],
                                       label="SLO", legend=True)
        self.m_par_me = lw.scatter_mark([1.0], [1.0], px, py, color=lw.PALETTE["red"],
                                        size=120)
        self.figures["pareto"] = lw.figure(
            [self.m_all, self.m_front, self.m_par_slo, self.m_par_me], px, py,
            x_label="devices (log)", y_label="ms per token (log)",
            title="Every layout that fits (grey), the frontier (blue), yours (red)",
            legend=True, legend_location="top-right", x_tick_format=".0f",
            y_tick_format=".2~g", height=300)

    def _setup_stop_chart(self) -> None:
        m, hw = self.model, self.hw
        sx = lw.make_scale("log", 1, 64)
        sy = lw.make_scale("log", 1e-3, 1.0)
        self.s_stop_x, self.s_stop_y = sx, sy
        self.m_stop = lw.line_mark([1.0, 2.0], np.ones((2, 2)), sx, sy,
                                   colors=[lw.PALETTE["orange"], lw.PALETTE["red"]],
                                   labels=["ms per token", "of which communication"],
                                   legend=True, marker="circle", marker_size=24)
        self.m_stop_kv = lw.vline_mark(float(m.kv_heads or 1), sx, color=lw.PALETTE["purple"],
                                       line_style="dotted", label="KV heads run out",
                                       legend=True)
        self.m_stop_dom = lw.vline_mark(float(hw.domain_size), sx, color=lw.PALETTE["grey"],
                                        line_style="dotted", label="leaves the fast domain",
                                        legend=True)
        self.figures["stop"] = lw.figure(
            [self.m_stop, self.m_stop_kv, self.m_stop_dom], sx, sy,
            x_label="degree of the axis to add (log)", y_label="ms (log)",
            title="When to stop adding the axis", legend=True, legend_location="top-right",
            x_tick_format=".0f", y_tick_format=".2~g", height=300)

    def _hook(self) -> str:
        return ("Memory decides whether a layout fits; after that the question is which "
                "communication is left exposed. Pick the problem you see, add the axis the "
                "paper reaches for first, and watch what each axis sends on which link.")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: {self.b0} sequences at {self.ctx0:,} tokens, "
             f"{tr.weight_bits}-bit weights, TPOT within {tr.slo_s * 1e3:g} ms on "
             f"{lw.esc(self.hw.name)} devices ({self.hw.domain_size} per fast domain). Which "
             "layout uses the fewest devices (labkit's search)?")
        labels = ["TP2", "TP4", "TP8", "PP4", "TP2 x PP2"]
        return q, [(f"{lab}" + (" (the 'always start at TP=8' rule)" if lab == "TP8" else ""),
                    lab) for lab in labels]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "When should you stop adding tensor parallelism?"
        opts = [("When its all-reduces dominate the token time, it would leave the fast "
                 "domain, or past the KV heads", "stop_rule"),
                ("Never: more TP always lowers latency", "never"),
                ("Always at TP = 8", "tp8"),
                ("As soon as the weights fit", "fits")]
        good = ("Right: TP's all-reduce volume per token does not shrink with the degree, only "
                "the compute does; across the slow link or past the KV heads it stops paying. "
                "Start from the smallest TP that fits and meets latency, then measure.")
        bad = ("Not quite: every TP rank all-reduces the full activation twice per layer; "
               "past the fast domain or the KV heads, more TP costs more than it saves.")
        return q, opts, "stop_rule", feedback_map(opts, "stop_rule", good, bad)

    def _degrees(self, s: Settings) -> tuple[int, ...]:
        return tuple(int(s.get(a, 1)) for a in AXES)

    # -- shared values ---------------------------------------------------------------------
    @computed(ALL)
    def _layout(self, s: Settings) -> Layout:
        key = str(s["symptom"])
        p = self.presets[key]
        table, index = self.tables[key]
        deg = self._degrees(s)
        nxt = list(deg)
        nxt[AXES.index(p.axis)] *= 2
        row, row2 = index.get(deg), index.get(tuple(nxt))
        return Layout(key, p, table, index, deg, tuple(nxt),
                      None if row is None else table.config(row),
                      None if row2 is None else table.config(row2))

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_bars(self, s: Settings) -> None:
        """Memory and time per token of your layout and the next one, and your point."""
        lay = self._layout(s)
        cfg, cfg2, slo = lay.cfg, lay.cfg2, lay.preset.slo
        names = [f"yours: {layout_label(lay.deg)}",
                 f"+{lay.preset.axis.upper()}: {layout_label(lay.nxt)}"]
        mem_y = np.asarray([_memory_gb(cfg), _memory_gb(cfg2)]).T
        tim_y = np.asarray([_time_ms(cfg), _time_ms(cfg2)]).T
        lw.update_marks({
            self.m_mem: {"x": names, "y": mem_y},
            self.s_mem: {"max": lin_top(np.concatenate([mem_y.sum(axis=0),
                                                         [self.hw.usable_memory_bytes / 1e9]]),
                                         pad=1.25)},
            self.m_time: {"x": names, "y": tim_y},
            self.s_time: {"max": lin_top(np.concatenate([tim_y.sum(axis=0), [slo * 1e3]]),
                                          floor=1e-3, pad=1.25)},
            self.m_par_me: ({"x": [float(cfg.devices)], "y": [cfg.per_token_latency_s * 1e3],
                             "visible": True} if cfg is not None else {"visible": False}),
        })

    @depends_on("symptom")
    def _draw_pareto(self, s: Settings) -> None:
        """Every layout that fits this workload, the frontier and the SLO lines."""
        key = str(s["symptom"])
        table, _ = self.tables[key]
        slo = self.presets[key].slo
        fit = np.flatnonzero(table.fits)
        lat = np.asarray(table.per_token_latency_s) * 1e3
        sr = self.searches[key]
        fx = [float(c.devices) for c in sr.frontier] if sr is not None else [1.0]
        fy = [c.per_token_latency_s * 1e3 for c in sr.frontier] if sr is not None else [1.0]
        pts = lat[fit] if fit.size else np.asarray([1.0])
        lo, hi = log_domain(np.concatenate([pts, [slo * 1e3]]), 1.6)
        lw.update_marks({
            self.m_time_slo: {"y": [slo * 1e3, slo * 1e3]},
            self.m_par_slo: {"y": [slo * 1e3, slo * 1e3]},
            self.m_all: {"x": np.asarray(table.devices, dtype=float)[fit]
                         if fit.size else np.asarray([1.0]), "y": pts},
            self.m_front: {"x": fx, "y": fy, "visible": sr is not None},
            self.s_par: {"min": lo, "max": hi},
        })

    @depends_on(ALL)
    def _draw_stop(self, s: Settings) -> None:
        """Time per token as the symptom's axis grows, the other degrees fixed."""
        lay = self._layout(s)
        deg, axis, table = lay.deg, lay.preset.axis, lay.table
        ai = AXES.index(axis)
        sweep_deg = self.opts[axis]
        lat_s, comm_s = [], []
        for dgr in sweep_deg:
            trial = list(deg)
            trial[ai] = dgr
            r = lay.index.get(tuple(trial))
            if r is None:
                lat_s.append(np.nan)
                comm_s.append(np.nan)
            else:
                lat_s.append(float(table.per_token_latency_s[r]) * 1e3)
                comm = float(table.tp_allreduce_s[r] + table.cp_ring_s[r]
                             + table.pp_handoff_s[r] + table.ep_alltoall_s[r]) * 1e3
                comm_s.append(comm if comm > 0 else np.nan)  # none: off the log axis
        sweep_y = np.asarray([lat_s, comm_s])
        lo_s, hi_s = log_domain(sweep_y, 2.0)
        span_before = {"tp": 1, "cp": deg[0], "pp": deg[0] * deg[1] * deg[3],
                       "dp": deg[0] * deg[1], "ep": 1}[axis]
        dom_x = self.hw.domain_size / max(1, span_before)
        lw.update_marks({
            self.m_stop: {"x": np.asarray(sweep_deg, dtype=float), "y": sweep_y},
            self.s_stop_x: {"min": 1.0, "max": float(max(2, sweep_deg[-1]))},
            self.s_stop_y: {"min": lo_s, "max": hi_s},
            self.m_stop_kv: {"visible": axis == "tp" and not self.model.uses_mla},
            self.m_stop_dom: ({"x": [dom_x, dom_x], "visible": True}
                              if 1 <= dom_x <= sweep_deg[-1] else {"visible": False}),
        })

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results, readout cards and the communication table."""
        lay = self._layout(s)
        cfg, p, slo = lay.cfg, lay.preset, lay.preset.slo
        sr = self.searches[lay.key]
        links = {} if cfg is None else {"tp": cfg.tp_link, "cp": cfg.cp_link,
                                        "pp": cfg.pp_link, "ep": cfg.ep_link}
        self.results = {
            "symptom": lay.key, "first_axis": p.axis, "preset": asdict(p),
            "degrees": list(lay.deg), "layout": layout_label(lay.deg),
            "devices": lay.devices, "candidate": cfg is not None,
            "config": None if cfg is None else cfg.as_dict(),
            "fits": None if cfg is None else cfg.fits,
            "per_token_latency_s": None if cfg is None else cfg.per_token_latency_s,
            "meets_slo": None if cfg is None else cfg.per_token_latency_s <= slo,
            "comm_s": None if cfg is None else cfg.comm_s, "links": links,
            "search_chosen": None if sr is None else layout_label(sr.chosen.degrees),
            "search_devices": None if sr is None else sr.chosen.devices,
            "next_layout": layout_label(lay.nxt), "expected": self._expected,
        }
        self._set_readout(metric_cards([
            ("workload", f"{p.batch:,} x {p.context:,} tokens",
             f"TPOT ≤ {slo * 1e3:g} ms", lw.PALETTE["grey"]),
            ("your layout", layout_label(lay.deg), f"{lay.devices} device(s)",
             lw.PALETTE["blue"]),
            ("memory", "—" if cfg is None else f"{format_bytes(cfg.used_bytes)}",
             f"of {format_bytes(self.hw.usable_memory_bytes)}", lw.PALETTE["purple"]),
            ("per token", "—" if cfg is None else fmt_time(cfg.per_token_latency_s),
             "—" if cfg is None else f"comm {fmt_time(cfg.comm_s)}", lw.PALETTE["orange"]),
            ("labkit's fewest", "none fits" if sr is None else layout_label(sr.chosen.degrees),
             "" if sr is None else f"{sr.chosen.devices} device(s)", lw.PALETTE["green"]),
        ]))
        self._set_details("" if cfg is None else _comm_table(cfg))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr, m, hw = self.track, self.model, self.hw
        lay = self._layout(s)
        c, cfg2, p, deg, slo = lay.cfg, lay.cfg2, lay.preset, lay.deg, lay.preset.slo
        sr = self.searches[lay.key]
        self.callouts["diagnosis"].show(
            f"{lw.esc(p.label)} → first axis: {lw.esc(p.first)}",
            self._symptom_present(sr) + f" Adding {p.axis.upper()} here gives "
            f"{layout_label(lay.nxt)}"
            + ("" if cfg2 is None else f": {fmt_time(cfg2.per_token_latency_s)} per token, "
                                       f"{format_bytes(cfg2.used_bytes)} per device")
            + ".")
        self.callouts["not_candidate"].set(
            c is None, "Not a possible layout",
            lw.esc(not_candidate_reason(tr, deg, p.batch, p.context)) + ".",
            "change the degrees")
        self.callouts["oom"].set(
            c is not None and not c.fits, "Out of memory on the binding device",
            "" if c is None else
            f"{format_bytes(c.weights_bytes)} weights + {format_bytes(c.kv_bytes)} KV + "
            f"{format_bytes(c.transient_bytes)} transient = {format_bytes(c.used_bytes)} of "
            f"{format_bytes(hw.usable_memory_bytes)}.",
            "TP/PP split the weights, CP one sequence's KV, DP the sequences")
        self.callouts["slo"].set(
            c is not None and c.per_token_latency_s > slo, "TPOT SLO missed",
            "" if c is None else
            f"{fmt_time(c.per_token_latency_s)} per token vs {fmt_time(slo)}.",
            "more TP inside the fast domain, fewer sequences per replica (DP)")
        comm_dom = c is not None and c.comm_s > c.roofline_s
        self.callouts["comm"].set(
            comm_dom, "Communication dominates: stop adding this axis",
            "" if c is None else f"{fmt_time(c.comm_s)} of communication vs "
                                 f"{fmt_time(c.roofline_s)} of compute and memory per token.",
            "keep the chattiest axis (TP) on the fastest link; use PP or DP across nodes")
        self.callouts["kv_heads"].set(
            (not m.uses_mla) and deg[0] > m.kv_heads, "Past the KV heads",
            f"TP{deg[0]} > {m.kv_heads} KV heads: each head is replicated, so KV memory per "
            "device stops shrinking (an efficiency limit, not a correctness one).",
            "add CP or DP instead")
        self.callouts["scaleout"].set(
            c is not None and "scaleout" in (c.tp_link, c.cp_link, c.pp_link, c.ep_link),
            "A group crosses the slow scale-out link",
            f"Beyond {hw.domain_size} devices traffic leaves the fast domain "
            f"({format_bytes(hw.interconnect_bandwidth)}/s) for the network "
            f"({format_bytes(hw.scaleout_bandwidth)}/s), paying its latency per message.",
            "TP inside a node, PP (or DP) across nodes")
        ok = c is not None and c.fits and c.per_token_latency_s <= slo
        extra = "" if sr is None else (
            f"; labkit's fewest-device layout is {layout_label(sr.chosen.degrees)} "
            f"({sr.chosen.devices} device(s))")
        self.callouts["boundary"].set(
            bool(ok) and not comm_dom, f"{layout_label(deg)} fits and meets the SLO",
            f"{lay.devices} device(s){extra}.")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        c = self._layout(s).cfg
        if c is None:
            self.math.update("<p>No such layout: see the failure above. Source: "
                             "<code>labkit.physics.parallelism.enumerate_configs</code>.</p>")
            return
        self.math.update(
            "<p>Per-token communication per device (bf16 activations):</p>"
            "$$\\text{TP: } 2 L_s \\cdot 2h \\cdot \\frac{2(t-1)}{t} = "
            f"{tex_num(c.tp_allreduce_bytes)}\\ \\text{{B}} \\qquad "
            "\\text{PP: } 2h = " + f"{tex_num(c.pp_handoff_bytes)}\\ \\text{{B}}$$"
            f"$$\\text{{CP: }} L_s \\frac{{2(c-1)}}{{c}} \\frac{{q}}{{t}} (2 d_v + 8) = "
            f"{tex_num(c.cp_ring_bytes)}\\ \\text{{B}}$$"
            "<p>Each collective costs messages x latency + bytes / bandwidth on the link "
            "its group spans (fast domain or scale-out):</p>"
            f"$$t_{{\\text{{token}}}} = t_{{\\text{{roofline}}}} + t_{{\\text{{TP}}}} + "
            f"t_{{\\text{{CP}}}} + t_{{\\text{{EP}}}} + t_{{\\text{{PP}}}} = "
            f"{tex_num(c.roofline_s * 1e3)} + {tex_num(c.tp_allreduce_s * 1e3)} + "
            f"{tex_num(c.cp_ring_s * 1e3)} + {tex_num(c.ep_alltoall_s * 1e3)} + "
            f"{tex_num(c.pp_handoff_s * 1e3)} = {tex_num(c.per_token_latency_s * 1e3)}"
            "\\ \\text{ms}$$<p>Source: <code>labkit.physics.parallelism.enumerate_configs"
            "</code> and <code>search</code> (achievable roofline).</p>")

    def _symptom_present(self, sr: ParallelismSearch | None) -> str:
        hw = self.hw
        if sr is None:
            return "No layout up to the device cap fixes this workload."
        c = sr.chosen
        return (f"labkit's fewest-device fix is {layout_label(c.degrees)} ({c.devices} "
                f"device(s), {fmt_time(c.per_token_latency_s)} per token"
                + (", beyond one fast domain" if c.devices > hw.domain_size else "") + ").")

    def _reveal_body(self) -> str:
        s0 = self.default_search
        r = self.results
        frontier = "" if s0 is None else ", ".join(
            f"{layout_label(c.degrees)} {fmt_time(c.per_token_latency_s)}"
            for c in s0.frontier[:4])
        return (f"{self._computed_line()}"
                + ("" if s0 is None else
                   f"<div>The frontier: {frontier}.</div>")
                + f"<div>Your layout: <b>{r['layout']}</b> ({r['devices']} device(s)).</div>"
                "<div style='color:#5d6d7e'>Why: the smallest TP that fits memory and meets "
                "latency wins on devices; TP=8 is faster but uses twice the GPUs. Rank axes by "
                "how much they communicate per unit of compute and keep the chattiest on the "
                "fastest link.</div>")

    def takeaway(self) -> str:
        r = self.results
        st = ("not a possible layout" if not r["candidate"] else
              ("fits" if r["fits"] else "does not fit")
              + (" and meets" if r["meets_slo"] else " and misses") + " the TPOT SLO")
        return (f"Parallelism: for '{self.presets[str(r['symptom'])].label}' the first axis "
                f"is {str(r['first_axis']).upper()}; your {r['layout']} ({r['devices']} "
                f"device(s)) {st}; labkit's fewest-device layout is {r['search_chosen']}.")


def _memory_gb(c: ParallelConfig | None) -> list[float]:
    """Weights, KV and transient GB on a layout's binding device (zeros: no layout)."""
    return [0.0, 0.0, 0.0] if c is None else [c.weights_bytes / 1e9, c.kv_bytes / 1e9,
                                              c.transient_bytes / 1e9]


def _time_ms(c: ParallelConfig | None) -> list[float]:
    """Roofline and each axis's communication, ms per token (zeros: no layout)."""
    if c is None:
        return [0.0] * 5
    return [c.roofline_s * 1e3, c.tp_allreduce_s * 1e3, c.cp_ring_s * 1e3,
            c.pp_handoff_s * 1e3, c.ep_alltoall_s * 1e3]


def _comm_table(c: ParallelConfig) -> str:
    """What each axis sends per generated token, per device, and on which link."""
    rows = []
    for ax_name, deg_i, nbytes, link, secs in (
            ("TP", c.tp, c.tp_allreduce_bytes, c.tp_link, c.tp_allreduce_s),
            ("CP", c.cp, c.cp_ring_bytes, c.cp_link, c.cp_ring_s),
            ("PP", c.pp, c.pp_handoff_bytes, c.pp_link, c.pp_handoff_s),
            ("EP", c.ep, c.ep_alltoall_bytes, c.ep_link, c.ep_alltoall_s)):
        rows.append([ax_name, str(deg_i), format_bytes(nbytes), link, fmt_time(secs)])
    rows.append(["DP", str(c.dp), "0 B", "none", "0 (independent replicas)"])
    return ("<div><b>Communication per generated token, per device</b> "
            "(each axis is charged on the link it crosses)</div>"
            + html_table(["axis", "degree", "bytes/token", "link", "time/token"], rows))
