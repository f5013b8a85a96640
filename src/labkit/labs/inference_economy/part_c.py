"""Lab 1 Part C: batching under variance."""

from __future__ import annotations

from typing import Any

import numpy as np

from labkit import ui as lw
from labkit.core.format import fmt_num, fmt_time
from labkit.labs.common import (
    ALL,
    Settings,
    computed,
    depends_on,
    html_table,
    metric_cards,
    pass_mark,
)
from labkit.labs.inference_economy.base import SLO_RATIO_MAX, Part, arrivals_advice, event_noun
from labkit.physics.batching import (
    POLICIES,
    POLICY_LABELS,
    PolicyComparison,
    PolicyResult,
    compare_policies,
)
from labkit.plans.serving import (
    serving_plan,
    track_capacity,
)
from labkit.plans.workload import track_inputs as batching_track_inputs

PADDING_WASTE_MAX = 0.5   # the reference lab's failure line: half the slot-steps padded

# -- Part C ---------------------------------------------------------------------------------

class PartC(Part):
    """Four batching policies on the same simulated stream, against the SLO.

    Refresh steps: one simulation of the four policies reads every control, and every
    chart, the readout, the table and the callouts show it, so they all depend on every
    control; only the math peek skips the output-length spread (it shows the batch and the
    arrival rate).
    """

    letter = "C"

    def _setup(self) -> None:
        tr = self.track
        self.is_lm = tr.is_transformer
        self._ttft = self.is_lm  # a time to first token exists only for a language model
        plan0 = serving_plan(tr, with_baseline=False)
        self.rate0 = plan0.replica_arrival_rate_per_s
        self.slots0 = max(1, plan0.batch_size)
        cap = track_capacity(tr)
        self.max_b = max(self.slots0, min(max(2 * tr.batch_size, 8), cap.max_sessions))
        kw = batching_track_inputs(tr, batch_size=self.max_b)
        self.step_all = np.asarray(kw["step_s_by_batch"])
        self.prefill_all = np.asarray(kw["prefill_s_by_batch"])
        self.inputs: dict[str, Any] = {k: val for k, val in kw.items()
                                       if k not in ("step_s_by_batch", "prefill_s_by_batch")}
        self.cv0 = float(tr.output_tokens_cv)
        self.default_cmp = self._compare(self.slots0, self.cv0, self.rate0)
        self._expected = self.default_cmp.winner
        top = max(r.capacity_requests_per_s for r in self.default_cmp.results.values())
        peak = self._compare(self.max_b, self.cv0, self.rate0)
        cap_tok = max(max(r.capacity_tokens_per_s for r in cmp.results.values())
                      for cmp in (self.default_cmp, peak))
        if self.is_lm:
            cap_tok = max(cap_tok, *(r.capacity_tokens_per_s for r in
                                     self._compare(self.max_b, 0.0, self.rate0).results.values()))
        c = self.controls
        noun = event_noun(tr)
        if self.is_lm:
            c["cv"] = lw.float_control("Output-length spread (CV)", self.cv0, 0.0, 2.5, 0.1)
        if self.max_b > 1:
            c["batch"] = lw.int_control("Batch size / slots", self.slots0, 1, self.max_b)
        c["rate"] = lw.log_control(f"Arrivals per {tr.replica_noun} ({noun}s/s)", self.rate0,
                                   self.rate0 / 10, max(self.rate0 * 3, 1.5 * top))
        self.unit = f"{tr.output_unit}/s"
        self._setup_charts(cap_tok)
        self.callouts["slo"] = lw.Callout("danger")
        self.callouts["padding"] = lw.Callout("danger")
        self.callouts["boundary"] = lw.Callout("success")

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
            legend=True,
            height=260)
        lx = lw.make_scale("ordinal")
        ly = lw.make_scale("linear", 0.0, SLO_RATIO_MAX)
        q = "max" if tr.slo_quantile >= 1 else f"p{tr.slo_quantile * 100:g}"
        metric = "TPOT" if tr.slo_kind == "tpot" else "latency"
        self.metric_name = f"{q} {metric}"
        self.m_lat = lw.bar_mark(names, np.ones(4), lx, ly, colors=[lw.PALETTE["green"]] * 4,
                                 color_mode="no_group", label_display=True,
                                 label_display_format=".2f")
        self.m_slo = lw.hline_mark(1.0, ly, color=lw.PALETTE["red"])
        self.figures["latency"] = lw.figure(
            [self.m_lat, self.m_slo], lx, ly, x_label="batching policy",
            y_label=f"tail latency / SLO (capped at {SLO_RATIO_MAX:g})",
            title=f"{self.metric_name}{' (and TTFT)' if self._ttft else ''} against the SLO "
                  "(dashed: the limit)",
            height=260)
        self.m_waste: object | None = None
        # Padding needs outputs of different lengths in one batch: none for one frame or
        # window per request, none at a default of one sequence per batch (the table
        # still shows it once the batch grows).
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
        kw = dict(self.inputs)
        if self.is_lm:
            kw["cv"] = cv
        return compare_policies(step_s_by_batch=self.step_all[:batch],
                                prefill_s_by_batch=self.prefill_all[:batch],
                                arrival_rate_per_s=rate, **kw)

    def _prediction_spec(self) -> tuple[str, list[tuple[str, str]]]:
        tr = self.track
        spread = (f"output lengths with CV {self.cv0:g}, " if self.is_lm else "")
        q = (f"{lw.esc(tr.label)}: one {tr.replica_noun} with {self.slots0} batch slot(s), "
             f"{spread}"
             f"{fmt_num(self.rate0)} {event_noun(tr)}s/s arriving. Which policy wins: it meets "
             "the SLO with the most capacity (the simpler one when within 5%)?")
        return q, [(POLICY_LABELS[p].capitalize(), p) for p in POLICIES]

    def _checkpoint_spec(self) -> tuple[str, list[tuple[str, str]], str, dict[str, str]]:
        q = "Which rule should production use to choose a batching policy?"
        opts = [("The simplest policy that meets the SLO with (near-)top capacity",
                 "simplest_meeting_slo"),
                ("Always continuous batching: it is the most advanced", "always_continuous"),
                ("Never batch: batching only adds latency", "never"),
                ("The largest batch, whatever the tail latency", "max_batch")]
        good = ("Right: the winner depends on load, variance and the SLO, so the rule is "
                "conditional: meet the SLO first, then take capacity, preferring simplicity.")
        bad = ("Not quite: each fixed rule fails somewhere. The winner depends on load, "
               "length variance and the SLO: meet the SLO first, then take capacity.")
        return q, opts, "simplest_meeting_slo", {
            v: (good if v == "simplest_meeting_slo" else bad) for _, v in opts}

    # -- shared values ---------------------------------------------------------------------
    def _batch(self, s: Settings) -> int:
        return int(s.get("batch", self.slots0))

    @computed(ALL)
    def _cmp(self, s: Settings) -> PolicyComparison:
        """The four policies simulated at the current batch, spread and arrival rate."""
        return self._compare(self._batch(s), float(s.get("cv", self.cv0)), float(s["rate"]))

    def _why(self, cmp: PolicyComparison) -> str:
        """Why the winner won, in the track's unit (the physics says requests/s)."""
        win = cmp.results[cmp.winner]
        passing = [r for r in cmp.results.values() if r.slo_met]
        top = max(passing, key=lambda r: r.capacity_requests_per_s) if passing else win
        failed = [p for p in POLICIES if not cmp.results[p].slo_met]
        return (f"{win.policy} meets the SLO with the most capacity "
                f"({fmt_num(win.capacity_tokens_per_s)} {self.unit} per "
                f"{self.track.replica_noun})"
                + (f", within 5% of {top.policy}'s and simpler" if win is not top else "")
                + (f"; {', '.join(failed)} miss the SLO" if failed else ""))

    @staticmethod
    def _load(r: PolicyResult) -> str:
        """Offered load over capacity: a utilisation below 1, an overload above it (the
        queue then grows without bound, so no percentage of the capacity is meaningful)."""
        u = float(r.utilisation)
        return f"{u:.1%}" if u < 1 else f"{u:,.3g}x capacity (overloaded)"

    @staticmethod
    def _tail(r: PolicyResult, value: float) -> str:
        """A tail latency, or 'unbounded' where the queue grows without bound (a simulated
        figure then only measures how long the simulation ran)."""
        return fmt_time(value) if r.stable else "unbounded"

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw(self, s: Settings) -> None:
        res = [self._cmp(s).results[p] for p in POLICIES]
        tput = np.asarray([[r.capacity_tokens_per_s for r in res],
                           [r.throughput_tokens_per_s for r in res]])
        ratios = np.asarray([min(SLO_RATIO_MAX, r.slo_ratio if r.stable else SLO_RATIO_MAX)
                             for r in res])
        colors = [lw.PALETTE["green"] if r.slo_met else lw.PALETTE["red"] for r in res]
        changes: dict = {self.m_tput: {"y": tput}, self.m_lat: {"y": ratios, "colors": colors}}
        if self.m_waste is not None:
            changes[self.m_waste] = {"y": np.asarray([100.0 * r.padding_waste for r in res])}
        lw.update_marks(changes)

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results, readout cards and the policy table."""
        b, cv, rate = self._batch(s), float(s.get("cv", self.cv0)), float(s["rate"])
        cmp = self._cmp(s)
        res = [cmp.results[p] for p in POLICIES]
        winner = cmp.results[cmp.winner]
        self.results = {
            "winner": cmp.winner, "any_meets_slo": cmp.any_meets_slo, "reason": cmp.reason,
            "batch": b, "cv": cv, "arrival_rate_per_s": rate, "expected": self._expected,
            "default_winner": self.default_cmp.winner,
            "policies": {p: {"capacity_tokens_per_s": r.capacity_tokens_per_s,
                             "throughput_tokens_per_s": r.throughput_tokens_per_s,
                             "utilisation": r.utilisation, "stable": r.stable,
                             "slo_value_s": r.slo_value_s, "ttft_p99_s": r.ttft_p99_s,
                             "slo_ratio": r.slo_ratio, "slo_met": r.slo_met,
                             "padding_waste": r.padding_waste} for p, r in zip(POLICIES, res,
                                                                               strict=True)},
        }
        self._set_readout(metric_cards([
            ("winner", cmp.winner, POLICY_LABELS[cmp.winner],
             lw.PALETTE["green"] if cmp.any_meets_slo else lw.PALETTE["red"]),
            ("its capacity", f"{fmt_num(winner.capacity_tokens_per_s)} {self.unit}",
             f"load {self._load(winner)}", lw.PALETTE["blue"]),
            (f"its {self.metric_name}", fmt_time(winner.slo_value_s),
             f"SLO {fmt_time(self.track.slo_s)}", lw.PALETTE["purple"]),
            ("policies meeting the SLO", f"{sum(r.slo_met for r in res)} of 4",
             f"batch {b}" + (f", CV {cv:.1f}" if self.is_lm else ""), lw.PALETTE["orange"]),
        ]))
        pad = self.is_lm  # only variable-length outputs are padded
        rows = [[("★ " if p == cmp.winner else "") + p,
                 f"{fmt_num(r.capacity_tokens_per_s)}", f"{fmt_num(r.throughput_tokens_per_s)}",
                 self._load(r), self._tail(r, r.slo_value_s),
                 *([self._tail(r, r.ttft_p99_s)] if self._ttft else []),
                 *([f"{r.padding_waste:.0%}"] if pad else []), pass_mark(r.slo_met)]
                for p, r in zip(POLICIES, res, strict=True)]
        self._set_details(html_table(
            ["policy", f"max ({self.unit})", f"delivered ({self.unit})", "load / capacity",
             self.metric_name, *(["p99 TTFT"] if self._ttft else []),
             *(["padding"] if pad else []), "SLO"], rows))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        cmp = self._cmp(s)
        res = [cmp.results[p] for p in POLICIES]
        winner = cmp.results[cmp.winner]
        missed = [r for r in res if not r.slo_met]
        if missed:
            title = ("No policy meets the SLO at this load" if not cmp.any_meets_slo else
                     f"SLO miss: {', '.join(r.policy for r in missed)}")
            ttft = self.track.ttft_slo_s is not None
            detail = "; ".join(
                (f"{r.policy}: {self.metric_name} {fmt_time(r.slo_value_s)}"
                 + (f", p99 TTFT {fmt_time(r.ttft_p99_s)}" if ttft else "")
                 + f" ({r.slo_ratio:,.3g}x the limit)") if r.stable else
                (f"{r.policy}: overloaded ({self._load(r)}), its queue and tail grow "
                 "without bound")
                for r in missed)
            self.callouts["slo"].show(
                title, detail, f"{arrivals_advice(self.track)}, use smaller "
                "batches or a policy that does not wait for full batches"
                + (", and continuous batching when lengths vary" if self.is_lm else ""))
        else:
            self.callouts["slo"].clear()
        self._set_padding(cmp)
        self.callouts["boundary"].set(
            cmp.any_meets_slo, f"{cmp.winner} wins",
            f"{self._why(cmp)}. Its tail is at {winner.slo_ratio:.0%} of the SLO and its "
            f"load at {self._load(winner)}: more load moves both.")

    def _set_padding(self, cmp: PolicyComparison) -> None:
        """The padding-waste failure: static batching idles at least PADDING_WASTE_MAX of its
        slot-steps on padding (only variable-length outputs are padded)."""
        st, co = cmp.results["static"], cmp.results["continuous"]
        waste = float(st.padding_waste)
        gain = co.capacity_tokens_per_s / st.capacity_tokens_per_s - 1.0 \
            if st.capacity_tokens_per_s > 0 else 0.0
        better = (f"continuous batching refills a slot as soon as its sequence ends: "
                  f"{fmt_num(co.capacity_tokens_per_s)} {self.unit} per "
                  f"{self.track.replica_noun}, "
                  f"{gain:.0%} more than static" if gain > 0 else
                  "continuous batching refills slots but, at this batch, its scheduler "
                  "overhead costs more than the padding: bucket requests by length")
        self.callouts["padding"].set(
            self.is_lm and waste >= PADDING_WASTE_MAX,
            f"Padding waste: static batching idles {waste:.0%} of its slot-steps",
            f"Every static batch runs until its longest output ends; the shorter ones hold "
            f"their slots as padding ({waste:.0%} of slot-steps at batch "
            f"{st.batch_size}, CV {cmp.cv_tokens:.1f}). Static capacity: "
            f"{fmt_num(st.capacity_tokens_per_s)} {self.unit} per {self.track.replica_noun}.",
            better)

    @depends_on("batch", "rate")
    def _show_math(self, s: Settings) -> None:
        b, rate = self._batch(s), float(s["rate"])
        times = (f"τ(B) = {fmt_time(float(self.step_all[b - 1]))}, "
                 f"p(1) = {fmt_time(float(self.prefill_all[0]))}" if self.is_lm else
                 f"p(B) = {fmt_time(float(self.prefill_all[b - 1]))}, "
                 f"p(1) = {fmt_time(float(self.prefill_all[0]))}")
        self.math.update(
            self._capacity_tex()
            + f"<p>Now: B = {b}, λ = {fmt_num(rate)}/s, {times}, scheduler overhead o = "
            f"{fmt_time(self.track.scheduler_overhead_s)}, timeout "
            f"{fmt_time(self.track.batch_timeout_s)}. Source: "
            "<code>labkit.physics.batching.compare_policies</code>.</p>")

    def _capacity_tex(self) -> str:
        """The saturated-capacity formulas in the track's words. A CNN inference is one
        pass p(B) (the input pass of B inputs plus their B decisions): no output loop, so
        nothing is padded and continuous batching only adds its overhead o."""
        tr = self.track
        head = (f"<p>Saturated capacity of one {tr.replica_noun} ({event_noun(tr)}s/s), with "
                "batch B, ")
        if not self.is_lm:
            return (head + "p(B) the pass of a batch (input pass of B inputs plus their B "
                    "decisions) and o the scheduler overhead:</p>"
                    "$$\\text{static/dynamic: } \\frac{B}{p(B)} \\qquad "
                    "\\text{continuous: } \\frac{B}{p(B) + o}$$"
                    "<p>Each inference is one pass, so no slot is padded and there is no "
                    "output loop to refill: continuous batching only adds its overhead.</p>")
        return (head + "step time τ(B) and prefill p(B):</p>"
                "$$\\text{static/dynamic: } \\frac{B}{p(B) + (L_{\\max}-1)\\,\\tau(B)} "
                "\\qquad \\text{continuous: } \\frac{1}{p(1) + \\bar{L}\\,(\\tau(B)+o)/B}$$"
                "<p>Padding waste of a static batch: $1 - \\sum_i L_i / (B\\,L_{\\max})$. "
                "Continuous batching stretches every token by $1/(1-\\lambda\\,p(1))$.</p>")

    def _reveal_body(self) -> str:
        r = self.results
        d = self.default_cmp
        return (
            f"<div>{self._prediction_line()}.</div>"
            f"<div>At the track defaults: <b>{self.predict.label_for(d.winner)}</b>: "
            f"{lw.esc(self._why(d))}.</div>"
            f"<div>With your current settings the winner is <b>{r['winner']}</b>.</div>"
            "<div style='color:#5d6d7e'>Why: static batches wait to fill and pad to the "
            "longest member; dynamic batches cap the wait with a timeout; continuous batching "
            "refills slots every step but pays a scheduler overhead. Which one wins depends on "
            "the load, the spread and the SLO.</div>")
