"""Lab 2 Part A (transformer): the prose computed from one operating point -- the memory
and serving paragraph and the math peek. The widgets, charts and cards are in
:mod:`labkit.labs.accelerators.part_a`; everything here is a function of a
:class:`DecodePoint`, which the part builds from the controls."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from labkit import ui as lw
from labkit.core.format import fmt_pct, fmt_time, tex_num
from labkit.labs.accelerators.base import paper_ms
from labkit.labs.accelerators.derating_text import balance_tex, derating_terms_html
from labkit.physics.derating import device_class_of
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.roofline import DecodeRoofline
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model


@dataclass(frozen=True)
class DecodePoint:
    """One operating point of the decode roofline with every number Part A's prose quotes:
    the device and model on screen, the controls, the point in each roofline mode
    (``here``), B* and L* (tokens) and the knee (sequences, None past L*) in ``mode``, and
    what doubling the batch saves per token there (a fraction)."""

    hw: Hardware
    model: Model
    mode: str
    batch: int
    context: int
    weight_bits: int
    kv_bits: int
    tp: int
    here: Mapping[str, DecodeRoofline]
    b_star: float
    l_star: float
    knee: float | None
    saving: float

    @property
    def point(self) -> DecodeRoofline:
        """The operating point in the chosen roofline mode."""
        return self.here[self.mode]

    @property
    def achievable_over_peak(self) -> float:
        """Achievable step time over peak step time here (>= 1)."""
        return float(self.here["achievable"].step_s / self.here["peak"].step_s)


def shares(pt: DecodeRoofline) -> tuple[float, float, float]:
    """Per-token weight, KV and overhead time in units of the compute time (B*/B, S/L*
    and o for a dense model at peak)."""
    c = float(pt.compute_s)
    return float(pt.weight_s) / c, float(pt.kv_s) / c, float(pt.overhead_s) / c


def memory_html(p: DecodePoint) -> str:
    """Memory as a performance variable: the KV and weight shares of the step."""
    pt = p.point
    step = float(pt.step_s)
    return (
        "<p><b>Memory is a performance variable, not just capacity:</b> at your settings "
        f"reading the KV cache takes {fmt_time(float(pt.kv_step_s))} of the "
        f"{fmt_time(step)} step ({fmt_pct(float(pt.kv_step_s) / step)}) and reading the "
        f"weights {fmt_pct(float(pt.weight_step_s) / step)}; every byte stored is a byte "
        f"each step moves, so {p.kv_bits}-bit KV at {p.context:,} tokens costs time on "
        "every token, not only space.</p>")


def serving_html(p: DecodePoint, sb: float, srv: DecodeRoofline, tpot_slo_s: float | None,
                 ) -> str:
    """The paper's serving batch 2B* (``sb``) against B* and 4B* (``srv``: the roofline at
    the three batches) and, for a track with a TPOT SLO, whether its step meets it."""
    t = [float(x) for x in np.asarray(srv.per_token_s)]
    steps = [float(x) for x in np.asarray(srv.step_s)]
    floor = float(p.point.compute_s) + float(p.point.kv_s)
    slo = ("" if tpot_slo_s is None else
           f", {'within' if steps[1] <= tpot_slo_s else 'over'} the {fmt_time(tpot_slo_s)} "
           "TPOT SLO")
    return (
        f"<p><b>Serving batch (paper: B ≈ 2B*):</b> 2B* = {sb:,.4g} sequences. Per token "
        f"that is {paper_ms(t[1])}, against {paper_ms(t[0])} at B* "
        f"({fmt_pct(1 - t[1] / t[0])} less) and {paper_ms(t[2])} at 4B* (another "
        f"{fmt_pct(1 - t[2] / t[1])} less); the floor no batch goes below is "
        f"{paper_ms(floor)} (compute + KV). One step at 2B* takes {fmt_time(steps[1])}, the "
        f"time every sequence waits per token{slo}.</p>")


def _step_tex(p: DecodePoint) -> str:
    """The step's terms added, in ms."""
    pt = p.point
    ms = [float(pt.weight_step_s), float(pt.compute_step_s), float(pt.kv_step_s)]
    if p.mode == "achievable":
        ms.append(float(pt.overhead_step_s))
    if float(pt.comm_step_s) > 0:
        ms.append(float(pt.comm_step_s))
    return ("$$t_{\\text{step}} = \\frac{W_{\\text{bytes}}}{BW} + \\frac{2NB}{C} + "
            "\\frac{B\\,S\\,\\mathrm{kv\\_bpt}}{BW} = "
            + " + ".join(tex_num(x * 1e3) for x in ms)
            + f" = {tex_num(float(pt.step_s) * 1e3)}\\ \\text{{ms}}$$")


def _per_token_html(p: DecodePoint) -> str:
    pt = p.point
    w, k, o = shares(pt)
    return (f"<p>Per token, in units of one token's compute ($2N/C$ = "
            f"${tex_num(float(pt.compute_s) * 1e3)}$ ms): "
            f"$t/(2N/C) = {tex_num(w)} + 1 + {tex_num(k)}"
            + (f" + {tex_num(o)}" if o > 0 else "")
            + "$ (weight term, B*/B for a dense model at peak; compute; KV term, S/L*"
            + ("; overhead" if o > 0 else "")
            + f"). Doubling the batch divides only the {'first and last' if o > 0 else 'first'}"
              f": it saves {p.saving:.1%} here. "
              "At peak that saving is $\\frac{B^*/2B}{B^*/B + 1 + S/L^*}$, under 10% once "
              f"$B > 4B^*/(1 + S/L^*) = {tex_num(4 * p.b_star / (1 + p.context / p.l_star))}$. "
              f"The paper's serving batch $2B^* = {tex_num(2 * p.b_star)}$ puts the weight "
              "term at 1/2: half a token's compute (dense, peak).</p>")


def math_html(p: DecodePoint) -> str:
    """The math peek: L*, the step's terms, the per-token shares, the knee, the derating."""
    hw, m = p.hw, p.model
    ai_txt, balance = balance_tex(hw, m, p.mode, p.weight_bits, p.b_star)
    knee = ("<p>Knee, the batch whose compute time equals all its memory time (the same "
            "added terms): $2NB/C = W/BW + B\\,S\\,\\mathrm{kv\\_bpt}/BW \\Rightarrow "
            f"B_{{\\text{{knee}}}} = B^*/(1 - S/L^*) = {tex_num(p.knee)}$.</p>"
            if p.knee is not None else
            "<p>S ≥ L*: the KV read alone outlasts the compute, so no batch has compute "
            "time equal to all its memory time (no knee).</p>")
    return (
        balance
        + f"$$L^* = \\frac{{2N}}{{\\mathrm{{AI}}\\cdot \\mathrm{{kv\\_bpt}}}} = "
        f"\\frac{{2 \\times {tex_num(m.block_params_active)}}}{{{ai_txt} \\times "
        f"{tex_num(kv_bytes_per_token(m, p.kv_bits))}}} = {tex_num(p.l_star)}"
        "\\ \\text{tokens}$$"
        "<p>One step of B sequences at context S, terms added (no overlap):</p>"
        + _step_tex(p)
        + (derating_terms_html(hw, m, p.batch, p.context, p.weight_bits, p.kv_bits, p.tp)
           if p.mode == "achievable" else "")
        + _per_token_html(p) + knee
        + f"<p>Achievable / peak step time here: {p.achievable_over_peak:.3g}x (the "
          f"{lw.esc(device_class_of(hw).label)} class's derating, each term above). Source: "
          "<code>labkit.physics.roofline.decode_roofline</code>, <code>critical_batch</code>, "
          "<code>balance_context</code>, <code>knee_batch</code>, "
          "<code>serving_batch</code>, <code>regime_rule</code>.</p>")
