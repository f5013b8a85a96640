"""Lab 2 Part A for a transformer track: the decode roofline, as a view. The numbers are
:mod:`labkit.plans.roofline`'s (one :class:`~labkit.plans.roofline.DecodeView` per
point, sweeps for the charts); the text is :mod:`~labkit.labs.accelerators.part_a_spec`
and :mod:`~labkit.labs.accelerators.part_a_text`; the charts
:mod:`~labkit.labs.accelerators.part_a_charts` (the CNN part is
:mod:`labkit.labs.accelerators.part_a_cnn`)."""

from __future__ import annotations

import numpy as np

from labkit import ui as lw
from labkit.core.grids import pow2
from labkit.labs.accelerators import decisions
from labkit.labs.accelerators import part_a_spec as spec
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.measured_points import DecodePoints
from labkit.labs.accelerators.part_a_charts import (
    batch_chart,
    context_chart,
    gain_chart,
    modes_chart,
    modes_updates,
    sweep_terms,
    time_axis_label,
    within,
)
from labkit.labs.accelerators.part_a_results import results
from labkit.labs.accelerators.part_a_text import (
    math_html,
    memory_html,
    oom_text,
    rules_html,
    serving_html,
)
from labkit.labs.accelerators.stack_text import stack_cards
from labkit.labs.common import ALL, CheckSpec, Settings, Spec, computed, depends_on, metric_cards
from labkit.plans.design import DESIGN_KEYS, MODES, scenario
from labkit.plans.moves import Move
from labkit.plans.roofline import (
    PAPER_HARDWARE,
    PAPER_MAX_CONTEXT,
    PAPER_MODEL,
    Balance,
    DecodeRoofline,
    DecodeView,
    balance,
    decode_fixes,
    decode_view,
)
from labkit.plans.roofline_sweeps import (
    BatchSweep,
    batch_sweep,
    context_sweep,
    gain_sweep,
    paper_example,
    paper_pair,
)
from labkit.plans.stacks import NO_STACK
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model
from labkit.ui.charts import log_domain

BATCH_OPTIONS = tuple(pow2(1024))


class PartALM(Part):
    """Decode roofline of a transformer: weight fetch, compute and KV read vs batch and context,
    with B*, L*, the knee and the paper's serving batch 2B*; peak vs achievable side by side.
    On the paper's model a "device" toggle swaps in the paper's PE (one PE, context to 1M
    tokens, analytic: memory not modelled) so section 5.1's worked example can be read off.

    Refresh steps: the batch sweep reads the context, roofline and precisions (not the
    batch); the context sweep the batch, roofline and precisions; the gain curve the
    roofline and precisions; "per token / per step" re-slices the sweeps. The device
    toggle reaches every step. The points, bars, readout, callouts, rules and measured
    tables and math peek read the point (:meth:`_view`).
    """

    shows = (("b_star", "b_star"), ("l_star", "l_star"))
    letter = "A"
    _decision = decisions.part_a_lm

    def _setup(self) -> None:
        tr, m = self.track, self.model
        self.tp = tr.devices_per_replica
        self.ctx0, self.b0 = int(tr.context_tokens or 0), int(tr.batch_size)
        self.paper_hw: Hardware | None = (
            get_hardware(PAPER_HARDWARE)
            if m.id == PAPER_MODEL and self.hw.id != PAPER_HARDWARE else None)
        self._swapping = False
        self.batch_options = sorted(set(BATCH_OPTIONS) | {self.b0})
        self._setup_controls()
        self.axes = DESIGN_KEYS[scenario(tr)]
        self._serves = {"batching": tr.batch_size > 1}   # one user: no batch lever
        b_max = max(self.batch_options)
        self.bgrid = np.geomspace(1, b_max, 61)
        self.cgrids = {"track": np.geomspace(256, m.max_context, 61),
                       "paper": np.geomspace(256, max(PAPER_MAX_CONTEXT, m.max_context), 61)}
        self.default_point = self._make_view(self.hw, self.tp, False, self.b0, self.ctx0,
                                             tr.weight_bits, tr.kv_bits, "peak")
        self._expected = str(self.default_point.point.regime)
        if self.track.batch_size == 1:   # one user: the weights, not a batch, are the lever
            self.primary = ("weight_bits", "context", "mode")
        self._start_at(*decisions.a_start(self))
        self.bc = batch_chart(self.bgrid, b_max)
        self.cc = context_chart(self.cgrids["track"], m.max_context)
        self.gc = gain_chart(self.cgrids["track"], m.max_context, b_max)
        self.mc = modes_chart(tuple(MODES), tr.slo_s)
        self.figures.update(batch=self.bc.fig, context=self.cc.fig, gain=self.gc.fig,
                            modes=self.mc.fig)
        self.measured = DecodePoints([self.hw, self.paper_hw], m,
                                     tr.output_unit).attach(self.bc.fig, self.bc.x, self.bc.y)
        for name, kind in (("oom", "danger"), ("slo", "danger"), ("window", "warn"),
                           ("stall", "warn"), ("boundary", "success")):
            self._callout(name, kind)

    def _setup_controls(self) -> None:
        tr, m, c = self.track, self.model, self.controls
        c["batch"] = lw.selection_control("Batch (sequences per decode step)",
                                          [(str(b), b) for b in self.batch_options], self.b0)
        c["context"] = lw.context_control(self.ctx0, m.max_context, 256,
                                          "Context per sequence (tokens)")
        self._ctx_options = {"track": list(c["context"].options)}
        if self.paper_hw is not None:
            c["device"] = lw.choice_control(
                "Device", spec.device_options(self.hw, self.paper_hw, self.tp), "track",
                style="toggle")
            paper = lw.context_control(self.ctx0, max(PAPER_MAX_CONTEXT, m.max_context), 256)
            self._ctx_options["paper"] = spec.paper_context_options(paper.options, m)
            c["device"].observe(self._swap_context_range, names="value")
        c["mode"] = lw.choice_control("Roofline", spec.MODE_OPTIONS, "peak", style="toggle")
        self._add_stack_control("decode")
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["kv_bits"] = lw.precision_control("KV-cache precision", tr.kv_bits,
                                            sorted({4, 8, 16, tr.kv_bits}))
        c["view"] = lw.choice_control("Show time", spec.VIEW_OPTIONS, "token", style="toggle")

    def _swap_context_range(self, change: dict[str, object]) -> None:
        """Give the context slider the device's range (the paper's reaches 1M tokens),
        keeping the value where it still exists; the device's own refresh redraws."""
        ctl = self.controls["context"]
        opts = self._ctx_options[str(change["new"])]
        value = min(int(ctl.value), int(opts[-1][1]))
        self._swapping = True
        try:
            ctl.options = opts
            ctl.value = value
        finally:
            self._swapping = False

    def _on_change(self, change: dict[str, object]) -> None:  # type: ignore[override]
        if not self._swapping:
            super()._on_change(change)

    # -- the declarative side (part_a_spec) --------------------------------------------------
    def _hook(self) -> str:
        tr = self.track
        return spec.hook(self.model, self.hw,
                         balance(self.hw, self.model, tr.weight_bits, tr.kv_bits, "peak"),
                         self.b0, self.ctx0)

    def _prediction_spec(self) -> Spec:
        return spec.prediction_spec(self.track, self.hw, self.b0, self.ctx0, self.tp)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.checkpoint_spec(paper_example())

    def _reveal_body(self) -> str:
        return spec.reveal_body(self._computed_line(), self.default_point, self.results)

    def takeaway(self) -> str:
        return spec.takeaway(self.results)

    # -- the device a setting runs on ------------------------------------------------------
    def _paper(self, s: Settings) -> bool:
        return s.get("device") == "paper"

    def _hw_of(self, s: Settings) -> Hardware:
        return self.paper_hw if self._paper(s) and self.paper_hw is not None else self.hw

    def _cgrid(self, s: Settings) -> np.ndarray:
        return self.cgrids["paper" if self._paper(s) else "track"]

    def _args(self, s: Settings) -> tuple[Hardware, Model, int, int, int]:
        return (self._hw_of(s), self.model, int(s["weight_bits"]), int(s["kv_bits"]),
                1 if self._paper(s) else self.tp)


    # -- computed values (plans) -----------------------------------------------------------
    def _make_view(self, hw: Hardware, tp: int, paper: bool, b: int, ctx: int, wb: int,
                   kb: int, mode: str, stack: str = NO_STACK) -> DecodeView:
        return decode_view(hw, self.model, batch=b, context_tokens=ctx, weight_bits=wb,
                           kv_bits=kb, tp=tp, mode=mode, paper=paper, stack=stack,
                           batch_options=self.batch_options, axes=self.axes,
                           kv_options=[v for _, v in self.controls["kv_bits"].options],
                           reserve_fraction=self.track.memory_reserve_fraction, **self._serves)

    @computed("device", "batch", "context", "mode", "stack", "weight_bits", "kv_bits")
    def _view(self, s: Settings) -> DecodeView:
        """Your operating point: every number the readout, callouts and prose quote."""
        hw, _, wb, kb, tp = self._args(s)
        return self._make_view(hw, tp, self._paper(s), int(s["batch"]), int(s["context"]),
                               wb, kb, str(s["mode"]), self._stack(s))

    @computed("device", "context", "mode", "stack", "weight_bits", "kv_bits")
    def _sweep_b(self, s: Settings) -> BatchSweep:
        hw, m, wb, kb, tp = self._args(s)
        return batch_sweep(hw, m, self.bgrid, int(s["context"]), wb, kb, tp, str(s["mode"]),
                           self._stack(s))

    @computed("device", "batch", "mode", "stack", "weight_bits", "kv_bits")
    def _sweep_c(self, s: Settings) -> DecodeRoofline:
        hw, m, wb, kb, tp = self._args(s)
        return context_sweep(hw, m, int(s["batch"]), self._cgrid(s), wb, kb, tp,
                             str(s["mode"]), self._stack(s))

    @computed("device", "mode", "stack", "weight_bits", "kv_bits")
    def _balance(self, s: Settings) -> Balance:
        hw, m, wb, kb, _ = self._args(s)
        return balance(hw, m, wb, kb, str(s["mode"]), self._stack(s))

    @computed("device", "mode", "stack", "weight_bits", "kv_bits")
    def _gain(self, s: Settings) -> tuple[np.ndarray, np.ndarray]:
        """(gain, batch) along the context grid, B = 1 to the largest batch that fits."""
        hw, m, wb, kb, tp = self._args(s)
        return gain_sweep(hw, m, self._cgrid(s), wb, kb, tp, str(s["mode"]),
                          self.batch_options, self._paper(s),
                          reserve_fraction=self.track.memory_reserve_fraction,
                          stack=self._stack(s))

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on("_sweep_b", "view")
    def _draw_batch_sweep(self, s: Settings) -> None:
        sw, view, bc = self._sweep_b(s), str(s["view"]), self.bc
        yb = sweep_terms(sw.step, view)
        yo = np.asarray(sw.other.step_s if view == "step" else sw.other.per_token_s) * 1e3
        b_star, knee, top = sw.balance.b_star, sw.knee_batch, float(self.bgrid[-1])
        y_pts, pts = self.measured.draw(self._hw_of(s), view)
        band = sw.band_ms(view)
        lo_b, hi_b = log_domain(np.concatenate([yb.ravel(), yo, y_pts]
                                               + ([] if band is None else [band.ravel()])))
        lw.update_marks({
            bc.terms: {"y": yb}, bc.other: {"y": yo}, **pts,
            bc.band: ({"y": band, "visible": True} if band is not None
                      else {"visible": False}),
            bc.fig.axes[1]: {"label": time_axis_label(view)},
            bc.y: {"min": lo_b, "max": hi_b},
            bc.b_star: {"x": [b_star, b_star], "visible": bool(b_star <= top),
                        "labels": [sw.balance.b_label]},
            bc.serve: {"x": [2 * b_star, 2 * b_star], "visible": bool(2 * b_star <= top),
                       "labels": [f"2B* ({sw.balance.mode}, paper's serving batch)"]},
            bc.knee: ({"x": [knee, knee], "visible": True} if knee is not None
                      and knee <= top else {"visible": False}),
        })

    @depends_on("_sweep_c", "view", "_balance")
    def _draw_context_sweep(self, s: Settings) -> None:
        yc = sweep_terms(self._sweep_c(s), str(s["view"]))
        bal, grid, cc = self._balance(s), self._cgrid(s), self.cc
        l_star = bal.l_star
        lo_c, hi_c = log_domain(yc)
        lw.update_marks({
            cc.x: {"max": float(grid[-1])},
            cc.terms: {"x": grid, "y": yc}, cc.y: {"min": lo_c, "max": hi_c},
            cc.fig.axes[1]: {"label": time_axis_label(str(s["view"]))},
            cc.l_star: {"x": [l_star, l_star], "visible": within(l_star, grid),
                        "labels": [bal.l_label]},
        })

    @depends_on("_gain", "_balance")
    def _draw_gain(self, s: Settings) -> None:
        gain, _ = self._gain(s)
        bal, grid, gc = self._balance(s), self._cgrid(s), self.gc
        l_star = bal.l_star
        shown = gain[np.isfinite(gain)]
        lw.update_marks({
            gc.x: {"max": float(grid[-1])},
            gc.gain: {"x": grid, "y": gain},
            gc.y: dict(zip(("min", "max"), log_domain(shown if shown.size else np.ones(1),
                                                      1.3), strict=True)),
            gc.l_star: {"x": [l_star, l_star], "visible": within(l_star, grid),
                        "labels": [bal.l_label]},
        })

    @depends_on("_view", "view")
    def _draw_points(self, s: Settings) -> None:
        """Your point on the batch, context and gain charts (the gain where a batch fits)."""
        v = self._view(s)
        here = (v.step_s if s["view"] == "step" else v.per_token_s) * 1e3
        g = v.gain
        lw.update_marks({
            self.bc.point: {"x": [float(v.batch)], "y": [here]},
            self.cc.point: {"x": [float(v.context_tokens)], "y": [here]},
            self.gc.point: ({"x": [float(v.context_tokens)], "y": [g.gain], "visible": True}
                            if g.batch_to is not None else {"visible": False}),
        })

    @depends_on("_view")
    def _draw_modes(self, s: Settings) -> None:
        tr = self.track
        lw.update_marks(modes_updates(self.mc, self._view(s).here, tuple(MODES),
                                      tr.slo_s if tr.slo_kind == "tpot" else None))

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        v = self._view(s)
        pair = self._paper_pair(s)
        self.results = results(v, self._expected, self.measured.summary(v.hw, v.stack),
                               pair, self._gain(s))
        cards = spec.cards(v, v.hw.name) + stack_cards(v.stack, v.band_step_s,
                                                        "one step (achievable)")
        if v.paper:
            cards.append(spec.paper_card(pair, paper_example().batches, v.context_tokens,
                                         v.mode))
        self._set_readout(metric_cards(cards))

    @computed("device", "context", "mode", "stack", "weight_bits", "kv_bits")
    def _paper_pair(self, s: Settings) -> tuple[float, float]:
        """Per-token time at the paper's two batches, your context and roofline, s."""
        hw, m, wb, kb, tp = self._args(s)
        return paper_pair(hw, m, int(s["context"]), wb, kb, tp, str(s["mode"]),
                          self._stack(s))

    @computed("device", "batch", "context", "mode", "stack", "weight_bits", "kv_bits")
    def _fixes(self, s: Settings) -> dict[str, tuple[Move, ...]]:
        """For each failing check (memory, TPOT SLO), the controls that alone fix it."""
        hw, m, _, _, tp = self._args(s)
        keys = ("batch", "context", "weight_bits", "kv_bits")
        tr = self.track
        return decode_fixes(hw, m, {k: int(s[k]) for k in keys}, tp, str(s["mode"]),
                            tr.slo_s if tr.slo_kind == "tpot" else None,
                            {k: [v for _, v in self.controls[k].options] for k in keys},
                            reserve_fraction=self.track.memory_reserve_fraction,
                            stack=self._stack(s))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr, m, v, fixes = self.track, self.model, self._view(s), self._fixes(s)
        labels = {k: str(c.description) for k, c in self.controls.items()}
        self.callouts["oom"].set(v.over_memory, "Out of memory: this batch does not fit",
                                 oom_text(v) + spec.paper_oom(v.paper),
                                 spec.hint(fixes.get("oom", ()), labels))
        over_slo = tr.slo_kind == "tpot" and v.step_s > tr.slo_s
        self.callouts["slo"].set(over_slo, "TPOT SLO missed", spec.slo_text(v, tr.slo_s),
                                 spec.hint(fixes.get("slo", ()), labels))
        self.callouts["window"].set(v.context_tokens > m.max_context,
                                    *spec.window_text(m, v.context_tokens))
        self.callouts["stall"].set(v.stalled, *spec.stall_text(v))
        self.callouts["boundary"].set(not v.over_memory and not over_slo and not v.stalled,
                                      *spec.boundary_text(v))

    @depends_on(ALL)
    def _show_rules(self, s: Settings) -> None:
        """Regime rules (your row marked), KV share, 2B* and the device's measured cases."""
        v, tr = self._view(s), self.track
        self._set_details(rules_html(v) + memory_html(v)
                          + serving_html(v, tr.slo_s if tr.slo_kind == "tpot" else None)
                          + self.measured.html(v.hw, v.stack))

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        self.math.update(math_html(self._view(s)))
