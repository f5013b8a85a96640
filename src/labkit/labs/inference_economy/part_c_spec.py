"""Lab 1 Part C's declarative text: questions, options (the checkpoint's misconceptions
named) and prose templates over a computed
:class:`~labkit.plans.workload.PolicyComparison`."""

from __future__ import annotations

from labkit import ui as lw
from labkit.core.format import counted, fmt, fmt_num, fmt_time
from labkit.labs.common import CheckSpec, Spec
from labkit.labs.inference_economy.base import event_noun
from labkit.plans.workload import (
    POLICIES,
    SIMPLICITY_MARGIN,
    PolicyComparison,
    PolicyResult,
    policy_label,
)
from labkit.tracks import Track

MISCONCEPTIONS: dict[str, frozenset[str]] = {
    "prediction": frozenset(),
    "checkpoint": frozenset({"always_continuous", "never", "max_batch"}),
}
"""Option values whose label states a misconception (never the computed answer)."""


def metric_name(tr: Track) -> str:
    """``p99 TPOT`` / ``p99 latency``: the SLO-governed metric. TPOT is each request's mean
    time per output token after the first, (e2e - TTFT) / (L - 1)."""
    q = ("max (over the simulated stream)" if tr.slo_quantile >= 1
         else f"p{tr.slo_quantile * 100:g}")
    return f"{q} {'TPOT' if tr.slo_kind == 'tpot' else 'latency'}"


def prediction_spec(tr: Track, slots: int, cv: float, rate: float) -> Spec:
    spread = f"output lengths with CV {fmt_num(cv)}, " if tr.is_transformer else ""
    q = (f"{lw.esc(tr.label)}: one {tr.replica_noun} with {counted(slots, 'batch slot')}, {spread}"
         f"{fmt_num(rate)} {event_noun(tr)}s/s arriving. Which policy wins: it meets the SLO "
         f"with the most capacity (the simpler one when within {SIMPLICITY_MARGIN:.0%})?")
    return q, [(policy_label(tr, p).capitalize(), p) for p in POLICIES]


def checkpoint_spec(tr: Track) -> CheckSpec:
    q = "Which rule should production use to choose a batching policy?"
    newest = policy_label(tr, "continuous").split(" (")[0]
    depends = ("load, the spread of output lengths and the SLO" if tr.is_transformer else
               "the arrival rate and the deadline")
    opts = [("The simplest policy that meets the SLO with (near-)top capacity",
             "simplest_meeting_slo"),
            (f"Always {newest}: it is the most advanced", "always_continuous"),
            ("Never batch: batching only adds latency", "never"),
            ("The largest batch, whatever the tail latency", "max_batch")]
    good = (f"Right: the winner depends on {depends}, so the rule is "
            "conditional: meet the SLO first, then take capacity, preferring simplicity.")
    bad = (f"Not quite: each fixed rule fails somewhere. The winner depends on {depends}: "
           "meet the SLO first, then take capacity.")
    return q, opts, "simplest_meeting_slo", {
        v: (good if v == "simplest_meeting_slo" else bad) for _, v in opts}


def tail_limit(tr: Track, r: PolicyResult) -> str:
    """Which limit ``r.slo_ratio`` measures: the governed metric's, or the TTFT target's
    when that is the nearer (the ratio is the worse of the two)."""
    own = r.slo_value_s / r.slo_s
    if tr.ttft_slo_s and r.slo_ratio > own + 1e-12:
        return f"its TTFT target (p99 TTFT {fmt_time(r.ttft_p99_s)} vs {fmt_time(tr.ttft_slo_s)})"
    return "the SLO"


def load_text(r: PolicyResult) -> str:
    """Offered load over capacity: a utilisation below 1, an overload above it."""
    u = float(r.utilisation)
    return f"{u:.1%}" if u < 1 else f"{fmt(u)}x capacity (overloaded)"


def tail_text(r: PolicyResult, value: float | None) -> str:
    """A tail latency, or 'unbounded' where the queue grows without bound."""
    return fmt_time(value) if r.stable else "unbounded"


def why_text(tr: Track, cmp: PolicyComparison, unit: str) -> str:
    """Why the winner won, in the track's unit (the physics says requests/s)."""
    win = cmp.results[cmp.winner]
    passing = [r for r in cmp.results.values() if r.slo_met]
    top = max(passing, key=lambda r: r.capacity_requests_per_s) if passing else win
    failed = [p for p in POLICIES if not cmp.results[p].slo_met]
    if not cmp.any_meets_slo:
        return (f"no policy meets the SLO; {win.policy} comes closest "
                f"({fmt_num(win.capacity_tokens_per_s)} {unit} per {tr.replica_noun})")
    return (f"{win.policy} meets the SLO with the most capacity "
            f"({fmt_num(win.capacity_tokens_per_s)} {unit} per {tr.replica_noun})"
            + (f", within {SIMPLICITY_MARGIN:.0%} of {top.policy}'s and simpler"
               if win is not top else "")
            + (f"; {', '.join(failed)} miss{'es' if len(failed) == 1 else ''} the SLO"
               if failed else ""))


def slo_text(tr: Track, cmp: PolicyComparison, missed: list[PolicyResult]) -> tuple[str, str]:
    title = ("No policy meets the SLO at this load" if not cmp.any_meets_slo else
             f"SLO miss: {', '.join(r.policy for r in missed)}")
    ttft = tr.ttft_slo_s is not None
    name = metric_name(tr)
    detail = "; ".join(
        (f"{r.policy}: {name} {fmt_time(r.slo_value_s)}"
         + (f", p99 TTFT {fmt_time(r.ttft_p99_s)}" if ttft else "")
         + f" ({fmt(r.slo_ratio)}x the limit)") if r.stable else
        f"{r.policy}: {load_text(r)}, its queue and tail grow without bound"
        for r in missed)
    return title, detail


def spread_text(cv: float, cmp: PolicyComparison) -> str:
    """The output-length spread in words: the control's CV (``cv``, the basis of every
    setting), and the simulated stream's sampled CV labelled beside it where the two print
    differently (a finite sample of a lognormal does not hit its CV exactly)."""
    target, sampled = fmt_num(cv), fmt_num(cmp.cv_tokens)
    if sampled == target:
        return f"CV {target}"
    return f"CV {target} set; the simulated requests' sampled CV is {sampled}"


def padding_text(tr: Track, cmp: PolicyComparison, unit: str,
                 cv: float) -> tuple[str, str]:
    st, co = cmp.results["static"], cmp.results["continuous"]
    waste = float(st.padding_waste)
    gain = (co.capacity_tokens_per_s / st.capacity_tokens_per_s - 1.0
            if st.capacity_tokens_per_s > 0 else 0.0)
    other = (f"Continuous batching refills a slot as soon as its sequence ends: "
             f"{fmt_num(co.capacity_tokens_per_s)} {unit} per {tr.replica_noun}, "
             f"{gain:.0%} more than static." if gain > 0 else
             "Continuous batching refills slots but, at this batch, its scheduler overhead "
             "costs more than the padding: bucket requests by length.")
    return (f"Padding waste: static batching idles {waste:.0%} of its slot-steps",
            f"Every static batch runs until its longest output ends; the shorter ones hold "
            f"their slots as padding ({waste:.0%} of slot-steps at batch "
            f"{st.batch_size}, {spread_text(cv, cmp)}). Static capacity: "
            f"{fmt_num(st.capacity_tokens_per_s)} {unit} per {tr.replica_noun}. {other}")


def capacity_tex(tr: Track) -> str:
    """The saturated-capacity formulas in the track's words. A CNN inference is one pass
    p(B): no output loop, so nothing is padded and continuous batching only adds o."""
    head = (f"<p>Saturated capacity of one {tr.replica_noun} ({event_noun(tr)}s/s), with "
            "batch B, ")
    if not tr.is_transformer:
        return (head + "p(B) the pass of a batch (input pass of B inputs plus their B "
                "decisions) and o the scheduler overhead:</p>"
                "$$\\text{static/dynamic: } \\frac{B}{p(B)} \\qquad "
                "\\text{greedy: } \\frac{B}{p(B) + o}$$"
                f"<p>Each {event_noun(tr)} is one pass, so no slot is padded and none frees "
                f"mid-way: {policy_label(tr, 'continuous').split(' (')[0]} only adds its "
                "overhead.</p>")
    return (head + "step τ(B) (one decode step of the batch) and prefill p(B):</p>"
            "$$\\text{static/dynamic: } \\frac{B}{p(B) + (L_{\\max}-1)\\,\\tau(B)} "
            "\\qquad \\text{continuous: } \\frac{1}{p(1) + \\bar{L}\\,(\\tau(B)+o)/B}$$"
            "<p>Padding waste of a static batch: $1 - \\sum_i L_i / (B\\,L_{\\max})$. "
            "Continuous batching stretches every token by $1/(1-\\lambda\\,p(1))$. "
            "TPOT is each request's mean time per output token after the first, "
            "$(t_{\\text{e2e}} - \\text{TTFT})/(L-1)$.</p>")


def reveal_text(tr: Track, d: PolicyComparison, label: str, winner: str, unit: str) -> str:
    return (
        f"<div>At the track defaults: <b>{label}</b>: {lw.esc(why_text(tr, d, unit))}.</div>"
        f"<div>With your current settings the winner is <b>{winner}</b>.</div>"
        f"<div style='color:#5d6d7e'>Why: {why_policies(tr)}</div>")


def why_policies(tr: Track) -> str:
    """How the four policies differ, in the track's terms: a token stream pads and refills
    slots; single-step inputs (windows, frames) only wait for a batch to form."""
    if tr.is_transformer:
        return ("static batches wait to fill and pad to the longest member; dynamic batches "
                "cap the wait with a timeout; continuous batching refills slots every step "
                "but pays a scheduler overhead. Which one wins depends on the load, the "
                "spread of output lengths and the SLO.")
    one, many = tr.event_nouns
    return (f"static batches wait for {many} to fill a batch; dynamic batches cap the wait "
            f"with a timeout; greedy batching runs whatever {many} are queued at each pass "
            f"but pays a scheduler overhead. Which one wins depends on the arrival rate and "
            f"the deadline each {one} must meet.")
