"""Lab 2 Part C, fleet scenario: the paper's sentences and tables, computed at the student's
settings -- the PP and DP stop rules, the experts and all-to-all of an MoE model, the TTFT
check and disaggregated prefill, the deployment tiers and the SLO classes.

Every function here takes numbers already computed by the physics and returns HTML; each
conditional word comes from a predicate over those numbers (see the predicates named in
each docstring), so the part and its tests read the same ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from labkit import ui as lw
from labkit.core.format import counted, fmt_count, fmt_pct, fmt_time, format_bytes, tex_num
from labkit.labs.common import html_table
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model
from labkit.scenarios.fleet.plan.sizing import (
    AXES,
    PP_BUBBLE_STOP,
    SLO_TARGETS,
    ExpertShare,
    LayoutPrefill,
    ParallelConfig,
    StepTerms,
    StopCriteria,
    TierRow,
    layout_label,
    tier_for_context,
)

__all__ = ["AXES", "comm_table", "disagg_sentence", "dp_sentence", "experts_sentence",
           "layout_label", "math_html", "memory_gb", "model_label", "pp_sentence",
           "slo_table", "tiers_table", "time_ms", "ttft_sentence"]

HIGHLIGHT = "background:#fdf2d0;font-weight:700"
SLO_NAMES = {"voice": "Voice / real-time", "chat": "Interactive chat", "batch": "Batch / offline"}


def model_label(m: Model, own: bool) -> str:
    """What the model control shows: name, dense or its experts, MLA, the track's own."""
    kind = (f"MoE: {m.experts_total} experts, {m.experts_active} active per token"
            + (", MLA" if m.uses_mla else "") if m.is_moe else "dense")
    return f"{m.name} ({kind}{', the track’s' if own else ''})"


def link_name(link: str, hw: Hardware) -> str:
    """A link code of :data:`labkit.physics.parallelism.LINKS` as the student reads it."""
    if link == "interconnect":
        return (f"the fast domain ({hw.domain_size} devices, "
                f"{format_bytes(hw.interconnect_bandwidth)}/s)")
    if link == "scaleout":
        return f"the scale-out network ({format_bytes(hw.scaleout_bandwidth)}/s)"
    return "no link"


# -- stop rules -------------------------------------------------------------------------------

def pp_sentence(c: StopCriteria) -> str:
    """The PP rule at one layout; the verdict is ``c.pp_stop`` (bubble > the stop line)."""
    line = fmt_pct(PP_BUBBLE_STOP)
    if c.pp == 1:
        return ("PP1: no pipeline, no bubble. The rule for later: stop adding PP once a stage "
                f"idles more than {line} of a step.")
    verdict = (f"above the {line} line: stop adding PP" if c.pp_stop
               else f"within {line}: PP still pays")
    return (f"PP{c.pp}: {counted(c.micro_batches, 'micro-batch', 'micro-batches')} in "
            f"flight for {c.pp} stages; each "
            f"stage works {c.micro_batches} x {fmt_time(c.stage_s)} of a "
            f"{fmt_time(c.token_s)} step (hand-offs {fmt_time(c.handoff_s)}), so it "
            f"idles {c.bubble:.1%} of the time, {verdict}.")


TERM_NAMES = {"weights": "the weight read", "compute": "compute", "kv": "the KV read",
              "overhead": "fixed overhead and TP communication"}


def terms_clause(t: StepTerms) -> str:
    """The step's terms, largest named (``t.largest``)."""
    return (f"its step's largest term is {TERM_NAMES[t.largest]} (weights "
            f"{fmt_time(t.weight_s)}, compute {fmt_time(t.compute_s)}, KV "
            f"{fmt_time(t.kv_s)}, overhead {fmt_time(t.overhead_s)}"
            + (f" (fixed {fmt_time(t.fixed_s)} + TP comm {fmt_time(t.comm_s)})"
               if t.comm_s > 0 else "") + ")")


def dp_sentence(c: StopCriteria, t: StepTerms | None = None) -> str:
    """The DP rule at one layout; the verdict is ``c.below_b_star`` (and ``c.dp_stop``);
    what the step is bound by is ``t.largest`` (the largest computed term)."""
    head = (f"DP{c.dp}: each replica serves {counted(c.batch_per_replica, 'sequence')} against the "
            f"critical batch B* ≈ {c.b_star:,.0f} ({t.mode if t else 'achievable'} mode)")
    terms = "" if t is None else "; " + terms_clause(t)
    if c.below_b_star:
        if c.dp == 1:
            return (head + ": already below it with one replica, so each step re-reads every "
                    "weight for few sequences and DP can only make that worse" + terms + ".")
        return (head + ": below it, so each extra replica re-reads every weight for fewer "
                "tokens; stop adding DP (past the critical batch)" + terms + ".")
    if t is None or t.largest == "compute":
        return (head + ": at or above it, and compute is the largest term of the step, so "
                "it is compute-efficient; more replicas add throughput without wasting "
                "weight reads" + terms + ".")
    if t.largest == "kv":
        knee = ("no batch reaches it: S is past L*, so the KV read grows with the batch "
                "at least as fast as the compute" if t.knee_batch == float("inf") else
                f"compute would catch up only at B*/(1 - S/L*) ≈ {t.knee_batch:,.0f} "
                "sequences")
        return (head + ": at or above it, the weight read is amortised, but the step is "
                f"KV-bound, not compute-efficient: {terms_clause(t)}; L* ≈ "
                f"{t.l_star:,.0f} tokens ({t.mode} mode), and {knee}.")
    return (head + ": at or above it, yet the step is not compute-efficient: "
            + terms_clause(t) + ".")


# -- MoE ----------------------------------------------------------------------------------------

def experts_sentence(c: ParallelConfig, m: Model, share: ExpertShare, hw: Hardware) -> str:
    """Expert memory per device and the all-to-all of one layout of an MoE model."""
    split = (f", each split {c.tp // c.ep} ways by expert TP" if c.ep < c.tp else "")
    if c.ep == 1:
        a2a = ("With EP1 there is no all-to-all: every device of a TP group holds a slice of "
               f"every expert (split {c.tp} ways), so routing stays local.")
    else:
        a2a = (f"EP{c.ep}: each token's hidden state goes to its {m.experts_active} experts "
               f"and back, {format_bytes(c.ep_alltoall_bytes)} per token per device over "
               f"{link_name(c.ep_link, hw)}, {fmt_time(c.ep_alltoall_s)} per token.")
    return (f"Each device holds {share.experts_per_device:g} of the {share.experts_total} "
            f"routed experts in each of its {share.moe_layers} MoE layers{split}: "
            f"{format_bytes(share.bytes)} of expert weights of its "
            f"{format_bytes(c.weights_bytes)}. " + a2a)


# -- TTFT and disaggregated prefill -------------------------------------------------------------

def ttft_sentence(p: LayoutPrefill, tp: int, cp: int) -> str:
    """The TTFT number on the student's TP x CP (predicate: ``p.ttft_missed``)."""
    limit = "" if p.ttft_slo_s is None else (
        f" {'>' if p.ttft_missed else '≤'} the {fmt_time(p.ttft_slo_s)} TTFT target")
    return (f"Prefill of a {p.prompt_tokens:,}-token prompt on TP{tp} x CP{cp} takes "
            f"{fmt_time(p.ttft_s)}{limit}.")


def disagg_sentence(p: LayoutPrefill) -> str:
    """What prefill sharing the decode replica does to TPOT (the mean time per output token
    after the first, per request) and to the worst inter-token gap; verdicts:
    ``p.colocated_missed``, ``p.disaggregate``."""
    b1, l1 = p.stalls_per_request, max(1, p.output_tokens - 1)
    mean = (f"Sharing the decode replica, each of the {fmt_count(b1)} slots of a full batch "
            f"is refilled about once during a request's {fmt_count(l1)} tokens after the "
            f"first, and each refill's prefill stalls the step: mean TPOT = "
            f"{fmt_time(p.step_s)} + {fmt_count(b1)} x {fmt_time(p.ttft_s)} / "
            f"{fmt_count(l1)} = <b>{fmt_time(p.tpot_colocated_s)}</b>, "
            f"{'over' if p.colocated_missed else 'within'} the "
            f"{fmt_time(p.tpot_slo_s)} TPOT budget (a full-batch bound; Lab 1's release "
            "review measures the same per-request mean by simulating the fleet at its "
            "load). ")
    gap = (f"The worst inter-token gap is one stalled step, {fmt_time(p.worst_gap_s)} "
           f"({p.worst_gap_s / p.tpot_slo_s:,.1f}x the budget): a stall, not the TPOT; it "
           "threatens the TPOT budget only through the mean. ")
    if p.disaggregate:
        verdict = (f"Disaggregated (prefill in its own pool, the KV cache handed to decode) "
                   f"the mean is the step alone, {fmt_time(p.tpot_disaggregated_s)}: within "
                   "budget. Chunked prefill spreads each stall over several steps, shrinking "
                   "the worst gap but not the mean.")
    elif p.colocated_missed:
        verdict = (f"Disaggregating does not fix it: the step alone, "
                   f"{fmt_time(p.tpot_disaggregated_s)}, already misses the budget.")
    else:
        verdict = "Prefill can share the decode replica."
    return mean + gap + verdict


# -- reveal tables ------------------------------------------------------------------------------

def _row_cells(r: TierRow) -> list[str]:
    c = r.config
    ctx = f"{r.context:,}" + (" (the model's limit)" if r.capped else "")
    mem = (lw.esc(r.why) if c is None else
           f"{format_bytes(c.used_bytes)} of {format_bytes(c.capacity_bytes)}"
           + ("" if c.fits else " ✖ OOM"))
    # a layout that does not fit memory runs no step: no time is quoted for it
    tpot = fmt_time(c.per_token_latency_s) if r.fits and c is not None else "—"
    ttft = fmt_time(r.ttft_s) if r.fits else "—"
    met = SLO_NAMES.get(r.met, "none (does not fit)")
    yours = r.label == "yours"
    shape = (layout_label(c.degrees) if yours and c is not None
             else f"CP{r.cp} x TP{r.tp}")
    return ["Yours" if yours else r.label, shape, str(r.devices), ctx, f"{r.batch:,}", mem, tpot,
            ttft, met]


def _route(rows: Sequence[TierRow], context: int) -> str:
    """Which tier the context routes to, and -- when that tier's template does not fit --
    that it is the template (its full context and batch) that does not, beside your row."""
    tier = tier_for_context(context)
    if tier is None:
        return f"Your {context:,}-token context is beyond every tier."
    row = next((r for r in rows if r.label == tier.name), None)
    yours = next((r for r in rows if r.label == "yours"), None)
    out = (f"Your {context:,}-token context routes to the {tier.name} tier "
           f"(contexts up to {tier.max_context:,})")
    if row is None or row.fits:
        return out + "."
    out += (f"; its template, {row.batch:,} sequences at its full {row.context:,} tokens, "
            "does not fit this device at these precisions")
    if yours is not None and yours.fits:
        out += (f", while your layout, {yours.batch:,} sequences at {yours.context:,} "
                "tokens, does")
    return out + "."


def tiers_table(rows: Sequence[TierRow], hw: Hardware, context: int,
                memory_basis: str) -> str:
    """The paper's tiers on this device and model, the student's row highlighted, and which
    tier the student's context routes to (:func:`labkit.plans.scenarios.tiers.tier_for_context`)."""
    body = []
    for r in rows:
        cells = _row_cells(r)
        if r.label == "yours":
            cells = [f"<span style='{HIGHLIGHT}'>{x}</span>" for x in cells]
        body.append(cells)
    route = _route(rows, context)
    return ("<div><b>Deployment tiers</b> (paper §5.2: one base model, a pool per "
            "context range; TP at the KV heads, CP growing with context, B shrinking), priced "
            f"on {lw.esc(hw.name)}, memory {lw.esc(memory_basis)}. {route}</div>"
            + html_table(["tier", "layout", "devices", "context (tokens)", "batch",
                          "memory per device", "TPOT (decode step)", "TTFT",
                          "tightest SLO class met"],
                         body))


def slo_table(track_class: str, ttft_s: float, tpot_s: float | None) -> str:
    """The paper's SLO classes, the track's row highlighted, with the student's TTFT and
    TPOT checked against each (pass: both within the class's upper bounds)."""
    rows = []
    for name, t in SLO_TARGETS.items():
        ttft = "seconds to minutes" if t.ttft_s is None else (
            f"{fmt_time(t.ttft_s[0])}-{fmt_time(t.ttft_s[1])}")
        tpot = "none" if t.tpot_s is None else (
            f"{fmt_time(t.tpot_s[0])}-{fmt_time(t.tpot_s[1])}")
        if t.ttft_s is None or t.tpot_s is None:
            ok = "✔ (no latency bound)"
        elif tpot_s is None:
            ok = "—"
        else:
            ok = "✔" if ttft_s <= t.ttft_s[1] and tpot_s <= t.tpot_s[1] else "✖"
        cells = [SLO_NAMES.get(name, name), ttft, tpot, ok]
        if name == track_class:
            cells = [f"<span style='{HIGHLIGHT}'>{x}</span>" for x in cells]
        rows.append(cells)
    mine = "" if tpot_s is None else f" decode step {fmt_time(tpot_s)},"
    return ("<div><b>SLO targets</b> (paper §5.2; this track's class highlighted). "
            f"Your layout:{mine} TTFT {fmt_time(ttft_s)} (the paper's classes judge the "
            "decode step and the bare prefill; prefill stalls are the callouts' and Part "
            "D's).</div>"
            + html_table(["workload", "TTFT", "TPOT", "yours meets it (decode step)"], rows))


# -- helpers of the part's charts, table and math peek --------------------------------------------

def memory_gb(c: ParallelConfig | None) -> list[float]:
    """Weights, KV and transient GB on a layout's binding device (zeros: no layout)."""
    return [0.0, 0.0, 0.0] if c is None else [c.weights_bytes / 1e9, c.kv_bytes / 1e9,
                                              c.transient_bytes / 1e9]


def time_ms(c: ParallelConfig | None) -> list[float]:
    """Roofline and each axis's communication in the decode step, ms (zeros: no layout)."""
    if c is None:
        return [0.0] * 5
    return [c.roofline_s * 1e3, c.tp_allreduce_s * 1e3, c.cp_ring_s * 1e3,
            c.pp_handoff_s * 1e3, c.ep_alltoall_s * 1e3]


def comm_table(c: ParallelConfig, hw: Hardware) -> str:
    """What each axis sends per generated token, per device, on which link, and the time it
    adds to the decode step."""
    rows = []
    for ax_name, deg_i, nbytes, link, secs in (
            ("TP", c.tp, c.tp_allreduce_bytes, c.tp_link, c.tp_allreduce_s),
            ("CP", c.cp, c.cp_ring_bytes, c.cp_link, c.cp_ring_s),
            ("PP", c.pp, c.pp_handoff_bytes, c.pp_link, c.pp_handoff_s),
            ("EP", c.ep, c.ep_alltoall_bytes, c.ep_link, c.ep_alltoall_s)):
        rows.append([ax_name, str(deg_i), format_bytes(nbytes), link_name(link, hw),
                     fmt_time(secs)])
    rows.append(["DP", str(c.dp), format_bytes(0.0), link_name("none", hw),
                 f"{fmt_time(0.0)} (independent replicas)"])
    return ("<div><b>Communication per generated token, per device</b> "
            "(each axis is charged on the link it crosses)</div>"
            + html_table(["axis", "degree", "bytes/token", "link", "time added to the step"],
                         rows))


def math_html(c: ParallelConfig, m: Model, crit: StopCriteria | None,
              terms: StepTerms | None = None) -> str:
    """The math peek of one layout: each axis's bytes, the decode step, per generated token
    (step / B), the stop rules; every printed result re-derives from the terms beside it."""
    ep = ("" if not m.is_moe else
          f"$$\\text{{EP: }} 2 L_{{moe}} \\cdot 2h \\cdot k \\frac{{e-1}}{{e}} = "
          f"{tex_num(c.ep_alltoall_bytes)}\\ \\text{{B}}$$")
    bubble = ("" if crit is None else
              "<p>Pipeline bubble (idle share of a stage) and the DP rule:</p>"
              f"$$1 - \\frac{{n_{{mb}}\\, t_{{stage}}}}{{t_{{step}}}} = 1 - "
              f"\\frac{{{crit.micro_batches} \\times {tex_num(crit.stage_s * 1e3)}}}"
              f"{{{tex_num(crit.token_s * 1e3)}}} = {tex_num(crit.bubble * 100)}\\%"
              f"\\qquad B_{{rep}} = {crit.batch_per_replica} \\text{{ vs }} B^*_{{\\text{{"
              f"{terms.mode if terms else 'achievable'}}}}} = {tex_num(crit.b_star)}$$")
    step_ms = c.per_token_latency_s * 1e3
    per_tok = step_ms / max(1, c.batch_per_replica)
    return (
        "<p>Per-token communication per device (bf16 activations):</p>"
        "$$\\text{TP: } 2 L_s \\cdot 2h \\cdot \\frac{2(t-1)}{t} = "
        f"{tex_num(c.tp_allreduce_bytes)}\\ \\text{{B}} \\qquad "
        "\\text{PP: } 2h = " + f"{tex_num(c.pp_handoff_bytes)}\\ \\text{{B}}$$"
        f"$$\\text{{CP: }} L_s \\frac{{2(c-1)}}{{c}} \\frac{{q}}{{t}} (2 d_v + 8) = "
        f"{tex_num(c.cp_ring_bytes)}\\ \\text{{B}}$$" + ep +
        "<p>Each collective costs messages x latency + bytes / bandwidth on the link "
        "its group spans (fast domain or scale-out); they add to the decode step, in which "
        "every sequence of the replica gains one token:</p>"
        f"$$t_{{\\text{{step}}}} = t_{{\\text{{roofline}}}} + t_{{\\text{{TP}}}} + "
        f"t_{{\\text{{CP}}}} + t_{{\\text{{EP}}}} + t_{{\\text{{PP}}}} = "
        f"{tex_num(c.roofline_s * 1e3)} + {tex_num(c.tp_allreduce_s * 1e3)} + "
        f"{tex_num(c.cp_ring_s * 1e3)} + {tex_num(c.ep_alltoall_s * 1e3)} + "
        f"{tex_num(c.pp_handoff_s * 1e3)} = {tex_num(step_ms)}"
        "\\ \\text{ms}$$"
        f"$$\\text{{per token}} = \\frac{{t_{{\\text{{step}}}}}}{{B_{{rep}}}} = "
        f"\\frac{{{tex_num(step_ms)}}}{{{c.batch_per_replica}}} = {tex_num(per_tok)}"
        "\\ \\text{ms}$$"
        + bubble + "<p>Source: <code>labkit.scenarios.fleet.plan.sizing.FleetLayouts</code> "
        "(<code>labkit.physics.parallelism</code>: <code>enumerate_configs</code>, "
        "<code>search</code>, achievable roofline, and <code>stop_criteria</code>).</p>")
