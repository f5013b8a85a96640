"""Lab 1 Part C: batching under variance.

The view: controls and charts bound to :class:`labkit.plans.workload.BatchingBench`
(the four policies simulated on one replica); the text is
:mod:`~labkit.labs.inference_economy.part_c_spec`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from labkit import ui as lw
from labkit.core.format import fmt_num, fmt_time
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
from labkit.labs.inference_economy import part_c_spec as spec
from labkit.labs.inference_economy.base import SLO_RATIO_MAX, Part, event_noun
from labkit.labs.inference_economy.hints import change_text, find_fixes, hint_text
from labkit.plans.serving import LeverFix, serving_plan, track_capacity
from labkit.plans.workload import (
    POLICIES,
    BatchingBench,
    PolicyComparison,
    delivered_per_s,
    policy_label,
)

PADDING_WASTE_MAX = 0.5   # the reference lab's failure line: half the slot-steps padded
PADDING = "padding"
CACHE_MAX = 4096          # simulated settings kept (the hint search revisits neighbours)


def check_label(name: str) -> str:
    """A Part C check in words: a policy's SLO, or the padding line."""
    return "padding" if name == PADDING else f"{name}'s SLO"


class PartC(Part):
    """Four batching policies on the same simulated stream, against the SLO.

    Refresh steps: one simulation of the four policies reads every control, and every
    chart, the readout, the table and the callouts show it, so they all depend on every
    control; only the math peek skips the output-length spread (it shows the batch and the
    arrival rate).
    """

    letter = "C"
    _decision = decisions.part_c
    primary = ("policy", "cv", "batch")
    spec = spec

    def _setup(self) -> None:
        tr = self.track
        self.is_lm = tr.is_transformer
        self._ttft = self.is_lm  # a time to first token exists only for a language model
        plan0 = serving_plan(tr, with_baseline=False)
        self.rate0 = plan0.replica_arrival_rate_per_s
        self.slots0 = max(1, plan0.batch_size)
        cap = track_capacity(tr)
        self.max_b = max(self.slots0, min(max(2 * tr.batch_size, 8), cap.max_sessions))
        self.bench = BatchingBench(tr, self.max_b)
        self.cv0 = float(tr.output_tokens_cv)
        self._cmp_cache: dict[tuple[int, float, float], PolicyComparison] = {}
        self.default_cmp = self._compare(self.slots0, self.cv0, self.rate0)
        self._expected = self.default_cmp.winner
        self._setup_controls()
        self.unit = f"{tr.output_unit}/s"
        self._setup_charts(self._chart_top())
        self.metric_name = spec.metric_name(tr)
        self.callouts["slo"] = lw.callout("danger")
        self.callouts["padding"] = lw.callout("danger")
        self.callouts["boundary"] = lw.callout("success")

    def _setup_controls(self) -> None:
        tr = self.track
        c = self.controls
        top = max(r.capacity_requests_per_s for r in self.default_cmp.results.values())
        if self.is_lm:
            c["cv"] = lw.float_control("Output-length spread (CV)", self.cv0, 0.0, 2.5, 0.1)
        if self.max_b > 1:
            c["policy"] = lw.choice_control(
                "Your batching policy", [(policy_label(tr, p), p) for p in POLICIES],
                decisions.NAIVE_POLICY)
            c["batch"] = lw.int_control("Batch size / slots", self.slots0, 1, self.max_b)
        c["rate"] = lw.log_control(f"Arrivals per {tr.replica_noun} ({event_noun(tr)}s/s)",
                                   self.rate0, self.rate0 / 10,
                                   max(self.rate0 * 3, 1.5 * top))

    def _chart_top(self) -> float:
        """The largest capacity (output units/s) any setting can reach: the chart's top."""
        cmps = [self.default_cmp, self._compare(self.max_b, self.cv0, self.rate0)]
        if self.is_lm:
            cmps.append(self._compare(self.max_b, 0.0, self.rate0))
        return max(r.capacity_tokens_per_s for cmp in cmps for r in cmp.results.values())

    def _setup_charts(self, cap_tok: float) -> None:
        tr = self.track
        names = list(POLICIES)
        bx = lw.make_scale("ordinal")
        by = lw.make_scale("linear", 0.0, 1.4 * cap_tok)  # headroom for the legend
        self.m_tput = lw.bar_mark(names, np.zeros((2, 4)), bx, by,
                                  colors=[lw.PALETTE["blue"], lw.PALETTE["teal"]],
                                  labels=[f"max per {tr.replica_noun} (saturated)",
                                          "delivered at this load"], kind="grouped",
                                  legend=True)
        self.figures["throughput"] = lw.figure(
            [self.m_tput], bx, by, x_label="batching policy",
            y_label=f"throughput ({self.unit})", title=f"Throughput per {tr.replica_noun}",
            legend=True, height=260)
        lx = lw.make_scale("ordinal")
        ly = lw.make_scale("linear", 0.0, SLO_RATIO_MAX)
        self.m_lat = lw.bar_mark(names, np.ones(4), lx, ly, colors=[lw.PALETTE["green"]] * 4,
                                 color_mode="no_group", label_display=True,
                                 label_display_format=".2f")
        self.m_slo = lw.hline_mark(1.0, ly, color=lw.PALETTE["red"])
        self.figures["latency"] = lw.figure(
            [self.m_lat, self.m_slo], lx, ly, x_label="batching policy",
            y_label=f"tail latency / SLO (capped at {fmt_num(SLO_RATIO_MAX)}; the table has "
                    "the true value)",
            title=f"{spec.metric_name(tr)}{' (and TTFT)' if self._ttft else ''} against the "
                  "SLO (dashed: the limit)", height=260)
        self.m_waste: object | None = None
        # Padding needs outputs of different lengths in one batch: none for one frame or
        # window per request, none at a default of one sequence per batch.
        if not self.is_lm or self.slots0 <= 1:
            return
        wx = lw.make_scale("ordinal")
        wy = lw.make_scale("linear", 0.0, 100.0)
        self.m_waste = lw.bar_mark(names, np.zeros(4), wx, wy, colors=[lw.PALETTE["orange"]],
                                   label_display=True, label_display_format=".0f")
        self.figures["waste"] = lw.figure(
            [self.m_waste], wx, wy, x_label="batching policy",
            y_label="padding waste (% of slot-steps)", title="Slots spent on padding",
            height=220)

    def _compare(self, batch: int, cv: float, rate: float) -> PolicyComparison:
        key = (int(batch), round(float(cv), 6), float(rate))
        if key not in self._cmp_cache:
            if len(self._cmp_cache) >= CACHE_MAX:
                self._cmp_cache.clear()
            self._cmp_cache[key] = self.bench.compare(*key)
        return self._cmp_cache[key]

    def _prediction_spec(self) -> Spec:
        return spec.prediction_spec(self.track, self.slots0, self.cv0, self.rate0)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.checkpoint_spec(self.track)

    # -- shared values ---------------------------------------------------------------------
    def _batch(self, s: Mapping[str, object]) -> int:
        return int(str(s.get("batch", self.slots0)))

    def compare_at(self, s: Mapping[str, object]) -> PolicyComparison:
        """The four policies at settings ``s``."""
        return self._compare(self._batch(s), float(str(s.get("cv", self.cv0))),
                             float(str(s["rate"])))

    @computed(ALL)
    def _cmp(self, s: Settings) -> PolicyComparison:
        """The four policies simulated at the current batch, spread and arrival rate."""
        return self.compare_at(s)

    def failed(self, s: Mapping[str, object]) -> tuple[str, ...]:
        """The checks failing at ``s``: each policy missing the SLO (by name), and
        ``padding`` (static batching wastes at least PADDING_WASTE_MAX of its slot-steps)."""
        cmp = self.compare_at(s)
        out = tuple(p for p in POLICIES if not cmp.results[p].slo_met)
        if self.is_lm and cmp.results["static"].padding_waste >= PADDING_WASTE_MAX:
            out += (PADDING,)
        return out

    @computed(ALL)
    def _fixes(self, s: Settings) -> dict[str, LeverFix]:
        return find_fixes(s, self.controls, remembered(self, self.failed)) if self.failed(s) else {}

    def _slo_hint(self, s: Settings, missed: list[str]) -> str:
        """Per move, the policies it makes meet the SLO (each move alone, computed)."""
        fixes = self._fixes(s)
        by_move: dict[tuple[tuple[str, object], ...], list[str]] = {}
        for p in missed:
            by_move.setdefault(fixes[p].changes, []).append(p)
        parts = []
        for changes, pols in by_move.items():
            if not changes:
                parts.append(f"no single control on screen makes {', '.join(pols)} meet it")
                continue
            moves = " and ".join(change_text(self.controls, k, v) for k, v in changes)
            parts.append(f"{moves} makes {', '.join(pols)} meet it")
        return "; ".join(parts)

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw(self, s: Settings) -> None:
        res = [self._cmp(s).results[p] for p in POLICIES]
        tput = np.asarray([[r.capacity_tokens_per_s for r in res],
                           [delivered_per_s(r) for r in res]])
        ratios = np.asarray([min(SLO_RATIO_MAX, r.slo_ratio if r.stable else SLO_RATIO_MAX)
                             for r in res])
        colors = [lw.PALETTE["green"] if r.slo_met else lw.PALETTE["red"] for r in res]
        changes: dict = {self.m_tput: {"y": tput}, self.m_lat: {"y": ratios, "colors": colors}}
        if self.m_waste is not None:
            changes[self.m_waste] = {"y": np.asarray([100.0 * r.padding_waste for r in res])}
        lw.update_marks(changes)

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        b, cv, rate = self._batch(s), float(s.get("cv", self.cv0)), float(s["rate"])
        cmp = self._cmp(s)
        res = [cmp.results[p] for p in POLICIES]
        winner = cmp.results[cmp.winner]
        self.results = {
            "winner": cmp.winner, "any_meets_slo": cmp.any_meets_slo, "reason": cmp.reason,
            "why": spec.why_text(self.track, cmp, self.unit),
            "batch": b, "cv": cv, "arrival_rate_per_s": rate, "expected": self._expected,
            "default_winner": self.default_cmp.winner,
            "policies": {p: {"capacity_tokens_per_s": r.capacity_tokens_per_s,
                             "throughput_tokens_per_s": delivered_per_s(r),
                             "utilisation": r.utilisation, "stable": r.stable,
                             "slo_value_s": r.slo_value_s, "ttft_p99_s": r.ttft_p99_s,
                             "slo_ratio": r.slo_ratio, "slo_met": r.slo_met,
                             "padding_waste": r.padding_waste}
                         for p, r in zip(POLICIES, res, strict=True)},
        }
        met = sum(r.slo_met for r in res)
        self._set_readout(metric_cards([
            ("winner", cmp.winner, policy_label(self.track, cmp.winner),
             lw.PALETTE["green"] if cmp.any_meets_slo else lw.PALETTE["red"]),
            ("its capacity", f"{fmt_num(winner.capacity_tokens_per_s)} {self.unit}",
             f"load {spec.load_text(winner)}", lw.PALETTE["blue"]),
            (f"its {self.metric_name}", spec.tail_text(winner, winner.slo_value_s),
             f"SLO {fmt_time(self.track.slo_s)}", lw.PALETTE["purple"]),
            ("policies meeting the SLO", f"{met} of {len(res)}",
             f"batch {b}" + (f", CV {fmt_num(cv)}" if self.is_lm else ""),
             lw.PALETTE["orange"]),
        ]))
        self._show_table(cmp, s.get("policy"))

    def _show_table(self, cmp: PolicyComparison, mine: object) -> None:
        pad = self.is_lm  # only variable-length outputs are padded
        rows = [[("★ " if p == cmp.winner else "") + p + (" (yours)" if p == mine else ""),
                 fmt_num(r.capacity_tokens_per_s), fmt_num(delivered_per_s(r)),
                 spec.load_text(r), spec.tail_text(r, r.slo_value_s),
                 fmt_num(r.slo_ratio) if r.stable else "unbounded",
                 *([spec.tail_text(r, r.ttft_p99_s)] if self._ttft else []),
                 *([f"{r.padding_waste:.0%}"] if pad else []), pass_mark(r.slo_met)]
                for p, r in cmp.results.items()]
        self._set_details(html_table(
            ["policy", f"max ({self.unit})", f"delivered ({self.unit}; the offered load "
             "while stable)", "load / capacity",
             self.metric_name,
             "tail / SLO (the larger of TPOT's and TTFT's)" if self._ttft else "tail / SLO",
             *(["p99 TTFT"] if self._ttft else []),
             *(["padding"] if pad else []), "SLO"], rows))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        cmp = self._cmp(s)
        missed = [r for r in cmp.results.values() if not r.slo_met]
        if missed:
            title, detail = spec.slo_text(tr, cmp, missed)
            self.callouts["slo"].show(title, detail,
                                      self._slo_hint(s, [r.policy for r in missed]))
        else:
            self.callouts["slo"].clear()
        waste = float(cmp.results["static"].padding_waste)
        on = self.is_lm and waste >= PADDING_WASTE_MAX
        fix = self._fixes(s).get(PADDING) if on else None
        cv = float(str(s.get("cv", self.cv0)))
        self.callouts["padding"].set(on, *spec.padding_text(tr, cmp, self.unit, cv),
                                     None if fix is None else
                                     hint_text(self.controls, fix, check_label))
        winner = cmp.results[cmp.winner]
        self.callouts["boundary"].set(
            cmp.any_meets_slo, f"{cmp.winner} wins",
            f"{spec.why_text(tr, cmp, self.unit)}. Its tail is at {winner.slo_ratio:.0%} of "
            f"{spec.tail_limit(tr, winner)} and its load at {spec.load_text(winner)}: more "
            "load moves both.")

    @depends_on("batch", "rate")
    def _show_math(self, s: Settings) -> None:
        b, rate = self._batch(s), float(s["rate"])
        bench = self.bench
        times = (f"step τ(B) = {fmt_time(bench.step_s(b))}, p(1) = {fmt_time(bench.prefill_s(1))}"
                 if self.is_lm else
                 f"p(B) = {fmt_time(bench.prefill_s(b))}, p(1) = {fmt_time(bench.prefill_s(1))}")
        self.math.update(
            spec.capacity_tex(self.track)
            + f"<p>Now: B = {b}, λ = {fmt_num(rate)}/s, {times}, scheduler overhead o = "
            f"{fmt_time(self.track.scheduler_overhead_s)}, timeout "
            f"{fmt_time(self.track.batch_timeout_s)}. Source: "
            "<code>labkit.plans.workload.BatchingBench</code>.</p>")

    def takeaway(self) -> str:
        """The lab's Part C takeaway at the student's settings (HTML: the reason escaped)."""
        r = self.results
        return (f"Batching depends on the workload: at your Part C settings {r['winner']} "
                + ("wins" if r["any_meets_slo"] else "comes closest")
                + f" ({lw.esc(r['why'])}).")

    def ledger(self) -> dict[str, object]:
        """What Part C hands to later labs."""
        return {"batching_winner": self.results["winner"]}

    def _reveal_body(self) -> str:
        d = self.default_cmp
        body = spec.reveal_text(self.track, d, self.predict.label_for(d.winner),
                                str(self.results["winner"]), self.unit)
        return f"<div>{self._prediction_line()}.</div>{body}"
