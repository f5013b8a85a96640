"""The math peek's derating paragraph: what each achievable term adds at the student's point."""

from __future__ import annotations

from labkit import ui as lw
from labkit.core.format import tex_num
from labkit.core.units import bits_to_bytes
from labkit.physics.derating import device_class_of, get_mode
from labkit.physics.roofline import derating_contributions
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model


def derating_terms_html(hw: Hardware, model: Model, batch: int, context: int,
                        weight_bits: int, kv_bits: int, tp: int) -> str:
    """One list item per achievable term with the ms it adds to this step and its source."""
    terms = derating_contributions(hw, model, batch, context, weight_bits, kv_bits, tp)
    if not terms:
        return ""
    items = "".join(
        f"<li>{lw.esc(t.label)}: +${tex_num(t.added_step_s * 1e3)}$ ms"
        + (f" <span style='color:#5d6d7e'>({lw.esc(t.source)})</span>" if t.source else "")
        + "</li>" for t in terms)
    return (f"<p>Achievable = peak + the {lw.esc(device_class_of(hw).label)} class's terms, "
            "each switched on in turn at this point:</p>"
            f"<ul style='font-size:0.9em'>{items}</ul>")


def balance_tex(hw: Hardware, m: Model, mode: str, weight_bits: int,
                b_star: float) -> tuple[str, str]:
    """(AI as TeX text, the machine-balance paragraph + the B* equation) in ``mode``.

    B* = AI b / 2 (x sparsity for MoE) / q, q the share of bandwidth ``weight_bits``
    weights stream at against 16-bit ones (dequantisation; 1 at peak).
    """
    d = get_mode(mode, hw)
    ai = hw.flops() * d.flop_efficiency / (hw.memory_bandwidth * d.bandwidth_efficiency)
    q = d.weight_bandwidth_efficiency(weight_bits) / d.bandwidth_efficiency
    ai_txt = f"{ai:,.1f}".replace(",", "{,}")  # a decimal, so AI x b / 2 shows B* exactly
    text = (
        f"<p>Machine balance ({mode}, {lw.esc(hw.name)}): $\\mathrm{{AI}} = C/W = "
        f"{tex_num(ai)}$ FLOP/byte "
        f"(${tex_num(hw.flops() * d.flop_efficiency)}$ FLOP/s over "
        f"${tex_num(hw.memory_bandwidth * d.bandwidth_efficiency)}$ B/s).</p>"
        f"$$B^* = \\frac{{\\mathrm{{AI}}\\,b}}{{2}} = \\frac{{{ai_txt} \\times "
        f"{bits_to_bytes(weight_bits):g}}}{{2}}"
        + (f" \\times {m.moe_sparsity:.3g}" if m.is_moe else "")
        + (f" \\div {q:.3g}" if q != 1.0 else "")
        + f" = {tex_num(b_star)}\\ \\text{{sequences}}$$"
        + (f"<p>(÷ {q:.3g}: {weight_bits}-bit weights stream at {q:.3g} of the bandwidth "
           "16-bit ones reach, the dequantisation cost.)</p>" if q != 1.0 else ""))
    return ai_txt, text
