"""Lab 2 Part B, handheld scenario: what fits beside the OS, and its speed and energy.

The numbers are :mod:`..plan.device`'s (:func:`~..plan.device.phone_context`,
:func:`~..plan.device.phone_curves`, :func:`~..plan.device.phone_walls`); the text
is :mod:`.spec`'s."""

from __future__ import annotations

import numpy as np

import labkit.scenarios.handheld.views.spec as spec
from labkit import ui as lw
from labkit.core.format import fmt_count
from labkit.core.units import J_PER_MWH
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.decisions import longer_context_start
from labkit.labs.accelerators.edge_view import lever_text, levers_for, limits_decision
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
from labkit.scenarios.handheld.plan.device import (
    PHONE_LIMITS,
    PhoneContext,
    PhoneWalls,
    phone_context,
    phone_curves,
    phone_fit,
    phone_walls,
)
from labkit.tracks import Track
from labkit.ui.charts import lin_top, log_domain

TTFT_SCALE = 10.0  # the speed chart draws TTFT x this beside tokens/s


def _context(track: Track, s: Settings) -> PhoneContext:
    return phone_context(track, int(s["weight_bits"]), int(s["kv_bits"]), int(s["context"]),
                         float(s["requests"]))


def _quoted(track: Track, s: Settings, options: list[int]) -> PhoneContext | None:
    """Your conversation if it fits memory, else the longest option that does (or None)."""
    here = _context(track, s)
    if not here.fails["memory"]:
        return here
    return phone_fit(track, int(s["weight_bits"]), int(s["kv_bits"]), options,
                     float(s["requests"]))


def _checks(track: Track, s: Settings, options: list[int],
            unknown: bool = False) -> dict[str, bool]:
    """Which limit fails: memory at your conversation; speed and energy where they are
    quoted (your conversation, or the longest that fits). Where nothing fits, speed and
    energy are not evaluated: ``unknown`` (False for the callouts; True for a recovery
    move, which must not "pass" a check by making it unmeasurable)."""
    here = _context(track, s)
    shown = _quoted(track, s, options)
    return {k: (here.fails[k] if k == "memory" else unknown if shown is None
                else shown.fails[k]) for k in PHONE_LIMITS}


class PartBHandheld(Part):
    """On-device LM: what fits beside the OS, tokens/s and energy as the context grows.

    Refresh steps: the memory and speed curves read only the precisions; the energy curve
    the precisions and requests per day; the "you are here" points the precisions, the
    conversation length and the requests; the readout, callouts and math peek every control.
    """

    shows = (
        ("ttft", "ttft_s"),
        ("tpot", "tpot_s"),
        ("energy_per_inference", "energy_j"),
        ("cost_per_day_busy", "daily_mwh"),
    )


    letter = "B"

    def _setup(self) -> None:
        tr, m = self.track, self.model
        self.ctx0 = int(tr.context_tokens or 0)
        self.req0 = tr.demand_rate_per_s * active_seconds(tr)
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        c["kv_bits"] = lw.precision_control("KV-cache precision", tr.kv_bits,
                                            sorted({4, 8, 16, tr.kv_bits}))
        c["context"] = lw.context_control(self.ctx0, m.max_context, 512,
                                          "Conversation length (tokens)")
        self.ctx_options = [int(v) for _, v in c["context"].options]
        c["requests"] = lw.log_control("Requests per day", self.req0, max(1.0, self.req0 / 10),
                                       self.req0 * 10, readout_format=".3g")
        lo = max(int(tr.output_tokens or 0) + 64, 512)
        self.grid = np.unique(np.concatenate([np.geomspace(lo, m.max_context, 48).round(),
                                              [self.ctx0]])).astype(int)
        self._curves: dict[tuple[int, int], dict[str, np.ndarray]] = {}
        here0 = phone_context(tr, tr.weight_bits, tr.kv_bits, self.ctx0, self.req0)
        self.usable, self.ram = here0.usable_bytes, here0.ram_bytes
        self.default_walls = self._walls(tr.weight_bits, tr.kv_bits, self.req0)
        self._expected = self.default_walls.first
        self.levers: dict[str, tuple[str, object] | None] = {}
        self._start_at(*longer_context_start(self, self.ctx0))
        self._setup_memory_chart()
        self._setup_speed_chart()
        self._setup_energy_chart()
        for name in PHONE_LIMITS:
            self._callout(name, "danger")
        self._callout("boundary", "success")

    def _setup_memory_chart(self) -> None:
        gx = lw.make_scale("log", float(self.grid[0]), float(self.grid[-1]))
        my = lw.make_scale("linear", 0.0, 1.0)
        self.s_mem = my
        self.m_mem = lw.line_mark(self.grid, np.ones(self.grid.size), gx, my,
                                  colors=[lw.PALETTE["blue"]], labels=["weights + KV"],
                                  legend=True)
        self.m_usable = lw.hline_mark(self.usable / 1e9, my, color=lw.PALETTE["red"],
                                      label="app may use", legend=True)
        self.m_ram = lw.hline_mark(self.ram / 1e9, my, color=lw.PALETTE["grey"],
                                   label="RAM (OS + apps above red)", legend=True)
        self.m_mem_pt = lw.scatter_mark([float(self.ctx0)], [1.0], gx, my)
        self.figures["memory"] = lw.figure(
            [self.m_mem, self.m_usable, self.m_ram, self.m_mem_pt], gx, my,
            x_label="conversation length (tokens, log)", y_label="memory (GB)",
            title="What fits beside the OS", legend=True, legend_location="top-left",
            x_tick_format=".3~s", height=280)

    def _setup_speed_chart(self) -> None:
        tx = lw.make_scale("log", float(self.grid[0]), float(self.grid[-1]))
        ty = lw.make_scale("linear", 0.0, 1.0)
        self.s_tps = ty
        k = fmt_count(TTFT_SCALE)
        self.m_tps = lw.line_mark(self.grid, np.ones((2, self.grid.size)), tx, ty,
                                  colors=[lw.PALETTE["orange"], lw.PALETTE["purple"]],
                                  labels=["tokens/s (1 / mean TPOT)",
                                          f"time to first token (s x {k})"], legend=True)
        self.m_tps_slo = lw.hline_mark(1.0 / self.track.slo_s, ty, color=lw.PALETTE["red"],
                                       label=f"SLO tokens/s (and TTFT limit x {k})",
                                       legend=True)
        self.m_tps_pt = lw.scatter_mark([float(self.ctx0)], [1.0], tx, ty)
        self.figures["speed"] = lw.figure(
            [self.m_tps, self.m_tps_slo, self.m_tps_pt], tx, ty,
            x_label="conversation length (tokens, log)", y_label=f"tokens/s · TTFT (s x {k})",
            title="Streaming speed and first-token delay", legend=True,
            legend_location="top-right", x_tick_format=".3~s", height=280)

    def _setup_energy_chart(self) -> None:
        ex = lw.make_scale("log", float(self.grid[0]), float(self.grid[-1]))
        ey = lw.make_scale("log", 1.0, 10.0)
        self.s_en = ey
        self.m_en = lw.line_mark(self.grid, np.ones(self.grid.size), ex, ey,
                                 colors=[lw.PALETTE["teal"]], labels=["energy per day"],
                                 legend=True)
        self.m_en_b = lw.hline_mark(self.track.daily_budget, ey, color=lw.PALETTE["red"],
                                    label="daily budget", legend=True)
        self.m_en_pt = lw.scatter_mark([float(self.ctx0)], [1.0], ex, ey)
        self.figures["energy"] = lw.figure(
            [self.m_en, self.m_en_b, self.m_en_pt], ex, ey,
            x_label="conversation length (tokens, log)", y_label="mWh per day (log)",
            title="Battery spent per day", legend=True, legend_location="top-left",
            x_tick_format=".3~s", y_tick_format=".3~g", height=280)

    def _curves_for(self, wb: int, kb: int) -> dict[str, np.ndarray]:
        key = (wb, kb)
        if key not in self._curves:
            self._curves[key] = phone_curves(self.track, wb, kb, self.grid)
        return self._curves[key]

    def _walls(self, wb: int, kb: int, requests: float) -> PhoneWalls:
        return phone_walls(self.track, wb, kb, requests, self.grid, self._curves_for(wb, kb))

    def _hook(self) -> str:
        return spec.b_hook(self.hw.name, self.usable, self.ram)

    def _prediction_spec(self) -> Spec:
        return spec.b_prediction(self.track, self.req0)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.b_checkpoint()

    # -- shared values ---------------------------------------------------------------------
    @computed("weight_bits", "kv_bits")
    def _cv(self, s: Settings) -> dict[str, np.ndarray]:
        """The curves over the conversation-length grid (cached per precision pair)."""
        return self._curves_for(int(s["weight_bits"]), int(s["kv_bits"]))

    @computed(ALL)
    def _here(self, s: Settings) -> PhoneContext:
        """Memory, speed and energy at your conversation length."""
        return _context(self.track, s)

    def _decision(self, s: Settings) -> Decision:
        return limits_decision(spec.b_task(self.track), _checks(self.track, s, self.ctx_options),
                               spec.LIMIT_WORDS)

    @computed("weight_bits", "kv_bits", "requests")
    def _first(self, s: Settings) -> PhoneWalls:
        """The first limit to fail as the conversation grows, and where."""
        return self._walls(int(s["weight_bits"]), int(s["kv_bits"]), float(s["requests"]))

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on("_cv")
    def _draw_memory_and_speed(self, s: Settings) -> None:
        cv = self._cv(s)
        tps = 1.0 / cv["tpot_s"]
        mem_gb = cv["memory_bytes"] / 1e9
        ram_gb = self.ram / 1e9
        lw.update_marks({
            self.m_mem: {"y": mem_gb},
            self.s_mem: {"max": lw.nice_up(max(ram_gb * 1.15,
                                               min(float(mem_gb.max()), 4 * ram_gb)))},
            self.m_tps: {"y": np.vstack([tps, cv["ttft_s"] * TTFT_SCALE])},
            self.s_tps: {"max": lin_top(np.concatenate([tps, [1.0 / self.track.slo_s]]),
                                        pad=1.2)},
        })

    @depends_on("_cv", "requests")
    def _draw_energy(self, s: Settings) -> None:
        daily_curve = self._cv(s)["energy_j"] * float(s["requests"]) / J_PER_MWH
        lo_e, hi_e = log_domain(np.concatenate([daily_curve, [self.track.daily_budget]]), 1.5)
        lw.update_marks({self.m_en: {"y": daily_curve}, self.s_en: {"min": lo_e, "max": hi_e}})

    @depends_on("_here")
    def _draw_points(self, s: Settings) -> None:
        here = self._here(s)
        ctx = float(s["context"])
        lw.update_marks({
            self.m_mem_pt: {"x": [ctx], "y": [here.memory_bytes / 1e9]},
            self.m_tps_pt: {"x": [ctx], "y": [1.0 / here.tpot_s]},
            self.m_en_pt: {"x": [ctx], "y": [here.daily_mwh]},
        })

    @computed(ALL)
    def _shown(self, s: Settings) -> PhoneContext | None:
        """Where speed and energy are quoted: your conversation if it fits memory, else the
        longest conversation the control offers that does (None: none does)."""
        return _quoted(self.track, s, self.ctx_options)

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        here, walls, shown = self._here(s), self._first(s), self._shown(s)
        self.results = {
            "weight_bits": here.weight_bits, "kv_bits": here.kv_bits,
            "context_tokens": here.context_tokens, "requests_per_day": here.requests_per_day,
            "prompt_tokens": float(here.prompt_tokens), "ttft_s": here.ttft_s,
            "tpot_s": here.tpot_s, "last_step_s": here.last_step_s,
            "request_s": here.request_s,
            "energy_j": here.energy_j, "weights_bytes": here.weights_bytes,
            "kv_bytes": here.kv_bytes, "memory_bytes": here.memory_bytes,
            "usable_bytes": here.usable_bytes, "daily_mwh": here.daily_mwh,
            "battery_share_per_day": here.battery_share, "fails": here.fails,
            "quoted_context_tokens": None if shown is None else shown.context_tokens,
            "first_failure": walls.first, "first_failure_context": walls.first_at,
            "expected": self._expected,
        }
        self._set_readout(metric_cards(spec.b_cards(here, shown, walls)))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        here, walls, shown = self._here(s), self._first(s), self._shown(s)
        fails = _checks(self.track, s, self.ctx_options)
        self.levers = levers_for(self, s, fails,
                                 lambda t: _checks(self.track, t, self.ctx_options, True),
                                 ("weight_bits", "kv_bits", "context", "requests"))
        details = spec.b_details(here, shown)
        for name in PHONE_LIMITS:
            self.callouts[name].set(fails[name], spec.PHONE_LIMIT_TITLES[name], details[name],
                                    lever_text(self, self.levers.get(name)))
        self.callouts["boundary"].set(
            not any(fails.values()), "Everything fits at this length",
            f"Next wall: {walls.first}"
            + ("" if walls.first_at is None else f" from {fmt_count(walls.first_at)} tokens")
            + ".")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        self.math.update(spec.b_math(self._here(s), self._shown(s)))

    def _reveal_body(self) -> str:
        return spec.b_reveal(self._computed_line(), self.default_walls,
                             phone_context(self.track, self.track.weight_bits,
                                           self.track.kv_bits, self.ctx0).kv_bytes_per_token)

    def takeaway(self) -> str:
        s = self.settings()
        return spec.b_takeaway(self._here(s), self._shown(s), self._first(s))
