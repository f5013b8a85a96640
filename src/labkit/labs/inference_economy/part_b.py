"""Lab 1 Part B: the state/KV memory wall."""

from __future__ import annotations

import numpy as np

from labkit import ui as lw
from labkit.core.format import format_bytes, tex_num
from labkit.core.grids import PRECISIONS, context_options
from labkit.labs.common import ALL, Settings, computed, depends_on, metric_cards
from labkit.labs.inference_economy.base import (
    FEW_MAX,
    MAX_WINDOWS,
    MODEST_MAX,
    Part,
    max_devices,
    session_bucket,
    unit_scale,
)
from labkit.physics.kvcache import weight_bytes
from labkit.physics.memory import StateCapacity, state_capacity
from labkit.physics.phases import cnn_compute_precision, cnn_inference_time
from labkit.plans.serving import (
    counted,
    state_reason,
    track_capacity,
)
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model

# -- Part B ---------------------------------------------------------------------------------

class PartB(Part):
    """How many live sessions (KV caches, or sensor windows + activations) fit beside weights.

    Refresh steps: the sessions curve sweeps the state per session, so it reads the
    precisions and devices but not the context (windows) control; the memory bars, the
    "you are here" point, the readout, callouts and math peek read every control.
    """

    letter = "B"

    def _setup(self) -> None:
        tr = self.track
        self.hw = get_hardware(tr.hardware_id)
        self.model = get_model(tr.model_id)
        self.is_lm = tr.is_transformer
        self.max_dev = max_devices(tr)
        self.slots = tr.batch_size
        self._setup_controls()
        d0 = self._defaults()
        self.default_cap = self._capacity(d0)
        self.default_curve = np.asarray(self._curve(d0), dtype=float)
        self._expected = session_bucket(self.default_cap.max_sessions)
        self._setup_memory_chart()
        self._setup_sessions_chart()
        self.callouts["oom"] = lw.Callout("danger")
        self.callouts["batch_cap"] = lw.Callout("warn")
        self.callouts["boundary"] = lw.Callout("success")
        self.callouts["floor"] = lw.Callout("info")

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
            self.act_bytes = {b: float(cnn_inference_time(self.hw, self.model, b, 1).bytes_moved)
                              - weight_bytes(self.model, b) for b in PRECISIONS}
            self.grid = list(range(1, MAX_WINDOWS + 1))
            c["windows"] = lw.int_control(self._held_label.capitalize(), 1, 1, MAX_WINDOWS)
        if self.max_dev > 1:
            c["devices"] = lw.devices_control(tr.devices_per_replica, self.max_dev,
                                              f"Devices per {tr.replica_noun}")

    @property
    def _held_label(self) -> str:
        """What the CNN's windows control counts: the input one inference holds."""
        return f"{self.track.input_noun} of input per inference"

    def _count(self, n: int) -> str:
        """``4 sessions``, ``1 frame in flight``: a count of the track's state holders."""
        return counted(n, self.track.state_noun, self.track.state_nouns)

    def _setup_memory_chart(self) -> None:
        mem_max = self.hw.usable_memory_bytes * self.max_dev
        self.scale, self.unit = unit_scale(mem_max)
        tr = self.track
        cats = [f"weights + 1 {tr.state_noun}"]
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
                                     label=f"{self.slots} batch slot(s)", legend=True)
        self.m_here = lw.scatter_mark([gx[0]], [0.0], sx, sy)
        self.figures["sessions"] = lw.figure(
            [self.m_sess_default, self.m_sess, self.m_slots, self.m_here], sx, sy,
            x_label=("context per session (tokens, log scale)" if self.is_lm
                     else self._held_label),
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

    def _state_bytes(self, wb: int, windows: int) -> float:
        return windows * self.track.window_bytes + self.act_bytes[wb]

    def _capacity(self, s: Settings, x: float | None = None) -> StateCapacity:
        tr = self.track
        wb = int(s["weight_bits"])
        dev = int(s.get("devices", tr.devices_per_replica))
        if self.is_lm:
            ctx = float(s["context"] if x is None else x)
            return track_capacity(tr, context_tokens=ctx, weight_bits=wb,
                                  kv_bits=int(s["kv_bits"]), devices_per_replica=dev)
        win = int(s["windows"] if x is None else x)
        return state_capacity(self.hw, self.model, weight_bits=wb, kv_bits=tr.kv_bits,
                              devices_per_replica=dev,
                              reserve_fraction=tr.memory_reserve_fraction,
                              state_bytes_per_request=self._state_bytes(wb, win))

    def _curve(self, s: Settings) -> list[int]:
        return [self._capacity(s, x).max_sessions for x in self.grid]

    def _x_now(self, s: Settings) -> float:
        return float(s["context"] if self.is_lm else s["windows"])

    def _prediction_spec(self) -> tuple[str, list[tuple[str, str]]]:
        tr = self.track
        cap = self.default_cap
        state = (f"{tr.kv_bits}-bit KV cache at {int(tr.context_tokens or 0):,} tokens of "
                 "context" if self.is_lm
                 else f"{format_bytes(tr.window_bytes)} of input plus its activations")
        q = (f"{lw.esc(tr.label)}: one {tr.replica_noun} of {cap.devices} x "
             f"{lw.esc(self.hw.name)} holds the {tr.weight_bits}-bit weights of "
             f"{lw.esc(self.model.name)}. With {state} per {tr.state_noun}, how many "
             f"concurrent {tr.state_nouns} fit beside the weights?")
        return q, [
            ("One or none: memory fails almost at once", "one"),
            (f"A few (2-{FEW_MAX}): state is the first wall", "few"),
            (f"Tens ({FEW_MAX + 1}-{MODEST_MAX}): state is visible but not binding", "modest"),
            (f"Many (more than {MODEST_MAX}): if the weights fit, everything fits", "many"),
        ]

    def _checkpoint_spec(self) -> tuple[str, list[tuple[str, str]], str, dict[str, str]]:
        tr = self.track
        one, many = tr.state_noun, tr.state_nouns
        q = (f"Once the weights are resident, what decides how many {many} one "
             f"{tr.replica_noun} holds?")
        opts = [(f"The bytes each live {one} holds against the memory left after the "
                 "weights", "state"),
                ("The device's peak FLOP/s", "compute"),
                (f"Nothing: if the weights fit, every {one} fits", "weights_only"),
                ("Only the number of devices, whatever the precision", "devices")]
        rule = f"{many} = floor((memory - weights) / bytes per {one})"
        held = "context" if self.is_lm else f"{tr.input_noun} of input"
        good = (f"Right: {rule}. Precision, {held} and devices all act through that ratio.")
        bad = (f"Not quite: {rule}. FLOP/s never appears; devices help only by adding "
               "memory.")
        return q, opts, "state", {v: (good if v == "state" else bad) for _, v in opts}

    # -- shared values ---------------------------------------------------------------------
    @computed(ALL)
    def _cap(self, s: Settings) -> StateCapacity:
        """Capacity at the current settings."""
        return self._capacity(s)

    @computed("weight_bits", "kv_bits", "devices")
    def _sessions_curve(self, s: Settings) -> np.ndarray:
        """Sessions that fit at every point of the context (windows) grid."""
        return np.asarray(self._curve(s), dtype=float)

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
        """Results, readout cards and callouts."""
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
            "expected": self._expected,
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
             f"{cap.devices} device(s), {tr.memory_reserve_fraction:.0%} reserve",
             lw.PALETTE["grey"]),
        ]))
        self._set_callouts(s, cap)

    def _set_callouts(self, s: Settings, cap: StateCapacity) -> None:
        tr = self.track
        n = cap.max_sessions
        levers = ["lower the weight precision"]
        if self.is_lm:
            levers += ["lower the KV precision", "shorten the context"]
        else:
            levers.append(f"hold fewer {self._held_label}")
        if "devices" in self.controls:
            levers.append(f"add devices per {tr.replica_noun}")
        recovery = ", ".join(levers)
        self.callouts["oom"].set(
            cap.oom, f"Out of memory: weights + one {tr.state_noun} do not fit",
            lw.esc(state_reason(tr, cap)) + f". There is no negative count of {tr.state_nouns}: "
            f"the {tr.replica_noun} cannot run at all.", recovery)
        short = (not cap.oom) and n < self.slots
        self.callouts["batch_cap"].set(
            short, f"Memory caps the batch at {n} of {self.slots} slots",
            f"The scheduler wants {self.slots} concurrent {tr.state_nouns}; only {n} fit.",
            recovery)
        self._set_floor(s, cap)
        nxt = self._next_step(s)
        self.callouts["boundary"].set(
            (not cap.oom) and not short, f"{self._count(n)} fit",
            f"{nxt[0].upper()}{nxt[1:]}.")

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
        b = int(s["weight_bits"])
        prec = cnn_compute_precision(self.hw, b).upper()
        same = " and ".join(f"{p}-bit" for p in peers)
        self.callouts["floor"].show(
            f"{b}-bit weights fit the same {self._count(cap.max_sessions)} as {same}",
            f"The weights live in flash ({format_bytes(cap.weight_bytes)} of "
            f"{format_bytes(cap.weight_limit_bytes)}); memory holds the input and "
            f"activations of each {self.track.state_noun}, "
            f"{format_bytes(cap.bytes_per_session)}, kept at the {prec} "
            "compute precision whatever the weight precision. So the bars do not move: "
            "only the flash figure does.")

    @depends_on(ALL)
    def _show_math(self, s: Settings) -> None:
        tr = self.track
        cap = self._cap(s)
        per, n = cap.bytes_per_session, cap.max_sessions
        w_here = cap.weight_bytes if cap.weight_location == "memory" else 0.0
        x_now = self._x_now(s)
        unit = "context" if self.is_lm else f"{tr.input_noun} of input"
        sub = "session" if self.is_lm else "state"
        per_tex = (f"\\text{{kv\\_bytes\\_per\\_token}} \\times {int(x_now):,} \\times "
                   f"\\text{{TP share}}" if self.is_lm
                   else f"{int(x_now)} \\times {tex_num(tr.window_bytes)} + "
                        f"{tex_num(self.act_bytes[int(s['weight_bits'])])}")
        self.math.update(
            f"<p>{tr.state_nouns.capitalize()} that fit on one {tr.replica_noun} (weights "
            f"in {cap.weight_location}):</p>"
            "$$N = \\left\\lfloor \\frac{M_{\\text{usable}} - W}"
            f"{{S_{{\\text{{{sub}}}}}}} "
            f"\\right\\rfloor = \\left\\lfloor \\frac{{{tex_num(cap.memory_bytes)} - "
            f"{tex_num(w_here)}}}{{{tex_num(per)}}} \\right\\rfloor = {n}$$"
            f"$$S_{{\\text{{{sub}}}}} = {per_tex} = {tex_num(per)}\\ \\text{{bytes}}$$"
            f"<p>The state grows linearly with the {unit}; weights shrink with precision. "
            "Source: <code>labkit.physics.memory.state_capacity</code>.</p>")

    def _next_step(self, s: Settings) -> str:
        x = s["context"] if self.is_lm else s["windows"]
        grid = list(self.grid)
        i = grid.index(x) if x in grid else 0
        if i + 1 >= len(grid):
            return (f"this is the largest state per {self.track.state_noun} the controls "
                    "allow")
        nxt = grid[i + 1]
        n2 = self._capacity(s, nxt).max_sessions
        what = f"{lw.format_tokens(int(nxt))} tokens of context" if self.is_lm \
            else f"{nxt} {self._held_label}"
        return f"at {what} only {self._count(n2)} fit"

    def _reveal_body(self) -> str:
        tr = self.track
        r = self.results
        cap0 = self.default_cap
        return (
            f"<div>{self._prediction_line()}.</div>"
            f"<div>At the track defaults: {lw.esc(state_reason(tr, cap0))} → <b>"
            f"{self.predict.label_for(self._expected)}</b>.</div>"
            f"<div>With your current settings: <b>"
            f"{'OOM' if r['oom'] else self._count(r['max_sessions'])}</b> "
            f"(bucket: {r['bucket']}).</div>"
            f"<div style='color:#5d6d7e'>Why: once the weights are resident, every live "
            f"{tr.state_noun} holds its own state. Memory left after the weights divided by "
            f"the state per {tr.state_noun} is the concurrency ceiling; FLOP/s never "
            "enters.</div>")
