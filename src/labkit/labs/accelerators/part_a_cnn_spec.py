"""Lab 2 Part A (CNN): the declarative side -- questions, options, feedback and the prose
templates of the hook, readout, callouts, math peek, reveal and takeaway. Every number
is a field of a :class:`~labkit.plans.roofline.CnnView` (the plans layer computes),
formatted by :mod:`labkit.core.format`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labkit import ui as lw
from labkit.core.format import (
    counted,
    fmt,
    fmt_count,
    fmt_pct,
    fmt_si,
    fmt_time,
    format_bytes,
    tex_num,
)
from labkit.labs.accelerators.base import feedback_map
from labkit.labs.accelerators.stack_text import band_math_html
from labkit.labs.common import CheckSpec, Spec
from labkit.plans.roofline import CnnView
from labkit.plans.stacks import StackSpread
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model
from labkit.tracks import Track

MODE_OPTIONS = [("peak", "peak"), ("achievable (real system)", "achievable")]
PREDICTION_OPTIONS = [("Memory-bound: moving weights and activations takes longer",
                       "memory-bound"),
                      ("Compute-bound: the arithmetic takes longer", "compute-bound")]
CHECKPOINT_OPTIONS = [
    ("The slower runs must be mismeasured: one chip has one roofline, so its runs agree",
     "mismeasured"),
    ("The software stack sets how much of the same peak a run reaches (its kernels, "
     "fusion, per-layer overheads): achievable needs the stack as an input, and a band "
     "where the stack is not named", "stack"),
    ("The faster toolchains raise the chip's peak MAC/s, so the roof moves with them",
     "peak_moves"),
    ("The slow runs are memory-bound and the fast ones compute-bound", "regime"),
]
Card = tuple[str, str, str, str]


def hook(model: Model, hw: Hardware) -> str:
    # Numbers that decide the prediction (the pass's FLOP per byte against the ridge)
    # stay for the reveal: the hook gives the two quantities, not their ratio.
    return (f"{model.name} does {fmt_si(model.flops_per_inference, 'FLOP')} per input on "
            f"the {hw.name}. A pass is compute-bound when its FLOP per byte moved passes the "
            "device's ridge (peak FLOP/s over bandwidth). Which side of the ridge is it on, "
            "and what moves it?")


def prediction_spec(tr: Track, hw: Hardware) -> Spec:
    q = (f"{lw.esc(tr.label)}: one {fmt_count(tr.weight_bits)}-bit pass over one input on "
         f"the {lw.esc(hw.name)} (peak roofline). Is it memory- or compute-bound?")
    return q, list(PREDICTION_OPTIONS)


def checkpoint_spec(sp: StackSpread) -> CheckSpec:
    """Same chip, same model, several-fold apart by toolchain (the published runs of one
    configuration furthest apart, :func:`labkit.plans.stacks.stack_spread`)."""
    (fast, t_fast), (slow, t_slow) = sp.fastest, sp.slowest
    q = (f"{counted(sp.runs, 'published run')} of one configuration, the "
         f"{lw.esc(sp.model)} at {fmt_count(sp.weight_bits)}-bit on one "
         f"{lw.esc(sp.hardware)}, by {fmt_count(sp.stacks)} software stacks: from "
         f"{fmt_time(t_fast)} per pass ({lw.esc(fast)}) to {fmt_time(t_slow)} "
         f"({lw.esc(slow)}), {fmt(sp.ratio, sig=2)}x apart. The peak roofline puts every "
         f"one at {fmt_time(sp.peak_s)}. What does the spread say?")
    hi, lo = sp.peak_shares
    good = (f"Right: the peak, {fmt_time(sp.peak_s)}, is the chip's (its MACs per cycle "
            "times its clock) and the same for every run; the runs reach "
            f"{fmt_pct(lo, sig=2)} to {fmt_pct(hi, sig=2)} of it. labkit's achievable "
            "takes the stack as an input (its kernel library's fitted term), and the "
            "stack control shows the band real systems on it span.")
    bad = ("Not quite: every run is the same model on the same chip, so the same FLOP per "
           "byte and the same roof. What differs is the software: how much of that peak "
           "its kernels reach.")
    opts = list(CHECKPOINT_OPTIONS)
    return q, opts, "stack", feedback_map(opts, "stack", good, bad)


def cards(v: CnnView, deadline_s: float) -> list[Card]:
    r = v.pass_
    return [
        ("regime", v.regime, f"{v.mode} roofline, {v.precision} arithmetic",
         lw.PALETTE["red"]),
        ("arithmetic intensity", f"{fmt_count(v.ai_flop_per_byte)} FLOP/B",
         f"ridge at {fmt(v.ridge_flop_per_byte)} ({v.mode})", lw.PALETTE["blue"]),
        ("attainable", fmt_si(v.attainable_flops, "FLOP/s"),
         f"achieved {fmt_si(v.achieved_flops, 'FLOP/s')}", lw.PALETTE["orange"]),
        ("pass latency", fmt_time(v.latency_s),
         f"{counted(v.batch, 'input')}; {fmt_time(float(r.per_inference_s))} each",
         lw.PALETTE["purple"]),
        ("deadline", fmt_time(deadline_s), f"{v.latency_s / deadline_s:.1%} used",
         lw.PALETTE["grey"]),
    ]


def deadline_text(v: CnnView, deadline_s: float) -> tuple[str, str]:
    return ("Deadline missed",
            f"A pass over {counted(v.batch, 'input')} takes {fmt_time(v.latency_s)}; every "
            f"input in it waits for the whole pass, against a {fmt_time(deadline_s)} "
            "deadline.")


def memory_bound_text(v: CnnView) -> tuple[str, str]:
    r = v.pass_
    return ("Memory-bound: the device waits on bytes",
            f"{format_bytes(float(r.bytes_moved))} per pass at "
            f"{fmt_si(v.bw_bytes_per_s, 'B/s')} ({fmt_time(float(r.memory_s))}) outlasts "
            f"the arithmetic ({fmt_time(float(r.compute_s))}).")


def boundary_text(v: CnnView, deadline_s: float, front_end_s: float = 0.0
                  ) -> tuple[str, str]:
    """The compute-bound callout: the model's pass as a share of the deadline, and, on a
    track whose inputs pass a front end first (``front_end_s`` > 0, s), that the share
    leaves it out (Part D's deadline check and Lab 1 count it)."""
    tail = (f"A fixed overhead of {fmt_time(float(v.pass_.overhead_s))} per pass and "
            "derated FLOP/s are why real passes sit under the roof."
            if v.mode == "achievable" else
            "Switch to the achievable roofline to see why real passes sit under it.")
    if front_end_s > 0:
        tail += (f" The share is the model's pass alone: each input's front end adds "
                 f"{fmt_time(front_end_s)} before it (Part D's deadline check counts both).")
    return (f"Compute-bound: the model's pass is {fmt_pct(v.latency_s / deadline_s, sig=2)} "
            "of the deadline",
            f"The point is right of the ridge ({fmt_count(v.ai_flop_per_byte)} vs "
            f"{fmt(v.ridge_flop_per_byte)} FLOP/B, {v.mode}): only more FLOP/s or fewer FLOP "
            "help now. " + tail)


def _compute_tex(v: CnnView) -> tuple[str, str]:
    """The compute term as TeX and a sentence: FLOP over C, plus each fused layer's tile
    tail when the pass charges one, or over the FP32 rate when the engine kept the
    CUDA-core kernels (the plans result says which)."""
    layers = fmt_count(v.kernel_layers)
    if v.cuda_cores:
        return ("\\frac{BF}{C_{\\text{FP32}}}",
                f"<p>Here the CUDA-core (FP32) kernels, at $C_{{\\text{{FP32}}}} = "
                f"{tex_num(v.fp32_flops)}$ FLOP/s, beat the tensor cores with their tile "
                f"tails ({layers} layers x {tex_num(v.layer_tail_flop)} FLOP), and the "
                "engine keeps them.</p>")
    if not v.tail:
        return "\\frac{BF}{C}", ""
    return ("\\frac{BF + L\\,f_{\\text{tail}}}{C}",
            f"<p>$L\\,f_{{\\text{{tail}}}} = {layers} \\times {tex_num(v.layer_tail_flop)}$ "
            f"FLOP: each of the {layers} fused layers ends on a partial wave of tensor-core "
            "tiles, idle compute the pass pays at its own rate (it shrinks on a bigger GPU; "
            "FP32 on the CUDA cores has none).</p>")


def math_html(v: CnnView, flops_per_input: float, class_label: str) -> str:
    """The math peek: AI, the attainable rate, the pass's time and, around achievable on
    the stack, the band real systems span."""
    r = v.pass_
    frac, tail_note = _compute_tex(v)
    return (
        "<p>One pass over B inputs (weights read once, activations per input):</p>"
        f"$$\\mathrm{{AI}} = \\frac{{B \\cdot F}}{{W_b + B\\,A}} = "
        f"\\frac{{{v.batch} \\times {tex_num(flops_per_input)}}}"
        f"{{{tex_num(float(r.bytes_moved))}}} = {tex_num(v.ai_flop_per_byte)}\\ "
        "\\text{FLOP/B}$$"
        f"$$P = \\min(C, \\mathrm{{AI}}\\cdot BW) = \\min({tex_num(v.c_flops)}, "
        f"{tex_num(v.ai_flop_per_byte)} \\times {tex_num(v.bw_bytes_per_s)}) = "
        f"{tex_num(v.attainable_flops)}\\ \\text{{FLOP/s}}$$"
        f"$$t = \\max\\left({frac}, \\frac{{W_b + BA}}{{BW}}\\right) "
        f"+ o = \\max({tex_num(float(r.compute_s) * 1e3)}, "
        f"{tex_num(float(r.memory_s) * 1e3)}) + {tex_num(float(r.overhead_s) * 1e3)} = "
        f"{tex_num(v.latency_s * 1e3)}\\ \\text{{ms}}$$" + tail_note
        + f"<p>Ridge C/BW = {fmt(v.ridge_flop_per_byte)} FLOP/B ({v.precision}, {v.mode}). "
          "Source: <code>labkit.plans.roofline.cnn_view</code> (on "
          "<code>labkit.physics.phases.cnn_inference_time</code>).</p>"
        + ("" if v.stack is None else
           band_math_html(v.stack, v.achievable_s * 1e3, "one pass", class_label)))


def reveal_body(computed_line: str, d: CnnView, r: Mapping[str, Any], hw: Hardware,
                weight_bits: int, class_label: str) -> str:
    """The reveal: the defaults' pass (peak), your pass, and why."""
    ai, ridge = d.ai_flop_per_byte, d.ridge_flop_per_byte
    return (f"{computed_line}"
            f"<div>At the defaults: compute {fmt_time(float(d.pass_.compute_s))} vs memory "
            f"{fmt_time(float(d.pass_.memory_s))} per pass.</div>"
            f"<div>With your settings: <b>{r['regime']}</b>, {fmt_time(r['latency_s'])} per "
            "pass.</div><div style='color:#5d6d7e'>Why: a CNN reuses each weight across "
            f"every position it slides over: one {fmt_count(weight_bits)}-bit pass does "
            f"{fmt(ai)} FLOP per byte moved, {'above' if ai >= ridge else 'below'} the "
            f"{lw.esc(hw.name)}'s ridge of {fmt(ridge)} ({fmt_si(d.c_flops, 'FLOP/s')} "
            f"over {fmt_si(d.bw_bytes_per_s, 'B/s')}, peak). The ridge is a ratio, so a small "
            "device with a tiny FLOP/s and a tiny bandwidth can still be compute-bound. "
            "Real passes sit under the roof: achievable takes "
            f"{fmt(r['achievable_over_peak'], sig=2)}x the peak pass here (the "
            f"{lw.esc(class_label)} class's derating{_on_stack(r)}); "
            f"{lw.esc(r['real_systems'])}.</div>")


def _on_stack(r: Mapping[str, Any]) -> str:
    """', on <stack>' when the student named one (its term is in achievable)."""
    return "" if r.get("stack") is None else f", on {lw.esc(str(r['stack_label']))}"


def takeaway(r: Mapping[str, Any]) -> str:
    return (f"Roofline: at {r['weight_bits']}-bit, {counted(r['batch'], 'input')} per pass, the "
            f"model sits at {fmt(r['ai_flop_per_byte'])} FLOP/B vs a ridge of "
            f"{fmt(r['ridge_flop_per_byte'])} ({r['mode']}): {r['regime']}, "
            f"{fmt_time(r['latency_s'])} per pass of a {fmt_time(r['deadline_s'])} deadline.")
