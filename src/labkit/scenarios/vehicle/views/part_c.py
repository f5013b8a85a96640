"""Lab 2 Part C, vehicle scenario: splitting cameras or the model over two SoCs.

The numbers are :mod:`..plan.cameras`'s (:func:`~..plan.cameras.layout_loads`,
:func:`~..plan.cameras.layout_sweep`); the text is
:mod:`.spec`'s."""

from __future__ import annotations

import numpy as np

import labkit.scenarios.vehicle.views.spec as spec
from labkit import ui as lw
from labkit.core.format import counted, fmt_count, fmt_pct, fmt_time, format_bytes, tex_num
from labkit.labs.accelerators.base import Part
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
from labkit.plans.design import VEHICLE_LAYOUTS, cameras_and_fps
from labkit.registries.edge import backbone_split
from labkit.scenarios.vehicle.plan.cameras import (
    CameraLoad,
    CameraPoint,
    layout_loads,
    layout_sweep,
)
from labkit.tracks import Track
from labkit.ui.charts import lin_top

LIMITS = ("deadline", "throughput", "link", "energy")
MS = 1e3


def _first_up(text: str) -> str:
    """``text`` with its first letter upper-case and the rest untouched ("SoC" stays)."""
    return text[:1].upper() + text[1:]


def _fails(track: Track, p: CameraPoint) -> dict[str, bool]:
    cl = p.load
    return {"deadline": cl.worst_latency_s > track.slo_s,
            "throughput": cl.max_busy > track.max_utilisation,
            "link": cl.link_utilisation > track.max_utilisation,
            "energy": p.daily_wh > p.budget_wh}


def worst_terms(cl: CameraLoad) -> str:
    """The worst-case latency of ``cl``'s layout as printed terms, ms."""
    n, t, x = cl.cameras, cl.frame_s * MS, cl.transfer_s * MS
    if cl.layout == "single":
        return f"{tex_count(n)} \\times {tex_num(t)}"
    if cl.layout == "cameras":
        first, second = -(-n // 2), n // 2
        if second == 0:
            return f"{tex_count(first)} \\times {tex_num(t)}"
        return (f"\\max({tex_count(first)} \\times {tex_num(t)},\\ {tex_num(x)} + "
                f"{tex_count(second)} \\times \\max({tex_num(t)}, {tex_num(x)}))")
    a, b = (s * MS for s in cl.stage_s)
    return (f"{tex_num(a)} + {tex_num(x)} + {tex_num(b)} + {tex_count(n - 1)} \\times "
            f"\\max({tex_num(a)}, {tex_num(x)}, {tex_num(b)})")


class PartCVehicle(Part):
    """Splitting cameras or the model across the board's two SoCs.

    Refresh steps: the latency-vs-cameras curves depend on no control (the precision is the
    track's), so they are drawn once; the "your cameras" line reads only the cameras; the
    three layouts are priced once per camera count and fps (a shared value); the busy and
    latency bars, readout, callouts and math peek read every control.
    """

    shows = (("cost_per_day_busy", "daily_wh"),)


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
        loads = layout_loads(tr, self.wb, self.n0, self.f0)
        self.default_loads = loads
        self._expected = min(loads, key=lambda k: loads[k].load.worst_latency_s)
        self.levers: dict[str, tuple[str, object] | None] = {}
        self._setup_bar_charts()
        cx = lw.make_scale("linear", 1, float(self.cams[-1]))
        cy = lw.make_scale("linear", 0.0, 1.0)
        self.s_c = cy
        self.m_c = lw.line_mark(self.cams, np.ones((3, self.cams.size)), cx, cy,
                                colors=[lw.PALETTE["grey"], lw.PALETTE["blue"],
                                        lw.PALETTE["purple"]],
                                labels=[self.option_label("layout", k) for k in VEHICLE_LAYOUTS],
                                legend=True)
        self.m_c_d = lw.hline_mark(tr.slo_s * MS, cy, color=lw.PALETTE["red"],
                                   label="deadline", legend=True)
        self.m_c_pt = lw.vline_mark(float(self.n0), cx, color=lw.PALETTE["green"],
                                    label="your cameras", legend=True)
        self.figures["cameras"] = lw.figure(
            [self.m_c, self.m_c_d, self.m_c_pt], cx, cy, x_label="cameras",
            y_label="worst-case latency (ms)", title="Latency as cameras are added",
            legend=True, legend_location="top-left", x_tick_format="d", height=280)
        for name in LIMITS:
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _setup_bar_charts(self) -> None:
        tr = self.track
        bx, by = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_b = by
        self.m_b = lw.bar_mark(["first SoC", "second SoC"], np.zeros(2), bx, by,
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
        self.m_l_d = lw.hline_mark(tr.slo_s * MS, ly, color=lw.PALETTE["red"],
                                   label="deadline", legend=True)
        self.figures["latency"] = lw.figure(
            [self.m_l, self.m_l_d], lx, ly, x_label="layout (blue: yours)",
            y_label="worst-case latency (ms)", title="Worst case: every camera at once",
            height=280)

    def _hook(self) -> str:
        return spec.c_hook(self.hw.domain_size, self.hw.interconnect_bandwidth)

    def _prediction_spec(self) -> Spec:
        return spec.c_prediction(self.track, self.n0, self.f0)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.c_checkpoint()

    # -- shared values ---------------------------------------------------------------------
    @computed("cameras", "fps")
    def _loads(self, s: Settings) -> dict[str, CameraPoint]:
        """Every layout at your camera count and fps."""
        return layout_loads(self.track, self.wb, int(s["cameras"]), float(s["fps"]))

    def _mine(self, s: Settings) -> CameraPoint:
        return self._loads(s)[str(s["layout"])]

    def _check(self, s: Settings) -> dict[str, bool]:
        p = layout_loads(self.track, self.wb, int(s["cameras"]),
                         float(s["fps"]))[str(s["layout"])]
        return _fails(self.track, p)

    def _decision(self, s: Settings) -> Decision:
        """The layout whose last simultaneous frame finishes soonest, every limit held."""
        fails = {**self._check(s), "slowest": str(s["layout"]) != self._lowest(s)}
        return limits_decision(spec.c_task(self.track), fails, spec.LIMIT_WORDS)

    def _lowest(self, s: Settings) -> str:
        loads = self._loads(s)
        return min(loads, key=lambda k: loads[k].load.worst_latency_s)

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_bars(self, s: Settings) -> None:
        tr = self.track
        layout = str(s["layout"])
        loads, mine = self._loads(s), self._mine(s).load
        busy = list(mine.busy) + [0.0] * (2 - len(mine.busy))
        lat = np.asarray([loads[k].load.worst_latency_s for k in VEHICLE_LAYOUTS]) * MS
        lw.update_marks({
            self.m_b: {"y": busy, "colors": [lw.PALETTE["red"] if b > tr.max_utilisation
                                             else lw.PALETTE["blue"] for b in busy]},
            self.s_b: {"max": lin_top([*busy, tr.max_utilisation], pad=1.25)},
            self.m_l: {"y": lat, "colors": [lw.PALETTE["blue"] if k == layout else
                                            lw.PALETTE["grey"] for k in VEHICLE_LAYOUTS]},
            self.s_l: {"max": lin_top(np.concatenate([lat, [tr.slo_s * MS]]), pad=1.2)},
        })

    @depends_on()
    def _draw_sweep(self, s: Settings) -> None:
        """Worst-case latency of each layout as cameras are added (no control moves it)."""
        tr = self.track
        sweep = layout_sweep(tr, self.wb, self.cams) * MS
        lw.update_marks({
            self.m_c: {"y": sweep},
            self.s_c: {"max": lin_top(np.concatenate([sweep.ravel(), [tr.slo_s * MS]]),
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
        p = self._mine(s)
        mine = p.load
        self.results = {
            "layout": str(s["layout"]), "cameras": int(s["cameras"]), "fps": float(s["fps"]),
            "socs": mine.socs, "worst_latency_s": mine.worst_latency_s,
            "busy": list(mine.busy), "link_bytes_per_s": mine.link_bytes_per_s,
            "link_utilisation": mine.link_utilisation, "transfer_s": mine.transfer_s,
            "daily_wh": p.daily_wh, "energy_batch": p.batch,
            "lowest_latency_layout": self._lowest(s), "fails": _fails(tr, p),
            "expected": self._expected,
        }
        self._set_readout(metric_cards([
            spec.worst_card(p, tr.slo_s),
            ("busiest SoC", fmt_pct(mine.max_busy), counted(mine.socs, "SoC"),
             lw.PALETTE["blue"]),
            ("inter-SoC traffic", f"{format_bytes(mine.link_bytes_per_s)}/s",
             "one SoC: nothing crosses the link" if mine.socs == 1 else
             f"{fmt_pct(mine.link_utilisation)} of the link; {fmt_time(mine.transfer_s)} per "
             "hand-off", lw.PALETTE["purple"]),
            spec.energy_card(p, tr.budget_text),
        ]))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        p = self._mine(s)
        mine = p.load
        fails = _fails(tr, p)
        best = self._lowest(s)
        self.levers = levers_for(self, s, fails, self._check, ("layout", "cameras", "fps"))
        hint = {k: lever_text(self, self.levers.get(k)) for k in LIMITS}
        self.callouts["deadline"].set(
            fails["deadline"], spec.LIMIT_TITLES["deadline"],
            f"The last of {fmt_count(mine.cameras)} simultaneous frames is done after "
            f"{fmt_time(mine.worst_latency_s)} vs {fmt_time(tr.slo_s)}.", hint["deadline"])
        self.callouts["throughput"].set(
            fails["throughput"], spec.LIMIT_TITLES["throughput"],
            f"Busiest SoC {fmt_pct(mine.max_busy)} vs {fmt_pct(tr.max_utilisation)}.",
            hint["throughput"])
        self.callouts["link"].set(
            fails["link"], spec.LIMIT_TITLES["link"],
            f"{format_bytes(mine.link_bytes_per_s)}/s vs "
            f"{format_bytes(self.hw.interconnect_bandwidth)}/s.", hint["link"])
        self.callouts["energy"].set(
            fails["energy"], spec.LIMIT_TITLES["energy"],
            f"{fmt_count(p.daily_wh)} Wh/day ({spec.basis(p.batch)}) vs {tr.budget_text}.",
            hint["energy"])
        self.callouts["boundary"].set(
            not any(fails.values()),
            f"{_first_up(self.option_label('layout', str(s['layout'])))} meets every limit",
            f"Lowest worst-case latency here: {self.option_label('layout', best)} "
            f"({fmt_time(self._loads(s)[best].load.worst_latency_s)}).")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        mine, loads = self._mine(s).load, self._loads(s)
        layout_name = self.option_label("layout", s["layout"])
        self.math.update(
            "$$\\text{single: } N t \\qquad \\text{cameras: } \\max(\\lceil N/2\\rceil t,\\ "
            "x + \\lfloor N/2 \\rfloor \\max(t, x)) \\qquad \\text{model: } a + x + b + "
            "(N-1)\\max(a, x, b)$$"
            + tex_eq(f"t_{{\\text{{worst}}}}\\ (\\text{{{lw.esc(layout_name)}}})",
                     worst_terms(mine), mine.worst_latency_s * MS, "ms")
            + f"<p>t = {fmt_time(mine.frame_s)} per frame; hand-off x = bytes / "
            f"{format_bytes(self.hw.interconnect_bandwidth)}/s + "
            f"{fmt_time(self.hw.interconnect_latency_s)}: "
            f"{fmt_time(loads['cameras'].load.transfer_s)} for a camera frame when the SoCs "
            f"split the cameras, {fmt_time(loads['model'].load.transfer_s)} for the "
            "backbone's activations when they split the model. Stages of your layout: "
            + ", ".join(fmt_time(x) for x in mine.stage_s) + ". Split bytes: "
            f"{lw.esc(backbone_split(self.track.model_id)[1])}. Source: "
            "<code>labkit.scenarios.vehicle.plan.cameras.layout_loads</code>.</p>")

    def _reveal_body(self) -> str:
        labels = {k: self.option_label("layout", k) for k in VEHICLE_LAYOUTS}
        return spec.c_reveal(self._computed_line(), labels, self.default_loads)

    def takeaway(self) -> str:
        s: Settings = self.settings()
        return spec.c_takeaway(self.option_label("layout", str(s["layout"])), self._mine(s),
                               self.option_label("layout", self._lowest(s)))
