"""Lab 2 Part C, fleet scenario: symptom -> parallelism axis, and when to stop.

The view: controls, readout, callouts and math peek bound to the fields of
:class:`~..plan.sizing.LayoutEval` (computed by :class:`~..plan.sizing.FleetLayouts`);
the charts are :class:`.part_c_charts.FleetCCharts`, the words :mod:`.part_c_spec` and
:mod:`.part_c_paper`. Every recovery hint is a :class:`labkit.plans.moves.Move`: one
degree on screen that, moved alone, makes the failing check pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict

import labkit.scenarios.fleet.views.part_c_paper as paper
import labkit.scenarios.fleet.views.part_c_spec as spec
from labkit import ui as lw
from labkit.core.format import counted, fmt_pct
from labkit.core.grids import pow2
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
from labkit.registries.models import Model
from labkit.scenarios.fleet.plan.sizing import (
    AXES,
    PP_BUBBLE_STOP,
    FleetLayouts,
    LayoutEval,
    Move,
    ParallelismSearch,
    Preset,
    TierRow,
    layout_label,
    single_moves,
    slo_class,
)
from labkit.scenarios.fleet.views.part_c_charts import FleetCCharts

__all__ = ["AXES", "Layout", "PartCFleet", "Preset", "layout_label"]

Layout = LayoutEval

CHECKS: dict[str, Callable[[LayoutEval], bool]] = {
    "not_candidate": lambda x: x.config is not None,
    "oom": lambda x: x.config is not None and x.config.fits,
    "slo": lambda x: bool(x.meets_slo),
    "ttft": lambda x: x.prefill is not None and not x.prefill.ttft_missed,
    "comm": lambda x: x.config is not None and not x.comm_dominates,
    "kv_heads": lambda x: x.config is not None and not x.past_kv_heads,
    "scaleout": lambda x: x.config is not None and not x.crosses_scaleout,
    "pp_bubble": lambda x: x.stop is not None and not x.stop.pp_stop,
    "dp_critical": lambda x: x.stop is not None and not x.stop.dp_stop,
    "disagg": lambda x: x.prefill is not None and not x.prefill.colocated_missed,
}
"""Each failing check's pass predicate (a hint's move must make it true)."""


class PartCFleet(FleetCCharts):
    """Symptom -> axis: TP x CP x PP x DP (x EP) layouts, their per-device memory, the
    communication each axis sends on the link it crosses, the Pareto frontier, and when to
    stop adding an axis.

    Refresh steps: the cloud of layouts, the frontier and the SLO lines read only the
    symptom and model; the bars, the "when to stop" sweep, your point, the readout,
    callouts and math peek read the symptom and every degree.
    """

    shows = (("ttft", "ttft_s"), ("tpot", "step_s"))

    def shown_basis(self, name: str) -> str:
        """At the starting candidate, its sentence; else the step at the full context with
        its collectives (Lab 1: the mean context)."""
        return super().shown_basis(name) or (spec.STEP_BASIS if name == "tpot" else "")


    letter = "C"

    def _setup(self) -> None:
        tr, m = self.track, self.model
        self.plans = FleetLayouts(tr)
        # the served device: usable memory after the track's serving reserve, as the
        # layout table, Part B and the design check count it (name and links unchanged)
        self.hw = self.plans.hw
        self.models = self.plans.models
        self.ctx0, self.b0 = int(tr.context_tokens or 0), int(tr.batch_size)
        self.presets = self.plans.presets_for(m)
        experts = max([x.experts_total for x in self.models.values() if x.is_moe] or [1])
        self.opts = {
            "tp": pow2(min(m.q_heads, 64)), "cp": pow2(min(m.max_context // 1024, 64)),
            "pp": pow2(min(m.layers, 64)), "dp": pow2(256), "ep": pow2(experts),
        }
        self._setup_controls()
        s0 = self.plans.search_for(m.id, "weights")
        self.default_search = s0
        self._expected = "none fits" if s0 is None else layout_label(s0.chosen.degrees)
        one = {a: 1 for a in AXES if a in self.controls}
        if not self._decision({**self.settings(), **one}).passed:
            self._start_at(one, spec.C_START_NOTE)
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

    # -- the plans' values, under the names tests and notebooks use --------------------------
    def presets_for(self, m: Model) -> dict[str, Preset]:
        return self.plans.presets_for(m)

    def search_for(self, model_id: str, key: str) -> ParallelismSearch | None:
        return self.plans.search_for(model_id, key)

    def stop_rule_degree(self, lay: LayoutEval) -> int | None:
        return self.plans.stop_rule_degree(lay, self.opts[lay.preset.axis])

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

    def _hook(self) -> str:
        return spec.hook()

    def _prediction_spec(self) -> Spec:
        return spec.prediction(self.track, self.hw, self.b0, self.ctx0, self._expected)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.checkpoint()

    def _degrees(self, s: Settings) -> tuple[int, ...]:
        return tuple(int(s.get(a, 1)) for a in AXES)

    # -- shared values ---------------------------------------------------------------------
    @computed(ALL)
    def _layout(self, s: Settings) -> LayoutEval:
        return self.plans.evaluate(str(s["model"]), str(s["symptom"]), self._degrees(s))

    @computed(ALL)
    def _tiers(self, s: Settings) -> tuple[TierRow, ...]:
        """The paper's tiers with this model, and your layout's row when it is one."""
        return self.plans.tiers(self._layout(s))

    def _decision(self, s: Settings) -> Decision:
        """The fewest devices that keep every limit, for the problem picked."""
        lay = (self._layout(s) if s == self.settings() else
               self.plans.evaluate(str(s["model"]), str(s["symptom"]), self._degrees(s)))
        if lay.config is None:
            return Decision(spec.C_TASK, False, "fails: not a possible layout")
        bad = [w for k, w in spec.C_LIMIT_WORDS.items() if not CHECKS[k](lay)]
        if bad:
            return Decision(spec.C_TASK, False, "fails: " + ", ".join(bad))
        sr = self.plans.search_for(lay.model.id, lay.key)
        here = counted(lay.devices, "device")
        if sr is not None and lay.devices > sr.chosen.devices:
            return Decision(spec.C_TASK, False,
                            f"it keeps them on {here}; {layout_label(sr.chosen.degrees)} "
                            f"does on {counted(sr.chosen.devices, 'device')}")
        return Decision(spec.C_TASK, True, f"it keeps them on {here}, the fewest")

    def moves(self, s: Settings, check: str) -> tuple[Move, ...]:
        """Degrees on screen that, each moved alone, make ``check`` pass."""
        axes = [a for a in AXES if a in self.controls]
        mid, key = str(s["model"]), str(s["symptom"])

        def passes(x: Mapping[str, object]) -> bool:
            deg = tuple(int(x.get(a, 1)) for a in AXES)  # type: ignore[call-overload]
            return CHECKS[check](self.plans.evaluate(mid, key, deg))
        return single_moves({a: int(s[a]) for a in axes},
                            {a: self.opts[a] for a in axes}, passes)

    def _recovery(self, s: Settings, check: str) -> str | None:
        mv = self.moves(s, check)
        return ("; or ".join(f"{m.control.upper()} degree → {m.value}" for m in mv)
                or None)

    def _failing(self, s: Settings, name: str, active: bool, title: str, detail: str) -> None:
        self.callouts[name].set(active, title, detail,
                                self._recovery(s, name) if active else None)

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results, readout cards and the communication table."""
        lay = self._layout(s)
        cfg, p, crit, pre = lay.config, lay.preset, lay.stop, lay.prefill
        sr = self.plans.search_for(lay.model.id, lay.key)
        links = {} if cfg is None else {"tp": cfg.tp_link, "cp": cfg.cp_link,
                                        "pp": cfg.pp_link, "ep": cfg.ep_link}
        self.results = {
            "symptom": lay.key, "model": lay.model.id, "first_axis": p.axis,
            "preset": asdict(p), "degrees": list(lay.degrees),
            "layout": layout_label(lay.degrees), "devices": lay.devices,
            "candidate": cfg is not None, "config": None if cfg is None else cfg.as_dict(),
            "fits": None if cfg is None else cfg.fits,
            "per_token_latency_s": lay.step_s, "step_s": lay.step_s,
            "per_token_s": lay.per_token_s, "meets_slo": lay.meets_slo,
            "comm_s": None if cfg is None else cfg.comm_s, "links": links,
            "stop": None if crit is None else asdict(crit),
            "step_terms": None if lay.terms is None else asdict(lay.terms),
            "b_star": asdict(lay.b_star), "experts": asdict(lay.share),
            "stop_rule_degree": self.stop_rule_degree(lay),
            "ttft_s": None if pre is None else pre.ttft_s,
            "tpot_colocated_s": None if pre is None else pre.tpot_colocated_s,
            "worst_gap_s": None if pre is None else pre.worst_gap_s,
            "disaggregate": None if pre is None else pre.disaggregate,
            "search_chosen": None if sr is None else layout_label(sr.chosen.degrees),
            "search_devices": None if sr is None else sr.chosen.devices,
            "next_layout": layout_label(lay.next_degrees),
            "next_candidate": lay.next_config is not None, "expected": self._expected,
        }
        self._set_readout(metric_cards(spec.cards(lay, sr, self.plans.memory_basis)))
        self._set_details("" if cfg is None else paper.comm_table(cfg, self.hw))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        hw = self.hw
        lay = self._layout(s)
        c, p = lay.config, lay.preset
        sr = self.plans.search_for(lay.model.id, lay.key)
        self.callouts["diagnosis"].show(
            f"{lw.esc(p.label)} → first axis: {lw.esc(p.first)}", spec.diagnosis(lay, sr, hw,
                                                                    self.plans.memory_basis))
        self._failing(s, "not_candidate", c is None, "Not a possible layout",
                      lw.esc(lay.reason) + ".")
        self._failing(s, "oom", c is not None and not c.fits,
                      "Out of memory on the binding device",
                      spec.oom_detail(lay, self.plans.memory_basis))
        self._failing(s, "slo", c is not None and not lay.meets_slo,
                      "Decode step over the TPOT budget", spec.slo_detail(lay))
        self._failing(s, "comm", lay.comm_dominates,
                      "Communication dominates the step: stop adding this axis",
                      spec.comm_detail(lay))
        self._failing(s, "kv_heads", lay.past_kv_heads, "Past the KV heads",
                      spec.kv_heads_detail(lay))
        self._failing(s, "scaleout", lay.crosses_scaleout,
                      "A group crosses the slow scale-out link", spec.scaleout_detail(hw))
        ok = c is not None and c.fits and bool(lay.meets_slo)
        title, detail = spec.boundary(lay, sr)
        self.callouts["boundary"].set(ok and not lay.comm_dominates, title, detail)

    @depends_on(ALL)
    def _set_paper_callouts(self, s: Settings) -> None:
        """The PP and DP stop rules, the experts and all-to-all, TTFT and prefill."""
        lay = self._layout(s)
        c, crit, pre, t = lay.config, lay.stop, lay.prefill, lay.terms
        self.callouts["stop_rules"].set(
            crit is not None, "When to stop: the paper's PP and DP rules at your layout",
            "" if crit is None else
            f"<div>{paper.pp_sentence(crit)}</div><div>{paper.dp_sentence(crit, t)}</div>")
        self._failing(s, "pp_bubble", crit is not None and crit.pp_stop,
                      f"Pipeline bubble over {fmt_pct(PP_BUBBLE_STOP)}: stop adding PP",
                      "" if crit is None else paper.pp_sentence(crit))
        self._failing(s, "dp_critical", crit is not None and crit.dp_stop,
                      "Replicas below the critical batch: stop adding DP",
                      "" if crit is None else paper.dp_sentence(crit, t))
        self.callouts["experts"].set(
            c is not None and lay.model.is_moe,
            f"Experts and the all-to-all: {lw.esc(lay.model.name)}",
            "" if c is None else paper.experts_sentence(c, lay.model, lay.share, self.hw))
        tp, cp = lay.degrees[0], lay.degrees[1]
        self._failing(s, "ttft", pre is not None and pre.ttft_missed, "First token too late",
                      "" if pre is None else paper.ttft_sentence(pre, tp, cp))
        self._failing(s, "disagg", pre is not None and pre.disaggregate,
                      "With every slot busy, colocated prefill pushes the mean TPOT over budget: "
                      "disaggregate it",
                      "" if pre is None else paper.ttft_sentence(pre, tp, cp) + " "
                      + paper.disagg_sentence(pre))

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        lay = self._layout(s)
        if lay.config is None:
            self.math.update("<p>No such layout: see the failure above. Source: "
                             "<code>labkit.scenarios.fleet.plan.sizing.FleetLayouts</code>.</p>")
            return
        self.math.update(paper.math_html(lay.config, lay.model, lay.stop, lay.terms))

    def _reveal_body(self) -> str:
        r = self.results
        return (self._computed_line()
                + spec.reveal(self.default_search, str(r["layout"]), int(r["devices"]))
                + self.reveal_tables())

    def reveal_tables(self) -> str:
        """The paper's tiers (your row highlighted) and SLO classes (the track's highlighted)
        at the current settings, as the reveal shows them."""
        s = self.settings()
        lay = self._layout(s)
        pre = lay.prefill
        tables = paper.tiers_table(self._tiers(s), self.hw, lay.preset.context,
                                   self.plans.memory_basis)
        if pre is not None:
            tables += paper.slo_table(slo_class(self.track), pre.ttft_s, lay.step_s)
        return tables

    def takeaway(self) -> str:
        r = self.results
        m = self.models[str(r["model"])]
        label = self.presets_for(m)[str(r["symptom"])].label
        return spec.takeaway(label, m.name, str(r["first_axis"]), str(r["layout"]),
                             int(r["devices"]), spec.status(r["candidate"], r["fits"],
                                                            r["meets_slo"]),
                             str(r["search_chosen"]))
