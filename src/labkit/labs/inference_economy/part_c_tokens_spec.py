"""Lab 1 Part C's declarative text where one user leaves nothing to batch with and the model
checks guesses of its own next tokens: questions, options (misconceptions named) and prose
templates over a computed :class:`~labkit.plans.speculation.SpeculationPoint`."""

from __future__ import annotations

from labkit import ui as lw
from labkit.core.format import fmt, fmt_num, fmt_pct, fmt_time, tex_num
from labkit.labs.common import CheckSpec, Spec
from labkit.plans.speculation import REQUESTS, SpeculationPoint
from labkit.tracks import Track

MISCONCEPTIONS: dict[str, frozenset[str]] = {
    "prediction": frozenset(),
    "checkpoint": frozenset({"rejected_free", "prompt_free"}),
}
"""Option values whose label states a misconception (never the computed answer)."""

OUTCOMES = ("tail_ok", "tail_misses", "both_miss", "slower")


def outcome(p: SpeculationPoint) -> str:
    """What guessing did at ``p``, as the prediction's options name it (a predicate over the
    point's TPOTs): slower than plain decoding at the tail, both requests over the SLO,
    only the average within it, or both within it."""
    if p.tpot_tail_s > p.step.pass_s:
        return "slower"
    if p.met:
        return "tail_ok"
    return "tail_misses" if p.tpot_mean_s <= p.slo_s else "both_miss"


def pct(x: float) -> str:
    """An acceptance (a probability) as the sliders show it: ``35.8%``."""
    return fmt_pct(x)


def spread(p: SpeculationPoint) -> str:
    """The spread of acceptance across requests, in the sliders' % points."""
    return f"{fmt(100 * p.acceptance_sd)} points"


def cheap_check(p: SpeculationPoint) -> bool:
    """Whether the compute of every position a pass at ``p`` checks, and one more, costs
    less than one step's weight stream (a memory-bound device): the basis of the 'costs
    little to check' claims."""
    return p.step.weight_s > p.step.compute_s * (p.check.positions + 1)


def guesses(k: int) -> str:
    return "no guesses" if k == 0 else f"{k} guess{'' if k == 1 else 'es'} a pass"


def tail_name(p: SpeculationPoint) -> str:
    """``the p99 request``: the request at the SLO's quantile across requests."""
    return f"the p{p.slo_quantile * 100:g} request"


def prediction_spec(tr: Track, p: SpeculationPoint) -> Spec:
    spec = tr.speculation
    proposer = spec.proposer if spec else "a proposer"
    q = (f"{lw.esc(tr.label)}: with {p.weight_bits}-bit weights every token takes a decode "
         f"step of {fmt_time(p.step.pass_s)}, against an SLO of {fmt_time(p.slo_s)} per "
         f"token. {proposer.capitalize()} guesses the next {p.k} tokens from the prompt, and "
         f"one pass of the model checks all {p.k + 1} positions. Across requests, where do "
         f"the average request's and {tail_name(p)}'s time per token land?")
    return q, [
        ("Both within the SLO", "tail_ok"),
        ("The average request within the SLO, the tail request over it", "tail_misses"),
        ("Both faster than before, but both still over the SLO", "both_miss"),
        ("Slower than decoding without guesses", "slower"),
    ]


def checkpoint_spec(tr: Track, p: SpeculationPoint) -> CheckSpec:
    q = (f"Why can the {tr.replica_noun} check several guessed tokens in one pass for little "
         "more than one decode step costs?")
    cheap = cheap_check(p)
    opts = [("Each pass streams the weights once, however many positions it checks; an extra "
             "position adds only its compute", "weights_once"),
            ("Rejected guesses are never computed", "rejected_free"),
            ("The guesses come from the prompt, so the model does not need to read them",
             "prompt_free"),
            ("It cannot: every position costs about a full step", "costs_steps")]
    expected = "weights_once" if cheap else "costs_steps"
    why = (f"here a step streams the weights in {fmt_time(p.step.weight_s)}, and each position "
           f"adds {fmt_time(p.step.compute_s)} of compute")
    good = f"Right: {why}. Every guess is computed and checked, accepted or not."
    bad = f"Not quite: {why}. Every guess is computed and checked, accepted or not."
    return q, opts, expected, {v: (good if v == expected else bad) for _, v in opts}


def tpot_card_sub(p: SpeculationPoint) -> str:
    return f"SLO {fmt_time(p.slo_s)}; it accepts {pct(p.acceptance_tail)} of guesses"


def slo_text(p: SpeculationPoint) -> tuple[str, str]:
    """The SLO miss: the tail request's TPOT, and why, from the point's terms."""
    title = (f"SLO miss: {tail_name(p)} takes {fmt_time(p.tpot_tail_s)} a token, over "
             f"{fmt_time(p.slo_s)}")
    if p.k == 0:
        return title, (f"Without guesses every token is one decode step of "
                       f"{fmt_time(p.step.pass_s)} at {p.weight_bits}-bit weights.")
    return title, (f"It accepts {pct(p.acceptance_tail)} of the guesses, so a pass of "
                   f"{fmt_time(p.check.pass_s)} emits {fmt(p.tokens_tail)} tokens on "
                   f"average; the average request takes {fmt_time(p.tpot_mean_s)}.")


def variance_text(p: SpeculationPoint) -> tuple[str, str]:
    """The tail gains less than the average: the spread of acceptance across requests."""
    return ("The tail gains less than the average",
            f"The average request streams {fmt(p.mean_speedup)}x as fast as without "
            f"guesses, {tail_name(p)} {fmt(p.tail_speedup)}x: it accepts "
            f"{pct(p.acceptance_tail)} of the guesses where the requests average "
            f"{pct(p.acceptance_mean)} (spread {spread(p)}). The SLO is set by the requests "
            "that accept fewest.")


def boundary_text(p: SpeculationPoint, best_k: int) -> tuple[str, str]:
    best = ("no other number of guesses does better for it" if best_k == p.k else
            f"{guesses(best_k)} would bring it lowest")
    return (f"Within the SLO: {tail_name(p)} at {fmt_time(p.tpot_tail_s)} a token",
            f"{guesses(p.k).capitalize()} at {p.weight_bits}-bit weights; {best}.")


def math_html(tr: Track, p: SpeculationPoint) -> str:
    """The pass, the tokens it emits and the TPOT, with the terms that give each."""
    c, k = p.check, p.k

    def ms(x: float) -> str:
        return tex_num(x * 1e3, sig=4)

    a = p.acceptance_tail
    return (
        "<p>One pass checks the token the model has and k guesses: the weights stream once "
        "(W), the KV cache is read once (KV), each of the k + 1 positions costs its compute "
        "(C) and the step its fixed overhead (O). Each guess is kept with probability α "
        "until the first rejection, and the pass adds one token of its own "
        "(Leviathan et al.):</p>"
        "$$t_{\\text{pass}} = W + KV + (k+1)\\,C + O \\qquad "
        "E(\\alpha, k) = \\frac{1-\\alpha^{k+1}}{1-\\alpha} \\qquad "
        "\\text{TPOT} = \\frac{t_{\\text{pass}}}{E}$$"
        f"<p>Now, at {p.weight_bits}-bit weights and {fmt_num(p.context_tokens)} tokens of "
        f"context, k = {k}:</p>"
        f"$$t_{{\\text{{pass}}}} = {ms(c.weight_s)} + {ms(c.kv_s)} + {k + 1} \\times "
        f"{ms(c.compute_s / c.positions)} + {ms(c.overhead_s)} = {ms(c.pass_s)}\\ \\text{{ms}}$$"
        f"<p>{lw.esc(tail_name(p)).capitalize()} accepts α = {tex_num(a, sig=4)} (the "
        f"{fmt_num(1 - p.slo_quantile)} quantile of {fmt_num(REQUESTS)} requests' acceptance, "
        f"a Beta distribution with mean {pct(p.acceptance_mean)} and standard deviation "
        f"{spread(p)}):</p>"
        f"$$E = {tex_num(p.tokens_tail, sig=4)} \\qquad \\text{{TPOT}} = "
        f"{ms(c.pass_s)} / {tex_num(p.tokens_tail, sig=4)} = {ms(p.tpot_tail_s)}\\ "
        "\\text{ms}$$"
        "<p>Source: <code>labkit.plans.speculation.speculation_point</code>.</p>")


def reveal_text(p: SpeculationPoint, label: str, mine: SpeculationPoint) -> str:
    return (
        f"<div>At {p.weight_bits}-bit weights with {guesses(p.k)}: <b>{lw.esc(label)}</b>. "
        f"The average request takes {fmt_time(p.tpot_mean_s)} a token, {tail_name(p)} "
        f"{fmt_time(p.tpot_tail_s)} (SLO {fmt_time(p.slo_s)}).</div>"
        f"<div>With your settings ({mine.weight_bits}-bit, {guesses(mine.k)}): "
        f"{fmt_time(mine.tpot_tail_s)} at the tail.</div>"
        f"<div style='color:#5d6d7e'>Why: {why_text(p)}</div>")


def why_text(p: SpeculationPoint) -> str:
    """Why guessing pays (or not) on this device, by :func:`cheap_check`."""
    cost = ("a pass streams the weights once whatever it checks, so guessed tokens cost "
            "little to check here" if cheap_check(p) else
            "each checked position costs compute comparable to the weight stream here")
    return (f"{cost}; what they return depends on how many are accepted, which differs "
            "from request to request.")


def takeaway(p: SpeculationPoint) -> str:
    return (f"One user can still batch: at your Part C settings ({p.weight_bits}-bit, "
            f"{guesses(p.k)}) the average request takes {fmt_time(p.tpot_mean_s)} a token "
            f"and {tail_name(p)} {fmt_time(p.tpot_tail_s)}, "
            + ("within" if p.met else "over") + f" the {fmt_time(p.slo_s)} SLO.")
