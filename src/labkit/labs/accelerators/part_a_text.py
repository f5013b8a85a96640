"""Lab 2 Part A (transformer): the prose computed from one operating point -- the memory
and serving paragraphs, the regime table and the math peek. Every number is a field of
a :class:`~labkit.plans.roofline.DecodeView` (the plans layer computes; nothing here
re-derives), formatted by :mod:`labkit.core.format`; every equation prints the terms of
its :class:`~labkit.plans.roofline.Equation` and the result computed from them."""

from __future__ import annotations

from labkit import ui as lw
from labkit.core.format import fmt, fmt_count, fmt_pct, fmt_time, format_bytes, tex_num
from labkit.labs.accelerators.base import paper_ms
from labkit.labs.accelerators.derating_text import balance_tex, derating_terms_html
from labkit.labs.accelerators.stack_text import band_math_html
from labkit.labs.common import html_table
from labkit.plans.measured import device_class_label
from labkit.plans.roofline import STALL, DecodeView, Equation


def memory_html(v: DecodeView) -> str:
    """Memory as a performance variable: the KV and weight shares of the step."""
    return (
        "<p><b>Memory is a performance variable, not just capacity:</b> at your settings "
        f"reading the KV cache takes {fmt_time(float(v.point.kv_step_s))} of the "
        f"{fmt_time(v.step_s)} step ({fmt_pct(v.kv_share_of_step)}) and reading the "
        f"weights {fmt_pct(v.weight_share_of_step)}; every byte stored is a byte each step "
        f"moves, so {fmt_count(v.kv_bits)}-bit KV at {v.context_tokens:,} tokens costs time "
        "on every token, not only space.</p>")


def serving_html(v: DecodeView, tpot_slo_s: float | None) -> str:
    """The paper's serving batch 2B* against B* and 4B*, quoted only at the batches that
    fit memory at this context (else at the largest batch that does, said so), and, for
    a track with a TPOT SLO, whether its step meets it."""
    sp = v.serving
    if not v.batching:
        return (f"<p><b>Serving batch:</b> the paper's 2B* = {fmt(sp.serving_batch, sig=4)} "
                "sequences is a server's batch; this device serves one user, so its decode "
                "runs at B = 1. The batch slider shows what batching buys a server, not a "
                "lever this device has.</p>")
    t, steps, fits = sp.per_token_s, sp.step_s, sp.fits
    head = (f"<p><b>Serving batch (paper: B ≈ 2B*, {lw.esc(sp.mode)} roofline):</b> 2B* = "
            f"{fmt(sp.serving_batch, sig=4)} sequences. ")
    if not fits[1]:
        alt = ("not even one sequence fits" if sp.largest_fit is None else
               f"the largest batch the slider offers that fits is B = "
               f"{fmt_count(sp.largest_fit)}, at "
               f"{paper_ms(float(sp.largest_fit_per_token_s or 0.0))} per token (step ÷ B)"
               + _most(v))
        return (head + f"It does not fit memory at {v.context_tokens:,} tokens of context, "
                f"so no time is quoted there: {alt}; the floor no batch goes below is "
                f"{paper_ms(sp.floor_per_token_s)} per token (compute + KV).</p>")
    four = (f" and {paper_ms(t[2])} at 4B* (another {fmt_pct(1 - t[2] / t[1])} less)"
            if fits[2] else "; 4B* does not fit memory here")
    slo = ("" if tpot_slo_s is None else
           f", {'within' if steps[1] <= tpot_slo_s else 'over'} the {fmt_time(tpot_slo_s)} "
           "TPOT SLO")
    return (head + f"Per token (step ÷ B) that is {paper_ms(t[1])}, against {paper_ms(t[0])} "
            f"at B* ({fmt_pct(1 - t[1] / t[0])} less){four}; the floor no batch goes below "
            f"is {paper_ms(sp.floor_per_token_s)} (compute + KV). One step at 2B* takes "
            f"{fmt_time(steps[1])}, the time every sequence waits per token (its TPOT in "
            f"steady decode){slo}.</p>")


def rules_html(v: DecodeView) -> str:
    """The paper's regime rules (section 5.2) as predicates on the computed per-token
    terms: the row the terms put the point in is marked, and each row names only the
    levers this track has (a control on screen whose move is possible, or a later part's
    option)."""
    bal = v.balance
    rows = []
    for r in v.regime_rows:
        levers = "; ".join(r.levers) if r.levers else "none on this track here"
        cells = [r.condition, levers, "◀ your settings" if r.here else ""]
        rows.append([f"<b style='background:#fdebd0'>{lw.esc(c)}</b>" if r.here
                     else lw.esc(c) for c in cells])
    return (f"<div class='labkit-rules'><b>The paper's regime rules (§5.2)</b>, read off "
            f"your step's terms per token (in units of compute): weight fetch "
            f"{fmt(v.weight_share)}, KV read {fmt(v.kv_share)}; your settings put S = "
            f"{v.context_tokens:,} tokens at {fmt(v.context_tokens / bal.l_star)} "
            f"{bal.l_label} and B = {v.batch:,} at {fmt(v.batch / bal.b_star)} {bal.b_label}. "
            "Each row keeps the paper's advice only where this track can act on it."
            + html_table(["regime (per token)", "levers on this track", ""], rows) + "</div>")


def _tex_sum(eq: Equation) -> str:
    return " + ".join(tex_num(x) for x in eq.terms) + f" = {tex_num(eq.result)}"


def _step_tex(v: DecodeView) -> str:
    """The step's terms added, in ms (the terms printed are the result's)."""
    names = " + ".join(f"\\text{{{t.label}}}" for t in v.step_terms)
    return (f"$$t_{{\\text{{step}}}} = {names} = {_tex_sum(v.equations['step'])}"
            "\\ \\text{ms}$$")


def _ratio_digits(num: float, den: float, shown: str) -> tuple[str, str]:
    """``num`` and ``den`` printed with the fewest significant digits (from three) at which
    1 - num/den, from the printed values, rounds to ``shown`` (the saving printed)."""
    for k in range(3, 10):
        a, b = f"{num:.{k}g}", f"{den:.{k}g}"
        if f"{1.0 - float(a) / float(b):.1%}" == shown:
            return a, b
    return f"{num:.10g}", f"{den:.10g}"


def _doubling_html(v: DecodeView) -> str:
    """What doubling the batch does to the printed per-token terms: the same terms at 2B
    (their sum computed from them) and the saving 1 - t(2B)/t(B) they give; quoted as a
    saving only where 2B is a setting that fits (else said to be arithmetic only)."""
    one, two = v.equations["per_token"], v.equations["per_token_2b"]
    o = len(one.terms) > 3
    comm, comm2 = float(v.point.comm_step_s), v.doubled_comm_step_s
    if not o:
        which = "only the weight term halves"
    elif comm > 0:
        which = ("the weight term and the fixed overhead halve, but the TP comm of a step "
                 f"grows with the batch ({fmt_time(comm)} → {fmt_time(comm2)}), so the last "
                 "term falls by less than half")
    else:
        which = "the weight term and the fixed overhead halve"
    saving = 1.0 - two.result / one.result
    s2, s1 = _ratio_digits(two.result, one.result, f"{saving:.1%}")
    if v.doubling_block == "memory":
        where = (f" (arithmetic only: B = {fmt_count(v.doubled_batch)} does not fit memory "
                 "here, so no setting on screen has this saving)")
    elif v.doubling_block == "slider":
        where = f" (arithmetic only: B = {fmt_count(v.doubled_batch)} is past the slider)"
    else:
        where = " here"
    return (f"At 2B the same terms read ${_tex_sum(two)}$: {which}; doubling the batch "
            f"saves $1 - {s2}/{s1}$ = {saving:.1%}"
            f"{where}. ")


def _per_token_html(v: DecodeView) -> str:
    eq = v.equations["per_token"]
    o = len(eq.terms) > 3
    stall, serve = v.equations["stall_batch"], v.equations["serving"]
    return (f"<p>Per token (step ÷ B), in units of one token's compute ($2N/C$ = "
            f"${tex_num(float(v.point.compute_s) * 1e3)}$ ms): "
            f"$t/(2N/C) = {_tex_sum(eq)}$ (weight term, B*/B for a dense model at peak; "
            "compute; KV term, S/L*" + ("; overhead and TP comm" if o else "")
            + "). " + _doubling_html(v)
            + "For a dense model at peak that saving is $\\frac{B^*/2B}{B^*/B + 1 + S/L^*}$, "
              f"under {fmt_pct(STALL)} once $B > 4B^*/(1 + S/L^*)$; with this screen's "
              f"{v.balance.b_label} and {v.balance.l_label}: ${tex_num(stall.terms[0])} / "
              f"{tex_num(stall.terms[1])} = {tex_num(stall.result)}$. "
              f"The paper's serving batch $2B^* = {tex_num(serve.terms[0])} \\times "
              f"{tex_num(serve.terms[1])} = {tex_num(serve.result)}$ puts the weight term "
              "at 1/2: half a token's compute (dense, peak).</p>")


def _knee_html(v: DecodeView) -> str:
    eq = v.equations.get("knee")
    if eq is None:
        return ("<p>S ≥ L*: the KV read alone outlasts the compute, so no batch has "
                "compute time equal to all its memory time (no knee).</p>")
    w, c, k = (tex_num(x) for x in eq.terms)
    return ("<p>Knee, the batch whose compute time equals all its memory time (the same "
            "added terms, one sequence's step without fixed overheads, ms): $B\\,C_1 = W_1 "
            "+ B\\,K_1 \\Rightarrow B_{\\text{knee}} = \\frac{W_1}{C_1 - K_1} = "
            f"\\frac{{{w}}}{{{c} - {k}}} = {tex_num(eq.result)}$ (B*/(1 − S/L*) for a "
            "dense model on one device).</p>")


def _l_star_tex(v: DecodeView, ai_txt: str) -> str:
    eq = v.equations["l_star"]
    kv = v.equations["kv_bpt"].result  # the one KV bytes per token, never derived back
    return (f"$$L^*_{{\\text{{{v.mode}}}}} = \\frac{{2N}}{{\\mathrm{{AI}}\\cdot "
            f"\\mathrm{{kv\\_bpt}}}} = \\frac{{{tex_num(eq.terms[0])}}}{{{ai_txt} \\times "
            f"{tex_num(kv)}}} = {tex_num(eq.result)}\\ \\text{{tokens}}$$")


def math_html(v: DecodeView) -> str:
    """The math peek: B*, L*, the step's terms, the per-token shares, the knee, the
    derating (each printed result is its equation's, computed from the printed terms)."""
    hw = v.hw
    ai_txt, balance = balance_tex(hw, v.mode, v.weight_bits, v.model.is_moe,
                                  v.equations["ai"], v.equations["b_star"])
    return (
        balance + _l_star_tex(v, ai_txt)
        + "<p>One step of B sequences at context S, terms added (no overlap):</p>"
        + _step_tex(v)
        + (derating_terms_html(hw, v.derating_terms) if v.mode == "achievable" else "")
        + _per_token_html(v) + _knee_html(v)
        + f"<p>Achievable / peak step time here: {fmt(v.achievable_over_peak)}x (the "
          f"{lw.esc(device_class_label(hw))} class's derating{_on_stack(v)}, each term "
          "above). Source: "
          "<code>labkit.plans.roofline.decode_view</code> (on "
          "<code>labkit.physics.roofline</code>).</p>"
        + ("" if v.stack is None else
           band_math_html(v.stack, float(v.here["achievable"].step_s) * 1e3, "one step",
                          device_class_label(hw))))


def _on_stack(v: DecodeView) -> str:
    """' on <stack>' when the student named one (its term is in every derated term)."""
    return "" if v.stack is None or not v.stack.named else f" on {lw.esc(v.stack.label)}"


def oom_text(v: DecodeView) -> str:
    """The out-of-memory callout's body."""
    mem = v.memory
    return (f"{v.batch} sequences x {v.context_tokens:,} tokens need "
            f"{format_bytes(float(mem.used_bytes))} per device (weights "
            f"{format_bytes(float(mem.weights_bytes))}, KV {format_bytes(float(mem.kv_bytes))})"
            f" of {format_bytes(mem.capacity_bytes)}. The roofline is only a speed limit; "
            "the point is not reachable" + _largest_here(v))


def _largest_here(v: DecodeView) -> str:
    mem = v.memory
    if float(mem.weights_bytes) > float(mem.capacity_bytes):
        return ": not even the weights fit one device here."
    if v.gain.analytic or v.gain.batch_to is None:
        return ": not even one sequence fits here."
    return (f": the largest batch the slider offers that fits here is B = "
            f"{fmt_count(v.gain.batch_to)}{_most(v)}.")


def _most(v: DecodeView) -> str:
    """', of the N sequences that fit at most' when the slider's batches stop short of
    memory's whole-number limit (one count of what fits, Lab 1's and Exercise A's)."""
    top = v.gain.batch_to if v.serving.largest_fit is None else v.serving.largest_fit
    if v.most_fit is None or top is None or v.most_fit <= top:
        return ""
    return f" (memory holds at most {fmt_count(v.most_fit)} sequences of this context)"
