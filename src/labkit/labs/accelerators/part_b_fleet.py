"""Lab 2 Part B, fleet scenario: size a fleet on weights, KV headroom and TPOT."""

from __future__ import annotations

import math

import numpy as np

from labkit import ui as lw
from labkit.core.format import (
    fmt_amount,
    fmt_count,
    fmt_time,
    tex_num,
)
from labkit.core.grids import pow2
from labkit.core.units import bits_to_bytes
from labkit.labs.accelerators.base import Part, feedback_map
from labkit.labs.common import (
    ALL,
    CheckSpec,
    Settings,
    Spec,
    computed,
    depends_on,
    html_table,
    metric_cards,
)
from labkit.physics.capacity import Sizing
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.plans.design import (
    BATCH_SLO_TPOT_S,
    DESIGN_MODE,
    fleet_sizing,
    fleet_users,
    per_replica_limits,
    slo_class,
    slo_tpot,
)
from labkit.plans.serving import FleetReconciliation, fleet_reconciliation
from labkit.plans.workload import track_phases
from labkit.ui.charts import lin_top, log_domain

# -- Part B: capacity planning --------------------------------------------------------------------

PLAYBOOK = {
    "weights": ("A. capacity (weights)", "more TP / PP devices per replica",
                "a bigger-memory device; FP8 / INT4 weights"),
    "kv": ("B. KV headroom", "more CP; fewer sequences per replica",
           "GQA / MQA / MLA; INT4 KV; sparse attention"),
    "slo": ("C. TPOT throughput", "more replicas (DP)",
            "loosen the SLO; a smaller model; speculative decoding"),
}
AXIS_LABELS = {"weights": "A: weights floor", "kv": "B: KV headroom",
               "slo": "C: TPOT throughput"}
SERVED_LABEL = "served: + prefill, utilisation cap"


class PartBFleet(Part):
    """Three-axis sizing of a fleet: weights floor, KV headroom, TPOT throughput.

    Refresh steps: the sizing reads every control and every chart, card and callout shows
    it, so all steps depend on every control; the per-replica limits (KV memory and TPOT
    budget for each replica size) are shared and recomputed only when the context, SLO or
    precisions change, not the number of users.
    """

    letter = "B"

    def _setup(self) -> None:
        tr = self.track
        self.u0 = fleet_users(tr)
        self.ctx0 = int(tr.context_tokens or 0)
        self.cls0 = slo_class(tr)
        self._setup_controls()
        self.sizes = np.asarray(pow2(64), dtype=np.int64)
        self.default_sizing = self._size(self.u0, self.ctx0, slo_tpot(self.cls0),
                                         tr.weight_bits, tr.kv_bits)
        self._expected = self.default_sizing.binding_axis
        ax, ay = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_axes = ay
        self.axis_names = [AXIS_LABELS["weights"], AXIS_LABELS["kv"], AXIS_LABELS["slo"],
                           "sized plan", SERVED_LABEL]
        self.m_axes = lw.bar_mark(self.axis_names, np.zeros(5), ax, ay,
                                  colors=[lw.PALETTE["grey"]] * 5, color_mode="no_group",
                                  label_display=True, label_display_format=",.0f")
        self.figures["axes"] = lw.figure(
            [self.m_axes], ax, ay, x_label="sizing axis (red: the one that binds)",
            y_label=f"devices ({self.hw.name})",
            title="Three axes, the sized plan, and the plan served with prefill",
            height=300)
        rx, ry = lw.make_scale("ordinal"), lw.make_scale("log", 0.5, 10.0)
        self.s_rep = ry
        self.m_rep = lw.bar_mark([str(x) for x in self.sizes], np.ones((2, self.sizes.size)),
                                 rx, ry, colors=[lw.PALETTE["purple"], lw.PALETTE["orange"]],
                                 labels=["KV memory allows", "TPOT budget allows"],
                                 kind="grouped", legend=True, base=0.5)
        self.m_rep_u = lw.hline_mark(float(self.u0), ry, color=lw.PALETTE["red"],
                                     label="users", legend=True)
        self.figures["replica"] = lw.figure(
            [self.m_rep, self.m_rep_u], rx, ry, x_label="devices per replica",
            y_label="sequences per replica (log)",
            title="What limits one replica, by its size (0 shows as 0.5)", legend=True,
            legend_location="top-left", y_tick_format=",.4~g", height=300)
        self._callout("infeasible", "danger")
        self._callout("budget", "danger")
        self._callout("binding", "info")
        self._callout("served", "info")
        self._callout("boundary", "success")
        self._sizing_cache: dict[tuple, Sizing] = {}
        self._served_cache: dict[tuple, FleetReconciliation | None] = {}

    def _setup_controls(self) -> None:
        tr, m = self.track, self.model
        c = self.controls
        users = sorted({max(1, round(self.u0 * 2 ** (k / 4))) for k in range(-28, 17)}
                       | {self.u0})
        c["users"] = lw.selection_control("Concurrent users (sequences)",
                                          [(f"{u:,}", u) for u in users], self.u0)
        c["context"] = lw.context_control(self.ctx0, m.max_context, 256,
                                          "Context per user (tokens)")
        c["slo"] = lw.choice_control(
            "Workload (TPOT SLO)",
            [(f"voice ({slo_tpot('voice') * 1e3:g} ms)", "voice"),
             (f"chat ({slo_tpot('chat') * 1e3:g} ms)", "chat"),
             (f"batch (no TPOT; {BATCH_SLO_TPOT_S:g} s cap)", "batch")], self.cls0,
            style="toggle")
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["kv_bits"] = lw.precision_control("KV-cache precision", tr.kv_bits,
                                            sorted({4, 8, 16, tr.kv_bits}))

    def _size(self, users: int, ctx: int, tpot: float, wb: int, kb: int) -> Sizing:
        return fleet_sizing(self.hw, self.model, users, ctx, tpot, wb, kb)

    def _hook(self) -> str:
        tr = self.track
        return (f"{self.u0:,} conversations are live at any moment "
                f"({fmt_count(tr.demand_rate_per_s)} requests/s x "
                f"{fmt_time(track_phases(tr, mode=DESIGN_MODE).latency_s)} each, "
                f"Little's law), each holding up to {self.ctx0:,} tokens of KV. Size the "
                f"{self.hw.name} fleet on three axes: weights, KV headroom and TPOT.")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: {self.u0:,} users at {self.ctx0:,} tokens, TPOT within "
             f"{slo_tpot(self.cls0) * 1e3:g} ms, {tr.weight_bits}-bit weights and "
             f"{tr.kv_bits}-bit KV. Which axis decides the fleet size?")
        return q, [("A: the weights floor (devices to hold one copy of the model)",
                    "weights"),
                   ("B: KV headroom (memory for every user's cache)", "kv"),
                   ("C: TPOT throughput (users per replica within the SLO)", "slo")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "When the KV axis binds, which lever does the paper's playbook pull first?"
        opts = [("More CP, fewer sequences per replica; then shrink kv_bpt (GQA/MLA, "
                 "INT4 KV)", "kv_levers"),
                ("FP8 weights", "weights"),
                ("More replicas at the same size, nothing else", "dp_only"),
                ("Loosen the TPOT SLO", "slo")]
        good = ("Right: KV is the axis where algorithms buy the most, because they attack "
                "kv_bpt directly; CP spreads one sequence's cache, fewer sequences per "
                "replica leave room for it.")
        bad = ("Not quite: that lever answers another axis. For KV the paper pulls CP and a "
               "smaller batch per replica first, then GQA/MQA/MLA, INT4 KV or sparse "
               "attention.")
        return q, opts, "kv_levers", feedback_map(opts, "kv_levers", good, bad)

    # -- shared values ---------------------------------------------------------------------
    @computed(ALL)
    def _sizing(self, s: Settings) -> Sizing:
        """The sized fleet (cached per settings seen, as a student revisits values)."""
        key = (int(s["users"]), int(s["context"]), slo_tpot(str(s["slo"])),
               int(s["weight_bits"]), int(s["kv_bits"]))
        if key not in self._sizing_cache:
            self._sizing_cache[key] = self._size(*key)
        return self._sizing_cache[key]

    def _demand(self, s: Settings) -> float:
        """Requests/s behind ``users`` live conversations: the track's demand scaled with
        the users (Little's law at a fixed request time, exact at the default)."""
        return self.track.demand_rate_per_s * int(s["users"]) / self.u0

    @computed(ALL)
    def _served(self, s: Settings) -> FleetReconciliation | None:
        """The same demand sized the way Lab 1's release review sizes it (None when the
        three axes find no feasible replica)."""
        sz = self._sizing(s)
        if not sz.feasible:
            return None
        key = (int(s["users"]), int(s["context"]), str(s["slo"]), int(s["weight_bits"]),
               int(s["kv_bits"]))
        if key not in self._served_cache:
            self._served_cache[key] = fleet_reconciliation(
                self.track, sz, demand_rate_per_s=self._demand(s),
                weight_bits=int(s["weight_bits"]), kv_bits=int(s["kv_bits"]),
                context_tokens=int(s["context"]))
        return self._served_cache[key]

    @computed("context", "slo", "weight_bits", "kv_bits")
    def _limits(self, s: Settings) -> tuple[np.ndarray, np.ndarray]:
        """Sequences one replica of each size holds by KV memory and by the TPOT budget."""
        return per_replica_limits(self.hw, self.model, int(s["context"]),
                                  slo_tpot(str(s["slo"])), int(s["weight_bits"]),
                                  int(s["kv_bits"]), self.sizes)

    def _slo_axis_devices(self, s: Settings) -> int:
        sz = self._sizing(s)
        return (math.ceil(int(s["users"]) / max(1, sz.batch_at_slo)) * sz.devices_per_replica
                if sz.feasible else 0)

    def _daily(self, s: Settings) -> float:
        tr = self.track
        return (self._sizing(s).total_devices * float(tr.price_per_device_hour or 0.0)
                * tr.active_hours_per_day)

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_axes(self, s: Settings) -> None:
        sz = self._sizing(s)
        rec = self._served(s)
        vals = np.asarray([sz.weights_floor_devices, sz.kv_headroom_devices,
                           self._slo_axis_devices(s), sz.total_devices,
                           0 if rec is None else rec.same_shape.total_devices], dtype=float)
        colors = [lw.PALETTE["red"] if k == sz.binding_axis else lw.PALETTE["grey"]
                  for k in ("weights", "kv", "slo")] + [lw.PALETTE["blue"],
                                                        lw.PALETTE["orange"]]
        lw.update_marks({
            self.m_axes: {"y": vals, "colors": colors},
            self.s_axes: {"max": lin_top(vals, floor=4.0, pad=1.3)},
        })

    @depends_on("_limits", "users")
    def _draw_replica(self, s: Settings) -> None:
        users = int(s["users"])
        b_kv, b_slo = self._limits(s)
        rep = np.vstack([np.maximum(b_kv, 0.5), np.maximum(b_slo, 0.5)])
        lo, hi = log_domain(np.concatenate([rep.ravel(), [users]]), 2.0)
        lw.update_marks({
            self.m_rep: {"y": rep}, self.s_rep: {"min": max(0.5, lo), "max": hi},
            self.m_rep_u: {"y": [float(users), float(users)]},
        })

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results, readout cards and the playbook table."""
        tr = self.track
        sz = self._sizing(s)
        b_kv, b_slo = self._limits(s)
        daily = self._daily(s)
        bind = sz.binding_axis
        self.results = {
            **sz.as_dict(), "users": int(s["users"]), "context_tokens": int(s["context"]),
            "slo_class": str(s["slo"]), "tpot_s": slo_tpot(str(s["slo"])),
            "weight_bits": int(s["weight_bits"]), "kv_bits": int(s["kv_bits"]),
            "slo_axis_devices": self._slo_axis_devices(s), "daily_cost": daily,
            "cost_unit": tr.cost_unit,
            "kv_limit_by_size": b_kv.tolist(), "slo_limit_by_size": b_slo.tolist(),
            "replica_sizes": self.sizes.tolist(), "expected": self._expected,
            **self._served_results(s),
        }
        self._set_readout(metric_cards([
            ("binding axis", AXIS_LABELS[bind] if sz.feasible else "infeasible",
             lw.esc(sz.reason), lw.PALETTE["red"]),
            ("fleet", f"{sz.total_devices:,} devices" if sz.feasible else "—",
             f"{sz.replicas} x {sz.devices_per_replica}-device replicas",
             lw.PALETTE["blue"]),
            ("users per replica", f"{sz.users_per_replica:,}",
             f"TPOT allows {sz.batch_at_slo:,}", lw.PALETTE["orange"]),
            ("daily cost", fmt_amount(daily, "USD"), f"budget {tr.budget_text}",
             lw.PALETTE["grey"]),
        ]))
        rows = [[("<b>" if k == bind else "") + lw.esc(PLAYBOOK[k][0])
                 + ("</b> ◀ binds" if k == bind else ""),
                 lw.esc(PLAYBOOK[k][1]), lw.esc(PLAYBOOK[k][2])] for k in PLAYBOOK]
        self._set_details("<div><b>The paper's playbook per binding axis</b></div>"
                          + html_table(["binding axis", "first lever", "second lever"], rows))

    def _served_results(self, s: Settings) -> dict[str, object]:
        rec = self._served(s)
        out: dict[str, object] = {"demand_rate_per_s": self._demand(s)}
        if rec is None:
            return {**out, "served_devices": None, "release_devices": None}
        same, rel = rec.same_shape, rec.release
        return {**out, "served_devices": same.total_devices, "served_replicas": same.replicas,
                "served_slots": same.batch_size, "prefill_s": rec.prefill_s,
                "prefill_share": rec.prefill_share, "max_utilisation": rec.max_utilisation,
                "release_devices": rel.total_devices, "release_replicas": rel.replicas,
                "release_devices_per_replica": rel.devices_per_replica,
                "release_slots": rel.batch_size, "release_daily_cost": rel.daily_cost}

    def _served_text(self, s: Settings, rec: FleetReconciliation) -> str:
        """Why Lab 1 sizes the same demand differently, every term computed."""
        sz, same, rel = self._sizing(s), rec.same_shape, rec.release
        slots = ("" if same.batch_size == sz.users_per_replica else
                 f" (memory after the {self.track.memory_reserve_fraction:.0%} reserve holds "
                 f"{same.batch_size:,} of the {sz.users_per_replica:,} sequences)")
        lab1 = (f"{rel.total_devices:,} devices ({rel.replicas:,} x "
                f"{rel.devices_per_replica}, {rel.batch_size} slots each)"
                if rel.feasible else "no plan (weights + one session do not fit)")
        head = (f"The three axes size decode only, every replica 100% busy: "
                f"{sz.total_devices:,} devices for {fmt_count(rec.demand_rate_per_s)} "
                f"requests/s. ")
        tail = (f" Lab 1's release review sizes this demand on its own replica shape with "
                f"the same function: {lab1}.")
        if not same.feasible:
            return (head + f"With Lab 1's {self.track.memory_reserve_fraction:.0%} memory "
                    f"reserve, weights + one sequence no longer fit a replica of "
                    f"{sz.devices_per_replica} device(s)." + tail)
        return (head + f"Each request also needs a prefill of {fmt_time(rec.prefill_s)} on a "
                f"replica of {sz.devices_per_replica} device(s) ({rec.prefill_share:.0%} of a "
                f"saturated replica's time), and a release keeps replicas at most "
                f"{rec.max_utilisation:.0%} busy: the same replicas{slots} need "
                f"<b>{same.total_devices:,} devices</b> ({same.replicas:,} x "
                f"{sz.devices_per_replica})." + tail)

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        sz = self._sizing(s)
        b_kv, _ = self._limits(s)
        daily = self._daily(s)
        bind = sz.binding_axis
        first, second = PLAYBOOK[bind][1], PLAYBOOK[bind][2]
        self.callouts["infeasible"].set(
            not sz.feasible, "Infeasible: no replica of up to 64 devices serves this",
            lw.esc(sz.reason) + ".",
            "lower the precision, shorten the context, or loosen the TPOT SLO")
        over = sz.feasible and daily > tr.daily_budget
        self.callouts["budget"].set(
            over, "Over the daily budget",
            f"{sz.total_devices:,} devices x {tr.price_per_device_hour:g} USD/h x "
            f"{tr.active_hours_per_day:g} h = {fmt_count(daily)} USD/day against "
            f"{tr.budget_text}.", f"{first}; then {second}")
        self.callouts["binding"].set(
            sz.feasible, f"{AXIS_LABELS[bind]} binds",
            f"First lever: <b>{lw.esc(first)}</b>. Second: {lw.esc(second)}.")
        rec = self._served(s)
        if rec is None:
            self.callouts["served"].clear()
        else:
            served = (f"{rec.same_shape.total_devices:,} devices, not {sz.total_devices:,}"
                      if rec.same_shape.feasible else "no replica of this size fits")
            self.callouts["served"].show(
                f"Served with prefill, replicas at most {rec.max_utilisation:.0%} busy: {served}",
                self._served_text(s, rec))
        self.callouts["boundary"].set(
            sz.feasible and not over,
            f"{sz.total_devices:,} devices serve {int(s['users']):,} users within "
            f"{slo_tpot(str(s['slo'])) * 1e3:g} ms",
            f"{sz.replicas} replica(s) of {sz.devices_per_replica}; each holds "
            f"{sz.users_per_replica:,} users (KV allows "
            f"{int(b_kv[list(self.sizes).index(sz.devices_per_replica)]):,}, TPOT "
            f"{sz.batch_at_slo:,}).")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        sz = self._sizing(s)
        users, ctx = int(s["users"]), int(s["context"])
        kvb = kv_bytes_per_token(self.model, int(s["kv_bits"]))
        nb = self.model.block_params_total * bits_to_bytes(int(s["weight_bits"]))
        hbm = self.hw.usable_memory_bytes
        self.math.update(
            "<p>Three axes, all must hold (HBM = usable bytes per device):</p>"
            f"$$A = \\left\\lceil \\frac{{N b}}{{\\mathrm{{HBM}}}} \\right\\rceil = "
            f"\\left\\lceil \\frac{{{tex_num(nb)}}}{{{tex_num(hbm)}}}"
            f"\\right\\rceil = {sz.weights_floor_devices}$$"
            f"$$B = \\left\\lceil \\frac{{N b + u\\,S\\,\\mathrm{{kv\\_bpt}}}}"
            f"{{\\mathrm{{HBM}}}} \\right\\rceil = \\left\\lceil \\frac{{{tex_num(nb)} + "
            f"{users} \\times {ctx} \\times {tex_num(kvb)}}}"
            f"{{{tex_num(hbm)}}} \\right\\rceil = "
            f"{sz.kv_headroom_devices}$$"
            f"$$C:\\ N_{{\\text{{replicas}}}} = \\left\\lceil \\frac{{u}}{{B_{{\\mathrm{{SLO}}}}}}"
            f"\\right\\rceil = \\left\\lceil \\frac{{{users}}}{{{max(1, sz.batch_at_slo)}}}"
            f"\\right\\rceil$$"
            "<p>The sized plan tries every power-of-two replica size d and keeps the fewest "
            "devices: users per replica = min(KV fits, TPOT allows, users), replicas = "
            f"ceil(users / that). Now: {sz.replicas} x {sz.devices_per_replica} = "
            f"{sz.total_devices}. Source: <code>labkit.physics.capacity.size_deployment</code> "
            "(achievable roofline).</p>")

    def _reveal_body(self) -> str:
        d = self.default_sizing
        r = self.results
        return (f"{self._computed_line()}"
                f"<div>At the defaults: {lw.esc(d.reason)}; {d.total_devices} devices "
                f"({d.replicas} x {d.devices_per_replica}).</div>"
                f"<div>With your settings: <b>{AXIS_LABELS.get(str(r['binding_axis']), '')}"
                f"</b>, {r['total_devices']:,} devices.</div>"
                "<div style='color:#5d6d7e'>Why: the weights fit on a couple of devices, but "
                "every live user keeps a KV cache; at chat context the caches outweigh the "
                "model, and memory, not FLOP/s or the TPOT budget, sets the fleet.</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Capacity: {r['users']:,} users at {r['context_tokens']:,} tokens within "
                f"{r['tpot_s'] * 1e3:g} ms need {r['total_devices']:,} devices; the "
                f"{AXIS_LABELS.get(str(r['binding_axis']), 'n/a')} axis binds, so the first "
                f"lever is {PLAYBOOK[str(r['binding_axis'])][1]}.")
