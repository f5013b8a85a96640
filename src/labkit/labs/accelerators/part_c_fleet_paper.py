"""Lab 2 Part C, fleet scenario: the paper's sentences and tables, computed at the student's
settings -- the PP and DP stop rules, the experts and all-to-all of an MoE model, the TTFT
check and disaggregated prefill, the deployment tiers and the SLO classes.

Every function here takes numbers already computed by the physics and returns HTML; each
conditional word comes from a predicate over those numbers (see the predicates named in
each docstring), so the part and its tests read the same ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from labkit import ui as lw
from labkit.core.format import fmt_time, format_bytes, tex_num
from labkit.labs.common import html_table
from labkit.physics.capacity import SLO_TARGETS
from labkit.physics.parallelism import PP_BUBBLE_STOP, ExpertShare, ParallelConfig, StopCriteria
from labkit.plans.scenarios.tiers import TierRow, tier_for_context
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model

AXES = ("tp", "cp", "pp", "dp", "ep")
HIGHLIGHT = "background:#fdf2d0;font-weight:700"
SLO_NAMES = {"voice": "Voice / real-time", "chat": "Interactive chat", "batch": "Batch / offline"}


def layout_label(degrees: Sequence[int]) -> str:
    """'TP4', 'TP2 x PP2', 'TP8 x DP4', '1 device' for (tp, cp, pp, dp, ep)."""
    parts = [f"{a.upper()}{d}" for a, d in zip(AXES, degrees, strict=True) if d > 1]
    return " x ".join(parts) if parts else "1 device"


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
    """The PP rule at one layout; the verdict is ``c.pp_stop`` (bubble > 10 %)."""
    if c.pp == 1:
        return ("PP1: no pipeline, no bubble. The rule for later: stop adding PP once a stage "
                f"idles more than {PP_BUBBLE_STOP:.0%} of a token's cycle.")
    verdict = ("above the 10% line: stop adding PP" if c.pp_stop
               else f"within {PP_BUBBLE_STOP:.0%}: PP still pays")
    return (f"PP{c.pp}: {c.micro_batches} micro-batch(es) in flight for {c.pp} stages; each "
            f"stage works {c.micro_batches} x {fmt_time(c.stage_s)} of a "
            f"{fmt_time(c.token_s)} token cycle (hand-offs {fmt_time(c.handoff_s)}), so it "
            f"idles {c.bubble:.1%} of the time, {verdict}.")


def dp_sentence(c: StopCriteria) -> str:
    """The DP rule at one layout; the verdict is ``c.below_b_star`` (and ``c.dp_stop``)."""
    head = (f"DP{c.dp}: each replica serves {c.batch_per_replica:,} sequence(s) against the "
            f"critical batch B* ≈ {c.b_star:,.0f}")
    if not c.below_b_star:
        return (head + ": at or above it, each replica's step is compute-efficient; more "
                "replicas add throughput without wasting weight reads.")
    if c.dp == 1:
        return (head + ": already below it with one replica, so every step is weight-bound "
                "and DP can only make that worse.")
    return (head + ": below it, so each extra replica re-reads every weight for fewer tokens; "
            "stop adding DP (past the critical batch).")


# -- MoE ----------------------------------------------------------------------------------------

def experts_sentence(c: ParallelConfig, m: Model, share: ExpertShare, hw: Hardware) -> str:
    """Expert memory per device and the all-to-all of one layout of an MoE model."""
    split = (f", each split {c.tp // c.ep} ways by expert TP" if c.ep < c.tp else "")
    if c.ep == 1:
        a2a = (f"With EP1 there is no all-to-all: every device of a TP group holds a 1/{c.tp} "
               "slice of every expert, so routing stays local.")
    else:
        a2a = (f"EP{c.ep}: each token's hidden state goes to its {m.experts_active} experts "
               f"and back, {format_bytes(c.ep_alltoall_bytes)} per token per device over "
               f"{link_name(c.ep_link, hw)}, {fmt_time(c.ep_alltoall_s)} per token.")
    return (f"Each device holds {share.experts_per_device:g} of the {share.experts_total} "
            f"routed experts in each of its {share.moe_layers} MoE layers{split}: "
            f"{format_bytes(share.bytes)} of expert weights of its "
            f"{format_bytes(c.weights_bytes)}. " + a2a)


# -- TTFT and disaggregated prefill -------------------------------------------------------------

@dataclass(frozen=True)
class Prefill:
    """The TTFT check of one layout: ``ttft_s`` of ``prompt_tokens`` against the track's
    ``ttft_slo_s``; ``stall`` = ttft / TPOT budget (a colocated prefill stalls every decoding
    sequence for that long; ``disaggregate`` when it exceeds one TPOT budget)."""

    prompt_tokens: int
    ttft_s: float
    ttft_slo_s: float | None
    tpot_slo_s: float

    @property
    def ttft_missed(self) -> bool:
        return self.ttft_slo_s is not None and self.ttft_s > self.ttft_slo_s

    @property
    def stall(self) -> float:
        return self.ttft_s / self.tpot_slo_s

    @property
    def disaggregate(self) -> bool:
        return self.stall > 1.0


def ttft_sentence(p: Prefill, tp: int, cp: int) -> str:
    """The TTFT number on the student's TP x CP (predicate: ``p.ttft_missed``)."""
    limit = "" if p.ttft_slo_s is None else (
        f" {'>' if p.ttft_missed else '≤'} the {fmt_time(p.ttft_slo_s)} TTFT target")
    return (f"Prefill of a {p.prompt_tokens:,}-token prompt on TP{tp} x CP{cp} takes "
            f"{fmt_time(p.ttft_s)}{limit}.")


def disagg_sentence(p: Prefill) -> str:
    """Disaggregated prefill (predicate: ``p.disaggregate``, stall > one TPOT budget)."""
    if p.disaggregate:
        return (f"Run inside the decode replica, that prefill would stall every decoding "
                f"sequence for {fmt_time(p.ttft_s)}, {p.stall:,.1f}x the "
                f"{fmt_time(p.tpot_slo_s)} TPOT budget: give prefill its own pool "
                "(disaggregated prefill) and hand the KV cache to the decode pool.")
    return (f"A whole prefill ({fmt_time(p.ttft_s)}) fits inside one "
            f"{fmt_time(p.tpot_slo_s)} TPOT budget: prefill can share the decode replica.")


# -- reveal tables ------------------------------------------------------------------------------

def _row_cells(r: TierRow, hw: Hardware) -> list[str]:
    c = r.config
    ctx = f"{r.context:,}" + (" (the model's limit)" if r.capped else "")
    mem = (lw.esc(r.why) if c is None else
           f"{format_bytes(c.used_bytes)} of {format_bytes(hw.usable_memory_bytes)}"
           + ("" if c.fits else " ✖ OOM"))
    tpot = "—" if c is None else fmt_time(c.per_token_latency_s)
    met = SLO_NAMES.get(r.met, "none (does not fit)")
    yours = r.label == "yours"
    shape = (layout_label(c.degrees) if yours and c is not None
             else f"CP{r.cp} x TP{r.tp}")
    return ["Yours" if yours else r.label, shape, str(r.devices), ctx, f"{r.batch:,}", mem, tpot,
            fmt_time(r.ttft_s), met]


def tiers_table(rows: Sequence[TierRow], hw: Hardware, context: int) -> str:
    """The paper's tiers on this device and model, the student's row highlighted, and which
    tier the student's context routes to (:func:`labkit.plans.scenarios.tiers.tier_for_context`)."""
    body = []
    for r in rows:
        cells = _row_cells(r, hw)
        if r.label == "yours":
            cells = [f"<span style='{HIGHLIGHT}'>{x}</span>" for x in cells]
        body.append(cells)
    tier = tier_for_context(context)
    route = (f"Your {context:,}-token context routes to the {tier.name} tier "
             f"(contexts up to {tier.max_context:,})." if tier is not None else
             f"Your {context:,}-token context is beyond every tier.")
    return ("<div><b>Deployment tiers</b> (paper section 5.2: one base model, a pool per "
            "context range; TP at the KV heads, CP growing with context, B shrinking), priced "
            f"on {lw.esc(hw.name)}. {route}</div>"
            + html_table(["tier", "layout", "devices", "context (tokens)", "batch",
                          "memory per device", "TPOT", "TTFT", "tightest SLO class met"],
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
    mine = "" if tpot_s is None else f" TPOT {fmt_time(tpot_s)},"
    return ("<div><b>SLO targets</b> (paper section 5.2; this track's class highlighted). "
            f"Your layout:{mine} TTFT {fmt_time(ttft_s)}.</div>"
            + html_table(["workload", "TTFT", "TPOT", "yours meets it"], rows))


# -- helpers of the part's charts, table and math peek --------------------------------------------

def memory_gb(c: ParallelConfig | None) -> list[float]:
    """Weights, KV and transient GB on a layout's binding device (zeros: no layout)."""
    return [0.0, 0.0, 0.0] if c is None else [c.weights_bytes / 1e9, c.kv_bytes / 1e9,
                                              c.transient_bytes / 1e9]


def time_ms(c: ParallelConfig | None) -> list[float]:
    """Roofline and each axis's communication, ms per token (zeros: no layout)."""
    if c is None:
        return [0.0] * 5
    return [c.roofline_s * 1e3, c.tp_allreduce_s * 1e3, c.cp_ring_s * 1e3,
            c.pp_handoff_s * 1e3, c.ep_alltoall_s * 1e3]


def comm_table(c: ParallelConfig, hw: Hardware) -> str:
    """What each axis sends per generated token, per device, and on which link."""
    rows = []
    for ax_name, deg_i, nbytes, link, secs in (
            ("TP", c.tp, c.tp_allreduce_bytes, c.tp_link, c.tp_allreduce_s),
            ("CP", c.cp, c.cp_ring_bytes, c.cp_link, c.cp_ring_s),
            ("PP", c.pp, c.pp_handoff_bytes, c.pp_link, c.pp_handoff_s),
            ("EP", c.ep, c.ep_alltoall_bytes, c.ep_link, c.ep_alltoall_s)):
        rows.append([ax_name, str(deg_i), format_bytes(nbytes), link_name(link, hw),
                     fmt_time(secs)])
    rows.append(["DP", str(c.dp), "0 B", link_name("none", hw),
                 "0 (independent replicas)"])
    return ("<div><b>Communication per generated token, per device</b> "
            "(each axis is charged on the link it crosses)</div>"
            + html_table(["axis", "degree", "bytes/token", "link", "time/token"], rows))


def math_html(c: ParallelConfig, m: Model, crit: StopCriteria | None) -> str:
    """The math peek of one layout: each axis's bytes, the token time, the stop rules."""
    ep = ("" if not m.is_moe else
          f"$$\\text{{EP: }} 2 L_{{moe}} \\cdot 2h \\cdot k \\frac{{e-1}}{{e}} = "
          f"{tex_num(c.ep_alltoall_bytes)}\\ \\text{{B}}$$")
    bubble = ("" if crit is None else
              "<p>Pipeline bubble (idle share of a stage) and the DP rule:</p>"
              f"$$1 - \\frac{{n_{{mb}}\\, t_{{stage}}}}{{t_{{token}}}} = 1 - "
              f"\\frac{{{crit.micro_batches} \\times {tex_num(crit.stage_s * 1e3)}}}"
              f"{{{tex_num(crit.token_s * 1e3)}}} = {tex_num(crit.bubble * 100)}\\%"
              f"\\qquad B_{{rep}} = {crit.batch_per_replica} \\text{{ vs }} B^* = "
              f"{tex_num(crit.b_star)}$$")
    return (
        "<p>Per-token communication per device (bf16 activations):</p>"
        "$$\\text{TP: } 2 L_s \\cdot 2h \\cdot \\frac{2(t-1)}{t} = "
        f"{tex_num(c.tp_allreduce_bytes)}\\ \\text{{B}} \\qquad "
        "\\text{PP: } 2h = " + f"{tex_num(c.pp_handoff_bytes)}\\ \\text{{B}}$$"
        f"$$\\text{{CP: }} L_s \\frac{{2(c-1)}}{{c}} \\frac{{q}}{{t}} (2 d_v + 8) = "
        f"{tex_num(c.cp_ring_bytes)}\\ \\text{{B}}$$" + ep +
        "<p>Each collective costs messages x latency + bytes / bandwidth on the link "
        "its group spans (fast domain or scale-out):</p>"
        f"$$t_{{\\text{{token}}}} = t_{{\\text{{roofline}}}} + t_{{\\text{{TP}}}} + "
        f"t_{{\\text{{CP}}}} + t_{{\\text{{EP}}}} + t_{{\\text{{PP}}}} = "
        f"{tex_num(c.roofline_s * 1e3)} + {tex_num(c.tp_allreduce_s * 1e3)} + "
        f"{tex_num(c.cp_ring_s * 1e3)} + {tex_num(c.ep_alltoall_s * 1e3)} + "
        f"{tex_num(c.pp_handoff_s * 1e3)} = {tex_num(c.per_token_latency_s * 1e3)}"
        "\\ \\text{ms}$$" + bubble + "<p>Source: <code>labkit.physics.parallelism."
        "enumerate_configs</code>, <code>search</code> (achievable roofline) and "
        "<code>stop_criteria</code>.</p>")
