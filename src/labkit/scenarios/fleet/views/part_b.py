"""Lab 2 Part B, fleet scenario: size a fleet on weights, KV headroom and TPOT, then add
prefill and the utilisation cap. The view: controls and charts bound to the fields of
:class:`~..plan.capacity.FleetSizing`; the words are in :mod:`.part_b_spec`."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import labkit.scenarios.fleet.views.part_b_spec as spec
from labkit import ui as lw
from labkit.core.format import fmt_count, fmt_num, fmt_time
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.decisions import longer_context_start
from labkit.labs.accelerators.edge_view import limits_decision
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
from labkit.scenarios.fleet.plan.capacity import (
    REPLICA_SIZES,
    FleetSizing,
    fleet_hook,
    size_fleet,
)
from labkit.scenarios.fleet.plan.sizing import (
    BATCH_SLO_TPOT_S,
    Move,
    memory_basis,
    single_moves,
    slo_class,
    slo_tpot,
)
from labkit.ui.charts import lin_top, log_domain

AXIS_LABELS, PLAYBOOK, SERVED_LABEL = spec.AXIS_LABELS, spec.PLAYBOOK, spec.SERVED_LABEL
KEYS = ("users", "context", "slo", "weight_bits", "kv_bits")


class PartBFleet(Part):
    """Three-axis sizing of a fleet (weights floor, KV headroom, TPOT throughput), and the
    fleet that serves it (prefill and the utilisation cap added).

    Refresh steps: the sizing reads every control and every chart, card and callout shows
    it, so all steps depend on every control; the replica chart reads the per-replica
    limits (KV memory and TPOT budget per replica size), which do not move with the users.
    """

    shows = (
        ("devices", "fleet_devices"),
        ("cost_per_day_provisioned", "provisioned_cost_per_day"),
        ("cost_per_day_busy", "busy_cost_per_day"),
    )

    def shown_basis(self, name: str) -> str:
        """At the starting candidate, its sentence (its context is not the plan's); else:
        the fleet is sized on the replica Part B's sizing picks, not Lab 1's."""
        return super().shown_basis(name) or spec.RELEASE_SHAPE

    letter = "B"

    def _setup(self) -> None:
        tr = self.track
        self.u0, rate, secs, self.ctx0 = fleet_hook(tr)
        self._hook_args = (self.u0, rate, secs, self.ctx0)
        self.cls0 = slo_class(tr)
        self._setup_controls()
        self._cache: dict[tuple[object, ...], FleetSizing] = {}
        self.default_sizing = self._size(self.u0, self.ctx0, self.cls0, tr.weight_bits,
                                         int(tr.kv_bits or 16))
        self._expected = self.default_sizing.sizing.binding_axis
        self._start_at(*longer_context_start(self, self.ctx0))
        ax, ay = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_axes = ay
        self.axis_names = list(spec.BAR_NAMES)
        self.m_axes = lw.bar_mark(self.axis_names, np.zeros(5), ax, ay,
                                  colors=[lw.PALETTE["grey"]] * 5, color_mode="no_group",
                                  label_display=True, label_display_format=",.0f")
        self.figures["axes"] = lw.figure(
            [self.m_axes], ax, ay, x_label="sizing axis (red: the one that binds)",
            y_label=f"devices ({self.hw.name})",
            title="Three axes, the decode-only plan, and the fleet with prefill and the cap",
            height=300)
        rx, ry = lw.make_scale("ordinal"), lw.make_scale("log", spec.LOG_FLOOR, 10.0)
        self.s_rep = ry
        self.m_rep = lw.bar_mark([str(x) for x in REPLICA_SIZES],
                                 np.ones((2, len(REPLICA_SIZES))), rx, ry,
                                 colors=[lw.PALETTE["purple"], lw.PALETTE["orange"]],
                                 labels=["KV memory allows", "TPOT budget allows"],
                                 kind="grouped", legend=True, base=spec.LOG_FLOOR)
        self.m_rep_u = lw.hline_mark(float(self.u0), ry, color=lw.PALETTE["red"],
                                     label="users", legend=True)
        self.figures["replica"] = lw.figure(
            [self.m_rep, self.m_rep_u], rx, ry, x_label="devices per replica",
            y_label="sequences per replica (log)",
            title=(f"What limits one replica, by its size (memory "
                   f"{memory_basis(self.track)}, the paper's count; a limit of {fmt_num(0)} "
                   f"shows as {fmt_num(spec.LOG_FLOOR)})"), legend=True,
            legend_location="top-left", y_tick_format=",.4~g", height=300)
        self._callout("infeasible", "danger")
        self._callout("budget", "danger")
        self._callout("binding", "info")
        self._callout("served", "info")
        self._callout("boundary", "success")

    def _setup_controls(self) -> None:
        tr, m = self.track, self.model
        c = self.controls
        users = sorted({max(1, round(self.u0 * 2 ** (k / 4))) for k in range(-28, 17)}
                       | {self.u0})
        c["users"] = lw.selection_control("Concurrent users (sequences)",
                                          [(fmt_count(u), u) for u in users], self.u0)
        c["context"] = lw.context_control(self.ctx0, m.max_context, 256,
                                          "Context per user (tokens)")
        c["slo"] = lw.choice_control(
            "Workload (TPOT SLO)",
            [(f"voice ({fmt_time(slo_tpot('voice'))})", "voice"),
             (f"chat ({fmt_time(slo_tpot('chat'))})", "chat"),
             (f"batch (no TPOT; {fmt_time(BATCH_SLO_TPOT_S)} cap)", "batch")], self.cls0,
            style="toggle")
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        kb = int(tr.kv_bits or 16)
        c["kv_bits"] = lw.precision_control("KV-cache precision", kb, sorted({4, 8, 16, kb}))

    def _size(self, users: int, ctx: int, slo: str, wb: int, kb: int) -> FleetSizing:
        key = (int(users), int(ctx), str(slo), int(wb), int(kb))
        if key not in self._cache:
            self._cache[key] = size_fleet(self.track, *key)
        return self._cache[key]

    def _of(self, s: Mapping[str, object]) -> FleetSizing:
        return self._size(*(s[k] for k in KEYS))  # type: ignore[arg-type]

    def _hook(self) -> str:
        return spec.hook(*self._hook_args, self.hw.name)

    def _prediction_spec(self) -> Spec:
        return spec.prediction(self.track, self.default_sizing)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.checkpoint()

    # -- shared values ---------------------------------------------------------------------
    @computed(ALL)
    def _fleet(self, s: Settings) -> FleetSizing:
        """The sized fleet at the current settings."""
        return self._of(s)

    def _decision(self, s: Settings) -> Decision:
        f = self._of(s)
        return limits_decision(spec.task(self.track),
                               {"fit": not f.feasible, "budget": f.feasible and f.over_budget},
                               spec.LIMIT_WORDS)

    def moves(self, s: Settings, check: str) -> tuple[Move, ...]:
        """Recovery moves for failing ``check`` ('infeasible' or 'budget'): one control on
        screen, moved alone, and the check passes."""
        def passes(x: Mapping[str, object]) -> bool:
            f = self._of(x)
            return f.feasible and (check == "infeasible" or not f.over_budget)
        opts = {k: [o[1] for o in self.controls[k].options] for k in KEYS}
        return single_moves({k: s[k] for k in KEYS}, opts, passes)

    def _recovery(self, s: Settings, check: str) -> str:
        moves = self.moves(s, check)
        if not moves:
            return "no single control on screen fixes this: move two at once"
        return "; or ".join(f"{lw.esc(self.controls[mv.control].description)} → "
                            f"{lw.esc(self.option_label(mv.control, mv.value))}"
                            for mv in moves)

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_axes(self, s: Settings) -> None:
        f = self._fleet(s)
        sz = f.sizing
        vals = np.asarray([sz.weights_floor_devices, sz.kv_headroom_devices,
                           f.slo_axis_devices, f.decode_only_devices,
                           f.served_devices or 0], dtype=float)
        colors = [lw.PALETTE["red"] if k == sz.binding_axis else lw.PALETTE["grey"]
                  for k in ("weights", "kv", "slo")] + [lw.PALETTE["blue"],
                                                        lw.PALETTE["orange"]]
        lw.update_marks({
            self.m_axes: {"y": vals, "colors": colors},
            self.s_axes: {"max": lin_top(vals, floor=4.0, pad=1.3)},
        })

    @depends_on("context", "slo", "weight_bits", "kv_bits", "users")
    def _draw_replica(self, s: Settings) -> None:
        f = self._fleet(s)
        users = int(s["users"])
        rep = np.maximum(np.asarray([f.kv_limit_by_size, f.slo_limit_by_size], dtype=float),
                         spec.LOG_FLOOR)
        lo, hi = log_domain(np.concatenate([rep.ravel(), [users]]), 2.0)
        lw.update_marks({
            self.m_rep: {"y": rep}, self.s_rep: {"min": max(spec.LOG_FLOOR, lo), "max": hi},
            self.m_rep_u: {"y": [float(users), float(users)]},
        })

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results, readout cards and the playbook table."""
        f = self._fleet(s)
        self.results = {**f.as_dict(), "daily_cost": f.provisioned_cost_per_day,
                        "cost_basis": "provisioned", "cost_unit": self.track.cost_unit,
                        "expected": self._expected}
        self._set_readout(metric_cards(spec.cards(f, self.track.budget_text)))
        self._set_details(spec.playbook_table(f.sizing.binding_axis))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        f = self._fleet(s)
        sz = f.sizing
        bind = sz.binding_axis
        self.callouts["infeasible"].set(
            not f.feasible, spec.infeasible_title(), lw.esc(sz.reason) + ".",
            self._recovery(s, "infeasible") if not f.feasible else None)
        self.callouts["budget"].set(
            f.over_budget, "Over the daily budget (provisioned fleet)",
            spec.budget_detail(f, self.track.budget_text),
            self._recovery(s, "budget") if f.over_budget else None)
        self.callouts["binding"].set(
            f.feasible, f"{AXIS_LABELS[bind]} binds",
            f"The paper's first lever: <b>{lw.esc(PLAYBOOK[bind][1])}</b>. Second: "
            f"{lw.esc(PLAYBOOK[bind][2])}.")
        self.callouts["served"].set(f.feasible, spec.served_title(f), spec.served_text(f))
        title, detail = spec.boundary(f)
        self.callouts["boundary"].set(f.feasible and not f.over_budget, title, detail)

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        self.math.update(spec.math_html(self._fleet(s)))

    def _reveal_body(self) -> str:
        f = self._of(self.settings())
        return self._computed_line() + spec.reveal(self.default_sizing, f)

    def takeaway(self) -> str:
        return spec.takeaway(self._of(self.settings()))
