"""Lab 2 Part C, fleet scenario: symptom -> parallelism axis, and when to stop."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from labkit import ui as lw
from labkit.core.format import (
    fmt_time,
    format_bytes,
)
from labkit.core.grids import pow2
from labkit.labs.accelerators import part_c_fleet_paper as paper
from labkit.labs.accelerators.base import Part, feedback_map
from labkit.labs.accelerators.part_c_fleet_paper import AXES, layout_label
from labkit.labs.common import (
    ALL,
    CheckSpec,
    Settings,
    Spec,
    computed,
    depends_on,
    metric_cards,
)
from labkit.physics.capacity import SLO_TARGETS
from labkit.physics.parallelism import (
    PP_BUBBLE_STOP,
    ConfigTable,
    ExpertShare,
    ParallelConfig,
    ParallelismSearch,
    StopCriteria,
    expert_share,
    micro_batches,
    pipeline_bubble,
    search,
    stop_criteria,
)
from labkit.physics.roofline import critical_batch
from labkit.plans.design import (
    DESIGN_MAX_DEVICES,
    DESIGN_MODE,
    fleet_models,
    fleet_table,
    not_candidate_reason,
    slo_class,
)
from labkit.plans.scenarios.tiers import TierRow, layout_ttft, tier_rows
from labkit.registries.models import Model, get_model
from labkit.ui.charts import lin_top, log_domain

# -- Part C: parallelism and hand-off -------------------------------------------------------------

__all__ = ["AXES", "Layout", "PartCFleet", "Preset", "layout_label"]


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
    """Your layout for a symptom and model: its row in the table, the one with the axis
    doubled, its stop rules (None: not a layout) and its routed-expert share."""

    key: str
    model: Model
    preset: Preset
    table: ConfigTable
    index: dict[tuple[int, ...], int]
    deg: tuple[int, ...]
    nxt: tuple[int, ...]
    cfg: ParallelConfig | None
    cfg2: ParallelConfig | None
    crit: StopCriteria | None
    share: ExpertShare

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
        tr, m = self.track, self.model
        self.ctx0, self.b0 = int(tr.context_tokens or 0), int(tr.batch_size)
        self.models = {mid: get_model(mid) for mid in fleet_models(tr)}
        self._presets: dict[str, dict[str, Preset]] = {}
        self.presets = self.presets_for(m)
        experts = max([x.experts_total for x in self.models.values() if x.is_moe] or [1])
        self.opts = {
            "tp": pow2(min(m.q_heads, 64)), "cp": pow2(min(m.max_context // 1024, 64)),
            "pp": pow2(min(m.layers, 64)), "dp": pow2(256), "ep": pow2(experts),
        }
        self._setup_controls()
        self.wb, self.kb = tr.weight_bits, tr.kv_bits
        self._tables: dict[tuple[str, str], tuple[ConfigTable, dict[tuple[int, ...], int]]] = {}
        self._searches: dict[tuple[str, str], ParallelismSearch | None] = {}
        self._b_star: dict[str, float] = {}
        s0 = self.search_for(m.id, "weights")
        self.default_search = s0
        self._expected = "none fits" if s0 is None else layout_label(s0.chosen.degrees)
        self._setup_bar_charts()
        self._setup_pareto_chart()
        self._setup_stop_chart()
        self._callout("diagnosis", "info")
        for name in ("not_candidate", "oom", "slo", "ttft"):
            self._callout(name, "danger")
        for name in ("comm", "kv_heads", "scaleout", "pp_bubble", "dp_critical", "disagg"):
            self._callout(name, "warn")
        self._callout("stop_rules", "info")
        self._callout("experts", "info")
        self._callout("boundary", "success")

    def presets_for(self, m: Model) -> dict[str, Preset]:
        """The symptom workloads for model ``m`` (contexts capped at its limit; cached)."""
        if m.id not in self._presets:
            self._presets[m.id] = self._make_presets(m)
        return self._presets[m.id]

    def _make_presets(self, m: Model) -> dict[str, Preset]:
        tr = self.track
        long_ctx = m.max_context
        voice = SLO_TARGETS["voice"].tpot_s
        tight = float(voice[0]) if voice is not None else tr.slo_s / 2
        presets: dict[str, Preset] = {}

        def add(key: str, label: str, batch: int, ctx: int, slo: float, axis: str,
                first: str) -> None:
            presets[key] = Preset(label, batch, min(ctx, long_ctx), slo, axis, first)

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
        if any(x.is_moe for x in self.models.values()):
            add("moe", "MoE expert weight memory", self.b0, self.ctx0, tr.slo_s, "ep", "EP")
        return presets

    def table_for(self, model_id: str, key: str
                  ) -> tuple[ConfigTable, dict[tuple[int, ...], int]]:
        """Every layout of symptom ``key``'s workload with ``model_id`` (cached)."""
        if (model_id, key) not in self._tables:
            p = self.presets_for(self.models[model_id])[key]
            self._tables[(model_id, key)] = fleet_table(self.track, self.wb, self.kb,
                                                        p.context, p.batch, model_id)
        return self._tables[(model_id, key)]

    def search_for(self, model_id: str, key: str) -> ParallelismSearch | None:
        """labkit's fewest-device layout of that workload (None: nothing fits; cached)."""
        if (model_id, key) not in self._searches:
            p = self.presets_for(self.models[model_id])[key]
            try:
                sr: ParallelismSearch | None = search(
                    self.hw, model_id, p.context, p.batch, self.wb, self.kb,
                    max_devices=DESIGN_MAX_DEVICES, latency_slo_s=p.slo, mode=DESIGN_MODE)
            except ValueError:
                sr = None
            self._searches[(model_id, key)] = sr
        return self._searches[(model_id, key)]

    def b_star(self, model_id: str) -> float:
        """Critical batch B* of ``model_id`` at the track's weight precision (design mode)."""
        if model_id not in self._b_star:
            self._b_star[model_id] = float(critical_batch(self.hw, model_id, self.wb,
                                                          mode=DESIGN_MODE))
        return self._b_star[model_id]

    def _setup_controls(self) -> None:
        c = self.controls
        c["symptom"] = lw.choice_control(
            "Dominant problem", [(p.label, k) for k, p in self.presets.items()], "weights")
        c["model"] = lw.choice_control(
            "Model", [(paper.model_label(m, mid == self.track.model_id), mid)
                      for mid, m in self.models.items()], self.track.model_id)
        dflt = {"tp": self.track.devices_per_replica}
        for ax in AXES:
            if ax == "ep" and len(self.opts["ep"]) < 2:
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
        self.m_stop_rule = lw.vline_mark(2.0, sx, color=lw.PALETTE["teal"],
                                         line_style="dashed",
                                         label="the paper's stop rule fires", legend=True)
        self.figures["stop"] = lw.figure(
            [self.m_stop, self.m_stop_kv, self.m_stop_dom, self.m_stop_rule], sx, sy,
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
        m = self.models[str(s["model"])]
        p = self.presets_for(m)[key]
        table, index = self.table_for(m.id, key)
        deg = self._degrees(s)
        nxt = list(deg)
        nxt[AXES.index(p.axis)] *= 2
        row, row2 = index.get(deg), index.get(tuple(nxt))
        cfg = None if row is None else table.config(row)
        return Layout(key, m, p, table, index, deg, tuple(nxt), cfg,
                      None if row2 is None else table.config(row2),
                      None if cfg is None else stop_criteria(cfg, self.b_star(m.id)),
                      expert_share(m, deg[0], deg[2], deg[4], self.wb))

    @computed(ALL)
    def _prefill(self, s: Settings) -> paper.Prefill | None:
        """The TTFT check of your layout on the symptom's prompt (None: not a layout)."""
        lay = self._layout(s)
        if lay.cfg is None:
            return None
        p, tr = lay.preset, self.track
        prompt = max(1, p.context - int(tr.output_tokens or 0))
        ttft = layout_ttft(self.hw, lay.model, prompt, self.wb, self.kb, lay.deg[0],
                           lay.deg[1])
        return paper.Prefill(prompt, ttft, tr.ttft_slo_s, p.slo)

    @computed(ALL)
    def _tiers(self, s: Settings) -> tuple[TierRow, ...]:
        """The paper's tiers with this model, and your layout's row when it is one."""
        lay = self._layout(s)
        yours = None if lay.cfg is None else (
            tuple(lay.deg), lay.preset.context, lay.preset.batch)
        return tier_rows(self.track, lay.model, self.wb, self.kb, yours)  # type: ignore[arg-type]

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_bars(self, s: Settings) -> None:
        """Memory and time per token of your layout and the next one, and your point."""
        lay = self._layout(s)
        cfg, cfg2, slo = lay.cfg, lay.cfg2, lay.preset.slo
        names = [f"yours: {layout_label(lay.deg)}",
                 f"+{lay.preset.axis.upper()}: {layout_label(lay.nxt)}"]
        mem_y = np.asarray([paper.memory_gb(cfg), paper.memory_gb(cfg2)]).T
        tim_y = np.asarray([paper.time_ms(cfg), paper.time_ms(cfg2)]).T
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

    @depends_on("symptom", "model")
    def _draw_pareto(self, s: Settings) -> None:
        """Every layout that fits this workload, the frontier and the SLO lines."""
        key, mid = str(s["symptom"]), str(s["model"])
        table, _ = self.table_for(mid, key)
        slo = self.presets_for(self.models[mid])[key].slo
        fit = np.flatnonzero(table.fits)
        lat = np.asarray(table.per_token_latency_s) * 1e3
        sr = self.search_for(mid, key)
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

    def _sweep_rows(self, lay: Layout) -> list[int | None]:
        """Table rows of your layout with the symptom's axis at each of its degrees."""
        ai = AXES.index(lay.preset.axis)
        rows = []
        for dgr in self.opts[lay.preset.axis]:
            trial = list(lay.deg)
            trial[ai] = dgr
            rows.append(lay.index.get(tuple(trial)))
        return rows

    def stop_rule_degree(self, lay: Layout) -> int | None:
        """The first degree of the symptom's axis at which the paper's stop rule fires
        (PP: bubble > 10 %; DP: replica batch below B*), the other degrees yours; None
        when the axis has no such rule or it never fires on the sweep."""
        axis, t = lay.preset.axis, lay.table
        if axis not in ("pp", "dp"):
            return None
        b_star = self.b_star(lay.model.id)
        for dgr, r in zip(self.opts[axis], self._sweep_rows(lay), strict=True):
            if r is None or dgr == 1:
                continue
            if axis == "dp":
                fires = bool(t.batch_per_replica[r] < b_star)
            else:
                stage = (t.roofline_s[r] + t.tp_allreduce_s[r] + t.cp_ring_s[r]
                         + t.ep_alltoall_s[r]) / t.pp[r]
                micro = micro_batches(t.batch_per_replica[r], t.microbatch[r])
                fires = bool(pipeline_bubble(t.pp[r], micro, stage, t.per_token_latency_s[r])
                             > PP_BUBBLE_STOP)
            if fires:
                return dgr
        return None

    @depends_on(ALL)
    def _draw_stop(self, s: Settings) -> None:
        """Time per token as the symptom's axis grows, the other degrees fixed."""
        lay = self._layout(s)
        deg, axis, table = lay.deg, lay.preset.axis, lay.table
        sweep_deg = self.opts[axis]
        lat_s, comm_s = [], []
        for r in self._sweep_rows(lay):
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
        rule = self.stop_rule_degree(lay)
        kv_x = float(lay.model.kv_heads or 1)
        lw.update_marks({
            self.m_stop: {"x": np.asarray(sweep_deg, dtype=float), "y": sweep_y},
            self.s_stop_x: {"min": 1.0, "max": float(max(2, sweep_deg[-1]))},
            self.s_stop_y: {"min": lo_s, "max": hi_s},
            self.m_stop_kv: {"x": [kv_x, kv_x],
                             "visible": axis == "tp" and not lay.model.uses_mla},
            self.m_stop_dom: ({"x": [dom_x, dom_x], "visible": True}
                              if 1 <= dom_x <= sweep_deg[-1] else {"visible": False}),
            self.m_stop_rule: ({"x": [float(rule), float(rule)], "visible": True}
                               if rule is not None else {"visible": False}),
        })

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results, readout cards and the communication table."""
        lay = self._layout(s)
        cfg, p, slo, crit = lay.cfg, lay.preset, lay.preset.slo, lay.crit
        sr = self.search_for(lay.model.id, lay.key)
        pre = self._prefill(s)
        links = {} if cfg is None else {"tp": cfg.tp_link, "cp": cfg.cp_link,
                                        "pp": cfg.pp_link, "ep": cfg.ep_link}
        self.results = {
            "symptom": lay.key, "model": lay.model.id, "first_axis": p.axis,
            "preset": asdict(p), "degrees": list(lay.deg), "layout": layout_label(lay.deg),
            "devices": lay.devices, "candidate": cfg is not None,
            "config": None if cfg is None else cfg.as_dict(),
            "fits": None if cfg is None else cfg.fits,
            "per_token_latency_s": None if cfg is None else cfg.per_token_latency_s,
            "meets_slo": None if cfg is None else cfg.per_token_latency_s <= slo,
            "comm_s": None if cfg is None else cfg.comm_s, "links": links,
            "stop": None if crit is None else asdict(crit), "experts": asdict(lay.share),
            "stop_rule_degree": self.stop_rule_degree(lay),
            "ttft_s": None if pre is None else pre.ttft_s,
            "disaggregate": None if pre is None else pre.disaggregate,
            "search_chosen": None if sr is None else layout_label(sr.chosen.degrees),
            "search_devices": None if sr is None else sr.chosen.devices,
            "next_layout": layout_label(lay.nxt), "expected": self._expected,
        }
        self._set_readout(metric_cards([
            ("workload", f"{p.batch:,} x {p.context:,} tokens",
             f"{lay.model.name}, TPOT ≤ {slo * 1e3:g} ms", lw.PALETTE["grey"]),
            ("your layout", layout_label(lay.deg), f"{lay.devices} device(s)",
             lw.PALETTE["blue"]),
            ("memory", "—" if cfg is None else f"{format_bytes(cfg.used_bytes)}",
             f"of {format_bytes(self.hw.usable_memory_bytes)}", lw.PALETTE["purple"]),
            ("per token", "—" if cfg is None else fmt_time(cfg.per_token_latency_s),
             "—" if cfg is None else f"comm {fmt_time(cfg.comm_s)}", lw.PALETTE["orange"]),
            ("labkit's fewest", "none fits" if sr is None else layout_label(sr.chosen.degrees),
             "" if sr is None else f"{sr.chosen.devices} device(s)", lw.PALETTE["green"]),
        ]))
        self._set_details("" if cfg is None else paper.comm_table(cfg, self.hw))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr, hw = self.track, self.hw
        lay = self._layout(s)
        m, c, cfg2, p, deg, slo = lay.model, lay.cfg, lay.cfg2, lay.preset, lay.deg, lay.preset.slo
        sr = self.search_for(m.id, lay.key)
        dense_ep = p.axis == "ep" and not m.is_moe
        self.callouts["diagnosis"].show(
            f"{lw.esc(p.label)} → first axis: {lw.esc(p.first)}",
            (f"{lw.esc(m.name)} is dense: every token uses every FFN weight, so there are no "
             "experts to shard. Pick a mixture-of-experts model to see EP." if dense_ep else
             self._symptom_present(sr) + f" Adding {p.axis.upper()} here gives "
             f"{layout_label(lay.nxt)}"
             + ("" if cfg2 is None else f": {fmt_time(cfg2.per_token_latency_s)} per token, "
                                        f"{format_bytes(cfg2.used_bytes)} per device")
             + "."))
        self.callouts["not_candidate"].set(
            c is None, "Not a possible layout",
            lw.esc(not_candidate_reason(tr, deg, p.batch, p.context, m.id)) + ".",
            "change the degrees")
        self.callouts["oom"].set(
            c is not None and not c.fits, "Out of memory on the binding device",
            "" if c is None else
            f"{format_bytes(c.weights_bytes)} weights + {format_bytes(c.kv_bytes)} KV + "
            f"{format_bytes(c.transient_bytes)} transient = {format_bytes(c.used_bytes)} of "
            f"{format_bytes(hw.usable_memory_bytes)}.",
            "TP/PP split the weights, CP one sequence's KV, DP the sequences"
            + (", EP the experts" if m.is_moe else ""))
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
    def _set_paper_callouts(self, s: Settings) -> None:
        """The PP and DP stop rules, the experts and all-to-all, TTFT and prefill."""
        lay = self._layout(s)
        c, crit, pre = lay.cfg, lay.crit, self._prefill(s)
        self.callouts["stop_rules"].set(
            crit is not None, "When to stop: the paper's PP and DP rules at your layout",
            "" if crit is None else
            f"<div>{paper.pp_sentence(crit)}</div><div>{paper.dp_sentence(crit)}</div>")
        self.callouts["pp_bubble"].set(
            crit is not None and crit.pp_stop,
            f"Pipeline bubble over {PP_BUBBLE_STOP:.0%}: stop adding PP",
            "" if crit is None else paper.pp_sentence(crit),
            "fewer stages, or more sequences per replica so every stage has a micro-batch")
        self.callouts["dp_critical"].set(
            crit is not None and crit.dp_stop, "Replicas below the critical batch: stop adding DP",
            "" if crit is None else paper.dp_sentence(crit),
            "fewer, fuller replicas (less DP)")
        self.callouts["experts"].set(
            c is not None and lay.model.is_moe,
            f"Experts and the all-to-all: {lw.esc(lay.model.name)}",
            "" if c is None else paper.experts_sentence(c, lay.model, lay.share, self.hw))
        self.callouts["ttft"].set(
            pre is not None and pre.ttft_missed, "First token too late",
            "" if pre is None else paper.ttft_sentence(pre, lay.deg[0], lay.deg[1]),
            "more TP or CP for the prefill")
        self.callouts["disagg"].set(
            pre is not None and pre.disaggregate, "Prefill would stall decode: disaggregate it",
            "" if pre is None else paper.ttft_sentence(pre, lay.deg[0], lay.deg[1]) + " "
            + paper.disagg_sentence(pre),
            "a separate prefill pool (disaggregated prefill)")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        lay = self._layout(s)
        c = lay.cfg
        if c is None:
            self.math.update("<p>No such layout: see the failure above. Source: "
                             "<code>labkit.physics.parallelism.enumerate_configs</code>.</p>")
            return
        self.math.update(paper.math_html(c, lay.model, lay.crit))

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
                "fastest link.</div>" + self.reveal_tables())

    def reveal_tables(self) -> str:
        """The paper's tiers (your row highlighted) and SLO classes (the track's highlighted)
        at the current settings, as the reveal shows them."""
        s = self.settings()
        lay, pre = self._layout(s), self._prefill(s)
        tables = paper.tiers_table(self._tiers(s), self.hw, lay.preset.context)
        if pre is not None:
            tables += paper.slo_table(slo_class(self.track), pre.ttft_s,
                                      None if lay.cfg is None else lay.cfg.per_token_latency_s)
        return tables

    def takeaway(self) -> str:
        r = self.results
        st = ("not a possible layout" if not r["candidate"] else
              ("fits" if r["fits"] else "does not fit")
              + (" and meets" if r["meets_slo"] else " and misses") + " the TPOT SLO")
        m = self.models[str(r["model"])]
        label = self.presets_for(m)[str(r["symptom"])].label
        return (f"Parallelism: for '{label}' on {m.name} the first axis "
                f"is {str(r['first_axis']).upper()}; your {r['layout']} ({r['devices']} "
                f"device(s)) {st}; labkit's fewest-device layout is {r['search_chosen']}.")
