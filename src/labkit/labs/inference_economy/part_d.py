"""Lab 1 Part D: the release review against the guardrails."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from labkit import ui as lw
from labkit.core.format import fmt_num, fmt_time, tex_num
from labkit.labs.common import (
    ALL,
    Settings,
    computed,
    depends_on,
    html_table,
    metric_cards,
    pass_mark,
)
from labkit.labs.inference_economy.base import (
    Part,
    event_noun,
    fmt_cost,
    guardrail_label,
    max_devices,
)
from labkit.physics.batching import POLICIES, POLICY_LABELS, PolicyResult
from labkit.plans.design import OFF_SCALE
from labkit.plans.serving import (
    GUARDRAILS,
    GuardrailReport,
    release_guardrails,
    serving_plan,
)

# -- Part D ---------------------------------------------------------------------------------

class PartD(Part):
    """Release review: candidates side by side against memory, SLO, quality and cost.

    Refresh steps: the chart, readout, table, callouts and math peek all show your
    candidate, which every control changes, so they all depend on every control; the three
    fixed candidates are evaluated once per demand share (a shared value reading only
    ``share_pct``).
    """

    letter = "D"

    def _setup(self) -> None:
        tr = self.track
        self.is_lm = tr.is_transformer
        self.max_dev = max_devices(tr)
        self._setup_controls()
        self.candidates = {
            "naive": ("Naive: as released, one at a time",
                      {"weight_bits": 16, "kv_bits": 16, "policy": "none",
                       "devices_per_replica": tr.devices_per_replica}),
            "default": ("Track default plan",
                        {"weight_bits": tr.weight_bits, "kv_bits": tr.kv_bits,
                         "policy": tr.default_policy,
                         "devices_per_replica": tr.devices_per_replica}),
            "lean": ("Lowest precision, continuous",
                     {"weight_bits": 4, "kv_bits": tr.min_kv_bits, "policy": "continuous",
                      "devices_per_replica": tr.devices_per_replica}),
        }
        self._alt_cache: dict[float, dict[str, GuardrailReport]] = {}
        alts = self._alternatives(1.0)
        self.naive_report = alts["naive"]
        self._expected = self.naive_report.binding or "none"
        gx = lw.make_scale("ordinal")
        gy = lw.make_scale("linear", 0.0, 1.6 * OFF_SCALE)  # headroom for the legend
        self.cand_names = [*(label for label, _ in self.candidates.values()), "Your choice"]
        self.m_guard = lw.bar_mark(
            [guardrail_label(g) for g in GUARDRAILS], np.zeros((4, 4)), gx, gy,
            colors=[lw.PALETTE["grey"], lw.PALETTE["purple"], lw.PALETTE["teal"],
                    lw.PALETTE["blue"]], labels=self.cand_names, kind="grouped", legend=True)
        self.m_limit = lw.hline_mark(1.0, gy, color=lw.PALETTE["red"], label="limit",
                                     legend=True)
        self.figures["guardrails"] = lw.figure(
            [self.m_guard, self.m_limit], gx, gy, x_label="guardrail",
            y_label=f"value / limit (above 1 fails; {OFF_SCALE:g} = off scale or n/a)",
            title="Release candidates against each guardrail", legend=True, height=320)
        for g in GUARDRAILS:
            self.callouts[g] = lw.Callout("danger")
        self.callouts["boundary"] = lw.Callout("success")

    def _setup_controls(self) -> None:
        tr = self.track
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        if self.is_lm:
            c["kv_bits"] = lw.precision_control("KV-cache precision", tr.kv_bits,
                                                sorted({4, 8, 16, tr.kv_bits}))
        c["policy"] = lw.choice_control("Scheduler", [(POLICY_LABELS[p], p) for p in POLICIES],
                                        tr.default_policy)
        if self.max_dev > 1:
            c["devices"] = lw.devices_control(tr.devices_per_replica, self.max_dev)
        # The floor is the share a release must serve (duty cycling or routing the rest
        # elsewhere where the track allows it); above 100% is demand growth.
        floor = getattr(tr, "min_demand_rate_per_s", tr.demand_rate_per_s) / tr.demand_rate_per_s
        lo = min(100.0, 5.0 * math.ceil(100.0 * floor / 5.0 - 1e-9))
        c["share_pct"] = lw.float_control("Demand served by this plan (% of forecast)", 100.0,
                                          lo, 200.0, 5.0, ".0f")

    def _plan_kwargs(self, spec: Mapping[str, object], share: float) -> dict[str, Any]:
        tr = self.track
        return {"demand_rate_per_s": tr.demand_rate_per_s * share, **spec}

    def _evaluate(self, spec: Mapping[str, object], share: float) -> GuardrailReport:
        tr = self.track
        plan = serving_plan(tr, with_baseline=False, **self._plan_kwargs(spec, share))
        return release_guardrails(tr, plan=plan)

    def _alternatives(self, share: float) -> dict[str, GuardrailReport]:
        key = round(share, 6)
        if key not in self._alt_cache:
            self._alt_cache[key] = {k: self._evaluate(spec, share)
                                    for k, (_, spec) in self.candidates.items()}
        return self._alt_cache[key]

    def _ratios(self, g: GuardrailReport) -> list[float]:
        tr = self.track
        out = []
        for chk in g.checks:
            if chk.value is None:
                out.append(OFF_SCALE)
                continue
            ratio = chk.value / chk.limit if chk.limit else OFF_SCALE
            if chk.name == "quality" and self.is_lm:
                ratio = max(ratio, tr.min_kv_bits / g.plan.kv_bits)
            if chk.name == "slo" and g.plan.policy_result is not None:
                pr = g.plan.policy_result
                ratio = pr.slo_ratio if pr.stable else OFF_SCALE
            out.append(float(min(OFF_SCALE, ratio)))
        return out

    def _spec(self, s: Settings) -> dict[str, object]:
        tr = self.track
        return {"weight_bits": int(s["weight_bits"]),
                "kv_bits": int(s.get("kv_bits", tr.kv_bits)),
                "policy": str(s["policy"]),
                "devices_per_replica": int(s.get("devices", tr.devices_per_replica))}

    def _prediction_spec(self) -> tuple[str, list[tuple[str, str]]]:
        tr = self.track
        kv = " and KV cache" if self.is_lm else ""
        q = (f"{lw.esc(tr.label)}: the naive release candidate ships the model as released "
             f"(16-bit weights{kv}), serves one {event_noun(tr)} at a time on "
             f"{tr.devices_per_replica} device(s) per replica, at the full forecast demand. "
             "Which guardrail binds first (checked in the order memory, SLO, quality, cost)?")
        return q, [
            ("Memory: weights + one session do not fit", "memory"),
            ("SLO: the latency target is missed", "slo"),
            ("Quality: the precision loses too much", "quality"),
            ("Cost: the daily budget is exceeded", "cost"),
            ("None: it passes every guardrail", "none"),
        ]

    def _checkpoint_spec(self) -> tuple[str, list[tuple[str, str]], str, dict[str, str]]:
        q = "What objective should the release review enforce?"
        opts = [("The lowest recurring cost subject to every guardrail passing", "constrained"),
                ("The fewest replicas, even if the tail latency rises", "replicas"),
                ("The largest batch first", "batch"),
                ("The biggest replica available", "largest")]
        good = ("Right: a plan ships only when memory, SLO, quality and cost pass together; "
                "among those, the cheapest recurring cost wins.")
        bad = ("Not quite: a single-metric objective trades away another guardrail. A plan "
               "ships only when all pass; then take the cheapest.")
        return q, opts, "constrained", {v: (good if v == "constrained" else bad)
                                        for _, v in opts}

    # -- shared values ---------------------------------------------------------------------
    @staticmethod
    def _share(s: Settings) -> float:
        return float(s["share_pct"]) / 100.0

    @computed(ALL)
    def _mine(self, s: Settings) -> GuardrailReport:
        """Your candidate against the guardrails."""
        return self._evaluate(self._spec(s), self._share(s))

    @computed("share_pct")
    def _alts(self, s: Settings) -> dict[str, GuardrailReport]:
        """The three fixed candidates at the current demand share."""
        return self._alternatives(self._share(s))

    def _reports(self, s: Settings) -> list[GuardrailReport]:
        return [*self._alts(s).values(), self._mine(s)]

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw(self, s: Settings) -> None:
        y = np.asarray([self._ratios(g) for g in self._reports(s)])
        lw.update_marks({self.m_guard: {"y": y}})

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        tr = self.track
        share, spec = self._share(s), self._spec(s)
        mine, alts = self._mine(s), self._alts(s)
        plan = mine.plan
        default_cost = alts["default"].plan.daily_cost
        self.results = {
            "passed": mine.passed, "binding": mine.binding, "reason": mine.reason,
            "spec": spec, "demand_share": share, "feasible": plan.feasible,
            "replicas": plan.replicas, "total_devices": plan.total_devices,
            "daily_cost": plan.daily_cost, "daily_budget": tr.daily_budget,
            "cost_unit": tr.cost_unit,
            "cost_vs_default": (None if plan.daily_cost is None or not default_cost
                                else plan.daily_cost / default_cost),
            "checks": {c.name: {"passed": c.passed, "value": c.value, "limit": c.limit,
                                "unit": c.unit, "detail": c.detail} for c in mine.checks},
            "naive_binding": self.naive_report.binding, "expected": self._expected,
            "candidates": {k: {"binding": g.binding, "passed": g.passed,
                               "daily_cost": g.plan.daily_cost}
                           for k, g in alts.items()},
        }
        u = tr.cost_unit
        self._set_readout(metric_cards([
            ("verdict", "ships" if mine.passed else f"{mine.binding} binds",
             "all four guardrails" if mine.passed else "first failing guardrail",
             lw.PALETTE["green"] if mine.passed else lw.PALETTE["red"]),
            ("replicas", f"{plan.replicas}", f"{plan.total_devices} device(s) in total",
             lw.PALETTE["blue"]),
            ("daily cost", fmt_cost(plan.daily_cost, u),
             f"budget {fmt_cost(tr.daily_budget, u)}", lw.PALETTE["orange"]),
            ("demand", f"{fmt_num(tr.demand_rate_per_s * share)} {event_noun(tr)}s/s",
             f"{share:.0%} of forecast", lw.PALETTE["grey"]),
        ]))

    @depends_on(ALL)
    def _show_table(self, s: Settings) -> None:
        """The candidates side by side."""
        tr = self.track
        rows = []
        names = [label for label, _ in self.candidates.values()] + ["Your choice"]
        for name, g in zip(names, self._reports(s), strict=True):
            p = g.plan
            kv = f"/{p.kv_bits}-bit KV" if self.is_lm else ""
            cfg = (f"{p.weight_bits}-bit weights{kv}, {p.policy}, {p.devices_per_replica} "
                   f"device(s)")
            pr = p.policy_result
            tail = ("not evaluated (OOM)" if pr is None else
                    f"{fmt_time(pr.slo_value_s)}"
                    + (f" · TTFT {fmt_time(pr.ttft_p99_s)}" if tr.ttft_slo_s else "")
                    + ("" if pr.stable else " · overloaded"))
            rows.append([
                f"<b>{lw.esc(name)}</b>", lw.esc(cfg),
                f"{p.replicas} x {p.devices_per_replica}" if p.feasible else "—",
                fmt_cost(p.daily_cost, tr.cost_unit), tail,
                *(pass_mark(g.check(n).passed) for n in GUARDRAILS),
                "<b style='color:#1e8449'>ships</b>" if g.passed
                else f"<b style='color:#c0392b'>{guardrail_label(g.binding or '')} binds</b>",
            ])
        self._set_details(html_table(
            ["candidate", "configuration", "replicas", "cost/day", "tail latency", "memory",
             "SLO", "quality", "cost", "verdict"], rows))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        mine = self._mine(s)
        recov = {
            "memory": "lower the precision" + (", or add devices per replica"
                                               if "devices" in self.controls else ""),
            "slo": "pick a scheduler that does not wait for full batches, add capacity, or "
                   "route less demand to this plan",
            "quality": f"raise the weight precision to at least {tr.min_weight_bits} bits"
                       + (f" and keep KV at {tr.min_kv_bits} bits or more" if self.is_lm
                          else ""),
            "cost": "lower the precision, batch more per device, or route less demand to "
                    "this plan",
        }
        titles = {"memory": "Memory guardrail fails (OOM)", "slo": "SLO guardrail fails",
                  "quality": "Quality guardrail fails", "cost": "Over the daily budget"}
        for chk in mine.checks:
            self.callouts[chk.name].set(not chk.passed, titles[chk.name], lw.esc(chk.detail),
                                        recov[chk.name])
        ratios = self._ratios(mine)
        closest = max(range(4), key=lambda i: ratios[i])
        self.callouts["boundary"].set(
            mine.passed, "Your candidate ships: every guardrail passes",
            f"{guardrail_label(GUARDRAILS[closest]).capitalize()} is closest to its limit "
            f"({ratios[closest]:.0%} of it).")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        tr = self.track
        share = self._share(s)
        plan = self._mine(s).plan
        pr = plan.policy_result
        cap_txt = (f"{fmt_num(plan.replica_capacity_requests_per_s)}" if plan.feasible
                   else "0 (OOM)")
        self.math.update(
            "<p>Replicas for the demand λ at most u_max busy, and the daily cost:</p>"
            "$$R = \\left\\lceil \\frac{\\lambda}{u_{\\max}\\,\\mu_{\\text{replica}}} "
            f"\\right\\rceil = \\left\\lceil \\frac{{{tex_num(tr.demand_rate_per_s * share)}}}"
            f"{{{tr.max_utilisation:g} \\times {cap_txt}}} \\right\\rceil = {plan.replicas}$$"
            + ("<p>Rented: cost/day = devices × price/h × active hours.</p>"
               if tr.cost_unit == "USD" else
               "<p>Owned: energy/day = devices × power × busy time / J per unit.</p>")
            + "<p>Ship only if memory ∧ SLO ∧ quality ∧ cost all pass; the first failure "
            "(in that order) binds. "
            + (f"Now: {self._metric_text(pr)}. " if pr is not None else "")
            + "Source: <code>labkit.plans.serving.serving_plan</code>, "
            "<code>labkit.plans.serving.release_guardrails</code>.</p>")

    def _metric_text(self, pr: PolicyResult) -> str:
        tr = self.track
        q = "max" if tr.slo_quantile >= 1 else f"p{tr.slo_quantile * 100:g}"
        metric = "TPOT" if tr.slo_kind == "tpot" else "latency"
        return (f"{q} {metric} {fmt_time(pr.slo_value_s)} vs SLO {fmt_time(tr.slo_s)}, "
                f"utilisation {pr.utilisation:.0%}")

    def _reveal_body(self) -> str:
        r = self.results
        g = self.naive_report
        naive = (f"<b>{self.predict.label_for(self._expected)}</b>: {lw.esc(g.reason)}")
        mine = ("your candidate passes every guardrail" if r["passed"]
                else f"your candidate is blocked by <b>{r['binding']}</b>")
        return (
            f"<div>{self._prediction_line()}.</div>"
            f"<div>Naive candidate → {naive}.</div>"
            f"<div>With your current settings {mine}.</div>"
            "<div style='color:#5d6d7e'>Why: a release ships only when all four guardrails "
            "pass together. Fixing the one that binds often exposes the next.</div>")
