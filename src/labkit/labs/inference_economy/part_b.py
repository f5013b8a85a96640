"""Lab 1 Part B: the state/KV memory wall.

The view: controls and charts bound to :func:`labkit.plans.workload.session_point`; the
text is :mod:`~labkit.labs.inference_economy.part_b_spec`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from labkit import ui as lw
from labkit.core.format import counted, format_bytes
from labkit.core.grids import PRECISIONS, context_options
from labkit.labs.common import (
    ALL,
    CheckSpec,
    Settings,
    Spec,
    computed,
    depends_on,
    metric_cards,
    remembered,
)
from labkit.labs.inference_economy import decisions
from labkit.labs.inference_economy import part_b_spec as spec
from labkit.labs.inference_economy.base import (
    MAX_WINDOWS,
    Part,
    max_devices,
    session_bucket,
    unit_scale,
)
from labkit.labs.inference_economy.hints import find_fixes, hint_text
from labkit.plans.serving import LeverFix
from labkit.plans.workload import SessionPoint, StateCapacity, session_point
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model

CHECK_LABELS = {"memory": "the memory check", "batch": "the batch-slot check",
                "deadline": "the deadline check"}


class PartB(Part):
    """How many live sessions (KV caches, or sensor windows + activations) fit beside weights.

    Refresh steps: the sessions curve sweeps the state per session, so it reads the
    precisions and devices but not the context (windows) control; the memory bars, the
    "you are here" point, the readout, callouts and math peek read every control.
    """

    primary = ("weight_bits", "context", "devices")

    shows = (("max_batch_in_memory", "max_sessions"),)

    letter = "B"
    _decision = decisions.part_b

    def _setup(self) -> None:
        tr = self.track
        self.hw = get_hardware(tr.hardware_id)
        self.model = get_model(tr.model_id)
        self.is_lm = tr.is_transformer
        self.max_dev = max_devices(tr)
        self.slots = tr.batch_size
        self._setup_controls()
        start = decisions.b_start(self)
        self._start_at(start, decisions.b_start_note(self, start))
        d0 = self._defaults()
        self.default_cap = self._capacity(d0)
        self.default_curve = np.asarray(self._curve(d0), dtype=float)
        self._expected = session_bucket(self.default_cap.max_sessions)
        self._setup_memory_chart()
        self._setup_sessions_chart()
        self.callouts["oom"] = lw.callout("danger")
        self.callouts["batch_cap"] = lw.callout("warn")
        self.callouts["boundary"] = lw.callout("success")
        self.callouts["floor"] = lw.callout("info")
        if self.track.hard_deadline:
            self.callouts["deadline"] = lw.callout("danger")

    def _setup_controls(self) -> None:
        tr = self.track
        c = self.controls
        c["weight_bits"] = lw.precision_control("Weight precision", tr.weight_bits)
        if self.is_lm:
            ctx0 = int(tr.context_tokens or 0)
            c["kv_bits"] = lw.precision_control("KV-cache precision", tr.kv_bits,
                                                sorted({4, 8, 16, tr.kv_bits}))
            self.grid = context_options(self.model.max_context, ctx0, 256)
            c["context"] = lw.context_control(ctx0, self.model.max_context,
                                              256, "Context per session (tokens)")
        else:
            self.grid = list(range(1, MAX_WINDOWS + 1))
            c["windows"] = lw.int_control(spec.held_label(tr).capitalize(), 1, 1, MAX_WINDOWS)
        if self.max_dev > 1:
            c["devices"] = lw.devices_control(tr.devices_per_replica, self.max_dev,
                                              f"Devices per {tr.replica_noun}")

    def _setup_memory_chart(self) -> None:
        mem_max = self.hw.usable_memory_bytes * self.max_dev
        self.scale, self.unit = unit_scale(mem_max)
        tr = self.track
        cats = [f"weights + {spec.count(tr, 1)}"]
        if self.slots > 1:
            cats.append(f"weights + {self.slots} batch slots")
        cats.append(f"weights + max {tr.state_nouns}")
        self.cats = cats
        bx = lw.make_scale("ordinal")
        by = lw.make_scale("linear", 0.0, 1.0)
        self.mem_y = by
        state_name = "KV cache" if self.is_lm else f"{tr.input_noun} + activations"
        self.m_mem = lw.bar_mark(cats, np.zeros((3, len(cats))), bx, by,
                                 colors=[lw.PALETTE["blue"], lw.PALETTE["orange"],
                                         lw.PALETTE["light"]],
                                 labels=["weights", state_name, "free"])
        self.m_cap = lw.hline_mark(0.0, by, color=lw.PALETTE["red"])
        where = "memory" if self.default_cap.weight_location == "memory" else "SRAM"
        self.figures["memory"] = lw.figure(
            [self.m_mem, self.m_cap], bx, by, x_label=f"what one {tr.replica_noun} holds",
            y_label=f"{where} ({self.unit})",
            title=f"Weights (blue) + {state_name} (orange) + free (grey) vs usable memory "
                  "(red dashed)", height=300)

    def _setup_sessions_chart(self) -> None:
        tr = self.track
        sx = lw.make_scale("log" if self.is_lm else "linear",
                           float(self.grid[0]), float(self.grid[-1]))
        sy = lw.make_scale("linear", 0.0, 1.0)
        self.sess_y = sy
        gx = np.asarray(self.grid, dtype=float)
        self.m_sess_default = lw.line_mark(gx, self.default_curve, sx, sy,
                                           colors=[lw.PALETTE["grey"]], line_style="dashed",
                                           labels=["track defaults"], legend=True,
                                           stroke_width=2)
        self.m_sess = lw.line_mark(gx, self.default_curve, sx, sy, colors=[lw.PALETTE["blue"]],
                                   labels=["your settings"], legend=True, marker="circle",
                                   marker_size=24)
        self.m_slots = lw.hline_mark(float(self.slots), sy, color=lw.PALETTE["orange"],
                                     label=counted(self.slots, "batch slot"), legend=True)
        self.m_here = lw.scatter_mark([gx[0]], [0.0], sx, sy)
        self.figures["sessions"] = lw.figure(
            [self.m_sess_default, self.m_sess, self.m_slots, self.m_here], sx, sy,
            x_label=("context per session (tokens, log scale)" if self.is_lm
                     else spec.held_label(tr)),
            y_label=f"concurrent {tr.state_nouns} that fit",
            title=f"{tr.state_nouns.capitalize()} that fit as the state per {tr.state_noun} "
                  "grows", legend=True,
            x_tick_format=".3~s" if self.is_lm else "d", height=280,
            legend_location="top-right")

    def _defaults(self) -> dict[str, object]:
        tr = self.track
        d: dict[str, object] = {"weight_bits": tr.weight_bits,
                                "devices": tr.devices_per_replica}
        if self.is_lm:
            d.update(kv_bits=tr.kv_bits, context=int(tr.context_tokens or 0))
        else:
            d["windows"] = 1
        return d

    def point(self, s: Mapping[str, object], x: float | None = None) -> SessionPoint:
        """Part B's computed figures at settings ``s`` (``x``: another context / windows)."""
        tr = self.track
        here = float(str(s["context"] if self.is_lm else s["windows"])) if x is None else x
        return session_point(
            tr, weight_bits=int(str(s["weight_bits"])),
            kv_bits=int(str(s.get("kv_bits", tr.kv_bits))),
            context_tokens=here if self.is_lm else None,
            windows=1 if self.is_lm else int(here),
            devices_per_replica=int(str(s.get("devices", tr.devices_per_replica))))

    def _capacity(self, s: Mapping[str, object], x: float | None = None) -> StateCapacity:
        return self.point(s, x).capacity

    def _curve(self, s: Mapping[str, object]) -> list[int]:
        return [self._capacity(s, x).max_sessions for x in self.grid]

    def _x_now(self, s: Settings) -> float:
        return float(s["context"] if self.is_lm else s["windows"])

    def _prediction_spec(self) -> Spec:
        return spec.prediction_spec(self.track, self.hw, self.model, self.default_cap)

    def _checkpoint_spec(self) -> CheckSpec:
        return spec.checkpoint_spec(self.track)

    # -- shared values ---------------------------------------------------------------------
    @computed(ALL)
    def _point(self, s: Settings) -> SessionPoint:
        return self.point(s)

    def _cap(self, s: Settings) -> StateCapacity:
        """Capacity at the current settings."""
        return self._point(s).capacity

    @computed("weight_bits", "kv_bits", "devices")
    def _sessions_curve(self, s: Settings) -> np.ndarray:
        """Sessions that fit at every point of the context (windows) grid."""
        return np.asarray(self._curve(s), dtype=float)

    def failed(self, s: Mapping[str, object]) -> tuple[str, ...]:
        return self.point(s).failed(self.slots, self.track.slo_s)

    @computed(ALL)
    def _fixes(self, s: Settings) -> dict[str, LeverFix]:
        return find_fixes(s, self.controls, remembered(self, self.failed)) if self.failed(s) else {}

    # -- refresh steps ---------------------------------------------------------------------
    @depends_on(ALL)
    def _draw_state(self, s: Settings) -> None:
        """Memory bars, the usable-memory line and the "you are here" point."""
        cap = self._cap(s)
        per, n = cap.bytes_per_session, cap.max_sessions
        w_here = cap.weight_bytes if cap.weight_location == "memory" else 0.0
        counts = [1] + ([self.slots] if self.slots > 1 else []) + [n]
        weights_row = [w_here] * len(counts)
        state_row = [k * per for k in counts]
        free_row = [max(0.0, cap.memory_bytes - w_here - k * per) for k in counts]
        y = np.asarray([weights_row, state_row, free_row]) / self.scale
        capacity = cap.memory_bytes / self.scale
        tallest = float(np.max(y.sum(axis=0)))
        mem_top = min(3.0 * capacity, 1.12 * max(capacity, tallest))
        lw.update_marks({
            self.m_mem: {"y": y},
            self.m_cap: {"y": [capacity, capacity]},
            self.mem_y: {"max": lw.nice_up(mem_top)},
            self.m_here: {"x": [self._x_now(s)], "y": [float(n)]},
        })

    @depends_on("_sessions_curve")
    def _draw_sessions(self, s: Settings) -> None:
        curve = self._sessions_curve(s)
        sess_top = 1.5 * max(float(curve.max()), float(self.default_curve.max()),
                             float(self.slots), 1.0)  # headroom for the legend
        lw.update_marks({self.m_sess: {"y": curve}, self.sess_y: {"max": lw.nice_up(sess_top)}})

    @depends_on(ALL)
    def _show_numbers(self, s: Settings) -> None:
        """Results and readout cards."""
        tr = self.track
        cap = self._cap(s)
        per, n = cap.bytes_per_session, cap.max_sessions
        state_name = "KV cache" if self.is_lm else "input + activations"
        self.results = {
            "max_sessions": n, "oom": cap.oom, "bucket": session_bucket(n),
            "bytes_per_session": per, "weight_bytes": cap.weight_bytes,
            "weight_location": cap.weight_location, "memory_bytes": cap.memory_bytes,
            "free_bytes": cap.free_bytes, "batch_slots": self.slots, "reason": cap.reason,
            "devices": cap.devices, "default_max_sessions": self.default_cap.max_sessions,
            "expected": self._expected, "clear_s": self._point(s).clear_s,
        }
        wloc = ("beside them" if cap.weight_location == "memory"
                else f"in flash ({format_bytes(cap.weight_limit_bytes)})")
        self._set_readout(metric_cards([
            (f"{tr.state_nouns} that fit", "OOM" if cap.oom else f"{n:,}",
             f"bucket: {session_bucket(n)}", lw.PALETTE["red"] if cap.oom else lw.PALETTE["green"]),
            (f"{state_name} per {tr.state_noun}", format_bytes(per),
             f"{format_bytes(n * per)} for all of them", lw.PALETTE["orange"]),
            ("weights", format_bytes(cap.weight_bytes), wloc, lw.PALETTE["blue"]),
            ("usable memory", format_bytes(cap.memory_bytes),
             f"{counted(cap.devices, 'device')}, {tr.memory_reserve_fraction:.0%} reserve",
             lw.PALETTE["grey"]),
            *spec.clear_card(tr, self._point(s), self.slots),
        ]))

    def _hint(self, s: Settings, name: str) -> str | None:
        fix = self._fixes(s).get(name)
        return None if fix is None else hint_text(self.controls, fix,
                                                 lambda n: CHECK_LABELS.get(n, n))

    @depends_on(ALL)
    def _set_callouts(self, s: Settings) -> None:
        tr = self.track
        cap = self._cap(s)
        n = cap.max_sessions
        self.callouts["oom"].set(cap.oom, *spec.oom_text(tr, cap), self._hint(s, "memory"))
        short = (not cap.oom) and n < self.slots
        self.callouts["batch_cap"].set(short, *spec.batch_cap_text(tr, n, self.slots),
                                       self._hint(s, "batch"))
        self._set_floor(s, cap)
        p = self._point(s)
        late = "deadline" in p.failed(self.slots, tr.slo_s)
        if "deadline" in self.callouts:
            self.callouts["deadline"].set(late, *spec.deadline_text(tr, p, self.slots),
                                          self._hint(s, "deadline"))
        nxt = self._next_step(s)
        self.callouts["boundary"].set(
            (not cap.oom) and not short and not late, f"{spec.count(tr, n)} fit",
            f"{nxt[0].upper()}{nxt[1:]}{spec.clear_clause(tr, p, self.slots)}.")

    def floor_peers(self, s: Settings, cap: StateCapacity) -> list[int]:
        """Other weight precisions at which the same state and sessions fit (weights in
        flash, state at the compute precision: a lower precision frees nothing here)."""
        if self.is_lm or cap.weight_location != "flash":
            return []
        out = []
        for b in PRECISIONS:
            if b == int(s["weight_bits"]):
                continue
            other = self._capacity({**s, "weight_bits": b})
            if (not other.oom and other.max_sessions == cap.max_sessions
                    and other.bytes_per_session == cap.bytes_per_session):
                out.append(b)
        return out

    def _set_floor(self, s: Settings, cap: StateCapacity) -> None:
        peers = self.floor_peers(s, cap)
        if not peers or cap.oom:
            self.callouts["floor"].clear()
            return
        self.callouts["floor"].show(*spec.floor_text(self.track, self._point(s),
                                                     int(s["weight_bits"]), peers))

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        self.math.update(spec.math_html(self.track, self._point(s)))

    def _next_step(self, s: Settings) -> str:
        x = s["context"] if self.is_lm else s["windows"]
        grid = list(self.grid)
        i = grid.index(x) if x in grid else 0
        if i + 1 >= len(grid):
            return (f"this is the largest state per {self.track.state_noun} the controls "
                    "allow")
        nxt = grid[i + 1]
        n2 = self._capacity(s, nxt).max_sessions
        what = (f"{lw.format_tokens(int(nxt))} tokens of context" if self.is_lm
                else f"{int(nxt)} {spec.held_label(self.track)}")
        return f"at {what} only {spec.count(self.track, n2)} fit"

    def _reveal_body(self) -> str:
        r = self.results
        now = "OOM" if r["oom"] else spec.count(self.track, int(r["max_sessions"]))
        body = spec.reveal_text(self.track, self.default_cap,
                                self.predict.label_for(self._expected), now, str(r["bucket"]))
        return f"<div>{self._prediction_line()}.</div>{body}"
