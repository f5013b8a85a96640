"""Lab 1 Part D: the release review against the guardrails.

The view: controls, chart and table bound to :func:`labkit.plans.serving.serving_plan`,
:func:`~labkit.plans.serving.routed_release` and
:func:`~labkit.plans.serving.guardrail_ratios`; the text is
:mod:`~labkit.labs.inference_economy.part_d_spec`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from labkit import ui as lw
from labkit.core.format import counted, fmt_num, fmt_time
from labkit.labs.common import (
    ALL,
    CheckSpec,
    Settings,
    Spec,
    computed,
    depends_on,
    html_table,
    metric_cards,
    pass_mark,
    remembered,
)
from labkit.labs.inference_economy import decisions
from labkit.labs.inference_economy import part_d_spec as spec
from labkit.labs.inference_economy.base import (
    Part,
    event_noun,
    fmt_cost,
    guardrail_label,
    max_devices,
)
from labkit.labs.inference_economy.hints import find_fixes, hint_text
from labkit.labs.inference_economy.part_c_spec import metric_name
from labkit.labs.inference_economy.part_d_spec import LIMIT_RATIO, TIER_BITS
from labkit.plans.deployment import Quantity
from labkit.plans.design import OFF_SCALE
from labkit.plans.serving import (
    GUARDRAILS,
    GuardrailCheck,
    GuardrailReport,
    LeverFix,
    RoutedRelease,
    ServingPlan,
    daily_basis,
    guardrail_ratios,
    routed_release,
    serving_plan,
)
from labkit.plans.workload import POLICIES, policy_label
from labkit.tracks import Track
from labkit.ui.controls import control_values

ROUTE_MAX_PCT = 90.0    # some traffic always stays on the main plan
ROUTE_STEP_PCT = 10.0

# -- Part D ---------------------------------------------------------------------------------

def check_mark(c: GuardrailCheck) -> str:
    """pass / fail, or "not evaluated" for a check the plan never reached (None value)."""
    if not c.passed and c.value is None:
        return "<span style='color:#5d6d7e'>— not evaluated</span>"
    return pass_mark(c.passed)


def candidate_row(tr: Track, name: str, g: GuardrailReport, rr: RoutedRelease,
                  is_lm: bool) -> list[str]:
    """One candidate's row of Part D's table (``rr``: the student's plan, maybe routed)."""
    p = g.plan
    kv = f"/{p.kv_bits}-bit KV" if is_lm else ""
    cfg = (f"{p.weight_bits}-bit weights{kv}, {p.policy}, "
           f"{counted(p.devices_per_replica, 'device')}")
    routed = g is rr.report and rr.tier is not None
    if routed:
        cfg += f"; {rr.routed_share:.0%} of requests on {TIER_BITS}-bit weights"
    pr = p.policy_result
    tail = ("not evaluated (OOM)" if pr is None else
            f"{fmt_time(pr.slo_value_s)}"
            + (f" · TTFT {fmt_time(pr.ttft_p99_s)}" if tr.ttft_slo_s else "")
            + ("" if pr.stable else " · overloaded"))
    return [
        f"<b>{lw.esc(name)}</b>", lw.esc(cfg),
        (f"{rr.replicas} ({p.replicas} + {rr.replicas - p.replicas} routed) x "
         f"{p.devices_per_replica}" if routed else
         f"{p.replicas} x {p.devices_per_replica}") if p.feasible else "—",
        fmt_cost(rr.daily_cost if routed else p.daily_cost, tr.cost_unit), tail,
        *(check_mark(g.check(n)) for n in GUARDRAILS),
        f"<b style='color:{lw.TEXT['green']}'>ships</b>" if g.passed
        else f"<b style='color:#c0392b'>{guardrail_label(g.binding or '')} binds</b>",
    ]


def plan_basis(plan: ServingPlan) -> str:
    """Which plan Part D's cards show (the student's, not the track's default)."""
    return f"this plan, {policy_label(plan.track_id, plan.policy)}"


class PartD(Part):
    """Release review: candidates side by side against memory, SLO, quality and cost.

    The controls start at the first of the naive, lean and default candidates that fails a
    guardrail at the full forecast, so there is always something to fix. Recovery hints are
    computed: each failing guardrail names one control value that makes it pass on the
    current settings (:func:`labkit.plans.serving.lever_fixes`). Where devices are rented,
    a share of the requests may be routed to a 4-bit tier of the same model
    (:func:`labkit.plans.serving.routed_release`).

    Refresh steps: the chart, readout, table, callouts and math peek all show your
    candidate, which every control changes, so they all depend on every control; the three
    fixed candidates are evaluated once per demand share (a shared value reading only
    ``share_pct``).
    """

    shows = (("cost_per_day_provisioned", "daily_cost"), ("devices", "total_devices"))

    def shown_basis(self, name: str) -> str:
        return str(self.results.get("plan_basis", ""))

    def shown(self) -> Mapping[str, Quantity]:
        """A plan that does not fit memory sizes nothing: no devices or cost are shown."""
        return super().shown() if self.results.get("feasible") else {}


    letter = "D"
    _decision = decisions.part_d

    def _setup(self) -> None:
        tr = self.track
        self.is_lm = tr.is_transformer
        self.max_dev = max_devices(tr)
        self.candidates = spec.candidates(tr)
        self._alt_cache: dict[float, dict[str, GuardrailReport]] = {}
        self._eval_cache: dict[tuple[object, ...], RoutedRelease] = {}
        self.levers: dict[str, tuple[tuple[str, object], ...]] = {}
        alts = self._alternatives(1.0)
        self.naive_report = alts["naive"]
        self._expected = self.naive_report.binding or "none"
        self.start_key = next((k for k in ("naive", "lean", "default") if not alts[k].passed),
                              "naive")
        self._setup_controls(self.candidates[self.start_key][1])
        gx = lw.make_scale("ordinal")
        gy = lw.make_scale("linear", 0.0, 1.6 * OFF_SCALE)  # headroom for the legend
        self.cand_names = [*(label for label, _ in self.candidates.values()), "Your choice"]
        self.m_guard = lw.bar_mark(
            [guardrail_label(g) for g in GUARDRAILS], np.zeros((4, 4)), gx, gy,
            colors=[lw.PALETTE["grey"], lw.PALETTE["purple"], lw.PALETTE["teal"],
                    lw.PALETTE["blue"]], labels=self.cand_names, kind="grouped", legend=True)
        self.m_limit = lw.hline_mark(LIMIT_RATIO, gy, color=lw.PALETTE["red"], label="limit",
                                     legend=True)
        self.figures["guardrails"] = lw.figure(
            [self.m_guard, self.m_limit], gx, gy, x_label="guardrail",
            y_label=(f"value / limit (above {LIMIT_RATIO:g} fails; capped at {OFF_SCALE:g}: "
                     "off scale or n/a, the table has the value)"),
            title="Release candidates against each guardrail", legend=True, height=320)
        for g in GUARDRAILS:
            self.callouts[g] = lw.callout("danger")
        self.callouts["boundary"] = lw.callout("success")

    def _setup_controls(self, start: Mapping[str, Any]) -> None:
        """The controls, at the starting candidate ``start``."""
        tr = self.track
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", int(start["weight_bits"]))
        if self.is_lm:
            c["kv_bits"] = lw.precision_control("KV-cache precision", int(start["kv_bits"]),
                                                sorted({4, 8, 16, tr.kv_bits,
                                                        int(start["kv_bits"])}))
        c["policy"] = lw.choice_control(
            "Scheduler", [(policy_label(self.track, p), p) for p in POLICIES], start["policy"])
        if self.max_dev > 1:
            c["devices"] = lw.devices_control(int(start["devices_per_replica"]), self.max_dev,
                                              f"Devices per {tr.replica_noun}")
        # The floor is the share a release must serve (duty cycling or routing the rest
        # elsewhere where the track allows it); above 100% is demand growth.
        floor = getattr(tr, "min_demand_rate_per_s", tr.demand_rate_per_s) / tr.demand_rate_per_s
        lo = min(100.0, 5.0 * math.ceil(100.0 * floor / 5.0 - 1e-9))
        c["share_pct"] = lw.float_control("Demand served by this plan (% of forecast)", 100.0,
                                          lo, 200.0, 5.0, ".0f")
        if tr.cost_unit == "USD":  # rented devices: a second, cheaper pool can be rented
            c["route_pct"] = lw.float_control(
                f"Requests routed to a {TIER_BITS}-bit tier (%)", 0.0, 0.0, ROUTE_MAX_PCT,
                ROUTE_STEP_PCT, ".0f")

    def _plan_kwargs(self, spec: Mapping[str, object], share: float) -> dict[str, Any]:
        tr = self.track
        return {"demand_rate_per_s": tr.demand_rate_per_s * share, **spec}

    def _release(self, spec: Mapping[str, object], share: float,
                 routed: float = 0.0) -> RoutedRelease:
        """A candidate serving ``share`` of the forecast, ``routed`` of it on the 4-bit tier
        (cached: the recovery hints re-evaluate neighbouring settings)."""
        key = (tuple(sorted(spec.items())), round(share, 6), round(routed, 6))
        if key not in self._eval_cache:
            tr = self.track
            kw = self._plan_kwargs(spec, share)
            demand = float(kw.pop("demand_rate_per_s"))
            main = serving_plan(tr, with_baseline=False, demand_rate_per_s=demand * (1 - routed),
                                **kw)
            tier = None if routed == 0 else serving_plan(
                tr, with_baseline=False, demand_rate_per_s=demand * routed,
                **{**kw, "weight_bits": TIER_BITS})
            self._eval_cache[key] = routed_release(tr, main, tier, routed)
        return self._eval_cache[key]

    def _evaluate(self, spec: Mapping[str, object], share: float) -> GuardrailReport:
        return self._release(spec, share).report

    def _alternatives(self, share: float) -> dict[str, GuardrailReport]:
        key = round(share, 6)
        if key not in self._alt_cache:
            self._alt_cache[key] = {k: self._evaluate(spec, share)
                                    for k, (_, spec) in self.candidates.items()}
        return self._alt_cache[key]

    def _ratios(self, g: GuardrailReport, tier: GuardrailReport | None = None) -> list[float]:
        """The chart's bars: :func:`guardrail_ratios` capped at OFF_SCALE (text never
        names a capped bar as the value)."""
        return [float(min(OFF_SCALE, r)) for r in guardrail_ratios(self.track, g, tier)]

    def _spec(self, s: Settings) -> dict[str, object]:
        tr = self.track
        return {"weight_bits": int(s["weight_bits"]),
                "kv_bits": int(s.get("kv_bits", tr.kv_bits)),
                "policy": str(s["policy"]),
                "devices_per_replica": int(s.get("devices", tr.devices_per_replica))}

    def _prediction_spec(self) -> Spec:
        return spec.prediction_spec(self.track)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.checkpoint_spec(self.track)

    # -- shared values ---------------------------------------------------------------------
    @staticmethod
    def _share(s: Settings) -> float:
        return float(s["share_pct"]) / 100.0

    @staticmethod
    def _routed(s: Settings) -> float:
        return float(s.get("route_pct", 0.0)) / 100.0

    @computed(ALL)
    def _mine_routed(self, s: Settings) -> RoutedRelease:
        """Your candidate (both pools when routing) against the guardrails."""
        return self._release(self._spec(s), self._share(s), self._routed(s))

    def _mine(self, s: Settings) -> GuardrailReport:
        return self._mine_routed(s).report

    def _tier_report(self, s: Settings) -> GuardrailReport | None:
        rr = self._mine_routed(s)
        return None if rr.tier is None else self._release(
            {**self._spec(s), "weight_bits": TIER_BITS}, self._share(s) * rr.routed_share).report

    def _failed(self, s: Settings) -> tuple[str, ...]:
        """The guardrails failing at settings ``s`` (control name -> value)."""
        return tuple(c.name for c in self._release(self._spec(s), self._share(s),
                                                   self._routed(s)).report.checks
                     if not c.passed)

    def failed(self, s: Mapping[str, object]) -> tuple[str, ...]:
        """The guardrails failing at settings ``s`` (the check every hint re-runs)."""
        return self._failed(s)

    @computed(ALL)
    def _fixes(self, s: Settings) -> dict[str, LeverFix]:
        """For each failing guardrail, one control value (else a pair) that passes it."""
        return find_fixes(s, self.controls, remembered(self, self._failed), pairs=True)

    def _candidate_values(self, name: str) -> list[object]:
        """The values a control offers: its options, or every step of its slider."""
        return control_values(self.controls[name])

    def _hint(self, fix: LeverFix) -> str:
        """A recovery hint naming the computed fix (or saying none was found)."""
        return hint_text(self.controls, fix, guardrail_label, pairs=True)

    @computed("share_pct")
    def _alts(self, s: Settings) -> dict[str, GuardrailReport]:
        """The three fixed candidates at the current demand share."""
        return self._alternatives(self._share(s))

    def _reports(self, s: Settings) -> list[GuardrailReport]:
        return [*self._alts(s).values(), self._mine(s)]

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw(self, s: Settings) -> None:
        alts = self._alts(s)
        y = np.asarray([*(self._ratios(g) for g in alts.values()),
                        self._ratios(self._mine(s), self._tier_report(s))])
        lw.update_marks({self.m_guard: {"y": y}})

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        tr = self.track
        share, plan_spec = self._share(s), self._spec(s)
        rr, alts = self._mine_routed(s), self._alts(s)
        mine = rr.report
        daily = rr.daily_cost
        default_cost = alts["default"].plan.daily_cost
        ratios = guardrail_ratios(tr, mine, self._tier_report(s))
        self.results = {
            "passed": mine.passed, "binding": mine.binding, "reason": mine.reason,
            "spec": plan_spec, "demand_share": share, "feasible": mine.plan.feasible,
            "routed_share": rr.routed_share, "start_candidate": self.start_key,
            "replicas": rr.replicas, "total_devices": rr.total_devices,
            "daily_cost": daily, "daily_basis": daily_basis(tr, mine.plan),
            "plan_basis": plan_basis(mine.plan),
            "daily_budget": tr.daily_budget, "cost_unit": tr.cost_unit,
            "levers": {n: [list(c) for c in f.changes] for n, f in self._fixes(s).items()},
            "cost_vs_default": (None if daily is None or not default_cost
                                else daily / default_cost),
            "checks": {c.name: {"passed": c.passed, "value": c.value, "limit": c.limit,
                                "unit": c.unit, "detail": c.detail} for c in mine.checks},
            "ratios": dict(zip(GUARDRAILS, ratios, strict=True)),
            "naive_binding": self.naive_report.binding, "expected": self._expected,
            "candidates": {k: {"binding": g.binding, "passed": g.passed,
                               "daily_cost": g.plan.daily_cost}
                           for k, g in alts.items()},
        }
        self._set_readout(metric_cards(self._cards(s, rr)))

    def _cards(self, s: Settings, rr: RoutedRelease) -> list[tuple[str, str, str, str]]:
        tr = self.track
        u, share, mine = tr.cost_unit, self._share(s), rr.report
        plan = mine.plan
        fleet = (f"{counted(rr.total_devices, 'device')} in total, sized with "
                 f"{'prefill' if self.is_lm else 'the whole pass'} and the "
                 f"{tr.max_utilisation:.0%} utilisation cap"
                 + (f"; {rr.routed_share:.0%} of requests on the {TIER_BITS}-bit tier"
                    if rr.tier is not None else ""))
        return [
            ("verdict", "ships" if mine.passed else f"{mine.binding} binds",
             "all four guardrails" if mine.passed else "first failing guardrail",
             lw.PALETTE["green"] if mine.passed else lw.PALETTE["red"]),
            (tr.replica_nouns, f"{rr.replicas}" if plan.feasible else "—",
             fleet if plan.feasible else "not sized: the plan does not fit memory",
             lw.PALETTE["blue"]),
            ("daily cost (" + ("provisioned" if u == "USD" else "busy") + ")",
             fmt_cost(rr.daily_cost, u),
             f"{plan_basis(plan)}; {daily_basis(tr, plan)}; budget "
             f"{fmt_cost(tr.daily_budget, u)}", lw.PALETTE["orange"]),
            ("demand", f"{fmt_num(tr.demand_rate_per_s * share)} {event_noun(tr)}s/s",
             f"{share:.0%} of forecast", lw.PALETTE["grey"]),
        ]

    @depends_on(ALL)
    def _show_table(self, s: Settings) -> None:
        """The candidates side by side."""
        tr = self.track
        rows = []
        names = [label for label, _ in self.candidates.values()] + ["Your choice"]
        rr = self._mine_routed(s)
        for name, g in zip(names, self._reports(s), strict=True):
            rows.append(candidate_row(tr, name, g, rr, self.is_lm))
        self._set_details(html_table(
            ["candidate", "configuration", tr.replica_nouns,
             f"{tr.cost_unit}/day ({'provisioned' if tr.cost_unit == 'USD' else 'busy'})",
             metric_name(tr), "memory", "SLO", "quality", "cost", "verdict"], rows))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        mine = self._mine(s)
        fixes = self._fixes(s)
        unreached = {c.name for c in mine.checks if not c.passed and c.value is None}
        self.levers = {n: f.changes for n, f in fixes.items() if n not in unreached}
        for chk in mine.checks:
            fix = fixes.get(chk.name)
            # a check that could not be evaluated (the plan does not fit memory) is not a
            # failure of its own: only the memory callout speaks for it
            failed = not chk.passed and chk.value is not None
            self.callouts[chk.name].set(failed, spec.TITLES[chk.name],
                                        lw.esc(chk.detail),
                                        None if fix is None else self._hint(fix))
        ratios = guardrail_ratios(self.track, mine, self._tier_report(s))
        self.callouts["boundary"].set(
            mine.passed, "Your candidate ships: every guardrail passes",
            spec.boundary_text(ratios, OFF_SCALE))

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        tr = self.track
        rr = self._mine_routed(s)
        lam = tr.demand_rate_per_s * self._share(s) * (1 - rr.routed_share)
        self.math.update(spec.math_html(tr, rr, lam, daily_basis(tr, rr.main)))

    def _reveal_body(self) -> str:
        g = self.naive_report
        body = spec.reveal_text(self.predict.label_for(self._expected), g.reason,
                                self.results)
        return f"<div>{self._prediction_line()}.</div>{body}"
