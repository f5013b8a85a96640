"""Lab 2 Part D: the design challenge. Controls are built from the track's scenario
(:mod:`labkit.plans.scenarios`) design keys; every change runs :func:`design_check`."""

from __future__ import annotations

import math
from collections.abc import Mapping

import ipywidgets as ipw
import numpy as np

from labkit import ui as lw
from labkit.core.format import (
    fmt_amount,
)
from labkit.core.grids import pow2
from labkit.labs.accelerators.base import Part, feedback_map
from labkit.labs.common import (
    CheckSpec,
    Spec,
    html_table,
    metric_cards,
    pass_mark,
)
from labkit.plans.design import (
    CONTEXT_BUCKETS,
    DEVICE_BUCKETS,
    DUTY_BUCKETS,
    INTERVALS_MS,
    OFF_SCALE,
    Config,
    DesignCheck,
    design_check,
    design_defaults,
    fleet_users,
    reference_design,
    scenario_for,
)
from labkit.plans.scenarios import Fleet
from labkit.plans.scenarios.common import context_tokens
from labkit.ui.charts import lin_top

# -- Part D: design challenge ---------------------------------------------------------------------

_CONSTRAINT_TITLES = {
    "layout": "Not a possible layout", "memory": "Out of memory (OOM)",
    "tpot": "TPOT SLO missed", "ttft": "First token too late", "quality": "Below the quality floor",
    "cost": "Over the daily budget", "energy": "Over the energy budget",
    "context": "Conversation shorter than the product needs", "flash": "Weights exceed flash",
    "sram": "Out of SRAM", "deadline": "Deadline missed", "coverage": "Listening too rarely",
    "link": "Link saturated", "throughput": "SoC overloaded", "socs": "More SoCs than the board",
}
_CONSTRAINT_FIX = {
    "layout": "pick degrees that exist (powers of two within the model's heads, layers and "
              "the sequences)",
    "memory": "split weights (TP/PP), one sequence's KV (CP) or the sequences (DP); lower "
              "the precision",
    "tpot": "more TP inside the fast domain; fewer sequences per replica (more DP); lower "
            "precision",
    "ttft": "a shorter prompt or faster prefill", "quality": "raise the precision to the floor",
    "cost": "fewer devices: lower precision frees memory for more sequences per device",
    "energy": "lower precision, less work per day, or a cheaper place to do it",
    "context": "serve longer conversations", "flash": "lower the weight precision",
    "sram": "a lower-precision datapath", "deadline": "shorten the path to a decision",
    "coverage": "process more windows", "link": "send fewer bytes",
    "throughput": "spread the load over a second SoC", "socs": "use the SoCs the board has",
}

# where a scenario has other levers than the fleet's (one phone has no TP, PP, CP or DP;
# a vehicle's SoCs split cameras or the model, not tensors)
_SCENARIO_FIX = {
    ("handheld", "memory"): "lower the weight or KV precision, or serve shorter conversations",
    ("handheld", "tpot"): "lower the weight or KV precision, or serve shorter conversations",
    ("handheld", "energy"): "lower the weight or KV precision, or serve shorter conversations",
    ("vehicle", "memory"): "lower the weight precision, or split the cameras over two SoCs",
}
# what the student reads for a constraint (never its id)
CONSTRAINT_LABELS = {
    "layout": "layout", "memory": "memory", "tpot": "TPOT", "ttft": "TTFT",
    "quality": "quality", "cost": "daily cost", "energy": "energy", "context": "context",
    "flash": "flash", "sram": "SRAM", "deadline": "deadline", "coverage": "coverage",
    "link": "link", "throughput": "throughput", "socs": "SoCs",
}


def constraint_label(name: str) -> str:
    """A constraint's display name (its id with underscores as spaces when unknown)."""
    return CONSTRAINT_LABELS.get(name, name.replace("_", " "))


def _shown(x: float | None) -> float | None:
    """A figure as the JSON results show it (non-finite: missing)."""
    return x if x is not None and math.isfinite(x) else None


class PartD(Part):
    """Design challenge: every constraint of the track at once, checked by
    :func:`design_check`, against labkit's fewest-devices (then cheapest) design."""

    letter = "D"

    def _setup(self) -> None:
        tr = self.track
        d0 = design_defaults(tr)
        self.levers: dict[str, tuple[str, object] | None] = {}  # failing -> (key, value)
        self.reference = reference_design(tr)
        self.design = scenario_for(tr)
        for key in self.design.design_keys:
            control = self._control(key, d0)
            if control is not None:
                self.controls[key] = control
        self.default_check = design_check(tr, d0)
        self.names = list(self.default_check.constraints)
        self._expected = self._computed_answer()
        gx, gy = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_g = gy
        self.m_g = lw.bar_mark([constraint_label(n) for n in self.names],
                               np.zeros(len(self.names)), gx, gy,
                               colors=[lw.PALETTE["green"]] * len(self.names),
                               color_mode="no_group", label_display=True,
                               label_display_format=".2f")
        self.m_g_l = lw.hline_mark(1.0, gy, color=lw.PALETTE["red"], label="limit",
                                   legend=True)
        self.figures["constraints"] = lw.figure(
            [self.m_g, self.m_g_l], gx, gy, x_label="constraint",
            y_label=f"use of the limit (above 1 fails; {OFF_SCALE:g} = n/a)",
            title="Your design against every constraint", height=300)
        ox, oy = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_o = oy
        self.unit = f"{tr.cost_unit}/day"
        # rented fleets: the objective is devices (cost is devices x price); owned: energy
        price = tr.price_per_device_hour
        self.per_device_day = (float(price) * tr.active_hours_per_day
                               if tr.cost_unit == "USD" and price is not None else None)
        rented = self.per_device_day is not None
        budget = (tr.daily_budget if self.per_device_day is None
                  else tr.daily_budget / self.per_device_day)
        self.m_o = lw.bar_mark(["your design", "labkit's best"], np.zeros(2), ox, oy,
                               colors=[lw.PALETTE["blue"], lw.PALETTE["green"]],
                               color_mode="no_group", label_display=True,
                               label_display_format=",.4~g")
        self.m_o_b = lw.hline_mark(budget, oy, color=lw.PALETTE["red"],
                                   label="what the budget pays for" if rented else "budget",
                                   legend=True)
        self.figures["objective"] = lw.figure(
            [self.m_o, self.m_o_b], ox, oy, x_label="design",
            y_label="devices" if rented else f"energy ({self.unit})",
            title="Devices: yours vs labkit's fewest" if rented else "Energy per day",
            height=300)
        for n in self.names:
            self._callout(n, "danger")
        self._callout("boundary", "success")

    def _control(self, key: str, d0: Config) -> ipw.ValueWidget | None:
        """The widget for one design key (None: not a choice for this model)."""
        tr, m = self.track, self.model
        if key == "weight_bits":
            return lw.precision_control("Weight precision", int(d0[key]))
        if key == "kv_bits":
            kb = int(d0[key])
            return lw.precision_control("KV-cache precision", kb, sorted({4, 8, 16, kb}))
        if key in ("tp", "cp", "pp", "dp", "ep"):
            opts = {"tp": pow2(min(m.q_heads, 64)),
                    "cp": pow2(max(1, int(tr.context_tokens or 0) // 1024)),
                    "pp": pow2(min(m.layers, 64)), "dp": pow2(min(fleet_users(tr), 256))}
            if m.is_moe:
                opts["ep"] = [e for e in pow2(m.experts_total) if m.experts_total % e == 0]
            if key not in opts:
                return None
            vals = opts[key]
            val = int(d0[key]) if int(d0[key]) in vals else 1
            return lw.selection_control(f"{key.upper()} degree", [(str(x), x) for x in vals],
                                        val)
        if key == "context_tokens":
            return lw.context_control(int(d0[key]), m.max_context, 512,
                                      "Longest conversation (tokens)")
        if key == "duty":
            return lw.float_control("Share of windows processed (duty)", float(d0[key]), 0.05,
                                    1.0, 0.05, ".0%")
        if key == "split":
            return lw.choice_control("Cut the pipeline", [
                ("model on the ring", "on_device"), ("features to the phone", "features"),
                ("raw audio to the phone", "raw")], d0[key], style="toggle")
        if key == "interval_ms":
            return lw.selection_control(
                "BLE connection interval (ms)", [(f"{x:g}", x) for x in INTERVALS_MS],
                float(d0[key]))
        if key == "layout":
            layouts = [("one SoC", "single")]
            if self.hw.domain_size >= 2:
                layouts += [("two SoCs: split cameras", "cameras"),
                            ("two SoCs: split the model", "model")]
            return lw.choice_control("Layout", layouts, "single", style="toggle")
        raise ValueError(f"Part D has no control for design key {key!r}")

    @staticmethod
    def _candidates(ctl: ipw.ValueWidget) -> list[object]:
        """The values a control offers (a slider: its steps, or 9 points across it)."""
        opts = getattr(ctl, "options", None)
        if opts:
            return [o[1] if isinstance(o, tuple) else o for o in opts]
        lo, hi = float(ctl.min), float(ctl.max)
        if isinstance(ctl, ipw.FloatLogSlider):
            return [float(ctl.base ** x) for x in np.linspace(lo, hi, 9)]
        step = float(getattr(ctl, "step", 0) or 0)
        if step and (hi - lo) / step <= 40:
            vals = np.arange(lo, hi + step / 2, step)
        else:
            vals = np.linspace(lo, hi, 9)
        return [round(float(v)) if isinstance(ctl, ipw.IntSlider) else round(float(v), 6)
                for v in vals]

    def _levers(self, config: Mapping[str, object],
                chk: DesignCheck) -> dict[str, tuple[str, tuple[str, object] | None]]:
        """For each failing constraint, one change of one control that makes it pass,
        found with :func:`design_check` itself (so a hint never names a lever that would
        not work): the one leaving the fewest failures, then the smallest move."""
        trials: list[tuple[int, int, str, DesignCheck, tuple[str, object]]] = []
        for key, ctl in self.controls.items():
            if key not in config:
                continue
            values = self._candidates(ctl)
            here = values.index(config[key]) if config[key] in values else 0
            for i, value in enumerate(values):
                if value == config[key]:
                    continue
                try:
                    trial = self.check({**config, key: value})
                except ValueError:
                    continue
                fmt_ = str(getattr(ctl, "readout_format", "") or "g")
                label = (self.option_label(key, value) if getattr(ctl, "options", None)
                         else format(value, fmt_) if isinstance(value, float) else str(value))
                trials.append((len(trial.failed), abs(i - here),
                               f"{ctl.description or key}: {label}", trial, (key, value)))
        trials.sort(key=lambda t: (t[0], t[1]))
        out: dict[str, tuple[str, tuple[str, object] | None]] = {}
        for name in chk.failed:
            fix = next((t for t in trials if name not in t[3].failed), None)
            if fix is None:
                fallback = _SCENARIO_FIX.get((self.scenario, name)) or _CONSTRAINT_FIX.get(
                    name, "change more than one setting")
                out[name] = ("no single setting here fixes it; " + fallback, None)
            else:
                out[name] = (f"{fix[2]} passes it"
                             + (" (and then every constraint passes)" if fix[3].feasible
                                else f" ({fix[0]} constraint(s) still fail)"), fix[4])
        return out

    def design_text(self, config: Mapping[str, object]) -> str:
        """A design as the student reads it: each control's name and the label of its value
        (a key with no control here, such as EP of a dense model, is left out)."""
        parts = []
        for key, value in config.items():
            ctl = self.controls.get(key)
            if ctl is None:
                continue
            fmt_ = str(getattr(ctl, "readout_format", "") or "g")
            label = (self.option_label(key, value) if getattr(ctl, "options", None)
                     else format(value, fmt_) if isinstance(value, float) else str(value))
            parts.append(f"{ctl.description or key}: {label}")
        return ", ".join(parts)

    def check(self, config: Mapping[str, object]) -> DesignCheck:
        """:func:`design_check` for this part's track (the grader calls the same function)."""
        return design_check(self.track, config)

    def _computed_answer(self) -> str:
        return self.design.answer(self.reference)

    def _hook(self) -> str:
        tr = self.track
        sc = self.scenario
        if sc == "fleet":
            return (f"The target: {fleet_users(tr):,} concurrent conversations at "
                    f"{context_tokens(tr):,} tokens, TPOT within {tr.slo_s * 1e3:g} ms, "
                    f"quality loss within {tr.max_quality_loss_pct:g} point(s), inside "
                    f"{tr.budget_text}/day. Meet it with the fewest "
                    f"{self.hw.name} devices.")
        if sc == "handheld":
            return (f"Serve {context_tokens(tr):,}-token conversations on the phone "
                    "within its memory, TPOT, TTFT, quality and battery budgets, spending as "
                    "little energy as possible.")
        if sc == "wearable":
            return ("Listen as often as the ring can afford: every constraint (flash, SRAM, "
                    "deadline, accuracy, energy, coverage, link) at once, with the highest "
                    "duty.")
        return ("Never miss a frame: deadline, throughput, memory, accuracy and energy at "
                "once, with the fewest SoCs.")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        sc = self.scenario
        if sc == "fleet":
            q = (f"{lw.esc(tr.label)}: {fleet_users(tr):,} users at "
                 f"{context_tokens(tr):,} tokens within {tr.slo_s * 1e3:g} ms per token, "
                 f"at any precision that keeps quality. How many {lw.esc(self.hw.name)} "
                 "devices does the smallest design need?")
            return q, [(f"{lab} devices" if lab[0].isdigit() else lab.capitalize(), lab)
                       for lab in [b for _, b in DEVICE_BUCKETS] + ["more than 64"]]
        if sc == "handheld":
            q = (f"{lw.esc(tr.label)}: at any precision that keeps quality, what is the "
                 "longest conversation the phone can serve within memory, TPOT, TTFT and the "
                 "battery budget?")
            return q, [(lab, lab) for lab in
                       [b for _, b in CONTEXT_BUCKETS] + ["8k or more", "none fits"]]
        if sc == "wearable":
            q = (f"{lw.esc(tr.label)}: using any precision, cut point and BLE interval, what "
                 "share of the windows can the ring afford to process within every "
                 "constraint?")
            return q, [(lab, lab) for lab in
                       ["every window", *[b for _, b in reversed(DUTY_BUCKETS)], "none fits"]]
        q = (f"{lw.esc(tr.label)}: with any precision and layout, how many SoCs does the "
             "smallest design that meets every constraint use?")
        return q, [("One SoC", "1"), ("Two SoCs", "2"), ("None fits", "none fits")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "What objective should the design review enforce?"
        opts = [("The fewest devices (then the least cost or energy) among designs that pass "
                 "every constraint", "constrained"),
                ("The lowest latency, whatever it costs", "latency"),
                ("The largest parallelism degree available", "largest"),
                ("The cheapest design, even if one constraint fails", "cheapest")]
        good = ("Right: feasibility first (every constraint at once), then the objective. A "
                "design that fails one constraint is not a cheaper design; it is no design.")
        bad = ("Not quite: a design ships only when every constraint passes; among those, "
               "the fewest devices (then the least cost or energy) wins.")
        return q, opts, "constrained", feedback_map(opts, "constrained", good, bad)

    def _refresh(self, s: Mapping[str, object]) -> None:
        tr = self.track
        chk = self.check(s)
        cons = chk.constraints
        ratios = np.asarray([cons[n].ratio for n in self.names])
        colors = [lw.PALETTE["green"] if cons[n].passed else lw.PALETTE["red"]
                  for n in self.names]
        obj = chk.objective
        mine, ref = _shown(obj.value), _shown(obj.reference)
        if self.per_device_day is not None:
            vals = np.asarray([float(chk.devices), float(chk.min_devices or 0)])
            budget = tr.daily_budget / self.per_device_day
        else:
            vals = np.asarray([float(mine or 0.0), float(ref or 0.0)])
            budget = tr.daily_budget
        top = lin_top(vals, pad=1.3)
        lw.update_marks({
            self.m_g: {"y": ratios, "colors": colors},
            self.s_g: {"max": lin_top(np.concatenate([ratios, [1.0]]), pad=1.25)},
            self.m_o: {"y": vals},
            self.s_o: {"max": lw.nice_up(max(top, 1.1 * budget) if budget <= 3 * top else top)},
            self.m_o_b: {"visible": bool(budget <= 3 * top)},
        })
        self.results = chk.as_dict()
        self.results["expected"] = self._expected
        feasible = chk.feasible
        min_dev = chk.min_devices
        ref_cfg = None if chk.reference is None else chk.reference.config
        self._set_readout(metric_cards([
            ("verdict", "feasible" if feasible else f"{len(chk.failed)} constraint(s) fail",
             ", ".join(constraint_label(n) for n in chk.failed) or "every constraint passes",
             lw.PALETTE["green"] if feasible else lw.PALETTE["red"]),
            ("devices", f"{chk.devices}", "labkit's fewest: "
             + ("none fits" if min_dev is None else str(min_dev)), lw.PALETTE["blue"]),
            (obj.name, fmt_amount(mine, self.unit),
             "labkit's best: " + fmt_amount(ref, self.unit), lw.PALETTE["orange"]),
        ]))
        rows = [[lw.esc(constraint_label(n)), pass_mark(cons[n].passed), lw.esc(cons[n].detail)]
                for n in self.names]
        ref_txt = ("" if ref_cfg is None else "<div><b>labkit's best design:</b> "
                   + lw.esc(self.design_text(ref_cfg)) + "</div>")
        self._set_details(html_table(["constraint", "check", "detail"], rows) + ref_txt)
        levers = self._levers(s, chk) if chk.failed else {}
        self.levers = {n: move for n, (_, move) in levers.items()}
        for n in self.names:
            c = cons[n]
            self.callouts[n].set(not c.passed, _CONSTRAINT_TITLES.get(n, n),
                                 lw.esc(c.detail), levers[n][0] if n in levers else None)
        extra = chk.extra_devices
        self.callouts["boundary"].set(
            feasible, "Feasible: every constraint passes",
            f"{chk.devices} device(s)"
            + ("" if extra is None else
               (" = labkit's fewest" if extra == 0 else f", {extra} more than labkit's fewest"))
            + f"; {obj.name} {fmt_amount(mine, self.unit)} vs labkit's "
              f"{fmt_amount(ref, self.unit)}.")
        closest = self.names[int(np.argmax(ratios))]
        self.math.update(
            "<p>A design is feasible when every constraint holds at once:</p>"
            "$$\\text{feasible} = \\bigwedge_i \\left(\\frac{\\text{value}_i}{\\text{limit}_i} "
            "\\le 1\\right)$$"
            f"<p>Closest to its limit now: <b>{constraint_label(closest)}</b> "
            f"({ratios.max():.2f}). labkit's "
            "answer: " + ("the fewest devices from "
                          "<code>labkit.physics.parallelism.search</code> over every "
                          "precision pair that keeps quality (ties: lower latency)"
                          if isinstance(self.design, Fleet) else
                          "an exhaustive search of the same controls") + ". The grader calls "
            "the same check: <code>labkit.labs.accelerators.design_check(track, config)"
            "</code>.</p>")

    def _reveal_body(self) -> str:
        ref = self.reference
        r = self.results
        cfg = "none" if ref is None else self.design_text(ref.config)
        return (f"{self._computed_line()}"
                f"<div>labkit's best design: {lw.esc(cfg)}.</div>"
                f"<div>Yours: <b>{'feasible' if r['feasible'] else 'infeasible'}</b> with "
                f"{r['devices']} device(s).</div>"
                "<div style='color:#5d6d7e'>Why: each constraint alone is easy; together they "
                f"pin the design.{self._precision_why()}</div>")

    def _precision_why(self) -> str:
        """Where labkit's best design puts the weight precision, against the quality floor
        (computed from the reference design; per token only where there are tokens)."""
        ref, tr = self.reference, self.track
        if ref is None or "weight_bits" not in ref.config:
            return ""
        bits, floor = int(ref.config["weight_bits"]), tr.min_weight_bits
        if bits != floor:
            return f" labkit's best design keeps {bits}-bit weights, above the {floor}-bit floor."
        per = "per weight and per token" if tr.is_transformer else "per weight"
        return (f" labkit's best design lowers the weights to the quality floor ({floor}-bit): "
                f"fewer bytes {per} relax memory, latency and energy at once.")

    def takeaway(self) -> str:
        r = self.results
        st = ("passes every constraint" if r["feasible"] else
              f"fails {', '.join(constraint_label(n) for n in r['failed'])}")
        extra = r["extra_devices"]
        return (f"Design: your {self.scenario} design {st} with {r['devices']} device(s)"
                + ("" if extra is None else f" (labkit's fewest: {r['min_devices']})") + "; "
                f"{r['objective']['name']} {fmt_amount(r['objective']['value'], self.unit)}.")
