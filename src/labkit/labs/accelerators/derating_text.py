"""The math peek's derating paragraph and machine-balance equation, printed from the
plans' results (:mod:`labkit.plans.roofline`): each printed result is the one its
:class:`~labkit.plans.roofline.Equation` computed from the printed terms."""

from __future__ import annotations

from collections.abc import Sequence

from labkit import ui as lw
from labkit.core.format import fmt, fmt_count, tex_num
from labkit.plans.measured import device_class_label
from labkit.plans.roofline import DeratingTerm, Equation
from labkit.registries.hardware import Hardware


def derating_terms_html(hw: Hardware, terms: Sequence[DeratingTerm]) -> str:
    """One list item per achievable term with the ms it adds to this step and its source."""
    if not terms:
        return ""
    items = "".join(
        f"<li>{lw.esc(t.label)}: +${tex_num(t.added_step_s * 1e3)}$ ms"
        + (f" <span style='color:#5d6d7e'>({lw.esc(t.source)})</span>" if t.source else "")
        + "</li>" for t in terms)
    return (f"<p>Achievable = peak + the {lw.esc(device_class_label(hw))} class's terms, "
            "each switched on in turn at this point:</p>"
            f"<ul style='font-size:0.9em'>{items}</ul>")


def balance_tex(hw: Hardware, mode: str, weight_bits: int, is_moe: bool, ai: Equation,
                b_star: Equation) -> tuple[str, str]:
    """(AI as TeX text, the machine-balance paragraph + the B* equation) in ``mode``.

    ``ai``: C / W (terms: FLOP/s, B/s); ``b_star``: AI x b x 1/2 x sparsity x 1/q (q the
    share of bandwidth ``weight_bits`` weights stream at against 16-bit ones).
    """
    ai_txt = f"{ai.result:,.1f}".replace(",", "{,}")  # a decimal, so AI x b / 2 shows B*
    _, b, _, sparsity, inv_q = b_star.terms
    q = 1.0 / inv_q
    text = (
        f"<p>Machine balance ({mode}, {lw.esc(hw.name)}): $\\mathrm{{AI}} = C/W = "
        f"{tex_num(ai.result)}$ FLOP/byte "
        f"(${tex_num(ai.terms[0])}$ FLOP/s over ${tex_num(ai.terms[1])}$ B/s).</p>"
        f"$$B^*_{{\\text{{{mode}}}}} = \\frac{{\\mathrm{{AI}}\\,b}}{{2}} = "
        f"\\frac{{{ai_txt} \\times {b:g}}}{{2}}"
        + (f" \\times {sparsity:.3g}" if is_moe else "")
        + (f" \\div {q:.3g}" if q != 1.0 else "")
        + f" = {tex_num(b_star.result)}\\ \\text{{sequences}}$$"
        + (f"<p>(÷ {fmt(q)}: {fmt_count(weight_bits)}-bit weights stream at {fmt(q)} of the "
           "bandwidth the KV read reaches, the dequantisation cost.)</p>"
           if q != 1.0 else ""))
    return ai_txt, text
