"""Lab 2 Part D: the design challenge. Controls are built from the track's scenario
(:mod:`labkit.plans.scenarios`) design keys; every change runs :func:`design_check`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from labkit import ui as lw
from labkit.core.format import counted, fmt, fmt_amount, fmt_count
from labkit.labs.accelerators import decisions
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.part_d_controls import candidates, design_control
from labkit.labs.accelerators.part_d_spec import (
    CONSTRAINT_LABELS,
    CONSTRAINT_TITLES,
    checkpoint_spec,
    constraint_label,
    fallback_fix,
    next_precision,
    objective_label,
    precision_sentence,
    ratio_text,
)
from labkit.labs.accelerators.scenario_views import views
from labkit.labs.common import (
    CheckSpec,
    Spec,
    html_table,
    metric_cards,
    pass_mark,
)
from labkit.plans.design import (
    OFF_SCALE,
    Config,
    Constraint,
    DesignCheck,
    design_check,
    design_defaults,
    fewest_over_budget,
    precision_changes,
    reference_design,
    scenario_for,
)
from labkit.plans.lab2 import binding_constraint
from labkit.ui.charts import lin_top

if TYPE_CHECKING:
    import ipywidgets as ipw

__all__ = ["CONSTRAINT_LABELS", "PartD", "constraint_label"]


def _shown(x: float | None) -> float | None:
    """A figure as the JSON results show it (non-finite: missing)."""
    return x if x is not None and math.isfinite(x) else None


def _capped(c: Constraint) -> bool:
    """The constraint's chart bar is capped at OFF_SCALE (or it cannot be evaluated)."""
    r = c.true_ratio
    return r is None or r > OFF_SCALE


class PartD(Part):
    """Design challenge: every constraint of the track at once, checked by
    :func:`design_check`, against labkit's fewest-devices (then cheapest) design."""

    primary = ("weight_bits", "tp", "dp")

    letter = "D"
    _decision = decisions.part_d

    def _setup(self) -> None:
        tr = self.track
        self.defaults = design_defaults(tr)
        d0, note = decisions.d_start(tr, self.defaults)
        self.levers: dict[str, tuple[str, object] | None] = {}  # failing -> (key, value)
        self.reference = reference_design(tr)
        self.design = scenario_for(tr)
        self.views = views(self.scenario)
        for key in self.design.design_keys:
            control = self._control(key, self.defaults)
            if control is not None:
                self.controls[key] = control
        if note:
            self._start_at({k: v for k, v in d0.items() if self.defaults.get(k) != v}, note)
        self.default_check = design_check(tr, d0)
        self.names = list(self.default_check.constraints)
        self._expected = self._computed_answer()
        self.unit = f"{tr.cost_unit}/day"
        # rented fleets: the objective is devices (cost is devices x price); owned: energy
        price = tr.price_per_device_hour
        self.per_device_day = (float(price) * tr.active_hours_per_day
                               if tr.cost_unit == "USD" and price is not None else None)
        self._constraint_chart()
        self._objective_chart()
        for n in self.names:
            self._callout(n, "danger")
        self._callout("boundary", "success")

    def _constraint_chart(self) -> None:
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
            y_label=f"use of the limit (bars capped at {OFF_SCALE:g}: the table has each "
                    "true value)",
            title="Your design against every constraint", height=300)

    def _objective_chart(self) -> None:
        tr = self.track
        ox, oy = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_o = oy
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

    def _control(self, key: str, d0: Config) -> ipw.ValueWidget | None:
        """The widget for one design key (None: not a choice for this model)."""
        return design_control(key, d0, self.track, self.model, self.hw)

    def _levers(self, config: Mapping[str, object],
                chk: DesignCheck) -> dict[str, tuple[str, tuple[str, object] | None]]:
        """For each failing constraint, one change of one control that makes it pass,
        found with :func:`design_check` itself (so a hint never names a lever that would
        not work): the one leaving the fewest failures, then the smallest move."""
        trials: list[tuple[int, int, str, DesignCheck, tuple[str, object]]] = []
        for key, ctl in self.controls.items():
            if key not in config:
                continue
            values = candidates(ctl)
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
                out[name] = (fallback_fix(self.views.fixes, name), None)
            else:
                out[name] = (f"{fix[2]} passes it"
                             + (" (and then every constraint passes)" if fix[3].feasible
                                else f" ({counted(fix[0], 'constraint')} still fail)"), fix[4])
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
        return self.views.part_d_hook(self.track)

    def _prediction_spec(self) -> Spec:
        return self.views.part_d_prediction(self.track)

    def _checkpoint_spec(self) -> CheckSpec:
        return checkpoint_spec(self.design.ranking)

    def _refresh(self, s: Mapping[str, object]) -> None:
        chk = self.check(s)
        self.last_check = (dict(s), chk)   # the decision line reads it: one check per move
        self._update_charts(chk)
        self.results = chk.as_dict()
        self.results["expected"] = self._expected
        self._set_readout(self._cards(chk))
        self._set_details(self._details(chk))
        levers = self._levers(s, chk) if chk.failed else {}
        self.levers = {n: move for n, (_, move) in levers.items()}
        for n in self.names:
            c = chk.constraints[n]
            self.callouts[n].set(not c.passed, CONSTRAINT_TITLES.get(n, n),
                                 lw.esc(c.detail), levers[n][0] if n in levers else None)
        self.callouts["boundary"].set(chk.feasible, "Feasible: every constraint passes",
                                      self._boundary_text(chk))
        self.math.update(self._math_html(chk))

    def _update_charts(self, chk: DesignCheck) -> None:
        """Constraint bars (capped at OFF_SCALE: the text names the true ratio) and the
        objective against labkit's."""
        tr, cons = self.track, chk.constraints
        ratios = np.asarray([cons[n].ratio for n in self.names])
        colors = [lw.PALETTE["green"] if cons[n].passed else lw.PALETTE["red"]
                  for n in self.names]
        labels = [constraint_label(n) + (" (capped)" if _capped(cons[n]) else "")
                  for n in self.names]
        obj = chk.objective
        names = ["your design", "labkit's best"]
        if self.per_device_day is not None:
            over = None if chk.min_devices is not None else fewest_over_budget(tr)
            best = chk.min_devices if over is None else over.devices
            names[1] = "labkit's fewest" if over is None else "fewest, over budget"
            vals = np.asarray([float(chk.devices), float(best or 0)])
            budget = tr.daily_budget / self.per_device_day
        else:
            vals = np.asarray([float(_shown(obj.value) or 0.0),
                               float(_shown(obj.reference) or 0.0)])
            budget = tr.daily_budget
        top = lin_top(vals, pad=1.3)
        lw.update_marks({
            self.m_g: {"x": labels, "y": ratios, "colors": colors},
            self.s_g: {"max": lin_top(np.concatenate([ratios, [1.0]]), pad=1.25)},
            self.m_o: {"x": names, "y": vals},
            self.s_o: {"max": lw.nice_up(max(top, 1.1 * budget) if budget <= 3 * top else top)},
            self.m_o_b: {"visible": bool(budget <= 3 * top)},
        })

    def _fewest_text(self, chk: DesignCheck) -> str:
        """labkit's fewest devices, or why there is none (the budget: what it would need)."""
        if chk.min_devices is not None:
            return f"labkit's fewest: {fmt_count(chk.min_devices)}"
        over = fewest_over_budget(self.track)
        if over is None:
            return "labkit's fewest: none fits"
        return (f"none fits the budget; the fewest meeting everything else: "
                f"{fmt_count(over.devices)} at {fmt_amount(over.objective, self.unit)}")

    def _cards(self, chk: DesignCheck) -> str:
        obj = chk.objective
        mine, ref = _shown(obj.value), _shown(obj.reference)
        rented = self.per_device_day is not None
        return metric_cards([
            ("verdict", "feasible" if chk.feasible
             else f"{counted(len(chk.failed), 'constraint')} fail",
             ", ".join(constraint_label(n) for n in chk.failed) or "every constraint passes",
             lw.PALETTE["green"] if chk.feasible else lw.PALETTE["red"]),
            ("devices", fmt_count(chk.devices), self._fewest_text(chk), lw.PALETTE["blue"]),
            (objective_label(rented, obj.name, self.design.objective_basis),
             fmt_amount(mine, self.unit),
             "labkit's best: " + ("none fits" if ref is None else fmt_amount(ref, self.unit)),
             lw.PALETTE["orange"]),
        ])

    def _details(self, chk: DesignCheck) -> str:
        cons = chk.constraints
        rows = []
        for n in self.names:
            r = cons[n].true_ratio
            use = "n/a" if r is None else f"{fmt(r)}x"
            rows.append([lw.esc(constraint_label(n)), pass_mark(cons[n].passed), use,
                         lw.esc(cons[n].detail)])
        ref_cfg = None if chk.reference is None else chk.reference.config
        ref_txt = ("" if ref_cfg is None else "<div><b>labkit's best design:</b> "
                   + lw.esc(self.design_text(ref_cfg)) + "</div>")
        return html_table(["constraint", "check", "use of limit", "detail"], rows) + ref_txt

    def _boundary_text(self, chk: DesignCheck) -> str:
        obj, extra = chk.objective, chk.extra_devices
        rented = self.per_device_day is not None
        return (counted(chk.devices, "device")
                + ("" if extra is None else
                   (" = labkit's fewest" if extra == 0
                    else f", {fmt_count(extra)} more than labkit's fewest"))
                + f"; {objective_label(rented, obj.name, self.design.objective_basis)} "
                  f"{fmt_amount(_shown(obj.value), self.unit)}"
                + ("" if _shown(obj.reference) is None else
                   f" vs labkit's {fmt_amount(_shown(obj.reference), self.unit)}") + ".")

    def _math_html(self, chk: DesignCheck) -> str:
        b = binding_constraint(chk.constraints)
        closest = ("" if b is None else
                   f"<p>{'Furthest past' if b.fails else 'Closest to'} its limit now: "
                   f"<b>{constraint_label(b.name)}</b>, {lw.esc(ratio_text(b))}.</p>")
        how = self.views.reference_search
        return ("<p>A design is feasible when every constraint holds at once:</p>"
                "$$\\text{feasible} = \\bigwedge_i \\left(\\frac{\\text{value}_i}"
                "{\\text{limit}_i} \\le 1\\right)$$" + closest
                + f"<p>labkit's answer: {how}. The grader calls the same check: "
                  "<code>labkit.labs.accelerators.design_check(track, config)</code>.</p>")

    def _reveal_body(self) -> str:
        ref = self.reference
        r = self.results
        if ref is not None:
            best = f"labkit's best design: {self.design_text(ref.config)}."
        elif (over := fewest_over_budget(self.track)) is not None:
            best = (f"No design passes every constraint: the fewest that meets all but the "
                    f"budget is {self.design_text(over.config)}, {fmt_count(over.devices)} "
                    f"devices at {fmt_amount(over.objective, self.unit)} (provisioned) vs "
                    f"the {self.track.budget_text} budget.")
        else:
            best = "No design passes every constraint."
        return (f"{self._computed_line()}"
                f"<div>{lw.esc(best)}</div>"
                f"<div>Yours: <b>{'feasible' if r['feasible'] else 'infeasible'}</b> with "
                f"{counted(r['devices'], 'device')}.</div>"
                "<div style='color:#5d6d7e'>Why: each constraint alone is easy; together they "
                f"pin the design.{lw.esc(self._precision_why())}</div>")

    def _precision_why(self) -> str:
        """Where labkit's best design puts the weight precision and what a lower precision
        changes on this track (each memory, latency and energy constraint computed at the
        next precision up)."""
        ref, tr = self.reference, self.track
        if ref is None or "weight_bits" not in ref.config:
            return ""
        other = next_precision(int(ref.config["weight_bits"]))
        changes = () if other is None else precision_changes(tr, ref.config, other)
        note = self.design.precision_note(ref.config)
        return precision_sentence(ref, tr.min_weight_bits, changes) + (
            f" ({note}.)" if note else "")

    def takeaway(self) -> str:
        r = self.results
        st = ("passes every constraint" if r["feasible"] else
              f"fails {', '.join(constraint_label(n) for n in r['failed'])}")
        fewest = ("" if r["min_devices"] is None
                  else f" (labkit's fewest: {fmt_count(r['min_devices'])})")
        rented = self.per_device_day is not None
        obj = r["objective"]
        return (f"Design: your {self.design.label} design {st} with "
                f"{counted(r['devices'], 'device')}{fewest}; "
                f"{objective_label(rented, obj['name'], self.design.objective_basis)} "
                f"{fmt_amount(obj['value'], self.unit)}.")
