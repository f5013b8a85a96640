"""Lab 2 Part B, vehicle scenario: how many cameras one SoC carries.

The numbers are :mod:`..plan.cameras`'s (:func:`~..plan.cameras.camera_point`,
:func:`~..plan.cameras.camera_ratios`, :func:`~..plan.cameras.camera_first`,
:func:`~..plan.cameras.vehicle_batch`); the text is
:mod:`.spec`'s."""

from __future__ import annotations

import numpy as np

import labkit.scenarios.vehicle.views.spec as spec
from labkit import ui as lw
from labkit.core.format import fmt_count, fmt_pct, tex_num
from labkit.labs.accelerators.base import Part, precision_floor_note
from labkit.labs.accelerators.decisions import more_cameras_start
from labkit.labs.accelerators.edge_view import (
    lever_text,
    levers_for,
    limits_decision,
    tex_count,
    tex_eq,
)
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
from labkit.plans.design import DESIGN_MODE, OFF_SCALE, cameras_and_fps, vehicle_frame
from labkit.scenarios.vehicle.plan.cameras import (
    VEHICLE_LIMITS,
    CameraPoint,
    camera_first,
    camera_point,
    camera_ratios,
    vehicle_batch,
)
from labkit.tracks import Track
from labkit.ui.charts import lin_top

LIMIT = 1.0  # a ratio above this fails
MS = 1e3


def _point(track: Track, s: Settings) -> CameraPoint:
    return camera_point(track, int(s["weight_bits"]), int(s["cameras"]), float(s["fps"]))


class PartBVehicle(Part):
    """Multi-camera perception on one SoC: cameras x fps against the deadline, the SoC's
    throughput, memory and the energy budget (each frame its own pass: batch 1).

    Refresh steps: the sweep over camera counts (and the first limit to fail) reads the
    fps and weight precision, not the cameras; the "your cameras" line only the cameras;
    the limit bars, readout, callouts and math peek every control.
    """

    shows = (("cost_per_day_busy", "daily_wh"),)


    letter = "B"

    def _setup(self) -> None:
        tr = self.track
        self.n0, self.f0 = cameras_and_fps(tr)
        c = self.controls
        c["cameras"] = lw.int_control("Cameras", self.n0, 1, max(64, 2 * self.n0))
        c["fps"] = lw.int_control("Frames per second per camera", round(self.f0), 5,
                                  max(60, round(self.f0)), 5)
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        self.cams = np.arange(1, int(self.controls["cameras"].max) + 1)
        self.names = list(VEHICLE_LIMITS)
        self.default_walls = camera_first(tr, tr.weight_bits, self.f0, int(self.cams[-1]))
        self._expected = self.default_walls[1]
        self._start_at(*more_cameras_start(self, self.n0))
        self.batched = vehicle_batch(tr, tr.weight_bits, max(1, tr.batch_size))
        self.levers: dict[str, tuple[str, object] | None] = {}
        rx, ry = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_ratio = ry
        self.m_ratio = lw.bar_mark(self.names, np.zeros(4), rx, ry,
                                   colors=[lw.PALETTE["green"]] * 4, color_mode="no_group",
                                   label_display=True, label_display_format=".2f")
        self.m_ratio_l = lw.hline_mark(LIMIT, ry, color=lw.PALETTE["red"], label="limit",
                                       legend=True)
        self.figures["limits"] = lw.figure(
            [self.m_ratio, self.m_ratio_l], rx, ry, x_label="constraint",
            y_label="use of the limit (true value; above the red line fails)",
            title="One SoC against every limit", height=280)
        cx = lw.make_scale("linear", 1, float(self.cams[-1]))
        cy = lw.make_scale("linear", 0.0, 1.0)
        self.s_cam = cy
        self.m_cam = lw.line_mark(self.cams, np.ones((4, self.cams.size)), cx, cy,
                                  colors=[lw.PALETTE["red"], lw.PALETTE["orange"],
                                          lw.PALETTE["blue"], lw.PALETTE["teal"]],
                                  labels=self.names, legend=True)
        self.m_cam_l = lw.hline_mark(LIMIT, cy, color=lw.PALETTE["grey"], label="limit",
                                     legend=True)
        self.m_cam_pt = lw.vline_mark(float(self.n0), cx, color=lw.PALETTE["purple"],
                                      label="your cameras", legend=True)
        self.figures["cameras"] = lw.figure(
            [self.m_cam, self.m_cam_l, self.m_cam_pt], cx, cy, x_label="cameras",
            y_label=f"use of each limit (axis capped at {fmt_count(OFF_SCALE)}x)",
            title="Adding cameras: which limit comes first",
            legend=True, legend_location="top-left", x_tick_format="d", height=280)
        for name in self.names:
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _hook(self) -> str:
        tr = self.track
        t, _ = vehicle_frame(tr, tr.weight_bits)
        return spec.b_hook(self.n0, self.f0, self.hw.name, t, tr.slo_s)

    def _prediction_spec(self) -> Spec:
        return spec.b_prediction(self.track, self.model.name, self.f0)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.b_checkpoint()

    # -- shared values ---------------------------------------------------------------------
    @computed("weight_bits", "fps")
    def _sweep(self, s: Settings) -> np.ndarray:
        """Use of each limit at every camera count (true values)."""
        return camera_ratios(self.track, int(s["weight_bits"]), self.cams, float(s["fps"]))

    @computed("weight_bits", "fps")
    def _first_failure(self, s: Settings) -> tuple[str, int | None]:
        _, first, at = camera_first(self.track, int(s["weight_bits"]), float(s["fps"]),
                                    int(self.cams[-1]))
        return first, at

    @computed(ALL)
    def _here(self, s: Settings) -> CameraPoint:
        """Every limit at your camera count."""
        return _point(self.track, s)

    def _check(self, s: Settings) -> dict[str, bool]:
        return {k: v > LIMIT for k, v in _point(self.track, s).ratios.items()}

    def _decision(self, s: Settings) -> Decision:
        return limits_decision(spec.b_task(self.track), self._check(s), spec.LIMIT_WORDS)

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_limits(self, s: Settings) -> None:
        here = np.asarray([self._here(s).ratios[k] for k in self.names])
        colors = [lw.PALETTE["red"] if x > LIMIT else lw.PALETTE["green"] for x in here]
        lw.update_marks({
            self.m_ratio: {"y": here, "colors": colors},
            self.s_ratio: {"max": lin_top(np.concatenate([here, [LIMIT]]), pad=1.25)},
        })

    @depends_on("_sweep")
    def _draw_sweep(self, s: Settings) -> None:
        sweep = self._sweep(s)
        lw.update_marks({
            self.m_cam: {"y": sweep},
            self.s_cam: {"max": min(OFF_SCALE, lin_top(np.concatenate([sweep.ravel(),
                                                                        [LIMIT]]), pad=1.1))},
        })

    @depends_on("cameras")
    def _draw_cameras(self, s: Settings) -> None:
        n = float(s["cameras"])
        lw.update_marks({self.m_cam_pt: {"x": [n, n]}})

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        tr = self.track
        p = self._here(s)
        cl = p.load
        first, at = self._first_failure(s)
        self.results = {
            "cameras": cl.cameras, "fps": cl.fps, "weight_bits": int(s["weight_bits"]),
            "frame_s": cl.frame_s, "worst_latency_s": cl.worst_latency_s, "busy": cl.max_busy,
            "daily_wh": p.daily_wh, "energy_batch": p.batch, "ratios": dict(p.ratios),
            "first_failure": first, "first_failure_cameras": at, "expected": self._expected,
            "batched_daily_wh": self.batched.daily_wh, "batched_batch": self.batched.batch,
        }
        self._set_details(precision_floor_note(self.hw, self.model, int(s["weight_bits"]),
                                               self._noun(), 1, DESIGN_MODE)
                          + spec.b_batch_note(p, self.batched, tr.slo_s))
        self._set_readout(metric_cards([
            spec.worst_card(p, tr.slo_s),
            ("SoC busy", fmt_pct(cl.max_busy), f"max {fmt_pct(tr.max_utilisation)}",
             lw.PALETTE["orange"]),
            spec.energy_card(p, tr.budget_text),
            ("first to fail", first, f"within {fmt_count(int(self.cams[-1]))} cameras"
             if at is None else f"at {fmt_count(at)} cameras", lw.PALETTE["purple"]),
        ]))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        p = self._here(s)
        first, at = self._first_failure(s)
        fails = {k: v > LIMIT for k, v in p.ratios.items()}
        self.levers = levers_for(self, s, fails, self._check,
                                 ("cameras", "fps", "weight_bits"))
        details = spec.b_details(p, tr.slo_s, tr.max_utilisation, tr.budget_text)
        for name in self.names:
            self.callouts[name].set(fails[name], spec.LIMIT_TITLES[name], details[name],
                                    lever_text(self, self.levers.get(name)))
        self.callouts["boundary"].set(
            not any(fails.values()), f"{fmt_count(p.load.cameras)} cameras fit on one SoC",
            spec.b_closest(p, first, at))

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        p = self._here(s)
        cl = p.load
        n, fps = cl.cameras, cl.fps
        self.math.update(
            tex_eq("t_{\\text{worst}} = N\\,t_{\\text{frame}}",
                   f"{tex_count(n)} \\times {tex_num(cl.frame_s * MS)}",
                   cl.worst_latency_s * MS, "ms")
            + tex_eq("\\rho = N f\\,t_{\\text{frame}}",
                     f"{tex_count(n)} \\times {tex_count(fps)} \\times {tex_num(cl.frame_s)}",
                     cl.max_busy, "")
            + tex_eq("E_{\\text{day}} = P\\,\\rho\\,T_{\\text{active}}",
                     f"{tex_num(p.power_w)} \\times {tex_num(cl.max_busy)} \\times "
                     f"{tex_num(p.active_hours)}", p.daily_wh, "Wh")
            + f"<p>{spec.basis(p.batch)} (T<sub>active</sub> in hours). Source: "
              "<code>labkit.scenarios.vehicle.plan.cameras.camera_point</code> (achievable).</p>")

    def _reveal_body(self) -> str:
        tr = self.track
        walls, first, at = self.default_walls
        t, _ = vehicle_frame(tr, tr.weight_bits)
        return spec.b_reveal(self._computed_line(), first, at, self.model.name, self.hw.name,
                             t, tr.slo_s, self.f0, spec.walls_text(walls, int(self.cams[-1])))

    def takeaway(self) -> str:
        s: Settings = self.settings()
        first, at = self._first_failure(s)
        return spec.b_takeaway(self._here(s), first, at)
