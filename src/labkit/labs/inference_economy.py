"""Lab 1, "The Inference Economy": parts A-D and the synthesis, one source for every track.

Every number comes from :mod:`labkit` physics (:mod:`~labkit.physics.economy`,
:mod:`~labkit.physics.phases`, :mod:`~labkit.plans.serving`, :mod:`~labkit.physics.batching`); every difference
between the four tracks comes from track data (units, hooks, defaults, limits), never from
a branch on the track's id. Usage in a notebook::

    from labkit.labs.inference_economy import Lab
    lab = Lab("cloud_fleet")
    lab.header()
    part = lab.part("A")
    part.banner(); part.predict; part.explore; part.reveal; part.math; part.checkpoint
    lab.synthesis()

Answers (predictions, checkpoints, the memo) are kept in an :class:`AnswerStore` file under
lab id ``"lab1"`` and keys ``"<track>.<part>.prediction"``, ``"<track>.<part>.checkpoint"``
and ``"<track>.memo"`` (see :func:`answer_key`), so they survive save, nbgrader collect and
autograde. Each control's callback recomputes only what depends on it (what does not is
precomputed when the part is built) and updates marks in one ``hold_sync()`` block.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

import ipywidgets as ipw
import numpy as np

from labkit.core.answers import (
    AnswerStore,
    now_iso,
    record_ledger,
    write_json_atomic,
)
from labkit.core.format import fmt_num, fmt_time, format_bytes, plain, tex_num
from labkit.core.grids import PRECISIONS, context_options
from labkit.labs.common import LabPart, _cards, _download_link, _md_entry, _ok, _table, answer_key
from labkit.physics.batching import POLICIES, POLICY_LABELS, PolicyComparison, compare_policies
from labkit.physics.economy import Crossover
from labkit.physics.kvcache import weight_bytes
from labkit.physics.memory import StateCapacity, state_capacity
from labkit.physics.phases import RequestPhases, cnn_inference_time
from labkit.plans.economy import track_crossover
from labkit.plans.serving import (
    GUARDRAILS,
    GuardrailReport,
    release_guardrails,
    serving_plan,
    track_capacity,
)
from labkit.plans.workload import track_inputs as batching_track_inputs
from labkit.plans.workload import track_phases
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import PARTS, Track, custom_track, get_track
from labkit.ui import widgets as lw

LAB_ID = "lab1"
LAB_TITLE = "The Inference Economy"
TIME_ESTIMATE = "45-55 minutes: four parts of about 10-12 minutes each, then a 5-minute synthesis"
REPORT_MD = "labkit_report.md"
REPORT_JSON = "labkit_report.json"
REPORT_SCHEMA = "labkit-report"
REPORT_VERSION = 1
PART_TITLES = {
    "A": "Two amounts and a crossover",
    "B": "The state/KV wall",
    "C": "Batching under variance",
    "D": "Release review",
}
PART_MINUTES = {"A": "10-12 min", "B": "10 min", "C": "10-12 min", "D": "12-15 min"}
CROSSOVER_BUCKETS = ("days", "weeks", "months", "never")
SESSION_BUCKETS = ("one", "few", "modest", "many")
BINDING_CHOICES = (*GUARDRAILS, "none")
DAYS_BUCKET_MAX = 14.0     # "days": within two weeks
WEEKS_BUCKET_MAX = 70.0    # "weeks": within ten weeks; "months": later, within the horizon
FEW_MAX, MODEST_MAX = 4, 32
MAX_WINDOWS = 16           # sensor windows a CNN session may hold in Part B
OFF_SCALE = 3.0            # guardrail ratio shown for "not evaluable" / beyond the chart
SLO_RATIO_MAX = 4.0


# -- buckets --------------------------------------------------------------------------------

def crossover_bucket(days: float | None, horizon_days: float) -> str:
    """days (<= 14) | weeks (<= 70) | months (<= horizon) | never (beyond the horizon)."""
    if days is None or not math.isfinite(days) or days > horizon_days:
        return "never"
    if days <= DAYS_BUCKET_MAX:
        return "days"
    if days <= WEEKS_BUCKET_MAX:
        return "weeks"
    return "months"


def session_bucket(sessions: int) -> str:
    """one (0 or 1) | few (2-4) | modest (5-32) | many (> 32)."""
    if sessions <= 1:
        return "one"
    if sessions <= FEW_MAX:
        return "few"
    if sessions <= MODEST_MAX:
        return "modest"
    return "many"


# -- formatting -----------------------------------------------------------------------------

def fmt_cost(x: float | None, unit: str) -> str:
    """``12,139 USD``, ``583 mWh``, ``0.0014 USD`` (no '$': it would start LaTeX math)."""
    return "n/a" if x is None else f"{fmt_num(x)} {unit}"


def fmt_days(days: float | None, horizon: float | None = None) -> str:
    if days is None or not math.isfinite(days):
        return (f"not within {horizon:g} days" if horizon else "never")
    if days < 1 / 24:
        return f"{days * 1440:.3g} minutes"
    if days < 1:
        return f"{days * 24:.3g} hours"
    if days < DAYS_BUCKET_MAX:
        return f"{days:.3g} days"
    if days <= WEEKS_BUCKET_MAX:
        return f"{days:.3g} days ({days / 7:.3g} weeks)"
    return f"{days:,.0f} days ({days / 30.44:.3g} months)"


def _unit_scale(nbytes: float) -> tuple[float, str]:
    for size, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if nbytes >= size:
            return size, unit
    return 1.0, "B"


def _max_devices(tr: Track) -> int:
    """Devices one replica may span: the fast domain, capped by devices the owner has."""
    dom = get_hardware(tr.hardware_id).domain_size
    limit = dom if tr.max_replicas is None else min(dom, tr.max_replicas)
    return max(limit, tr.devices_per_replica)


def _event_noun(tr: Track) -> str:
    return "request" if tr.is_transformer else "inference"


def _cost_noun(tr: Track) -> str:
    return "serving bill" if tr.cost_unit == "USD" else "inference energy"


def _guardrail_label(name: str) -> str:
    return {"memory": "memory", "slo": "SLO", "quality": "quality", "cost": "cost",
            "none": "none"}[name]


# -- parts ----------------------------------------------------------------------------------

class Part(LabPart):
    """A Lab 1 part (the skeleton is :class:`labkit.labs.common.LabPart`)."""

    lab_id = LAB_ID
    titles = PART_TITLES
    minutes = PART_MINUTES

    def _hook(self) -> str:
        return self.track.narrative.hooks[self.letter]


# -- Part A ---------------------------------------------------------------------------------

class PartA(Part):
    """Setup vs recurring cost, and where one request's time goes (prefill vs decode)."""

    letter = "A"

    def _setup(self) -> None:
        tr = self.track
        self.is_lm = tr.is_transformer
        noun = _event_noun(tr)
        self.bits_options = sorted({b for b in PRECISIONS
                                    if not track_capacity(tr, weight_bits=b).oom}
                                   | {tr.weight_bits})
        d0 = tr.demand_rate_per_s
        self.controls["demand"] = lw.log_control(f"Demand ({noun}s/s)", d0, d0 / 10, d0 * 10)
        out_hi = None
        if self.is_lm:
            model = get_model(tr.model_id)
            out_hi = int(min(4 * tr.output_tokens, model.max_context - tr.prompt_tokens))
            out_hi -= out_hi % 16
            self.controls["output_tokens"] = lw.int_control(
                "Output tokens per request", tr.output_tokens, 16, out_hi, 16)
        self.controls["saving_pct"] = lw.float_control(
            "Optimisation saving on cost per event (%)", 0.0, 0.0, 50.0, 5.0, ".0f")
        self.controls["weight_bits"] = lw.precision_control(
            "Weight precision", tr.weight_bits, self.bits_options)

        self.default: Crossover = track_crossover(tr)
        self.default_phases: RequestPhases = track_phases(tr)
        self._expected = crossover_bucket(self.default.crossover_days, tr.horizon_days)

        # Fixed log-log domain spanning every reachable setting, so a change moves the line.
        outs = (16, out_hi) if self.is_lm else (None,)
        cpes = [custom_track(tr, weight_bits=b, **({"output_tokens": n} if n else {}))
                .cost_per_event for b in self.bits_options for n in outs]
        ev = tr.events_per_day
        max_daily, min_daily = max(cpes) * ev * 10, min(cpes) * ev / 10 * 0.5
        horizon = float(tr.horizon_days)
        t_min = tr.setup_cost / max_daily if max_daily > 0 else horizon
        self.x_lo = 10 ** math.floor(math.log10(max(1e-5, min(1 / 24, t_min / 3))))
        y_lo = 10 ** math.floor(math.log10(max(1e-12, min(tr.setup_cost / 10,
                                                          min_daily * self.x_lo))))
        y_hi = 10 ** math.ceil(math.log10(max(tr.setup_cost * 10, max_daily * horizon)))
        self.days = np.geomspace(self.x_lo, horizon, 240)

        xs = lw.make_scale("log", self.x_lo, horizon)
        ys = lw.make_scale("log", y_lo, y_hi)
        self.x_scale, self.y_scale = xs, ys
        rules = [d for d in (1.0, DAYS_BUCKET_MAX, WEEKS_BUCKET_MAX) if self.x_lo < d < horizon]
        self.m_rules = lw.vlines_mark(rules, xs)
        setup_label = f"one-time setup ({fmt_cost(tr.setup_cost, tr.cost_unit)})"
        self.m_setup = lw.hline_mark(tr.setup_cost, ys, color=lw.PALETTE["orange"],
                                     label=setup_label, legend=True)
        self.m_default = lw.line_mark(self.days, self.default.daily_cost * self.days, xs, ys,
                                      colors=[lw.PALETTE["grey"]], line_style="dashed",
                                      labels=["track defaults"], legend=True, stroke_width=2)
        self.m_current = lw.line_mark(self.days, self.default.daily_cost * self.days, xs, ys,
                                      colors=[lw.PALETTE["blue"]], labels=["your settings"],
                                      legend=True)
        self.m_cross = lw.vline_mark(self.x_lo, xs, color=lw.PALETTE["red"])
        self.m_cross_pt = lw.scatter_mark([self.x_lo], [tr.setup_cost], xs, ys)
        ticks = [t for t in (1e-4, 1e-3, 1e-2, 0.1, 1, 7, 30, 365) if self.x_lo <= t <= horizon]
        self.figures["crossover"] = lw.figure(
            [self.m_rules, self.m_setup, self.m_default, self.m_current, self.m_cross,
             self.m_cross_pt], xs, ys,
            x_label="days since launch (log scale; dotted: 1 day, 2 and 10 weeks)",
            y_label=f"cumulative cost ({tr.cost_unit}, log)",
            title=f"Cumulative recurring {_cost_noun(tr)} vs the one-time setup",
            legend=True, x_tick_values=ticks, x_tick_format=".3~g", y_tick_format=".2~e",
            height=320)

        labels = self.default_phases.phase_labels
        self.phase_names = [labels["prefill"], labels["decode"]]
        bx = lw.make_scale("ordinal")
        by = lw.make_scale("linear", 0.0, 100.0)
        self.m_phase = lw.bar_mark(self.phase_names, [50.0, 50.0], bx, by,
                                   colors=[lw.PALETTE["teal"], lw.PALETTE["purple"]],
                                   color_mode="no_group", label_display=True,
                                   label_display_format=".1f")
        self.figures["phases"] = lw.figure(
            [self.m_phase], bx, by, x_label=f"phase of one {noun}",
            y_label="share of the request's time (%)",
            title=f"Where one {noun}'s time goes", height=260)
        self.callouts["budget"] = lw.Callout("danger")
        self.callouts["boundary"] = lw.Callout("success")

    def _prediction_spec(self) -> tuple[str, list[tuple[str, str]]]:
        tr = self.track
        h = tr.horizon_days
        q = (f"{lw.esc(tr.label)}: at the track's default settings, when does the cumulative "
             f"recurring {_cost_noun(tr)} ({tr.cost_unit}) overtake the one-time setup budget "
             f"of {fmt_cost(tr.setup_cost, tr.cost_unit)}?")
        return q, [
            ("Days: within two weeks of launch", "days"),
            ("Weeks: between two and ten weeks", "weeks"),
            (f"Months: after ten weeks, within the {h}-day horizon", "months"),
            (f"Never within the {h}-day horizon: setup dominates", "never"),
        ]

    def _checkpoint_spec(self) -> tuple[str, list[tuple[str, str]], str, dict[str, str]]:
        q = ("An optimisation cuts the cost of every event by a fraction s. What does it do to "
             "the crossover day t*?")
        opts = [("It moves t* later, by the factor 1/(1 - s)", "later"),
                ("It moves t* earlier", "earlier"),
                ("Nothing: t* depends only on the setup budget", "nothing"),
                ("It removes the crossover for any s > 0", "removes")]
        good = ("Right: t* = setup / (cost per event x (1 - s) x events per day), so the "
                "recurring line tilts down and meets the setup line later.")
        bad = ("Not quite: t* = setup / (cost per event x (1 - s) x events per day). A saving "
               "lowers the daily bill, which moves t* later by 1/(1 - s); it never removes it.")
        return q, opts, "later", {v: (good if v == "later" else bad) for _, v in opts}

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr = self.track
        kw: dict[str, object] = {"demand_rate_per_s": float(s["demand"]),  # type: ignore[arg-type]
                                 "weight_bits": int(s["weight_bits"])}  # type: ignore[call-overload]
        if self.is_lm:
            kw["output_tokens"] = int(s["output_tokens"])  # type: ignore[call-overload]
        ct = custom_track(tr, **kw)
        saving = float(s["saving_pct"]) / 100.0  # type: ignore[arg-type]
        cx = track_crossover(ct, optimisation_saving=saving)
        ph = track_phases(ct)
        t = cx.crossover_days
        bucket = crossover_bucket(t, tr.horizon_days)
        daily = float(cx.daily_cost)
        total = ph.prefill_s + ph.decode_s
        shares = [100.0 * ph.prefill_s / total, 100.0 * ph.decode_s / total]
        t_plot = tr.setup_cost / daily if daily > 0 else None
        visible = t_plot is not None and t_plot <= tr.horizon_days
        upd: dict = {self.m_current: {"y": daily * self.days},
                     self.m_phase: {"y": shares},
                     self.m_cross_pt: {"visible": visible}}
        if visible:
            upd[self.m_cross] = {"x": [t_plot, t_plot], "visible": True}
            upd[self.m_cross_pt] = {"x": [t_plot], "y": [tr.setup_cost], "visible": True}
        else:
            upd[self.m_cross] = {"visible": False}
        lw.update_marks(upd)

        wbytes = weight_bytes(get_model(tr.model_id), int(s["weight_bits"]),  # type: ignore[call-overload]
                              include_lm_head=self.is_lm)
        budget_ratio = daily / tr.daily_budget
        self.results = {
            "cost_per_event": ct.cost_per_event, "effective_cost_per_event":
            cx.effective_cost_per_event, "events_per_day": ct.events_per_day,
            "daily_cost": daily, "daily_budget": tr.daily_budget, "budget_ratio": budget_ratio,
            "crossover_days": t, "bucket": bucket, "annual_savings": float(cx.annual_savings),
            "prefill_s": ph.prefill_s, "decode_s": ph.decode_s, "tpot_s": ph.tpot_s,
            "binding_phase": ph.binding_phase, "binding_label": ph.binding_label,
            "weight_bytes": wbytes, "cost_unit": tr.cost_unit,
            "default_crossover_days": self.default.crossover_days, "expected": self._expected,
        }
        u = tr.cost_unit
        noun = _event_noun(tr)
        self._set_readout(_cards([
            (f"cost per {noun}", fmt_cost(cx.effective_cost_per_event, u),
             f"before saving {fmt_cost(ct.cost_per_event, u)}", lw.PALETTE["blue"]),
            ("recurring per day", fmt_cost(daily, u),
             f"{fmt_num(ct.events_per_day)} {noun}s/day", lw.PALETTE["orange"]),
            ("crossover", fmt_days(t, tr.horizon_days), f"bucket: {bucket}",
             lw.PALETTE["red"]),
            ("binding phase", ph.binding_label,
             f"{fmt_time(ph.prefill_s)} vs {fmt_time(ph.decode_s)}", lw.PALETTE["purple"]),
            ("weights", format_bytes(wbytes), f"at {s['weight_bits']}-bit",
             lw.PALETTE["teal"]),
        ]))
        over = daily > tr.daily_budget
        levers = "raise the optimisation saving, lower the weight precision"
        if self.is_lm:
            levers += ", shorten outputs"
        self.callouts["budget"].set(
            over, "Over the daily budget",
            f"The recurring {_cost_noun(tr)} is {fmt_cost(daily, u)}/day against a budget of "
            f"{fmt_cost(tr.daily_budget, u)}/day ({budget_ratio:.2f}x).",
            f"{levers}, or serve less demand.")
        self.callouts["boundary"].set(
            not over, f"Within the daily budget ({budget_ratio:.0%} used)",
            f"{fmt_cost(daily, u)}/day of {fmt_cost(tr.daily_budget, u)}; the recurring line "
            f"crosses the setup budget after {fmt_days(t, tr.horizon_days)}. Watch demand: "
            f"it scales the bill one for one.")
        b_eff = tr.batch_size if tr.cost_unit == "USD" else 1
        c_ev = r"c_{\text{event}}"
        if u == "USD":
            cost_tex = (
                f"$${c_ev} = \\frac{{d\\,p}}{{3600}}\\left(t_{{\\text{{prefill}}}} + "
                f"\\frac{{t_{{\\text{{decode}}}}}}{{B}}\\right) = "
                f"\\frac{{{tr.devices_per_replica} \\times {tr.price_per_device_hour:g}}}{{3600}}"
                f"\\left({ph.prefill_s:.3g} + \\frac{{{ph.decode_s:.3g}}}{{{b_eff}}}\\right) = "
                f"{tex_num(ct.cost_per_event)}\\ \\text{{USD}}$$")
        else:
            busy = ph.prefill_s + ph.decode_s / b_eff
            cost_tex = (
                f"$${c_ev} = \\frac{{d\\,P\\,(t_{{\\text{{in}}}} + t_{{\\text{{out}}}})}}"
                f"{{J_{{\\text{{{u}}}}}}} = \\frac{{{tr.devices_per_replica} \\times "
                f"{tr.power_w:g}\\ \\text{{W}} \\times {busy:.3g}\\ \\text{{s}}}}"
                f"{{{tr.joules_per_cost_unit:g}\\ \\text{{J}}}} = "
                f"{tex_num(ct.cost_per_event)}\\ \\text{{{u}}}$$")
        t_tex = "\\infty" if daily == 0 else tex_num(tr.setup_cost / daily)
        n_day = r"N_{\text{day}}"
        self.math.update(
            "<p>Recurring cost grows linearly; the setup is paid once:</p>"
            f"$$C(t) = {c_ev}\\,(1-s)\\,{n_day}\\,t, \\qquad t^* = "
            f"\\frac{{C_{{\\text{{setup}}}}}}{{{c_ev}\\,(1-s)\\,{n_day}}} = "
            f"\\frac{{{tex_num(tr.setup_cost)}}}{{{tex_num(ct.cost_per_event)} \\times "
            f"{1 - saving:.2f} \\times {tex_num(ct.events_per_day)}}} = {t_tex}"
            "\\ \\text{days}$$"
            f"<p>Cost of one {noun} from its busy time ({ph.phase_labels['prefill']} "
            f"{fmt_time(ph.prefill_s)}, {ph.phase_labels['decode']} {fmt_time(ph.decode_s)}):</p>"
            f"{cost_tex}"
            f"<p>Annual saving of s = {saving:.0%}: "
            f"{fmt_cost(float(cx.annual_savings), u)}. Source: "
            "<code>labkit.physics.economy.track_crossover</code>, "
            "<code>labkit.physics.phases.track_phases</code>.</p>")

    def _reveal_body(self) -> str:
        tr = self.track
        r = self.results
        d0 = self.default.crossover_days
        daily0 = float(self.default.daily_cost)
        return (
            f"<div>{self._prediction_line()}.</div>"
            f"<div>At the track defaults: {fmt_cost(tr.setup_cost, tr.cost_unit)} / "
            f"{fmt_cost(daily0, tr.cost_unit)} per day = <b>{fmt_days(d0, tr.horizon_days)}</b>"
            f" → <b>{self.predict.label_for(self._expected)}</b>.</div>"
            f"<div>With your current settings: <b>{fmt_days(r['crossover_days'], tr.horizon_days)}"  # type: ignore[arg-type]
            f"</b> (bucket: {r['bucket']}).</div>"
            f"<div style='color:#5d6d7e'>Why: the setup is paid once, the recurring cost every "
            f"day; t* = setup / daily cost, so demand and cost per event move it one for one. "
            f"Inside one {_event_noun(tr)}, the {r['binding_label']} takes "
            f"{fmt_time(max(r['prefill_s'], r['decode_s']))} of "  # type: ignore[type-var]
            f"{fmt_time(r['prefill_s'] + r['decode_s'])}.</div>")  # type: ignore[operator]


# -- Part B ---------------------------------------------------------------------------------

class PartB(Part):
    """How many live sessions (KV caches, or sensor windows + activations) fit beside weights."""

    letter = "B"

    def _setup(self) -> None:
        tr = self.track
        self.hw = get_hardware(tr.hardware_id)
        self.model = get_model(tr.model_id)
        self.is_lm = tr.is_transformer
        self.max_dev = _max_devices(tr)
        self.slots = tr.batch_size
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        if self.is_lm:
            c["kv_bits"] = lw.precision_control("KV-cache precision", tr.kv_bits,
                                                sorted({4, 8, 16, tr.kv_bits}))
            self.grid = context_options(self.model.max_context, int(tr.context_tokens), 256)  # type: ignore[arg-type]
            c["context"] = lw.context_control(int(tr.context_tokens), self.model.max_context,  # type: ignore[arg-type]
                                              256, "Context per session (tokens)")
        else:
            self.act_bytes = {b: float(cnn_inference_time(self.hw, self.model, b, 1).bytes_moved)
                              - weight_bytes(self.model, b) for b in PRECISIONS}
            self.grid = list(range(1, MAX_WINDOWS + 1))
            c["windows"] = lw.int_control("Sensor windows held per session", 1, 1, MAX_WINDOWS)
        if self.max_dev > 1:
            c["devices"] = lw.devices_control(tr.devices_per_replica, self.max_dev)

        d0 = self._defaults()
        self.default_cap = self._capacity(d0)
        self.default_curve = np.asarray(self._curve(d0), dtype=float)
        self._expected = session_bucket(self.default_cap.max_sessions)

        mem_max = self.hw.usable_memory_bytes * self.max_dev
        self.scale, self.unit = _unit_scale(mem_max)
        cats = ["weights + 1 session"]
        if self.slots > 1:
            cats.append(f"weights + {self.slots} batch slots")
        cats.append("weights + max sessions")
        self.cats = cats
        bx = lw.make_scale("ordinal")
        by = lw.make_scale("linear", 0.0, 1.0)
        self.mem_y = by
        state_name = "KV cache" if self.is_lm else "windows + activations"
        self.m_mem = lw.bar_mark(cats, np.zeros((3, len(cats))), bx, by,
                                 colors=[lw.PALETTE["blue"], lw.PALETTE["orange"],
                                         lw.PALETTE["light"]],
                                 labels=["weights", state_name, "free"])
        self.m_cap = lw.hline_mark(0.0, by, color=lw.PALETTE["red"])
        where = "memory" if self.default_cap.weight_location == "memory" else "SRAM"
        self.figures["memory"] = lw.figure(
            [self.m_mem, self.m_cap], bx, by, x_label="what the replica holds",
            y_label=f"{where} ({self.unit})",
            title=f"Weights (blue) + {state_name} (orange) + free (grey) vs usable memory "
                  "(red dashed)", height=300)

        sx = lw.make_scale("log" if self.is_lm else "linear",
                           float(self.grid[0]), float(self.grid[-1]))
        sy = lw.make_scale("linear", 0.0, 1.0)
        self.sess_y = sy
        gx = np.asarray(self.grid, dtype=float)
        self.m_sess_default = lw.line_mark(gx, self.default_curve, sx, sy,
                                           colors=[lw.PALETTE["grey"]], line_style="dashed",
                                           labels=["track defaults"], legend=True,
                                           stroke_width=2)
        self.m_sess = lw.line_mark(gx, self.default_curve, sx, sy, colors=[lw.PALETTE["blue"]],
                                   labels=["your settings"], legend=True, marker="circle",
                                   marker_size=24)
        self.m_slots = lw.hline_mark(float(self.slots), sy, color=lw.PALETTE["orange"],
                                     label=f"{self.slots} batch slot(s)", legend=True)
        self.m_here = lw.scatter_mark([gx[0]], [0.0], sx, sy)
        self.figures["sessions"] = lw.figure(
            [self.m_sess_default, self.m_sess, self.m_slots, self.m_here], sx, sy,
            x_label=("context per session (tokens, log scale)" if self.is_lm
                     else "sensor windows held per session"),
            y_label="concurrent sessions that fit",
            title="Sessions that fit as the state per session grows", legend=True,
            x_tick_format=".3~s" if self.is_lm else "d", height=280,
            legend_location="top-right")
        self.callouts["oom"] = lw.Callout("danger")
        self.callouts["batch_cap"] = lw.Callout("warn")
        self.callouts["boundary"] = lw.Callout("success")

    def _defaults(self) -> dict[str, object]:
        tr = self.track
        d: dict[str, object] = {"weight_bits": tr.weight_bits,
                                "devices": tr.devices_per_replica}
        if self.is_lm:
            d.update(kv_bits=tr.kv_bits, context=int(tr.context_tokens))  # type: ignore[arg-type]
        else:
            d["windows"] = 1
        return d

    def _state_bytes(self, wb: int, windows: int) -> float:
        return windows * self.track.window_bytes + self.act_bytes[wb]

    def _capacity(self, s: Mapping[str, object], x: float | None = None) -> StateCapacity:
        tr = self.track
        wb = int(s["weight_bits"])  # type: ignore[call-overload]
        dev = int(s.get("devices", tr.devices_per_replica))  # type: ignore[call-overload]
        if self.is_lm:
            ctx = float(s["context"] if x is None else x)  # type: ignore[arg-type]
            return track_capacity(tr, context_tokens=ctx, weight_bits=wb,
                                  kv_bits=int(s["kv_bits"]), devices_per_replica=dev)  # type: ignore[call-overload]
        win = int(s["windows"] if x is None else x)  # type: ignore[call-overload]
        return state_capacity(self.hw, self.model, weight_bits=wb, kv_bits=tr.kv_bits,
                              devices_per_replica=dev,
                              reserve_fraction=tr.memory_reserve_fraction,
                              state_bytes_per_request=self._state_bytes(wb, win))

    def _curve(self, s: Mapping[str, object]) -> list[int]:
        return [self._capacity(s, x).max_sessions for x in self.grid]

    def _prediction_spec(self) -> tuple[str, list[tuple[str, str]]]:
        tr = self.track
        cap = self.default_cap
        state = (f"{tr.kv_bits}-bit KV cache at {int(tr.context_tokens):,} tokens of context"  # type: ignore[arg-type]
                 if self.is_lm else "one sensor window plus its activations")
        q = (f"{lw.esc(tr.label)}: one replica of {cap.devices} x {lw.esc(self.hw.name)} holds "
             f"the {tr.weight_bits}-bit weights of {lw.esc(self.model.name)}. With {state} per "
             "session, how many concurrent sessions fit beside the weights?")
        return q, [
            ("One or none: memory fails almost at once", "one"),
            (f"A few (2-{FEW_MAX}): state is the first wall", "few"),
            (f"Tens ({FEW_MAX + 1}-{MODEST_MAX}): state is visible but not binding", "modest"),
            (f"Many (more than {MODEST_MAX}): if the weights fit, serving fits", "many"),
        ]

    def _checkpoint_spec(self) -> tuple[str, list[tuple[str, str]], str, dict[str, str]]:
        q = "Once the weights are resident, what decides how many sessions a replica holds?"
        opts = [("The bytes each live session holds against the memory left after the "
                 "weights", "state"),
                ("The device's peak FLOP/s", "compute"),
                ("Nothing: if the weights fit, every session fits", "weights_only"),
                ("Only the number of devices, whatever the precision", "devices")]
        good = ("Right: sessions = floor((memory - weights) / bytes per session). Precision, "
                "context (or windows held) and devices all act through that ratio.")
        bad = ("Not quite: sessions = floor((memory - weights) / bytes per session). FLOP/s "
               "never appears; devices help only by adding memory.")
        return q, opts, "state", {v: (good if v == "state" else bad) for _, v in opts}

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr = self.track
        cap = self._capacity(s)
        curve = np.asarray(self._curve(s), dtype=float)
        per, n = cap.bytes_per_session, cap.max_sessions
        w_here = cap.weight_bytes if cap.weight_location == "memory" else 0.0
        counts = [1] + ([self.slots] if self.slots > 1 else []) + [n]
        weights_row = [w_here] * len(counts)
        state_row = [k * per for k in counts]
        free_row = [max(0.0, cap.memory_bytes - w_here - k * per) for k in counts]
        y = np.asarray([weights_row, state_row, free_row]) / self.scale
        capacity = cap.memory_bytes / self.scale
        tallest = float(np.max(y.sum(axis=0)))
        mem_top = min(3.0 * capacity, 1.12 * max(capacity, tallest))
        x_now = float(s["context"] if self.is_lm else s["windows"])  # type: ignore[arg-type]
        sess_top = 1.5 * max(float(curve.max()), float(self.default_curve.max()),
                             float(self.slots), 1.0)  # headroom for the legend
        lw.update_marks({
            self.m_mem: {"y": y},
            self.m_cap: {"y": [capacity, capacity]},
            self.mem_y: {"max": mem_top},
            self.m_sess: {"y": curve},
            self.sess_y: {"max": sess_top},
            self.m_here: {"x": [x_now], "y": [float(n)]},
        })
        state_name = "KV cache" if self.is_lm else "window + activations"
        self.results = {
            "max_sessions": n, "oom": cap.oom, "bucket": session_bucket(n),
            "bytes_per_session": per, "weight_bytes": cap.weight_bytes,
            "weight_location": cap.weight_location, "memory_bytes": cap.memory_bytes,
            "free_bytes": cap.free_bytes, "batch_slots": self.slots, "reason": cap.reason,
            "devices": cap.devices, "default_max_sessions": self.default_cap.max_sessions,
            "expected": self._expected,
        }
        wloc = ("beside them" if cap.weight_location == "memory"
                else f"in flash ({format_bytes(cap.weight_limit_bytes)})")
        self._set_readout(_cards([
            ("sessions that fit", "OOM" if cap.oom else f"{n:,}",
             f"bucket: {session_bucket(n)}", lw.PALETTE["red"] if cap.oom else lw.PALETTE["green"]),
            (f"{state_name} per session", format_bytes(per),
             f"{format_bytes(n * per)} for all of them", lw.PALETTE["orange"]),
            ("weights", format_bytes(cap.weight_bytes), wloc, lw.PALETTE["blue"]),
            ("usable memory", format_bytes(cap.memory_bytes),
             f"{cap.devices} device(s), {tr.memory_reserve_fraction:.0%} reserve",
             lw.PALETTE["grey"]),
        ]))
        levers = ["lower the weight precision"]
        if self.is_lm:
            levers += ["lower the KV precision", "shorten the context"]
        else:
            levers.append("hold fewer windows per session")
        if "devices" in self.controls:
            levers.append("add devices per replica")
        recovery = ", ".join(levers)
        self.callouts["oom"].set(
            cap.oom, "Out of memory: weights + one session do not fit",
            lw.esc(cap.reason) + ". There is no negative session count: the replica cannot "
            "serve at all.", recovery)
        short = (not cap.oom) and n < self.slots
        self.callouts["batch_cap"].set(
            short, f"Memory caps the batch at {n} of {self.slots} slots",
            f"The scheduler wants {self.slots} concurrent sessions; only {n} fit.", recovery)
        nxt = self._next_step(s)
        self.callouts["boundary"].set(
            (not cap.oom) and not short, f"{n:,} sessions fit",
            f"{nxt[0].upper()}{nxt[1:]}.")
        unit = "context" if self.is_lm else "windows held"
        per_tex = (f"\\text{{kv\\_bytes\\_per\\_token}} \\times {int(x_now):,} \\times "
                   f"\\text{{TP share}}" if self.is_lm
                   else f"{int(x_now)} \\times {tex_num(tr.window_bytes)} + "
                        f"{tex_num(self.act_bytes[int(s['weight_bits'])])}")  # type: ignore[call-overload]
        self.math.update(
            "<p>Sessions that fit on one replica (weights in "
            f"{cap.weight_location}):</p>"
            "$$N = \\left\\lfloor \\frac{M_{\\text{usable}} - W}{S_{\\text{session}}} "
            f"\\right\\rfloor = \\left\\lfloor \\frac{{{tex_num(cap.memory_bytes)} - "
            f"{tex_num(w_here)}}}{{{tex_num(per)}}} \\right\\rfloor = {n}$$"
            f"$$S_{{\\text{{session}}}} = {per_tex} = {tex_num(per)}\\ \\text{{bytes}}$$"
            f"<p>The state grows linearly with the {unit}; weights shrink with precision. "
            "Source: <code>labkit.plans.serving.state_capacity</code>.</p>")

    def _next_step(self, s: Mapping[str, object]) -> str:
        x = s["context"] if self.is_lm else s["windows"]
        grid = list(self.grid)
        i = grid.index(x) if x in grid else 0
        if i + 1 >= len(grid):
            return "this is the largest state per session the controls allow"
        nxt = grid[i + 1]
        n2 = self._capacity(s, nxt).max_sessions
        what = f"{lw.format_tokens(int(nxt))} tokens of context" if self.is_lm \
            else f"{nxt} windows per session"
        return f"at {what} only {n2:,} session(s) fit"

    def _reveal_body(self) -> str:
        r = self.results
        cap0 = self.default_cap
        return (
            f"<div>{self._prediction_line()}.</div>"
            f"<div>At the track defaults: {lw.esc(cap0.reason)} → <b>"
            f"{self.predict.label_for(self._expected)}</b>.</div>"
            f"<div>With your current settings: <b>{'OOM' if r['oom'] else r['max_sessions']}"
            f"</b> session(s) (bucket: {r['bucket']}).</div>"
            "<div style='color:#5d6d7e'>Why: once the weights are resident, every live "
            "session holds its own state. Memory left after the weights divided by the "
            "state per session is the concurrency ceiling; FLOP/s never enters.</div>")


# -- Part C ---------------------------------------------------------------------------------

class PartC(Part):
    """Four batching policies on the same simulated stream, against the SLO."""

    letter = "C"

    def _setup(self) -> None:
        tr = self.track
        self.is_lm = tr.is_transformer
        plan0 = serving_plan(tr, with_baseline=False)
        self.rate0 = plan0.replica_arrival_rate_per_s
        self.slots0 = max(1, plan0.batch_size)
        cap = track_capacity(tr)
        self.max_b = max(self.slots0, min(max(2 * tr.batch_size, 8), cap.max_sessions))
        kw = batching_track_inputs(tr, batch_size=self.max_b)
        self.step_all = np.asarray(kw.pop("step_s_by_batch"))
        self.prefill_all = np.asarray(kw.pop("prefill_s_by_batch"))
        self.inputs = kw
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
        noun = _event_noun(tr)
        if self.is_lm:
            c["cv"] = lw.float_control("Output-length spread (CV)", self.cv0, 0.0, 2.5, 0.1)
        if self.max_b > 1:
            c["batch"] = lw.int_control("Batch size / slots", self.slots0, 1, self.max_b)
        c["rate"] = lw.log_control(f"Arrivals per replica ({noun}s/s)", self.rate0,
                                   self.rate0 / 10, max(self.rate0 * 3, 1.5 * top))
        self.unit = "tokens/s" if self.is_lm else "inferences/s"
        names = list(POLICIES)
        bx = lw.make_scale("ordinal")
        by = lw.make_scale("linear", 0.0, 1.4 * cap_tok)  # headroom for the legend
        self.m_tput = lw.bar_mark(names, np.zeros((2, 4)), bx, by,
                                  colors=[lw.PALETTE["blue"], lw.PALETTE["teal"]],
                                  labels=["max per replica (saturated)",
                                          "delivered at this load"], kind="grouped",
                                  legend=True)
        self.figures["throughput"] = lw.figure(
            [self.m_tput], bx, by, x_label="batching policy",
            y_label=f"throughput ({self.unit})", title="Throughput per replica", legend=True,
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
            title=f"{self.metric_name} (and TTFT) against the SLO (dashed: the limit)",
            height=260)
        wx = lw.make_scale("ordinal")
        wy = lw.make_scale("linear", 0.0, 100.0)
        self.m_waste = lw.bar_mark(names, np.zeros(4), wx, wy, colors=[lw.PALETTE["orange"]],
                                   label_display=True, label_display_format=".0f")
        self.figures["waste"] = lw.figure(
            [self.m_waste], wx, wy, x_label="batching policy",
            y_label="padding waste (% of slot-steps)", title="Slots spent on padding",
            height=220)
        self.callouts["slo"] = lw.Callout("danger")
        self.callouts["boundary"] = lw.Callout("success")

    def _compare(self, batch: int, cv: float, rate: float) -> PolicyComparison:
        kw = dict(self.inputs)
        if self.is_lm:
            kw["cv"] = cv
        return compare_policies(step_s_by_batch=self.step_all[:batch],
                                prefill_s_by_batch=self.prefill_all[:batch],
                                arrival_rate_per_s=rate, **kw)  # type: ignore[arg-type]

    def _prediction_spec(self) -> tuple[str, list[tuple[str, str]]]:
        tr = self.track
        spread = (f"output lengths with CV {self.cv0:g}, " if self.is_lm else "")
        q = (f"{lw.esc(tr.label)}: one replica with {self.slots0} batch slot(s), {spread}"
             f"{fmt_num(self.rate0)} {_event_noun(tr)}s/s arriving. Which policy wins: it meets "
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

    def _refresh(self, s: Mapping[str, object]) -> None:
        b = int(s.get("batch", self.slots0))  # type: ignore[call-overload]
        cv = float(s.get("cv", self.cv0))  # type: ignore[arg-type]
        rate = float(s["rate"])  # type: ignore[arg-type]
        cmp = self._compare(b, cv, rate)
        res = [cmp.results[p] for p in POLICIES]
        tput = np.asarray([[r.capacity_tokens_per_s for r in res],
                           [r.throughput_tokens_per_s for r in res]])
        ratios = np.asarray([min(SLO_RATIO_MAX, r.slo_ratio if r.stable else SLO_RATIO_MAX)
                             for r in res])
        colors = [lw.PALETTE["green"] if r.slo_met else lw.PALETTE["red"] for r in res]
        waste = np.asarray([100.0 * r.padding_waste for r in res])
        lw.update_marks({self.m_tput: {"y": tput},
                         self.m_lat: {"y": ratios, "colors": colors},
                         self.m_waste: {"y": waste}})
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
        self._set_readout(_cards([
            ("winner", cmp.winner, POLICY_LABELS[cmp.winner],
             lw.PALETTE["green"] if cmp.any_meets_slo else lw.PALETTE["red"]),
            ("its capacity", f"{fmt_num(winner.capacity_tokens_per_s)} {self.unit}",
             f"utilisation {winner.utilisation:.1%}", lw.PALETTE["blue"]),
            (f"its {self.metric_name}", fmt_time(winner.slo_value_s),
             f"SLO {fmt_time(self.track.slo_s)}", lw.PALETTE["purple"]),
            ("policies meeting the SLO", f"{sum(r.slo_met for r in res)} of 4",
             f"batch {b}" + (f", CV {cv:.1f}" if self.is_lm else ""), lw.PALETTE["orange"]),
        ]))
        rows = [[("★ " if p == cmp.winner else "") + p,
                 f"{fmt_num(r.capacity_tokens_per_s)}", f"{fmt_num(r.throughput_tokens_per_s)}",
                 f"{r.utilisation:.1%}", fmt_time(r.slo_value_s), fmt_time(r.ttft_p99_s),
                 f"{r.padding_waste:.0%}", _ok(r.slo_met)] for p, r in zip(POLICIES, res,
                                                                           strict=True)]
        self._set_details(_table(
            ["policy", f"max ({self.unit})", f"delivered ({self.unit})", "utilisation",
             self.metric_name, "p99 TTFT", "padding", "SLO"], rows))
        missed = [r for r in res if not r.slo_met]
        if missed:
            title = ("No policy meets the SLO at this load" if not cmp.any_meets_slo else
                     f"SLO miss: {', '.join(r.policy for r in missed)}")
            ttft = self.track.ttft_slo_s is not None
            detail = "; ".join(
                f"{r.policy}: {self.metric_name} {fmt_time(r.slo_value_s)}"
                + (f", p99 TTFT {fmt_time(r.ttft_p99_s)}" if ttft else "")
                + f" ({r.slo_ratio:,.3g}x the limit{'' if r.stable else ', overloaded'})"
                for r in missed)
            self.callouts["slo"].show(
                title, detail, "lower the arrivals per replica (add replicas), use smaller "
                "batches or a policy that does not wait for full batches"
                + (", and continuous batching when lengths vary" if self.is_lm else ""))
        else:
            self.callouts["slo"].clear()
        self.callouts["boundary"].set(
            cmp.any_meets_slo, f"{cmp.winner} wins",
            f"{lw.esc(cmp.reason)}. Its tail is at {winner.slo_ratio:.0%} of the SLO and its "
            f"utilisation at {winner.utilisation:.0%}: more load moves both.")
        self.math.update(
            "<p>Saturated capacity of one replica (requests/s), with batch B, step time "
            "τ(B) and prefill p(B):</p>"
            "$$\\text{static/dynamic: } \\frac{B}{p(B) + (L_{\\max}-1)\\,\\tau(B)} \\qquad "
            "\\text{continuous: } \\frac{1}{p(1) + \\bar{L}\\,(\\tau(B)+o)/B}$$"
            "<p>Padding waste of a static batch: $1 - \\sum_i L_i / (B\\,L_{\\max})$. "
            "Continuous batching stretches every token by $1/(1-\\lambda\\,p(1))$.</p>"
            f"<p>Now: B = {b}, λ = {fmt_num(rate)}/s, "
            f"τ(B) = {fmt_time(float(self.step_all[b - 1]))}, "
            f"p(1) = {fmt_time(float(self.prefill_all[0]))}, scheduler overhead o = "
            f"{fmt_time(self.track.scheduler_overhead_s)}, timeout "
            f"{fmt_time(self.track.batch_timeout_s)}. Source: "
            "<code>labkit.physics.batching.compare_policies</code>.</p>")

    def _reveal_body(self) -> str:
        r = self.results
        d = self.default_cmp
        return (
            f"<div>{self._prediction_line()}.</div>"
            f"<div>At the track defaults: <b>{self.predict.label_for(d.winner)}</b>: "
            f"{lw.esc(d.reason)}.</div>"
            f"<div>With your current settings the winner is <b>{r['winner']}</b>.</div>"
            "<div style='color:#5d6d7e'>Why: static batches wait to fill and pad to the "
            "longest member; dynamic batches cap the wait with a timeout; continuous batching "
            "refills slots every step but pays a scheduler overhead. Which one wins depends on "
            "the load, the spread and the SLO.</div>")


# -- Part D ---------------------------------------------------------------------------------

class PartD(Part):
    """Release review: candidates side by side against memory, SLO, quality and cost."""

    letter = "D"

    def _setup(self) -> None:
        tr = self.track
        self.is_lm = tr.is_transformer
        self.max_dev = _max_devices(tr)
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
            [_guardrail_label(g) for g in GUARDRAILS], np.zeros((4, 4)), gx, gy,
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

    def _plan_kwargs(self, spec: Mapping[str, object], share: float) -> dict[str, object]:
        tr = self.track
        return {"demand_rate_per_s": tr.demand_rate_per_s * share, **spec}

    def _evaluate(self, spec: Mapping[str, object], share: float) -> GuardrailReport:
        tr = self.track
        plan = serving_plan(tr, with_baseline=False, **self._plan_kwargs(spec, share))  # type: ignore[arg-type]
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

    def _spec(self, s: Mapping[str, object]) -> dict[str, object]:
        tr = self.track
        return {"weight_bits": int(s["weight_bits"]),  # type: ignore[call-overload]
                "kv_bits": int(s.get("kv_bits", tr.kv_bits)),  # type: ignore[call-overload]
                "policy": str(s["policy"]),
                "devices_per_replica": int(s.get("devices", tr.devices_per_replica))}  # type: ignore[call-overload]

    def _prediction_spec(self) -> tuple[str, list[tuple[str, str]]]:
        tr = self.track
        kv = " and KV cache" if self.is_lm else ""
        q = (f"{lw.esc(tr.label)}: the naive release candidate ships the model as released "
             f"(16-bit weights{kv}), serves one {_event_noun(tr)} at a time on "
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

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr = self.track
        share = float(s["share_pct"]) / 100.0  # type: ignore[arg-type]
        spec = self._spec(s)
        mine = self._evaluate(spec, share)
        alts = self._alternatives(share)
        reports = [*alts.values(), mine]
        y = np.asarray([self._ratios(g) for g in reports])
        lw.update_marks({self.m_guard: {"y": y}})
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
        self._set_readout(_cards([
            ("verdict", "ships" if mine.passed else f"{mine.binding} binds",
             "all four guardrails" if mine.passed else "first failing guardrail",
             lw.PALETTE["green"] if mine.passed else lw.PALETTE["red"]),
            ("replicas", f"{plan.replicas}", f"{plan.total_devices} device(s) in total",
             lw.PALETTE["blue"]),
            ("daily cost", fmt_cost(plan.daily_cost, u),
             f"budget {fmt_cost(tr.daily_budget, u)}", lw.PALETTE["orange"]),
            ("demand", f"{fmt_num(tr.demand_rate_per_s * share)} {_event_noun(tr)}s/s",
             f"{share:.0%} of forecast", lw.PALETTE["grey"]),
        ]))
        rows = []
        names = [label for label, _ in self.candidates.values()] + ["Your choice"]
        for name, g in zip(names, reports, strict=True):
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
                fmt_cost(p.daily_cost, u), tail,
                *(_ok(g.check(n).passed) for n in GUARDRAILS),
                "<b style='color:#1e8449'>ships</b>" if g.passed
                else f"<b style='color:#c0392b'>{_guardrail_label(g.binding or '')} binds</b>",
            ])
        self._set_details(_table(
            ["candidate", "configuration", "replicas", "cost/day", "tail latency", "memory",
             "SLO", "quality", "cost", "verdict"], rows))
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
            f"{_guardrail_label(GUARDRAILS[closest]).capitalize()} is closest to its limit "
            f"({ratios[closest]:.0%} of it).")
        pr = plan.policy_result
        cap_txt = (f"{fmt_num(plan.replica_capacity_requests_per_s)}" if plan.feasible
                   else "0 (OOM)")
        self.math.update(
            "<p>Replicas for the demand λ at most u_max busy, and the daily cost:</p>"
            "$$R = \\left\\lceil \\frac{\\lambda}{u_{\\max}\\,\\mu_{\\text{replica}}} "
            f"\\right\\rceil = \\left\\lceil \\frac{{{tex_num(tr.demand_rate_per_s * share)}}}"
            f"{{{tr.max_utilisation:g} \\times {cap_txt}}} \\right\\rceil = {plan.replicas}$$"
            + ("<p>Rented: cost/day = devices × price/h × active hours.</p>" if u == "USD" else
               "<p>Owned: energy/day = devices × power × busy time / J per unit.</p>")
            + "<p>Ship only if memory ∧ SLO ∧ quality ∧ cost all pass; the first failure "
            "(in that order) binds. "
            + (f"Now: {self._metric_text(pr)}. " if pr is not None else "")
            + "Source: <code>labkit.plans.serving.serving_plan</code>, "
            "<code>labkit.plans.serving.release_guardrails</code>.</p>")

    def _metric_text(self, pr: object) -> str:
        tr = self.track
        q = "max" if tr.slo_quantile >= 1 else f"p{tr.slo_quantile * 100:g}"
        metric = "TPOT" if tr.slo_kind == "tpot" else "latency"
        return (f"{q} {metric} {fmt_time(pr.slo_value_s)} vs SLO {fmt_time(tr.slo_s)}, "  # type: ignore[attr-defined]
                f"utilisation {pr.utilisation:.0%}")  # type: ignore[attr-defined]

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


PART_CLASSES: dict[str, type[Part]] = {"A": PartA, "B": PartB, "C": PartC, "D": PartD}


# -- the lab --------------------------------------------------------------------------------

class Lab:
    """Lab 1 for one track. ``store`` defaults to ``AnswerStore()`` (labkit_answers.json).

    ``gate_explore`` (default True) keeps each part's controls and charts behind its
    prediction, like the reveal; parts are built on first use and cached.
    """

    def __init__(self, track_id: str, store: AnswerStore | None = None, *,
                 gate_explore: bool = True) -> None:
        self.track = get_track(track_id)
        self.track_id = self.track.id
        self.store = store if store is not None else AnswerStore()
        self.gate_explore = gate_explore
        self._parts: dict[str, Part] = {}
        self._synthesis: ipw.VBox | None = None

    def __repr__(self) -> str:
        return f"Lab({self.track_id!r}, store={self.store!r})"

    def part(self, letter: str) -> Part:
        key = str(letter).upper()
        if key not in PART_CLASSES:
            raise ValueError(f"part must be one of {', '.join(PARTS)}; got {letter!r}")
        if key not in self._parts:
            self._parts[key] = PART_CLASSES[key](self)
        return self._parts[key]

    def parts(self) -> list[Part]:
        return [self.part(p) for p in PARTS]

    # -- header ----------------------------------------------------------------------------
    def header(self) -> ipw.HTML:
        tr = self.track
        hw = get_hardware(tr.hardware_id)
        m = get_model(tr.model_id)
        st = tr.stakeholder
        params = f"{m.params_total / 1e9:.3g}B" if m.params_total >= 1e9 else \
            f"{m.params_total / 1e6:.3g}M" if m.params_total >= 1e6 else \
            f"{m.params_total / 1e3:.3g}k"
        power = f"{hw.power_w:g} W" if hw.power_w is not None else "power n/a"
        price = (f", {hw.price_usd_per_hour:g} USD/h" if hw.price_usd_per_hour is not None
                 else "")
        slo = tr.guardrail_metrics[0]
        objectives = [
            f"Split one {_event_noun(tr)} into its two amounts (prefill or input pass vs decode "
            f"or output) and find when the recurring {_cost_noun(tr)} overtakes the one-time "
            "setup.",
            "Size the live state (KV cache or sensor windows) that caps concurrency beside "
            "the weights, and recognise out-of-memory as a failure, not a number.",
            f"Compare four batching policies under variance against the SLO ({slo}).",
            "Run a release review: memory, SLO, quality and cost guardrails together, and "
            "name the one that binds.",
        ]
        guard = "".join(f"<li>{lw.esc(g)}</li>" for g in tr.guardrail_metrics)
        objs = "".join(f"<li>{lw.esc(o)}</li>" for o in objectives)
        return ipw.HTML(
            f"<div class='labkit-header' style='border:1px solid #d5d8dc;border-radius:6px;"
            f"padding:12px 16px'>"
            f"<div style='font-size:0.8em;color:#5d6d7e;text-transform:uppercase'>Lab 1 · "
            f"{LAB_TITLE} · {lw.esc(TIME_ESTIMATE)}</div>"
            f"<div style='font-size:1.5em;font-weight:700;margin:4px 0'>{lw.esc(tr.label)}</div>"
            f"<div><b>Hardware:</b> {lw.esc(hw.name)} ({format_bytes(hw.usable_memory_bytes)} "
            f"usable, {format_bytes(hw.memory_bandwidth)}/s, {power}{price}) · "
            f"<b>Model:</b> {lw.esc(m.name)} ({params} parameters) · <b>Unit:</b> "
            f"{tr.cost_unit}</div>"
            f"<div style='margin:8px 0;padding:8px 12px;background:#f4f6f7;border-left:4px "
            f"solid #7d3c98'><b>{lw.esc(st.name)}</b>, {lw.esc(st.role)}: "
            f"<i>“{lw.esc(st.message)}”</i></div>"
            f"<div>{lw.esc(tr.narrative.intro)}</div>"
            f"<div style='margin-top:6px'><b>Primary metric:</b> {lw.esc(tr.primary_metric)}"
            f"</div><div><b>Guardrails:</b><ul style='margin:2px 0'>{guard}</ul></div>"
            f"<div><b>You will:</b><ol style='margin:2px 0'>{objs}</ol></div></div>")

    # -- synthesis and report --------------------------------------------------------------
    def takeaways(self) -> list[str]:
        """Five takeaways computed from the student's own settings across the parts."""
        a, b, c, d = (self.part(p) for p in PARTS)
        tr = self.track
        u = tr.cost_unit
        ra, rb, rc, rd = a.results, b.results, c.results, d.results
        saving = float(a.settings()["saving_pct"])  # type: ignore[arg-type]
        if saving > 0:
            worth = (f"your {saving:.0f}% saving is worth {fmt_cost(ra['annual_savings'], u)} "  # type: ignore[arg-type]
                     "a year")
        else:
            tenth = float(ra["effective_cost_per_event"]) * 0.1 * float(ra["events_per_day"]) * 365  # type: ignore[arg-type]
            worth = f"every 10% cut in cost per event is worth {fmt_cost(tenth, u)} a year"
        return [
            f"Two amounts: at your settings one {_event_noun(tr)} spends "
            f"{fmt_time(ra['prefill_s'])} in the {a.default_phases.phase_labels['prefill']} and "  # type: ignore[arg-type]
            f"{fmt_time(ra['decode_s'])} in the {a.default_phases.phase_labels['decode']}; the "  # type: ignore[arg-type]
            f"{ra['binding_label']} binds.",
            f"Recurring cost compounds: {fmt_cost(ra['daily_cost'], u)} per day crosses the "  # type: ignore[arg-type]
            f"{fmt_cost(tr.setup_cost, u)} setup after "
            f"{fmt_days(ra['crossover_days'], tr.horizon_days)}; {worth}.",  # type: ignore[arg-type]
            ("State caps concurrency: at your Part B settings "
             + ("nothing fits (out of memory)" if rb["oom"] else
                f"{rb['max_sessions']:,} session(s) of "
                f"{format_bytes(rb['bytes_per_session'])} fit")  # type: ignore[arg-type]
             + f" beside {format_bytes(rb['weight_bytes'])} of weights."),  # type: ignore[arg-type]
            f"Batching depends on the workload: at your Part C settings {rc['winner']} wins "
            f"({lw.esc(rc['reason'])}).",
            ("A release ships only if every guardrail passes: your candidate "
             + ("passes all four" if rd["passed"] else f"is blocked by {rd['binding']}")
             + f", at {fmt_cost(rd['daily_cost'], u)} per day for "  # type: ignore[arg-type]
             f"{rd['replicas']} replica(s)."),
        ]

    def ledger_choices(self) -> dict[str, object]:
        """What Lab 1 hands to later labs: the release candidate and the key numbers."""
        a, b, c, d = (self.part(p) for p in PARTS)
        spec = d.results["spec"]
        return plain({
            "weight_bits": spec["weight_bits"],  # type: ignore[index]
            "kv_bits": spec["kv_bits"] if self.track.is_transformer else None,  # type: ignore[index]
            "policy": spec["policy"],  # type: ignore[index]
            "devices_per_replica": spec["devices_per_replica"],  # type: ignore[index]
            "demand_share": d.results["demand_share"], "passed": d.results["passed"],
            "binding": d.results["binding"], "replicas": d.results["replicas"],
            "daily_cost": d.results["daily_cost"], "cost_unit": self.track.cost_unit,
            "crossover_days": a.results["crossover_days"],
            "max_sessions": b.results["max_sessions"],
            "batching_winner": c.results["winner"],
        })  # type: ignore[return-value]

    def report(self) -> tuple[str, dict[str, object]]:
        """(Markdown, JSON-ready dict): settings, predictions and results of every part."""
        tr = self.track
        hw = get_hardware(tr.hardware_id)
        m = get_model(tr.model_id)
        parts = {p.letter: p.state() for p in self.parts()}
        memo = self.store.get(LAB_ID, answer_key(tr.id, "", "memo"))
        takeaways = self.takeaways()
        choices = self.ledger_choices()
        data: dict[str, object] = plain({  # type: ignore[assignment]
            "schema": REPORT_SCHEMA, "version": REPORT_VERSION, "lab": LAB_ID,
            "title": LAB_TITLE, "generated_at": now_iso(),
            "track": {"id": tr.id, "label": tr.label, "hardware": hw.name, "model": m.name,
                      "cost_unit": tr.cost_unit, "stakeholder": tr.stakeholder.name},
            "parts": parts, "takeaways": takeaways,
            "memo": None if memo is None else memo.to_dict(), "ledger_choices": choices,
        })
        lines = [f"# Lab 1: {LAB_TITLE} ({tr.label})", "",
                 f"Generated {data['generated_at']}. Track `{tr.id}`: {hw.name}, {m.name}. "
                 f"Stakeholder: {tr.stakeholder.name}, {tr.stakeholder.role}.", ""]
        for p in self.parts():
            st = parts[p.letter]
            lines += [f"## Part {p.letter}: {p.title}", ""]
            lines.append("- Prediction: " + _md_entry(p.predict, p.predict.entry))
            lines.append(f"- Computed answer at the track defaults: "
                         f"{p.predict.label_for(p.expected)}")
            settings = ", ".join(f"{k} = {v}" for k, v in st["settings"].items())  # type: ignore[index, union-attr]
            lines.append(f"- Your settings: {settings}")
            lines.append("- Checkpoint: " + _md_entry(p.checkpoint, p.checkpoint.entry))
            lines.append("")
        lines += ["## Takeaways", "", *(f"{i}. {t}" for i, t in enumerate(takeaways, 1)), "",
                  "## Memo", "", memo.current if memo is not None else "(not saved yet)", "",  # type: ignore[list-item]
                  "## Design ledger entry", "", "```json",
                  json.dumps(choices, indent=2, sort_keys=True), "```", ""]
        md = "\n".join(str(x) for x in lines)
        return md, data

    def write_report(self, directory: str | os.PathLike[str] = ".", *,
                     overwrite: bool = True) -> tuple[Path, Path]:
        """Write ``labkit_report.md`` and ``labkit_report.json`` (atomic) into ``directory``."""
        md, data = self.report()
        d = Path(directory)
        md_path, json_path = d / REPORT_MD, d / REPORT_JSON
        if overwrite or not md_path.exists():
            tmp = md_path.with_name(f".{md_path.name}.tmp")
            tmp.write_text(md, encoding="utf-8")
            os.replace(tmp, md_path)
        if overwrite or not json_path.exists():
            write_json_atomic(json_path, data)
        return md_path, json_path

    def synthesis(self, *, write: bool | None = None) -> ipw.VBox:
        """Takeaways, memo prompt, report downloads; writes report files and the ledger.

        ``write`` None: write ``labkit_report.{md,json}`` to the working directory and
        record the design ledger, except under nbgrader autograde
        (``NBGRADER_EXECUTION=autograde``), where existing report files are kept (fresh
        widgets would overwrite the student's explored settings with defaults) and the
        ledger is not touched. True/False force writing on or off.
        """
        tr = self.track
        st = tr.stakeholder
        takeaways_html = ipw.HTML()
        links_html = ipw.HTML()
        status = ipw.HTML()
        refresh = ipw.Button(description="Refresh report", icon="refresh")
        autograde = os.environ.get("NBGRADER_EXECUTION") == "autograde"

        def render(do_write: bool) -> None:
            items = "".join(f"<li style='margin-bottom:4px'>{t}</li>" for t in self.takeaways())
            takeaways_html.value = (f"<div class='labkit-takeaways'><b>Key takeaways from your "
                                    f"own settings</b><ol>{items}</ol></div>")
            md, data = self.report()
            links_html.value = (
                "<div class='labkit-downloads'><b>Download your report:</b> "
                + _download_link(md, f"labkit_report_{tr.id}.md", "text/markdown",
                                 "Markdown report")
                + " · "
                + _download_link(json.dumps(data, indent=2, sort_keys=True),
                                 f"labkit_report_{tr.id}.json", "application/json",
                                 "JSON snapshot") + "</div>")
            notes = []
            if do_write:
                self.write_report(".", overwrite=not autograde)
                notes.append(f"wrote {REPORT_MD} and {REPORT_JSON}")
                if not autograde:
                    record_ledger(LAB_ID, tr.id, self.ledger_choices())
                    notes.append("recorded your design in the ledger")
            status.value = f"<span style='color:#5d6d7e'>{'; '.join(notes)}</span>"

        refresh.on_click(lambda _b: render(write is not False))
        render(write is not False)
        prompt = ipw.HTML(
            f"<div style='margin-top:8px'><b>Memo to {lw.esc(st.name)}</b> "
            f"({lw.esc(st.role)}). Answer their question with your numbers: "
            f"<i>“{lw.esc(st.message)}”</i> Name your release candidate, what binds, the "
            "alternative you rejected and why. Write it in the graded memo cell below; "
            "<b>Refresh report</b> after you change any setting above.</div>")
        box = ipw.VBox([
            ipw.HTML(f"<div style='font-size:1.3em;font-weight:700;margin-top:12px'>Synthesis: "
                     f"{lw.esc(tr.label)}</div><div>{lw.esc(tr.narrative.takeaway)}</div>"),
            takeaways_html, prompt, refresh, links_html, status,
        ])
        box.add_class("labkit-synthesis")
        self._synthesis = box
        return box

