"""Lab 2 Part C, handheld scenario: answer on the phone or hand off to the cloud.

The numbers are :mod:`..plan.device`'s (:func:`~..plan.device.phone_device`,
:func:`~..plan.device.phone_cloud` and their curves); the text is
:mod:`.spec`'s."""

from __future__ import annotations

import numpy as np

import labkit.scenarios.handheld.views.spec as spec
from labkit import ui as lw
from labkit.core.format import fmt_count, fmt_energy, fmt_time, format_bytes, tex_num
from labkit.core.grids import pow2
from labkit.core.units import J_PER_MWH
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.edge_view import lever_text, levers_for, tex_count, tex_eq
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
from labkit.plans.design import active_seconds
from labkit.registries.edge import edge_profile, get_link
from labkit.scenarios.handheld.plan.device import (
    Handoff,
    PhoneDevice,
    crossover,
    phone_cloud,
    phone_cloud_curve,
    phone_device,
    phone_device_curve,
    phone_device_fits,
    server_times,
)
from labkit.ui.charts import lin_top, log_domain

LIMITS = ("oom", "device_slo", "cloud_ttft", "energy")

MWH_J = 3.6  # J per mWh: the energy chart in the cards' unit family


class PartCHandheld(Part):
    """On the phone or in the cloud: bytes of prompt and reply over the radio vs the energy
    and latency of answering on the device.

    Refresh steps: the energy-vs-reply-length curves and their crossover read the prompt,
    radio and precision (not the reply length); the "your reply" line only the reply
    length; the energy and latency bars, readout, callouts and math peek every control.
    """

    shows = (
        ("energy_per_inference", "device_energy_j"),
        ("ttft", "device_ttft_s"),
        ("tpot", "device_tpot_s"),
    )


    letter = "C"
    primary = ("route", "output", "link")

    def _setup(self) -> None:
        tr = self.track
        prof = edge_profile(self.hw.id)
        if prof is None or not prof.offload_links:
            raise ValueError(f"{self.hw.id} needs an edge profile with offload links")
        self.links = prof.offload_links
        self.p0, self.n0 = int(tr.prompt_tokens or 1), int(tr.output_tokens or 1)
        self.server_ttft, self.server_tpot = server_times()
        self.per_day = tr.demand_rate_per_s * active_seconds(tr)
        c = self.controls
        prompts = sorted({x for x in pow2(8192) if x >= 128} | {self.p0})
        outs = sorted({x for x in pow2(2048) if x >= 16} | {self.n0})
        c["prompt"] = lw.selection_control("Prompt (tokens)", [(str(x), x) for x in prompts],
                                           self.p0)
        c["output"] = lw.selection_control("Reply (tokens)", [(str(x), x) for x in outs],
                                           self.n0)
        c["link"] = lw.choice_control("Radio", [(get_link(k).name, k) for k in self.links],
                                      self.links[0], style="toggle")
        c["weight_bits"] = lw.precision_control("On-device weight precision", tr.weight_bits)
        c["route"] = lw.choice_control("Answer on", [(v, k) for k, v in spec.ROUTES.items()],
                                       "on_device", style="toggle")
        self.out_grid = np.unique(np.geomspace(16, max(outs), 25).round()).astype(int)
        dev = phone_device(tr, self.p0, self.n0, tr.weight_bits)
        cloud = phone_cloud(self.p0, self.n0, self.links[0])
        self.default_pair = (dev, cloud)
        self._expected = "on_device" if dev.energy_j < cloud.energy_j else "cloud"
        self.levers: dict[str, tuple[str, object] | None] = {}
        loser = next((r for r in spec.ROUTES
                      if not self._decision({**self.settings(), "route": r}).passed), None)
        if loser is not None:
            self._start_at({"route": loser}, spec.c_start_note(loser))
        self._setup_bar_charts()
        ox = lw.make_scale("log", float(self.out_grid[0]), float(self.out_grid[-1]))
        oy = lw.make_scale("log", 0.1, 10.0)
        self.s_o = oy
        self.m_o = lw.line_mark(self.out_grid, np.ones((2, self.out_grid.size)), ox, oy,
                                colors=[lw.PALETTE["orange"], lw.PALETTE["blue"]],
                                labels=["on device", "cloud"], legend=True)
        self.m_o_x = lw.vline_mark(float(self.out_grid[0]), ox, color=lw.PALETTE["green"],
                                   line_style="dotted", label="crossover", legend=True)
        self.m_o_pt = lw.vline_mark(float(self.n0), ox, color=lw.PALETTE["grey"],
                                    label="your reply", legend=True)
        self.figures["crossover"] = lw.figure(
            [self.m_o, self.m_o_x, self.m_o_pt], ox, oy, x_label="reply length (tokens, log)",
            y_label="phone energy per request (mWh, log)",
            title="Short replies: the radio's fixed cost; long ones: the SoC's", legend=True,
            legend_location="top-left", x_tick_format=".0f", y_tick_format=".3~g", height=280)
        for name in LIMITS:
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _setup_bar_charts(self) -> None:
        ex, ey = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_e = ey
        self.m_e = lw.bar_mark(["on device", "cloud"], np.zeros((3, 2)), ex, ey,
                               colors=[lw.PALETTE["orange"], lw.PALETTE["red"],
                                       lw.PALETTE["blue"]],
                               labels=["SoC compute", "radio wake + tail",
                                       "radio data + connected"], legend=True)
        self.figures["energy"] = lw.figure(
            [self.m_e], ex, ey, x_label="where the request is answered",
            y_label="phone energy per request (mWh)", title="Energy per request", legend=True,
            legend_location="top-right", height=280)
        lx, ly = lw.make_scale("ordinal"), lw.make_scale("linear", 0.0, 1.0)
        self.s_l = ly
        self.m_l = lw.bar_mark(["on device", "cloud"], np.zeros((2, 2)), lx, ly,
                               colors=[lw.PALETTE["purple"], lw.PALETTE["grey"]],
                               labels=["first token", "whole reply"], kind="grouped",
                               legend=True)
        self.m_l_slo = lw.hline_mark(float(self.track.ttft_slo_s or 1.0), ly,
                                     color=lw.PALETTE["red"], label="TTFT limit", legend=True)
        self.figures["latency"] = lw.figure(
            [self.m_l, self.m_l_slo], lx, ly, x_label="where the request is answered",
            y_label="seconds", title="Latency", legend=True, legend_location="top-left",
            height=280)

    def _hook(self) -> str:
        return spec.c_hook(get_link(self.links[0]), self.default_pair[1])

    def _prediction_spec(self) -> Spec:
        return spec.c_prediction(self.track, self.p0, self.n0, get_link(self.links[0]))

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.c_checkpoint(get_link(self.links[0]))

    # -- shared values ---------------------------------------------------------------------
    def _device_at(self, s: Settings) -> PhoneDevice:
        return phone_device(self.track, int(s["prompt"]), int(s["output"]),
                            int(s["weight_bits"]))

    @computed("prompt", "output", "weight_bits")
    def _dev(self, s: Settings) -> PhoneDevice:
        return self._device_at(s)

    @computed("prompt", "output", "link")
    def _cl(self, s: Settings) -> Handoff:
        return phone_cloud(int(s["prompt"]), int(s["output"]), str(s["link"]))

    @computed("prompt", "weight_bits", "link")
    def _curves(self, s: Settings) -> tuple[np.ndarray, np.ndarray, float | None]:
        """Device and cloud energy (mWh) over the reply-length grid, and where they cross."""
        prompt = int(s["prompt"])
        dev_curve = phone_device_curve(self.track, prompt, int(s["weight_bits"]),
                                       self.out_grid) / MWH_J   # mWh, as the cards
        cloud_curve = phone_cloud_curve(prompt, self.out_grid, str(s["link"])) / MWH_J
        fits = phone_device_fits(self.track, prompt, int(s["weight_bits"]), self.out_grid)
        k = int(fits.sum())  # the device fits the shorter replies only
        cross = (crossover(self.out_grid[:k], dev_curve[:k], cloud_curve[:k]) if k > 1
                 else None)
        return dev_curve, cloud_curve, cross

    def _decision(self, s: Settings) -> Decision:
        """The path chosen keeps its limits, and the other does not or costs more energy."""
        dev, cloud = self._pair(s)
        fails = self._check(s, (dev, cloud))
        mine = str(s["route"])
        other = next(r for r in spec.ROUTES if r != mine)
        keeps = {r: not any(fails[k] for k in spec.C_LIMITS[r]) for r in spec.ROUTES}
        joules = {"on_device": dev.energy_j, "cloud": cloud.energy_j}
        if not keeps[mine]:
            bad = [w for k, w in spec.C_LIMITS[mine].items() if fails[k]]
            return Decision(spec.c_task(), False, "fails: " + ", ".join(bad))
        if keeps[other] and joules[other] < joules[mine]:
            return Decision(spec.c_task(), False,
                            f"{spec.ROUTES[other]} keeps its limits at "
                            f"{fmt_energy(joules[other])}, less than {fmt_energy(joules[mine])}")
        return Decision(spec.c_task(), True,
                        f"it keeps its limits at {fmt_energy(joules[mine])}")

    def _winner(self, s: Settings) -> str:
        dev = self._dev(s)
        return "on_device" if not dev.oom and dev.energy_j < self._cl(s).energy_j else "cloud"

    def _pair(self, s: Settings) -> tuple[PhoneDevice, Handoff]:
        """(device, cloud) at settings ``s``: the shared values at the controls' own."""
        if s == self.settings():
            return self._dev(s), self._cl(s)
        return (self._device_at(s),
                phone_cloud(int(s["prompt"]), int(s["output"]), str(s["link"])))

    def _check(self, s: Settings,
               pair: tuple[PhoneDevice, Handoff] | None = None) -> dict[str, bool]:
        """Which limit fails with settings ``s`` (also the recovery hints' check)."""
        tr = self.track
        dev, cloud = self._pair(s) if pair is None else pair
        limit = float(tr.ttft_slo_s) if tr.ttft_slo_s else float("inf")
        return {"oom": dev.oom, "device_slo": (not dev.oom) and dev.tpot_s > tr.slo_s,
                "cloud_ttft": cloud.ttft_s > limit,
                "energy": (not dev.oom)
                and dev.energy_j * self.per_day / J_PER_MWH > tr.daily_budget}

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_bars(self, s: Settings) -> None:
        dev, cl = self._dev(s), self._cl(s)
        t = cl.transfer
        runs = 0.0 if dev.oom else 1.0  # nothing is quoted for a device that cannot run it
        e_bars = np.asarray([[runs * dev.energy_j, 0.0], [0.0, t.wake_j + t.tail_j],
                             [0.0, t.data_j + t.active_j]]) / MWH_J   # mWh, as the cards
        l_bars = np.asarray([[runs * dev.ttft_s, cl.ttft_s], [runs * dev.total_s, cl.total_s]])
        lw.update_marks({
            self.m_e: {"y": e_bars}, self.s_e: {"max": lin_top(e_bars.sum(axis=0), pad=1.3)},
            self.m_l: {"y": l_bars},
            self.s_l: {"max": lin_top(np.concatenate([l_bars.ravel(),
                                                       [float(self.track.ttft_slo_s or 1.0)]]),
                                       pad=1.25)},
        })

    @depends_on("_curves")
    def _draw_crossover(self, s: Settings) -> None:
        dev_curve, cloud_curve, cross = self._curves(s)
        lo, hi = log_domain(np.concatenate([dev_curve, cloud_curve]), 1.6)
        lw.update_marks({
            self.m_o: {"y": np.vstack([dev_curve, cloud_curve])},
            self.s_o: {"min": lo, "max": hi},
            self.m_o_x: ({"x": [cross, cross], "visible": True} if cross is not None
                         else {"visible": False}),
        })

    @depends_on("output")
    def _draw_reply(self, s: Settings) -> None:
        out = float(s["output"])
        lw.update_marks({self.m_o_pt: {"x": [out, out]}})

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        dev, cl = self._dev(s), self._cl(s)
        cross = self._curves(s)[2]
        winner = self._winner(s)
        self.results = {
            "prompt_tokens": int(s["prompt"]), "output_tokens": int(s["output"]),
            "link": str(s["link"]), "weight_bits": int(s["weight_bits"]),
            "device_energy_j": dev.energy_j, "device_ttft_s": dev.ttft_s,
            "device_total_s": dev.total_s, "device_tpot_s": dev.tpot_s,
            "device_oom": dev.oom, "cloud_energy_j": cl.energy_j, "cloud_ttft_s": cl.ttft_s,
            "cloud_total_s": cl.total_s, "up_bytes": cl.up_bytes, "down_bytes": cl.down_bytes,
            "radio_fixed_j": cl.transfer.wake_j + cl.transfer.tail_j,
            "crossover_output_tokens": cross, "winner": winner, "route": str(s["route"]),
            "server_ttft_s": self.server_ttft, "server_tpot_s": self.server_tpot,
            "expected": self._expected,
        }
        self._set_readout(metric_cards(spec.c_cards(dev, cl, winner, cross, str(s["route"]))))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        dev, cl = self._dev(s), self._cl(s)
        lk = get_link(str(s["link"]))
        cross = self._curves(s)[2]
        fails = self._check(s)
        dev_daily = dev.energy_j * self.per_day / J_PER_MWH
        self.levers = levers_for(self, s, fails, self._check,
                                 ("weight_bits", "link", "prompt", "output"))
        hint = {k: lever_text(self, self.levers.get(k)) for k in LIMITS}
        self.callouts["oom"].set(
            fails["oom"], "On-device: out of memory",
            f"{format_bytes(dev.memory_bytes)} vs {format_bytes(dev.usable_bytes)} the app may "
            "use.", hint["oom"])
        self.callouts["device_slo"].set(
            fails["device_slo"], "On-device reply streams too slowly",
            f"Mean TPOT {fmt_time(dev.tpot_s)} per reply token vs {fmt_time(tr.slo_s)}.",
            hint["device_slo"])
        self.callouts["cloud_ttft"].set(
            fails["cloud_ttft"], "Cloud: first token too late",
            f"Radio wake {fmt_time(lk.wake_s)} + round trip {fmt_time(lk.rtt_s)} + upload "
            f"{fmt_time(cl.up_bytes / lk.up_bytes_per_s)} + server "
            f"{fmt_time(self.server_ttft)} = {fmt_time(cl.ttft_s)} vs "
            f"{fmt_time(tr.ttft_slo_s)}.", hint["cloud_ttft"])
        self.callouts["energy"].set(
            fails["energy"], "On-device: over the battery budget",
            f"{fmt_count(self.per_day)} requests like this = {fmt_count(dev_daily)} mWh/day vs "
            f"{tr.budget_text}.", hint["energy"])
        self.callouts["boundary"].set(
            not fails["oom"] and not fails["energy"],
            f"{'Device' if self._winner(s) == 'on_device' else 'Cloud'} wins this request",
            "The two cost the same at "
            + ("no reply length in range" if cross is None else
               f"about {fmt_count(cross)} tokens") + f" over {lw.esc(lk.name)}.")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        dev, cl = self._dev(s), self._cl(s)
        t = cl.transfer
        out = int(s["output"])
        lk = get_link(str(s["link"]))
        self.math.update(
            tex_eq("E_{\\text{cloud}} = P_w t_w + (U e_u + D e_d) + P_c\\,t_{\\text{stream}} "
                   "+ P_t t_t",
                   f"{tex_num(t.wake_j)} + {tex_num(t.data_j)} + {tex_num(t.active_j)} + "
                   f"{tex_num(t.tail_j)}", cl.energy_j, "J")
            + tex_eq("t_{\\text{stream}} = \\mathrm{TTFT}_s + (n-1)\\,\\mathrm{TPOT}_s",
                     f"{tex_num(self.server_ttft)} + {tex_count(out - 1)} \\times "
                     f"{tex_num(self.server_tpot)}", t.connected_s, "s")
            + ("<p>On the device: out of memory at this precision, so nothing is timed.</p>"
               if dev.oom else
               tex_eq("E_{\\text{device}} = P\\,(t_{\\text{prefill}} + t_{\\text{decode}})",
                      f"{tex_num(dev.power_w)} \\times {tex_num(dev.busy_s)}", dev.energy_j,
                      "J"))
            + f"<p>{lw.esc(lk.name)}: {lw.esc(lk.sources.get('tail_s', ''))}. The radio stays "
            "connected for the longer of the stream and the airtime. Server times: the fast "
            "end of the paper's chat SLO targets. Source: "
            "<code>labkit.scenarios.handheld.plan.device.phone_cloud</code>, "
            "<code>labkit.scenarios.handheld.plan.device.phone_device</code>.</p>")

    def _reveal_body(self) -> str:
        dev, cloud = self.default_pair
        return spec.c_reveal(self._computed_line(), dev, cloud, str(self.results["winner"]))

    def takeaway(self) -> str:
        s = self.settings()
        return spec.c_takeaway(self._dev(s), self._cl(s), get_link(str(s["link"])),
                               self._curves(s)[2])
