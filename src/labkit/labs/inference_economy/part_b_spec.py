"""Lab 1 Part B's declarative text: questions, options (none of the prediction's states a
misconception) and prose templates over a computed
:class:`~labkit.plans.workload.SessionPoint`."""

from __future__ import annotations

from labkit import ui as lw
from labkit.core.format import counted, fmt_time, format_bytes, tex_num
from labkit.labs.common import CheckSpec, Spec
from labkit.labs.inference_economy.base import FEW_MAX, MODEST_MAX
from labkit.plans.serving import state_reason
from labkit.plans.workload import SessionPoint, StateCapacity
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model
from labkit.tracks import Track

FEW_MIN = 2

MISCONCEPTIONS: dict[str, frozenset[str]] = {
    "prediction": frozenset(),
    "checkpoint": frozenset({"compute", "weights_only", "devices"}),
}
"""Option values whose label states a misconception (never the computed answer)."""


def held_label(tr: Track) -> str:
    """What the CNN's windows control counts: the input one inference holds."""
    return f"{tr.input_noun} of input per inference"


def count(tr: Track, n: int) -> str:
    """``4 sessions``, ``1 frame in flight``: a count of the track's state holders."""
    return counted(n, tr.state_noun, tr.state_nouns)


def prediction_spec(tr: Track, hw: Hardware, model: Model, cap: StateCapacity) -> Spec:
    state = (f"{tr.kv_bits}-bit KV cache at {int(tr.context_tokens or 0):,} tokens of "
             "context" if tr.is_transformer
             else f"{format_bytes(tr.window_bytes)} of input plus its activations")
    q = (f"{lw.esc(tr.label)}: one {tr.replica_noun} of {cap.devices} x "
         f"{lw.esc(hw.name)} holds the {tr.weight_bits}-bit weights of "
         f"{lw.esc(model.name)}. With {state} per {tr.state_noun}, how many "
         f"concurrent {tr.state_nouns} fit beside the weights?")
    return q, [
        ("One or none: memory fails almost at once", "one"),
        (f"A few ({FEW_MIN}-{FEW_MAX}): state is the first wall", "few"),
        (f"Tens ({FEW_MAX + 1}-{MODEST_MAX}): state is visible but not binding", "modest"),
        (f"Many (more than {MODEST_MAX}): the memory left after the weights holds a "
         "large batch of them", "many"),
    ]


def checkpoint_spec(tr: Track) -> CheckSpec:
    one, many = tr.state_noun, tr.state_nouns
    q = (f"Once the weights are resident, what decides how many {many} one "
         f"{tr.replica_noun} holds?")
    opts = [(f"The bytes each live {one} holds against the memory left after the "
             "weights", "state"),
            ("The device's peak FLOP/s", "compute"),
            (f"Nothing: if the weights fit, every {one} fits", "weights_only"),
            ("Only the number of devices, whatever the precision", "devices")]
    rule = f"{many} = floor((memory - weights) / bytes per {one})"
    held = "context" if tr.is_transformer else f"{tr.input_noun} of input"
    good = f"Right: {rule}. Precision, {held} and devices all act through that ratio."
    bad = f"Not quite: {rule}. FLOP/s never appears; devices help only by adding memory."
    return q, opts, "state", {v: (good if v == "state" else bad) for _, v in opts}


def oom_text(tr: Track, cap: StateCapacity) -> tuple[str, str]:
    return (f"Out of memory: weights + one {tr.state_noun} do not fit",
            lw.esc(state_reason(tr, cap)) + f". There is no negative count of "
            f"{tr.state_nouns}: the {tr.replica_noun} cannot run at all.")


def batch_cap_text(tr: Track, n: int, slots: int) -> tuple[str, str]:
    return (f"Memory caps the batch at {n} of {slots} slots",
            f"The scheduler wants {slots} concurrent {tr.state_nouns}; only {n} fit.")


def deadline_text(tr: Track, p: SessionPoint, slots: int) -> tuple[str, str]:
    """The hard deadline refuses the batch: memory holds it, time does not."""
    clear = p.clear_s or 0.0
    split = (f" ({p.per_device} on each of {counted(p.capacity.devices, 'device')})"
             if p.capacity.devices > 1 else "")
    return ("The deadline caps what is in flight, not memory",
            f"Memory holds {count(tr, p.capacity.max_sessions)}, but the scheduler's "
            f"{count(tr, slots)}{split} share one pass and each its output step: the last "
            f"is done after {fmt_time(clear)}, past the {fmt_time(tr.slo_s)} deadline.")


def clear_clause(tr: Track, p: SessionPoint, slots: int) -> str:
    """Under a hard deadline, the boundary callout's clause on the time to clear the batch
    ("" otherwise)."""
    if p.clear_s is None:
        return ""
    return (f"; the last of the scheduler's {count(tr, slots)} is done after "
            f"{fmt_time(p.clear_s)}, within the {fmt_time(tr.slo_s)} deadline")


def clear_card(tr: Track, p: SessionPoint, slots: int) -> list[tuple[str, str, str, str]]:
    """Under a hard deadline, the readout card of the time to clear the scheduler's batch."""
    if p.clear_s is None:
        return []
    late = p.clear_s > tr.slo_s
    return [(f"last of {count(tr, slots)} done", fmt_time(p.clear_s),
             f"deadline {fmt_time(tr.slo_s)}; one pass of {p.per_device} per device and "
             "their output steps",
             lw.PALETTE["red"] if late else lw.PALETTE["green"])]


def floor_text(tr: Track, p: SessionPoint, bits: int, peers: list[int]) -> tuple[str, str]:
    cap = p.capacity
    same = " and ".join(f"{b}-bit" for b in peers)
    return (f"{bits}-bit weights fit the same {count(tr, cap.max_sessions)} as {same}",
            f"The weights live in flash ({format_bytes(cap.weight_bytes)} of "
            f"{format_bytes(cap.weight_limit_bytes)}); memory holds the input and "
            f"activations of each {tr.state_noun}, {format_bytes(cap.bytes_per_session)}, "
            f"kept at the {p.datapath} compute precision that {bits}-bit and {same} weights "
            "share (a wider datapath would widen them). So the bars do not move: only the "
            "flash figure does.")


def math_html(tr: Track, p: SessionPoint) -> str:
    """N = floor((M - W) / S) and S from its printed terms."""
    cap = p.capacity
    per, n = cap.bytes_per_session, cap.max_sessions
    w_here = cap.weight_bytes if cap.weight_location == "memory" else 0.0
    sub = "session" if tr.is_transformer else "state"
    if tr.is_transformer:
        per_tex = (f"{tex_num(p.per_token_bytes)}\\ \\tfrac{{\\text{{B}}}}{{\\text{{token}}}}"
                   f" \\times {tex_num(p.context_tokens)}")
        unit = "context (KV bytes per token after tensor-parallel sharing)"
    else:
        per_tex = (f"{p.windows} \\times {tex_num(p.window_bytes)} + "
                   f"{tex_num(p.activation_bytes)}")
        unit = f"{tr.input_noun} of input"
    return (
        f"<p>{tr.state_nouns.capitalize()} that fit on one {tr.replica_noun} (weights "
        f"in {cap.weight_location}):</p>"
        "$$N = \\left\\lfloor \\frac{M_{\\text{usable}} - W}"
        f"{{S_{{\\text{{{sub}}}}}}} "
        f"\\right\\rfloor = \\left\\lfloor \\frac{{{tex_num(cap.memory_bytes)} - "
        f"{tex_num(w_here)}}}{{{tex_num(per)}}} \\right\\rfloor = {n}$$"
        f"$$S_{{\\text{{{sub}}}}} = {per_tex} = {tex_num(per)}\\ \\text{{bytes}}$$"
        f"<p>The state grows linearly with the {unit}; weights shrink with precision."
        f"{_clear_math(tr, p)} Source: <code>labkit.plans.workload.session_point</code>.</p>")


def _clear_math(tr: Track, p: SessionPoint) -> str:
    """Under a hard deadline, the time wall beside the memory wall ("" otherwise)."""
    if p.clear_s is None:
        return ""
    per = p.per_device or 1
    return (f"</p><p>Under the hard deadline the {tr.state_nouns} must also be cleared in "
            f"time: the scheduler's batch, {per} per device, runs as one pass and each "
            f"{tr.state_noun} its output step, "
            f"$t_{{\\text{{pass}}}}({per}) + {per}\\,t_{{\\text{{out}}}} = "
            f"{tex_num(p.clear_s * 1e3)}\\ \\text{{ms}}$ against {fmt_time(tr.slo_s)} "
            "(the pass table Part C's policies are timed with).")


def reveal_text(tr: Track, cap0: StateCapacity, label: str, now: str, bucket: str) -> str:
    return (
        f"<div>At the track defaults: {lw.esc(state_reason(tr, cap0))} → <b>"
        f"{label}</b>.</div>"
        f"<div>With your current settings: <b>{now}</b> (bucket: {bucket}).</div>"
        f"<div style='color:#5d6d7e'>Why: once the weights are resident, every live "
        f"{tr.state_noun} holds its own state. Memory left after the weights divided by "
        f"the state per {tr.state_noun} is the concurrency ceiling; FLOP/s never "
        "enters.</div>")
