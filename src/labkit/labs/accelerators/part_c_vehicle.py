"""Lab 2 Part C, vehicle scenario: splitting cameras or the model over two SoCs."""

from __future__ import annotations

import numpy as np

from labkit import ui as lw
from labkit.core.format import (
    fmt_count,
    fmt_time,
    format_bytes,
)
from labkit.labs.accelerators.base import Part, feedback_map
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
from labkit.plans.design import (
    VEHICLE_LAYOUTS,
    active_seconds,
    cameras_and_fps,
    vehicle_frame,
    vehicle_load,
)
from labkit.ui.charts import lin_top


def _first_up(text: str) -> str:
    """``text`` with its first letter upper-case and the rest untouched ("SoC" stays)."""
    return text[:1].upper() + text[1:]


class PartCVehicle(Part):
    """Splitting cameras or the model across the board's two SoCs.

    Refresh steps: the latency-vs-cameras curves depend on no control (the precision is the
    track's), so they are drawn once; the "your cameras" line reads only the cameras; the
    three layouts are priced once per camera count and fps (a shared value); the busy and
    latency bars, readout, callouts and math peek read every control.
    """

    letter = "C"

    def _setup(self) -> None:
        tr = self.track
        self.n0, self.f0 = cameras_and_fps(tr)
        c = self.controls
        c["layout"] = lw.choice_control("Layout", [
            ("one SoC", "single"), ("two SoCs: split the cameras", "cameras"),
            ("two SoCs: split the model", "model")], "single", style="toggle")
        c["cameras"] = lw.int_control("Cameras", self.n0, 1, max(64, 2 * self.n0))
        c["fps"] = lw.int_control("Frames per second per camera", round(self.f0), 5,
                                  max(60, round(self.f0)), 5)
        self.wb = tr.weight_bits
        self.cams = np.arange(1, int(c["cameras"].max) + 1)
        loads = {lay: vehicle_load(tr, self.wb, lay) for lay in VEHICLE_LAYOUTS}
        self.default_loads = loads
        self._expected = min(loads, key=lambda k: loads[k].worst_latency_s)
        self._setup_bar_charts()
        cx = lw.make_scale("linear", 1, float(self.cams[-1]))
        cy = lw.make_scale("linear", 0.0, 1.0)
        self.s_c = cy
        self.m_c = lw.line_mark(self.cams, np.ones((3, self.cams.size)), cx, cy,
                                colors=[lw.PALETTE["grey"], lw.PALETTE["blue"],
                                        lw.PALETTE["purple"]],
                                labels=[self.option_label("layout", k) for k in VEHICLE_LAYOUTS],
                                legend=True)
        self.m_c_d = lw.hline_mark(tr.slo_s * 1e3, cy, color=lw.PALETTE["red"],
                                   label="deadline", legend=True)
        self.m_c_pt = lw.vline_mark(float(self.n0), cx, color=lw.PALETTE["green"],
                                    label="your cameras", legend=True)
        self.figures["cameras"] = lw.figure(
            [self.m_c, self.m_c_d, self.m_c_pt], cx, cy, x_label="cameras",
            y_label="worst-case latency (ms)", title="Latency as cameras are added",
            legend=True, legend_location="top-left", x_tick_format="d", height=280)
        for name in ("deadline", "throughput", "link", "energy"):
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _setup_bar_charts(self) -> None:
        tr = self.track
        bx, by = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_b = by
        self.m_b = lw.bar_mark(["SoC 1", "SoC 2"], np.zeros(2), bx, by,
                               colors=[lw.PALETTE["blue"]] * 2, color_mode="no_group",
                               label_display=True, label_display_format=".0%")
        self.m_b_l = lw.hline_mark(tr.max_utilisation, by, color=lw.PALETTE["red"],
                                   label="max busy", legend=True)
        self.figures["busy"] = lw.figure(
            [self.m_b, self.m_b_l], bx, by, x_label="SoC", y_label="busy share",
            title="Load per SoC", y_tick_format=".0%", height=280)
        lx, ly = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_l = ly
        self.m_l = lw.bar_mark([self.option_label("layout", k) for k in VEHICLE_LAYOUTS],
                               np.zeros(3), lx, ly,
                               colors=[lw.PALETTE["grey"]] * 3, color_mode="no_group",
                               label_display=True, label_display_format=".3~g")
        self.m_l_d = lw.hline_mark(tr.slo_s * 1e3, ly, color=lw.PALETTE["red"],
                                   label="deadline", legend=True)
        self.figures["latency"] = lw.figure(
            [self.m_l, self.m_l_d], lx, ly, x_label="layout (blue: yours)",
            y_label="worst-case latency (ms)", title="Worst case: every camera at once",
            height=280)

    def _hook(self) -> str:
        hw = self.hw
        return (f"The board carries {hw.domain_size} SoCs joined by "
                f"{format_bytes(hw.interconnect_bandwidth)}/s. A second SoC can take half "
                f"the cameras (their frames cross the link) or the second half of the model "
                f"(every frame's activations cross it). Which split helps the hard deadline?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        q = (f"{lw.esc(tr.label)}: {self.n0} cameras at {self.f0:g} fps, "
             f"{tr.weight_bits}-bit. Which layout has the lowest worst-case frame latency?")
        return q, [("One SoC", "single"), ("Two SoCs, cameras split between them", "cameras"),
                   ("Two SoCs, the model split between them", "model")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "Why does splitting the model's layers across two SoCs not cut a frame's latency?"
        opts = [("Every frame still passes both halves, plus the hand-off and a second fixed "
                 "overhead: the split adds throughput, not speed", "pipeline"),
                ("The link is too slow for any data", "link"),
                ("The second SoC is idle", "idle"),
                ("It does: it halves the latency", "halves")]
        good = ("Right: a pipeline overlaps different frames; one frame sees stage A + "
                "transfer + stage B. Splitting cameras instead shortens the queue each frame "
                "waits in.")
        bad = ("Not quite: one frame still goes through both stages in turn, plus the "
               "activations' hand-off and each stage's overhead.")
        return q, opts, "pipeline", feedback_map(opts, "pipeline", good, bad)

    # -- shared values ---------------------------------------------------------------------
    @computed("cameras", "fps")
    def _loads(self, s: Settings) -> dict[str, edge.CameraLoad]:
        """Every layout at your camera count and fps."""
        n, fps = int(s["cameras"]), float(s["fps"])
        return {lay: vehicle_load(self.track, self.wb, lay, n, fps) for lay in VEHICLE_LAYOUTS}

    def _mine(self, s: Settings) -> edge.CameraLoad:
        return self._loads(s)[str(s["layout"])]

    def _daily(self, s: Settings) -> float:
        mine = self._mine(s)
        return (mine.energy_j_per_frame * mine.frames_per_s * active_seconds(self.track)
                / edge.J_PER_WH)

    def _fails(self, s: Settings) -> dict[str, bool]:
        tr = self.track
        mine = self._mine(s)
        return {"deadline": mine.worst_latency_s > tr.slo_s,
                "throughput": mine.max_busy > tr.max_utilisation,
                "link": mine.link_utilisation > tr.max_utilisation,
                "energy": self._daily(s) > tr.daily_budget}

    def _lowest(self, s: Settings) -> str:
        loads = self._loads(s)
        return min(loads, key=lambda k: loads[k].worst_latency_s)

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_bars(self, s: Settings) -> None:
        tr = self.track
        layout = str(s["layout"])
        loads, mine = self._loads(s), self._mine(s)
        busy = list(mine.busy) + [0.0] * (2 - len(mine.busy))
        lat = np.asarray([loads[k].worst_latency_s for k in VEHICLE_LAYOUTS]) * 1e3
        lw.update_marks({
            self.m_b: {"y": busy, "colors": [lw.PALETTE["red"] if b > tr.max_utilisation
                                             else lw.PALETTE["blue"] for b in busy]},
            self.s_b: {"max": lin_top([*busy, tr.max_utilisation], pad=1.25)},
            self.m_l: {"y": lat, "colors": [lw.PALETTE["blue"] if k == layout else
                                            lw.PALETTE["grey"] for k in VEHICLE_LAYOUTS]},
            self.s_l: {"max": lin_top(np.concatenate([lat, [tr.slo_s * 1e3]]), pad=1.2)},
        })

    @depends_on()
    def _draw_sweep(self, s: Settings) -> None:
        """Worst-case latency of each layout as cameras are added (no control moves it)."""
        tr = self.track
        t, o = vehicle_frame(tr, self.wb)
        sweep = np.vstack([edge.worst_latency(
            t, o, self.cams, lay, link_bytes_per_s=self.hw.interconnect_bandwidth,
            link_latency_s=self.hw.interconnect_latency_s, frame_bytes=tr.window_bytes)
            for lay in VEHICLE_LAYOUTS]) * 1e3
        lw.update_marks({
            self.m_c: {"y": sweep},
            self.s_c: {"max": lin_top(np.concatenate([sweep.ravel(), [tr.slo_s * 1e3]]),
                                       pad=1.1)},
        })

    @depends_on("cameras")
    def _draw_cameras(self, s: Settings) -> None:
        n = float(s["cameras"])
        lw.update_marks({self.m_c_pt: {"x": [n, n]}})

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        tr = self.track
        mine = self._mine(s)
        daily = self._daily(s)
        self.results = {
            "layout": str(s["layout"]), "cameras": int(s["cameras"]), "fps": float(s["fps"]),
            "socs": mine.socs,
            "worst_latency_s": mine.worst_latency_s, "busy": list(mine.busy),
            "link_bytes_per_s": mine.link_bytes_per_s,
            "link_utilisation": mine.link_utilisation, "transfer_s": mine.transfer_s,
            "daily_wh": daily, "lowest_latency_layout": self._lowest(s),
            "fails": self._fails(s), "expected": self._expected,
        }
        self._set_readout(metric_cards([
            ("worst-case latency", fmt_time(mine.worst_latency_s),
             f"deadline {fmt_time(tr.slo_s)}", lw.PALETTE["red"]),
            ("busiest SoC", f"{mine.max_busy:.1%}", f"{mine.socs} SoC(s)", lw.PALETTE["blue"]),
            ("inter-SoC traffic", f"{format_bytes(mine.link_bytes_per_s)}/s",
             f"{mine.link_utilisation:.2%} of the link; {fmt_time(mine.transfer_s)} per "
             "hand-off", lw.PALETTE["purple"]),
            ("energy", f"{fmt_count(daily)} Wh/day", f"budget {tr.budget_text}",
             lw.PALETTE["teal"]),
        ]))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        layout, n = str(s["layout"]), int(s["cameras"])
        mine, fails, daily = self._mine(s), self._fails(s), self._daily(s)
        best = self._lowest(s)
        self.callouts["deadline"].set(
            fails["deadline"], "Hard deadline missed",
            f"The last of {n} simultaneous frames is done after "
            f"{fmt_time(mine.worst_latency_s)} vs {fmt_time(tr.slo_s)}.",
            "split the cameras over two SoCs, or fewer cameras per SoC")
        self.callouts["throughput"].set(
            fails["throughput"], "SoC overloaded",
            f"Busiest SoC {mine.max_busy:.0%} vs {tr.max_utilisation:.0%}.",
            "lower fps, or a second SoC")
        self.callouts["link"].set(
            fails["link"], "Inter-SoC link saturated",
            f"{format_bytes(mine.link_bytes_per_s)}/s vs "
            f"{format_bytes(self.hw.interconnect_bandwidth)}/s.", "send fewer bytes per frame")
        self.callouts["energy"].set(
            fails["energy"], "Over the energy budget",
            f"{fmt_count(daily)} Wh/day vs {tr.budget_text}.",
            "fewer frames, or one pass per frame (not two half-passes)")
        self.callouts["boundary"].set(
            not any(fails.values()),
            f"{_first_up(self.option_label('layout', layout))} meets every limit",
            f"Lowest worst-case latency here: {self.option_label('layout', best)} "
            f"({fmt_time(self._loads(s)[best].worst_latency_s)}).")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        mine, loads = self._mine(s), self._loads(s)
        layout_name = self.option_label("layout", s["layout"])
        self.math.update(
            "$$\\text{single: } N t \\qquad \\text{cameras: } \\max(\\lceil N/2\\rceil t,\\ "
            "x + \\lfloor N/2 \\rfloor \\max(t, x)) \\qquad \\text{model: } a + x + b + "
            "(N-1)\\max(a, x, b)$$"
            f"<p>t = {fmt_time(mine.frame_s)} per frame; hand-off x = bytes / "
            f"{format_bytes(self.hw.interconnect_bandwidth)}/s + "
            f"{fmt_time(self.hw.interconnect_latency_s)}: "
            f"{fmt_time(loads['cameras'].transfer_s)} for a camera frame when the SoCs split "
            f"the cameras, {fmt_time(loads['model'].transfer_s)} for the backbone's "
            "activations when they split the model. "
            f"Your layout ({lw.esc(layout_name)}): stages "
            + ", ".join(fmt_time(x) for x in mine.stage_s) + ". Split bytes: "
            f"{lw.esc(edge.CAMERA_SOURCES['YOLOV8N_SPLIT_BYTES'])}. Source: "
            "<code>labkit.physics.edge.camera_load</code>.</p>")

    def _reveal_body(self) -> str:
        loads = self.default_loads
        txt = ", ".join(f"{self.option_label('layout', k)} {fmt_time(v_.worst_latency_s)}"
                        for k, v_ in loads.items())
        return (f"{self._computed_line()}"
                f"<div>At the defaults: {txt}.</div>"
                "<div style='color:#5d6d7e'>Why: splitting cameras halves the queue of "
                "simultaneous frames each SoC works through, for one short frame transfer; "
                "splitting the model makes every frame cross the link and pay the per-pass "
                "overhead twice.</div>")

    def takeaway(self) -> str:
        r = self.results
        return (f"Split: '{self.option_label('layout', r['layout'])}' with {r['cameras']} "
                f"cameras at {r['fps']:g} fps has a "
                f"worst case of {fmt_time(r['worst_latency_s'])} and moves "
                f"{format_bytes(r['link_bytes_per_s'])}/s between SoCs; the lowest-latency "
                f"layout there is {self.option_label('layout', r['lowest_latency_layout'])}.")
