"""Lab 2 Part B, vehicle scenario: how many cameras one SoC carries."""

from __future__ import annotations

import numpy as np

from labkit import ui as lw
from labkit.core.format import (
    fmt_count,
    fmt_time,
    tex_num,
)
from labkit.labs.accelerators.base import Part, feedback_map, precision_floor_note
from labkit.labs.common import (
    ALL,
    CheckSpec,
    Settings,
    Spec,
    computed,
    depends_on,
    metric_cards,
)
from labkit.physics import edge
from labkit.physics.kvcache import weight_bytes
from labkit.plans.design import (
    DESIGN_MODE,
    OFF_SCALE,
    active_seconds,
    cameras_and_fps,
    vehicle_frame,
    vehicle_load,
)
from labkit.ui.charts import lin_top


class PartBVehicle(Part):
    """Multi-camera perception on one SoC: cameras x fps against the deadline, the SoC's
    throughput, memory and the energy budget.

    Refresh steps: the sweep over camera counts (and the first limit to fail) reads the
    fps and weight precision, not the cameras; the "your cameras" line only the cameras;
    the limit bars, readout, callouts and math peek every control.
    """

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
        self.names = ["deadline", "throughput", "memory", "energy"]
        first, at = self._first(tr.weight_bits, self.f0)
        self.default_first = (first, at)
        self._expected = first
        rx, ry = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_ratio = ry
        self.m_ratio = lw.bar_mark(self.names, np.zeros(4), rx, ry,
                                   colors=[lw.PALETTE["green"]] * 4, color_mode="no_group",
                                   label_display=True, label_display_format=".2f")
        self.m_ratio_l = lw.hline_mark(1.0, ry, color=lw.PALETTE["red"], label="limit",
                                       legend=True)
        self.figures["limits"] = lw.figure(
            [self.m_ratio, self.m_ratio_l], rx, ry, x_label="constraint",
            y_label="use of the limit (above 1 fails)", title="One SoC against every limit",
            height=280)
        cx = lw.make_scale("linear", 1, float(self.cams[-1]))
        cy = lw.make_scale("linear", 0.0, 1.0)
        self.s_cam = cy
        self.m_cam = lw.line_mark(self.cams, np.ones((4, self.cams.size)), cx, cy,
                                  colors=[lw.PALETTE["red"], lw.PALETTE["orange"],
                                          lw.PALETTE["blue"], lw.PALETTE["teal"]],
                                  labels=self.names, legend=True)
        self.m_cam_l = lw.hline_mark(1.0, cy, color=lw.PALETTE["grey"], label="limit",
                                     legend=True)
        self.m_cam_pt = lw.vline_mark(float(self.n0), cx, color=lw.PALETTE["purple"],
                                      label="your cameras", legend=True)
        self.figures["cameras"] = lw.figure(
            [self.m_cam, self.m_cam_l, self.m_cam_pt], cx, cy, x_label="cameras",
            y_label="use of each limit", title="Adding cameras: which limit comes first",
            legend=True, legend_location="top-left", x_tick_format="d", height=280)
        for name in self.names:
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _ratios(self, wb: int, cams: np.ndarray, fps: float) -> np.ndarray:
        tr = self.track
        t, _ = vehicle_frame(tr, wb)
        m = self.model
        deadline = cams * t / tr.slo_s
        busy = cams * fps * t / tr.max_utilisation
        mem = (weight_bytes(m, wb) + cams * tr.state_bytes_per_request) \
            / self.hw.usable_memory_bytes
        energy = (float(self.hw.power_w or 0.0) * t * cams * fps * active_seconds(tr)
                  / edge.J_PER_WH / tr.daily_budget)
        return np.vstack([deadline, busy, mem, energy])

    def _first(self, wb: int, fps: float) -> tuple[str, int | None]:
        r = self._ratios(wb, self.cams.astype(float), fps)
        first, at = "none", None
        for name, row in zip(self.names, r, strict=True):
            idx = np.flatnonzero(row > 1.0)
            if idx.size and (at is None or int(self.cams[idx[0]]) < at):
                first, at = name, int(self.cams[idx[0]])
        return first, at

    def _hook(self) -> str:
        tr = self.track
        t, _ = vehicle_frame(tr, tr.weight_bits)
        return (f"{self.n0} unsynchronised cameras at {self.f0:g} fps feed one "
                f"{self.hw.name}; a frame takes {fmt_time(t)} and must be done within "
                f"{fmt_time(tr.slo_s)} even when every camera's frame lands at once. How many "
                "cameras can one SoC carry, and what stops it?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: {tr.weight_bits}-bit {lw.esc(self.model.name)} at "
             f"{self.f0:g} fps per camera on one SoC. Adding cameras one by one, which limit "
             "fails first?")
        return q, [("Deadline: the last of simultaneous frames is late", "deadline"),
                   ("Throughput: the SoC is busier than it may be", "throughput"),
                   ("Memory: frames in flight no longer fit", "memory"),
                   ("Energy: perception exceeds its daily energy budget", "energy")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "Why is the worst-case latency of unsynchronised cameras cameras x frame time?"
        opts = [("All cameras can deliver a frame at the same instant; one SoC serves them "
                 "one after another", "simultaneous"),
                ("Cameras are synchronised by the vehicle", "synced"),
                ("Frames are batched to the largest batch", "batched"),
                ("It is not: latency is one frame time", "one")]
        good = ("Right: a hard deadline must hold in the worst case, when every camera's "
                "frame arrives together and the last one waits for all the others.")
        bad = ("Not quite: unsynchronised cameras can all deliver at once; the last frame "
               "waits for every other frame served before it.")
        return q, opts, "simultaneous", feedback_map(opts, "simultaneous", good, bad)

    # -- shared values ---------------------------------------------------------------------
    @computed("weight_bits", "fps")
    def _sweep(self, s: Settings) -> np.ndarray:
        """Use of each limit at every camera count."""
        return self._ratios(int(s["weight_bits"]), self.cams.astype(float), float(s["fps"]))

    @computed("weight_bits", "fps")
    def _first_failure(self, s: Settings) -> tuple[str, int | None]:
        return self._first(int(s["weight_bits"]), float(s["fps"]))

    @computed(ALL)
    def _here(self, s: Settings) -> np.ndarray:
        """Use of each limit at your camera count."""
        return self._ratios(int(s["weight_bits"]), np.asarray([float(s["cameras"])]),
                            float(s["fps"]))[:, 0]

    @computed(ALL)
    def _load(self, s: Settings) -> edge.CameraLoad:
        return vehicle_load(self.track, int(s["weight_bits"]), "single", int(s["cameras"]),
                            float(s["fps"]))

    def _daily(self, s: Settings) -> float:
        return float(self._here(s)[3]) * self.track.daily_budget

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_limits(self, s: Settings) -> None:
        here = self._here(s)
        colors = [lw.PALETTE["red"] if x > 1 else lw.PALETTE["green"] for x in here]
        lw.update_marks({
            self.m_ratio: {"y": here, "colors": colors},
            self.s_ratio: {"max": lin_top(np.concatenate([here, [1.0]]), pad=1.25)},
        })

    @depends_on("_sweep")
    def _draw_sweep(self, s: Settings) -> None:
        sweep = self._sweep(s)
        lw.update_marks({
            self.m_cam: {"y": sweep},
            self.s_cam: {"max": min(OFF_SCALE, lin_top(np.concatenate([sweep.ravel(),
                                                                        [1.0]]), pad=1.1))},
        })

    @depends_on("cameras")
    def _draw_cameras(self, s: Settings) -> None:
        n = float(s["cameras"])
        lw.update_marks({self.m_cam_pt: {"x": [n, n]}})

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        tr = self.track
        here, cl = self._here(s), self._load(s)
        first, at = self._first_failure(s)
        daily = self._daily(s)
        self.results = {
            "cameras": int(s["cameras"]), "fps": float(s["fps"]),
            "weight_bits": int(s["weight_bits"]), "frame_s": cl.frame_s,
            "worst_latency_s": cl.worst_latency_s, "busy": cl.max_busy,
            "daily_wh": daily, "ratios": dict(zip(self.names, here.tolist(), strict=True)),
            "first_failure": first, "first_failure_cameras": at, "expected": self._expected,
        }
        self._set_details(precision_floor_note(self.hw, self.model, int(s["weight_bits"]),
                                               self._noun(), 1, DESIGN_MODE))
        self._set_readout(metric_cards([
            ("worst-case latency", fmt_time(cl.worst_latency_s),
             f"deadline {fmt_time(tr.slo_s)}", lw.PALETTE["red"]),
            ("SoC busy", f"{cl.max_busy:.1%}", f"max {tr.max_utilisation:.0%}",
             lw.PALETTE["orange"]),
            ("energy", f"{fmt_count(daily)} Wh/day", f"budget {tr.budget_text}",
             lw.PALETTE["teal"]),
            ("first to fail", first, f"within {int(self.cams[-1])} cameras" if at is None
             else f"at {at} cameras", lw.PALETTE["purple"]),
        ]))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        n = int(s["cameras"])
        here, cl = self._here(s), self._load(s)
        first, at = self._first_failure(s)
        daily = self._daily(s)
        details = {
            "deadline": (f"{n} frames at once x {fmt_time(cl.frame_s)} = "
                         f"{fmt_time(cl.worst_latency_s)} vs {fmt_time(tr.slo_s)}.",
                         "fewer cameras per SoC (Part C: a second SoC) or faster frames"),
            "throughput": (f"{fmt_count(cl.frames_per_s)} frames/s x {fmt_time(cl.frame_s)} = "
                           f"{cl.max_busy:.0%} busy vs {tr.max_utilisation:.0%}.",
                           "lower fps or split cameras over two SoCs"),
            "memory": ("Frames in flight with their activations exceed the SoC's memory.",
                       "fewer frames in flight"),
            "energy": (f"{fmt_count(daily)} Wh/day vs {tr.budget_text}.",
                       "fewer frames per day (fps), or lower-precision arithmetic"),
        }
        titles = {"deadline": "Hard deadline missed", "throughput": "SoC overloaded",
                  "memory": "Out of memory", "energy": "Over the energy budget"}
        for name, ratio in zip(self.names, here, strict=True):
            self.callouts[name].set(bool(ratio > 1), titles[name], details[name][0],
                                    details[name][1])
        self.callouts["boundary"].set(
            bool(np.all(here <= 1)), f"{n} cameras fit on one SoC",
            f"Closest limit: {self.names[int(np.argmax(here))]} at {float(here.max()):.0%}; "
            f"first to fail as cameras grow: {first}"
            + ("" if at is None else f" at {at}") + ".")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        n, fps = int(s["cameras"]), float(s["fps"])
        cl = self._load(s)
        self.math.update(
            f"$$t_{{\\text{{worst}}}} = N\\,t_{{\\text{{frame}}}} = {n} \\times "
            f"{tex_num(cl.frame_s * 1e3)}\\ \\text{{ms}} = "
            f"{tex_num(cl.worst_latency_s * 1e3)}\\ \\text{{ms}}$$"
            f"$$\\rho = N f\\,t_{{\\text{{frame}}}} = {n} \\times {fps:g} \\times "
            f"{tex_num(cl.frame_s)} = {cl.max_busy:.3g}$$"
            f"$$E_{{\\text{{day}}}} = P\\,\\rho\\,T_{{\\text{{active}}}} = "
            f"{fmt_count(float(self.hw.power_w or 0))} \\times {cl.max_busy:.3g} \\times "
            f"{self.track.active_hours_per_day:g}\\ \\text{{h}} = "
            f"{tex_num(self._daily(s))}\\ \\text{{Wh}}$$"
            "<p>Source: <code>labkit.physics.edge.camera_load</code>, "
            "<code>labkit.physics.phases.cnn_inference_time</code> (achievable).</p>")

    def _reveal_body(self) -> str:
        name, at = self.default_first
        tr = self.track
        t, _ = vehicle_frame(tr, tr.weight_bits)
        sweep = self._ratios(tr.weight_bits, self.cams.astype(float), self.f0)
        top = int(self.cams[-1])
        where = []
        for limit, row in zip(self.names, sweep, strict=True):
            idx = np.flatnonzero(row > 1.0)
            where.append(f"{limit} from {int(self.cams[idx[0]])}" if idx.size
                         else f"{limit} not within {top}")
        return (f"{self._computed_line()}"
                f"<div>{name.capitalize()} fails first"
                + ("" if at is None else f", at {at} cameras") + ".</div>"
                f"<div style='color:#5d6d7e'>Why: a {lw.esc(self.model.name)} frame takes "
                f"{fmt_time(t)} on the {lw.esc(self.hw.name)}, against a "
                f"{fmt_time(tr.slo_s)} deadline. Adding cameras at {self.f0:g} fps, each "
                f"limit fails at ({'; '.join(where)} cameras): the deadline and throughput "
                "scale with the frames in flight, memory with the frames held, energy with "
                "every frame processed all day long.</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Capacity on the SoC: {r['cameras']} cameras x {r['fps']:g} fps take "
                f"{fmt_time(r['worst_latency_s'])} in the worst case and "
                f"{fmt_count(r['daily_wh'])} Wh/day; adding cameras, {r['first_failure']} "
                "fails first"
                + ("" if r["first_failure_cameras"] is None
                   else f" at {r['first_failure_cameras']}") + ".")
