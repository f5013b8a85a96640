"""Lab 1 Part C where one user leaves nothing to batch with: the model batches its own next
tokens, guessed by the track's proposer and checked in one pass, under the variance of how
many guesses each request accepts.

The view: controls and charts bound to :mod:`labkit.plans.speculation` (its points and
curve); the text is :mod:`~labkit.labs.inference_economy.part_c_tokens_spec`. Which Part C
a track gets is a predicate over its model (:attr:`labkit.tracks.Track.speculates`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from labkit import ui as lw
from labkit.core.format import counted, fmt, fmt_time
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
from labkit.labs.inference_economy import part_c_tokens_spec as spec
from labkit.labs.inference_economy.base import Part
from labkit.labs.inference_economy.hints import find_fixes, hint_text
from labkit.plans.serving import LeverFix
from labkit.plans.speculation import (
    SpeculationPoint,
    acceptance_shares,
    probe_tokens,
    speculation_of,
    speculation_point,
    weight_options,
)

SD_MAX = 30                  # the spread slider's top, % points: a Beta exists for every mean
MEAN_RANGE = (20, 85)        # average acceptance the "more" slider offers, %
STEP = 5                     # both sliders' step, % (whole numbers: exact on every stop)
CACHE_MAX = 4096             # points kept (the hint search revisits neighbours)
CURVE_INPUTS = ("weight_bits", "mean", "sd")


class PartCTokens(Part):
    """Guesses checked per pass against the tail request's time per token.

    Refresh steps: the curve over every number of guesses reads the precision and the
    acceptance (not the guesses); the acceptance chart reads only the acceptance; the
    marker, readout, table, callouts and math peek read every control.
    """

    letter = "C"
    _decision = decisions.part_c_tokens
    primary = ("k", "sd", "weight_bits")
    spec = spec

    def _setup(self) -> None:
        tr = self.track
        self._points: dict[tuple[int, int, float, float], SpeculationPoint] = {}
        self.speculation = speculation_of(tr)
        self.bits_options = weight_options(tr)
        self._setup_controls()
        start = decisions.tokens_start(self)
        self._start_at(start, decisions.tokens_start_note(self, start))
        self.k_pred = probe_tokens(tr)
        self.default_point = self.point({**self.settings(), "k": self.k_pred})
        self._expected = spec.outcome(self.default_point)
        self._setup_charts()
        self.callouts["slo"] = lw.callout("danger")
        self.callouts["variance"] = lw.callout("info")
        self.callouts["boundary"] = lw.callout("success")

    def _setup_controls(self) -> None:
        tr, sp = self.track, self.speculation
        c = self.controls
        c["k"] = lw.int_control("Guesses checked per pass (k)", 0, 0, sp.max_tokens)
        c["sd"] = lw.int_control("Acceptance spread (SD, % points)",
                                 round(100 * sp.acceptance_sd), 0, SD_MAX, STEP)
        bits = tr.weight_bits if tr.weight_bits in self.bits_options else self.bits_options[-1]
        c["weight_bits"] = lw.precision_control("Weight precision", bits, self.bits_options)
        c["mean"] = lw.int_control("Average acceptance of a guess (%)",
                                   round(100 * sp.acceptance_mean), *MEAN_RANGE, STEP)

    def _setup_charts(self) -> None:
        tr = self.track
        ks = np.arange(self.speculation.max_tokens + 1, dtype=float)
        self.ks = ks
        tx = lw.make_scale("linear", 0.0, float(ks[-1]))
        ty = lw.make_scale("linear", 0.0, 1.0)
        self.t_y = ty
        tail = spec.tail_name(self.default_point)
        self.m_curves = lw.line_mark(ks, np.zeros((2, ks.size)), tx, ty,
                                     colors=[lw.PALETTE["red"], lw.PALETTE["blue"]],
                                     labels=[tail, "average request"], legend=True,
                                     marker="circle", marker_size=20)
        self.m_slo = lw.hline_mark(tr.slo_s * 1e3, ty, color=lw.PALETTE["grey"],
                                   label="SLO", legend=True)
        self.m_here = lw.scatter_mark([0.0], [0.0], tx, ty)
        self.figures["tpot"] = lw.figure(
            [self.m_curves, self.m_slo, self.m_here], tx, ty,
            x_label="guesses checked per pass (k)", y_label="time per output token (ms)",
            title="Time per token as the pass checks more guesses", legend=True,
            x_tick_format="d", height=280, legend_location="top-right")
        ax = lw.make_scale("linear", 0.0, 100.0)
        ay = lw.make_scale("linear", 0.0, 1.0)
        self.a_y = ay
        self.m_shares = lw.bar_mark(np.zeros(1), np.zeros(1), ax, ay,
                                    colors=[lw.PALETTE["teal"]])
        self.m_tail = lw.vline_mark(0.0, ax, color=lw.PALETTE["red"], label=tail, legend=True)
        self.m_mean = lw.vline_mark(0.0, ax, color=lw.PALETTE["grey"], label="average",
                                    legend=True)
        self.figures["acceptance"] = lw.figure(
            [self.m_shares, self.m_tail, self.m_mean], ax, ay,
            x_label="guesses a request accepts (%)", y_label="share of requests (%)",
            title="How much each request's guesses are accepted", legend=True, height=240,
            legend_location="top-left")

    def _prediction_spec(self) -> Spec:
        return spec.prediction_spec(self.track, self.default_point)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.checkpoint_spec(self.track, self.default_point)

    # -- shared values ---------------------------------------------------------------------
    @staticmethod
    def acceptance(s: Mapping[str, object]) -> tuple[float, float]:
        """(mean, SD) of the acceptance at settings ``s``, as fractions (the sliders: %)."""
        return float(str(s["mean"])) / 100.0, float(str(s["sd"])) / 100.0

    def point(self, s: Mapping[str, object]) -> SpeculationPoint:
        """Part C's computed figures at settings ``s`` (kept per setting: the hint search
        and the curve revisit the same ones)."""
        mean, sd = self.acceptance(s)
        key = (int(str(s["k"])), int(str(s["weight_bits"])), mean, sd)
        if key not in self._points:
            if len(self._points) >= CACHE_MAX:
                self._points.clear()
            self._points[key] = speculation_point(self.track, k=key[0], weight_bits=key[1],
                                                  acceptance_mean=mean, acceptance_sd=sd)
        return self._points[key]

    @computed(ALL)
    def _point(self, s: Settings) -> SpeculationPoint:
        return self.point(s)

    @computed(*CURVE_INPUTS)
    def _curve(self, s: Settings) -> tuple[SpeculationPoint, ...]:
        """The point at every number of guesses, at the current precision and acceptance."""
        return tuple(self.point({**s, "k": k}) for k in range(self.speculation.max_tokens + 1))

    def failed(self, s: Mapping[str, object]) -> tuple[str, ...]:
        """``slo`` when the tail request's time per token is over the SLO."""
        return () if self.point(s).met else ("slo",)

    @computed(ALL)
    def _fixes(self, s: Settings) -> dict[str, LeverFix]:
        return find_fixes(s, self.controls, remembered(self, self.failed)) if self.failed(s) else {}

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on("_curve")
    def _draw_curve(self, s: Settings) -> None:
        curve = self._curve(s)
        y = np.asarray([[p.tpot_tail_s for p in curve], [p.tpot_mean_s for p in curve]]) * 1e3
        top = lw.nice_up(1.3 * max(float(y.max()), self.track.slo_s * 1e3))
        lw.update_marks({self.m_curves: {"y": y}, self.t_y: {"max": top}})

    @depends_on("mean", "sd")
    def _draw_acceptance(self, s: Settings) -> None:
        mean, sd = self.acceptance(s)
        x, shares = acceptance_shares(self.track, acceptance_mean=mean, acceptance_sd=sd)
        p = self._point(s)
        lw.update_marks({self.m_shares: {"x": 100.0 * x, "y": 100.0 * shares},
                         self.a_y: {"max": lw.nice_up(125.0 * float(shares.max()))}})
        lw.set_vline(self.m_tail, 100.0 * p.acceptance_tail)
        lw.set_vline(self.m_mean, 100.0 * p.acceptance_mean)

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results, the "you are here" marker, readout cards and the table."""
        p = self._point(s)
        tr = self.track
        lw.update_marks({self.m_here: {"x": [float(p.k)], "y": [p.tpot_tail_s * 1e3]}})
        self.results = {
            "k": p.k, "weight_bits": p.weight_bits, "acceptance_mean": p.acceptance_mean,
            "acceptance_sd": p.acceptance_sd, "acceptance_tail": p.acceptance_tail,
            "step_s": p.step.pass_s, "pass_s": p.check.pass_s, "tokens_tail": p.tokens_tail,
            "tpot_tail_s": p.tpot_tail_s, "tpot_mean_s": p.tpot_mean_s, "met": p.met,
            "slo_s": tr.slo_s, "expected": self._expected, "outcome": spec.outcome(p),
        }
        self._set_readout(metric_cards([
            (f"{spec.tail_name(p)}", fmt_time(p.tpot_tail_s), spec.tpot_card_sub(p),
             lw.PALETTE["green"] if p.met else lw.PALETTE["red"]),
            ("average request", fmt_time(p.tpot_mean_s),
             (f"{fmt(p.mean_speedup)}x as fast as without guesses" if p.k else
              "no guesses: one token a step"), lw.PALETTE["blue"]),
            ("one pass", fmt_time(p.check.pass_s),
             f"checks {counted(p.check.positions, 'position')}; a plain step "
             f"{fmt_time(p.step.pass_s)}", lw.PALETTE["purple"]),
            (f"tokens a pass, {spec.tail_name(p)}", fmt(p.tokens_tail),
             f"of at most {p.check.positions}", lw.PALETTE["orange"]),
        ]))
        rows = [[("★ " if q.k == p.k else "") + str(q.k), fmt_time(q.check.pass_s),
                 fmt(q.tokens_tail), fmt_time(q.tpot_tail_s), fmt_time(q.tpot_mean_s),
                 pass_mark(q.met)] for q in self._curve(s)]
        self._set_details(html_table(
            ["guesses k", "one pass", f"tokens a pass ({spec.tail_name(p)})",
             f"{spec.tail_name(p)} TPOT", "average request TPOT", "SLO"], rows))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        p = self._point(s)
        fix = self._fixes(s).get("slo")
        self.callouts["slo"].set(not p.met, *spec.slo_text(p),
                                 None if fix is None else
                                 hint_text(self.controls, fix, lambda _n: "the SLO"))
        self.callouts["variance"].set(p.k > 0 and p.tail_speedup < p.mean_speedup,
                                      *spec.variance_text(p))
        best = min(self._curve(s), key=lambda q: q.tpot_tail_s)
        self.callouts["boundary"].set(p.met, *spec.boundary_text(p, best.k))

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        self.math.update(spec.math_html(self.track, self._point(s)))

    def _reveal_body(self) -> str:
        body = spec.reveal_text(self.default_point, self.predict.label_for(self._expected),
                                self._point(self.settings()))
        return f"<div>{self._prediction_line()}.</div>{body}"

    def takeaway(self) -> str:
        """The lab's Part C takeaway at the student's settings."""
        return spec.takeaway(self._point(self.settings()))

    def ledger(self) -> dict[str, object]:
        """What Part C hands to later labs."""
        return {"guesses_per_pass": self.results["k"],
                "tail_tpot_s": self.results["tpot_tail_s"]}

