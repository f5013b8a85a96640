"""Lab 2 Part C, handheld scenario: answer on the phone or hand off to the cloud."""

from __future__ import annotations

import math

import numpy as np

from labkit import ui as lw
from labkit.core.format import (
    fmt_count,
    fmt_energy,
    fmt_time,
    format_bytes,
    tex_num,
)
from labkit.core.grids import pow2
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
from labkit.physics.capacity import SLO_TARGETS
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.memory import resident_weight_bytes
from labkit.physics.phases import (
    prefill_time,
    request_phases,
)
from labkit.physics.roofline import (
    decode_roofline,
)
from labkit.plans.design import DESIGN_MODE, active_seconds
from labkit.ui.charts import lin_top, log_domain


def _chat_server() -> tuple[float, float]:
    """(TTFT, TPOT) of the cloud service a phone hands off to: the fast end of the paper's
    chat SLO targets (a well-provisioned service), seconds."""
    t = SLO_TARGETS["chat"]
    if t.ttft_s is None or t.tpot_s is None:
        raise ValueError("the chat SLO targets must bound TTFT and TPOT")
    return float(t.ttft_s[0]), float(t.tpot_s[0])


class PartCHandheld(Part):
    """On the phone or in the cloud: bytes of prompt and reply over the radio vs the energy
    and latency of answering on the device.

    Refresh steps: the energy-vs-reply-length curves and their crossover read the prompt,
    radio and precision (not the reply length); the "your reply" line only the reply
    length; the energy and latency bars, readout, callouts and math peek every control.
    """

    letter = "C"

    def _setup(self) -> None:
        tr = self.track
        prof = edge.edge_profile(self.hw.id)
        if prof is None or not prof.offload_links:
            raise ValueError(f"{self.hw.id} needs an edge profile with offload links")
        self.links = prof.offload_links
        self.p0, self.n0 = int(tr.prompt_tokens or 1), int(tr.output_tokens or 1)
        self.server_ttft, self.server_tpot = _chat_server()
        c = self.controls
        prompts = sorted({x for x in pow2(8192) if x >= 128} | {self.p0})
        outs = sorted({x for x in pow2(2048) if x >= 16} | {self.n0})
        c["prompt"] = lw.selection_control("Prompt (tokens)", [(str(x), x) for x in prompts],
                                           self.p0)
        c["output"] = lw.selection_control("Reply (tokens)", [(str(x), x) for x in outs],
                                           self.n0)
        c["link"] = lw.choice_control("Radio", [(edge.get_link(k).name, k) for k in self.links],
                                      self.links[0], style="toggle")
        c["weight_bits"] = lw.precision_control("On-device weight precision", tr.weight_bits)
        self.out_grid = np.unique(np.geomspace(16, max(outs), 25).round()).astype(int)
        self._dev_cache: dict[tuple[int, int, int], dict[str, float]] = {}
        dev = self._device(self.p0, self.n0, tr.weight_bits)
        cloud = self._cloud(self.p0, self.n0, self.links[0])
        self.default_pair = (dev, cloud)
        self._expected = "on_device" if dev["energy_j"] < cloud.energy_j else "cloud"
        self._setup_bar_charts()
        ox = lw.make_scale("log", float(self.out_grid[0]), float(self.out_grid[-1]))
        oy = lw.make_scale("log", 0.1, 10.0)
        self.s_o = oy
        self.m_o = lw.line_mark(self.out_grid, np.ones((2, self.out_grid.size)), ox, oy,
                                colors=[lw.PALETTE["orange"], lw.PALETTE["blue"]],
                                labels=["on device", "cloud"], legend=True)
        self.m_o_x = lw.vline_mark(16.0, ox, color=lw.PALETTE["green"], line_style="dotted",
                                   label="crossover", legend=True)
        self.m_o_pt = lw.vline_mark(float(self.n0), ox, color=lw.PALETTE["grey"],
                                    label="your reply", legend=True)
        self.figures["crossover"] = lw.figure(
            [self.m_o, self.m_o_x, self.m_o_pt], ox, oy, x_label="reply length (tokens, log)",
            y_label="phone energy per request (J, log)",
            title="Short replies: the radio's fixed cost; long ones: the SoC's", legend=True,
            legend_location="top-left", x_tick_format=".0f", y_tick_format=".3~g", height=280)
        for name in ("oom", "device_slo", "cloud_ttft", "energy"):
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
            y_label="phone energy per request (J)", title="Energy per request", legend=True,
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

    def _device(self, prompt: int, out: int, wb: int) -> dict[str, float]:
        key = (prompt, out, wb)
        if key not in self._dev_cache:
            tr = self.track
            ph = request_phases(self.hw, self.model, prompt_tokens=prompt, output_tokens=out,
                                weight_bits=wb, kv_bits=tr.kv_bits, mode=DESIGN_MODE)
            mem = resident_weight_bytes(self.model, wb) + (prompt + out) * kv_bytes_per_token(
                self.model, tr.kv_bits)
            self._dev_cache[key] = {"energy_j": float(ph.energy_j or 0.0), "ttft_s": ph.ttft_s,
                                    "total_s": ph.latency_s, "tpot_s": float(ph.tpot_s or 0.0),
                                    "memory_bytes": mem}
        return self._dev_cache[key]

    def _device_curve(self, prompt: int, wb: int) -> np.ndarray:
        """Device energy over ``out_grid`` reply lengths: request_phases' formula at batch 1,
        vectorised (one prefill, one roofline call over the mean contexts)."""
        tr, hw, m = self.track, self.hw, self.model
        n = self.out_grid.astype(float)
        pre = prefill_time(hw, m, float(prompt), wb, tr.kv_bits, 1, DESIGN_MODE).total_s
        step = decode_roofline(hw, m, 1, prompt + n / 2.0, wb, tr.kv_bits,
                               mode=DESIGN_MODE).step_s
        return float(hw.power_w or 0.0) * (pre + (n - 1) * np.asarray(step))

    def _cloud(self, prompt: int, out: int, link: str) -> edge.Handoff:
        return edge.cloud_handoff(prompt, out, link=link, server_ttft_s=self.server_ttft,
                                  server_tpot_s=self.server_tpot)

    def _hook(self) -> str:
        return ("The phone could send the prompt to a cloud model instead: a few kB up, a "
                "streamed reply down. The cellular radio pays a wake-up and a long "
                "high-power tail whatever the size. When does handing off save battery, and "
                "what does it cost in latency?")

    def _prediction_spec(self) -> Spec:
        tr = self.track
        lk = edge.get_link(self.links[0])
        q = (f"{lw.esc(tr.label)}: a {self.p0:,}-token prompt and a {self.n0}-token reply. "
             f"Which spends less phone energy: answering on the device ({tr.weight_bits}-bit), "
             f"or handing off to a cloud service over {lw.esc(lk.name)}?")
        return q, [("On the device", "on_device"), ("In the cloud", "cloud")]

    def _checkpoint_spec(self) -> CheckSpec:
        q = "Why can a short request cost more phone energy in the cloud than on the device?"
        opts = [("The radio's wake-up and high-power tail cost the same however few bytes "
                 "are sent", "fixed_cost"),
                ("Uploading a prompt takes minutes", "upload"),
                ("The cloud model is bigger", "bigger"),
                ("It cannot: the cloud is always cheaper for the phone", "never")]
        good = ("Right: an LTE transfer pays ~0.3 J to wake and ~12 J of tail after the last "
                "byte; the SoC spends per token. Short replies favour the device, long ones "
                "the cloud (Wi-Fi's tail is tiny).")
        bad = ("Not quite: the bytes are few; the radio's fixed wake + tail energy is what a "
               "short request cannot amortise.")
        return q, opts, "fixed_cost", feedback_map(opts, "fixed_cost", good, bad)

    # -- shared values ---------------------------------------------------------------------
    def _dev(self, s: Settings) -> dict[str, float]:
        return self._device(int(s["prompt"]), int(s["output"]), int(s["weight_bits"]))

    @computed("prompt", "output", "link")
    def _cl(self, s: Settings) -> edge.Handoff:
        return self._cloud(int(s["prompt"]), int(s["output"]), str(s["link"]))

    @computed("prompt", "weight_bits", "link")
    def _curves(self, s: Settings) -> tuple[np.ndarray, np.ndarray, float | None]:
        """Device and cloud energy over the reply-length grid, and where they cross."""
        prompt = int(s["prompt"])
        dev_curve = self._device_curve(prompt, int(s["weight_bits"]))
        cloud_curve = edge.cloud_handoff_energy(
            prompt, self.out_grid, link=str(s["link"]), server_ttft_s=self.server_ttft,
            server_tpot_s=self.server_tpot)
        diff = dev_curve - cloud_curve
        cross = None
        idx = np.flatnonzero(np.diff(np.sign(diff)) != 0)
        if idx.size:
            i = int(idx[0])
            x0, x1 = np.log(self.out_grid[i]), np.log(self.out_grid[i + 1])
            f = diff[i] / (diff[i] - diff[i + 1])
            cross = float(np.exp(x0 + f * (x1 - x0)))
        return dev_curve, cloud_curve, cross

    def _winner(self, s: Settings) -> str:
        return "on_device" if self._dev(s)["energy_j"] < self._cl(s).energy_j else "cloud"

    def _dev_daily(self, s: Settings) -> float:
        tr = self.track
        per_day = tr.demand_rate_per_s * active_seconds(tr)
        return self._dev(s)["energy_j"] * per_day / edge.J_PER_MWH

    def _usable(self) -> float:
        return self.hw.usable_memory_bytes * (1 - self.track.memory_reserve_fraction)

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_bars(self, s: Settings) -> None:
        dev, cl = self._dev(s), self._cl(s)
        t = cl.transfer
        e_bars = np.asarray([[dev["energy_j"], 0.0], [0.0, t.wake_j + t.tail_j],
                             [0.0, t.data_j + t.active_j]])
        l_bars = np.asarray([[dev["ttft_s"], cl.ttft_s], [dev["total_s"], cl.total_s]])
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
        t = cl.transfer
        cross = self._curves(s)[2]
        winner = self._winner(s)
        self.results = {
            "prompt_tokens": int(s["prompt"]), "output_tokens": int(s["output"]),
            "link": str(s["link"]), "weight_bits": int(s["weight_bits"]),
            "device_energy_j": dev["energy_j"], "device_ttft_s": dev["ttft_s"],
            "device_total_s": dev["total_s"], "device_tpot_s": dev["tpot_s"],
            "device_oom": dev["memory_bytes"] > self._usable(),
            "cloud_energy_j": cl.energy_j, "cloud_ttft_s": cl.ttft_s,
            "cloud_total_s": cl.total_s, "up_bytes": cl.up_bytes, "down_bytes": cl.down_bytes,
            "radio_fixed_j": t.wake_j + t.tail_j, "crossover_output_tokens": cross,
            "winner": winner, "server_ttft_s": self.server_ttft,
            "server_tpot_s": self.server_tpot, "expected": self._expected,
        }
        self._set_readout(metric_cards([
            ("less phone energy", "on the device" if winner == "on_device" else "in the cloud",
             f"{fmt_energy(dev['energy_j'])} vs {fmt_energy(cl.energy_j)}", lw.PALETTE["green"]),
            ("bytes over the radio", f"{format_bytes(cl.up_bytes)} up",
             f"{format_bytes(cl.down_bytes)} down (streamed)", lw.PALETTE["blue"]),
            ("first token", f"{fmt_time(dev['ttft_s'])} vs {fmt_time(cl.ttft_s)}",
             "device vs cloud", lw.PALETTE["purple"]),
            ("crossover", "none in range" if cross is None else f"{cross:,.0f} tokens",
             "reply length where they cost the same", lw.PALETTE["orange"]),
        ]))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        dev, cl = self._dev(s), self._cl(s)
        link = str(s["link"])
        cross = self._curves(s)[2]
        usable = self._usable()
        oom = dev["memory_bytes"] > usable
        per_day = tr.demand_rate_per_s * active_seconds(tr)
        dev_daily = self._dev_daily(s)
        self.callouts["oom"].set(
            oom, "On-device: out of memory",
            f"{format_bytes(dev['memory_bytes'])} vs {format_bytes(usable)} the app may use.",
            "lower the weight precision, or hand this request off")
        self.callouts["device_slo"].set(
            (not oom) and dev["tpot_s"] > tr.slo_s, "On-device reply streams too slowly",
            f"{dev['tpot_s'] * 1e3:.3g} ms per token vs {tr.slo_s * 1e3:g} ms.",
            "lower the weight precision, or hand off long requests")
        self.callouts["cloud_ttft"].set(
            cl.ttft_s > float(tr.ttft_slo_s or math.inf), "Cloud: first token too late",
            f"Radio wake {fmt_time(edge.get_link(link).wake_s)} + round trip + upload + "
            f"server {fmt_time(self.server_ttft)} = {fmt_time(cl.ttft_s)}.",
            "a radio already awake (Wi-Fi), or answer short requests on the device")
        self.callouts["energy"].set(
            dev_daily > tr.daily_budget, "On-device: over the battery budget",
            f"{fmt_count(per_day)} requests like this = {fmt_count(dev_daily)} mWh/day vs "
            f"{tr.budget_text}.", "hand long requests to the cloud, or shorten them")
        self.callouts["boundary"].set(
            not oom and dev_daily <= tr.daily_budget,
            f"{'Device' if self._winner(s) == 'on_device' else 'Cloud'} wins this request",
            "The two cost the same at "
            + ("no reply length in range" if cross is None else f"about {cross:,.0f} tokens")
            + f" over {lw.esc(edge.get_link(link).name)}.")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        dev, cl = self._dev(s), self._cl(s)
        t = cl.transfer
        out = int(s["output"])
        lk = edge.get_link(str(s["link"]))
        self.math.update(
            f"$$E_{{\\text{{cloud}}}} = P_w t_w + U e_u + D e_d + P_c\\,t_{{\\text{{stream}}}} + "
            f"P_t t_t = {tex_num(t.wake_j)} + {tex_num(t.data_j)} + {tex_num(t.active_j)} + "
            f"{tex_num(t.tail_j)} = {tex_num(cl.energy_j)}\\ \\text{{J}}$$"
            f"$$t_{{\\text{{stream}}}} = \\mathrm{{TTFT}}_s + (n-1)\\,\\mathrm{{TPOT}}_s = "
            f"{self.server_ttft:g} + {out - 1} \\times {self.server_tpot:g} = "
            f"{t.connected_s:.3g}\\ \\text{{s}}$$"
            f"$$E_{{\\text{{device}}}} = P\\,(t_{{\\text{{prefill}}}} + t_{{\\text{{decode}}}}) "
            f"= {fmt_count(float(self.hw.power_w or 0))} \\times {dev['total_s']:.3g} = "
            f"{tex_num(dev['energy_j'])}\\ \\text{{J}}$$"
            f"<p>{lw.esc(lk.name)}: {lw.esc(lk.sources.get('tail_s', ''))}. Server times: the "
            "fast end of the paper's chat SLO targets. Source: "
            "<code>labkit.physics.edge.cloud_handoff</code>, "
            "<code>labkit.physics.phases.request_phases</code>.</p>")

    def _reveal_body(self) -> str:
        dev, cloud = self.default_pair
        r = self.results
        return (f"{self._computed_line()}"
                f"<div>At the defaults: device {fmt_energy(dev['energy_j'])}, cloud "
                f"{fmt_energy(cloud.energy_j)} (of which {fmt_energy(cloud.transfer.tail_j)} is "
                "the radio's tail after the last byte).</div>"
                f"<div>With your settings the <b>{r['winner'].replace('_', ' ')}</b> wins.</div>"
                "<div style='color:#5d6d7e'>Why: on the device every token streams the weights "
                "through the SoC at several watts; over the radio the bytes are cheap but every "
                "hand-off pays a fixed wake and tail. The crossover is a reply length.</div>")

    def takeaway(self) -> str:
        r = self.results
        cross = r["crossover_output_tokens"]
        return (f"Hand-off: a {r['prompt_tokens']:,}-token prompt with a {r['output_tokens']}-"
                f"token reply costs {fmt_energy(r['device_energy_j'])} on the device vs "
                f"{fmt_energy(r['cloud_energy_j'])} over "
                f"{edge.get_link(str(r['link'])).name}; "
                + ("no crossover in range" if cross is None else
                   f"they cross at about {cross:,.0f} reply tokens") + ".")
