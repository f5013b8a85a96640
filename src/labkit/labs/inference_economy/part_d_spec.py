"""Lab 1 Part D's declarative text: questions, options (the checkpoint's misconceptions
named), the candidates, and prose templates over computed release reports."""

from __future__ import annotations

from collections.abc import Mapping

from labkit import ui as lw
from labkit.core.format import counted, fmt_num, fmt_time, tex_num
from labkit.labs.common import CheckSpec, Spec
from labkit.labs.inference_economy.base import NAIVE_BITS, event_noun, guardrail_label
from labkit.plans.serving import GUARDRAILS, RoutedRelease, ServingPlan
from labkit.plans.workload import PolicyResult
from labkit.tracks import Track

TIER_BITS = 4           # the routed tier: the same model at the lowest weight precision
LIMIT_RATIO = 1.0       # value / limit above this fails

MISCONCEPTIONS: dict[str, frozenset[str]] = {
    "prediction": frozenset(),
    "checkpoint": frozenset({"replicas", "batch", "largest"}),
}
"""Option values whose label states a misconception (never the computed answer)."""

TITLES = {"memory": "Memory guardrail fails (OOM)", "slo": "SLO guardrail fails",
          "quality": "Quality guardrail fails", "cost": "Over the daily budget"}


def candidates(tr: Track) -> dict[str, tuple[str, dict[str, object]]]:
    """The three fixed release candidates: (label, plan settings)."""
    return {
        "naive": ("Naive: as released, one at a time",
                  {"weight_bits": NAIVE_BITS, "kv_bits": NAIVE_BITS, "policy": "none",
                   "devices_per_replica": tr.devices_per_replica}),
        "default": ("Track default plan",
                    {"weight_bits": tr.weight_bits, "kv_bits": tr.kv_bits,
                     "policy": tr.default_policy,
                     "devices_per_replica": tr.devices_per_replica}),
        "lean": (lean_label(tr),
                 {"weight_bits": TIER_BITS, "kv_bits": tr.min_kv_bits, "policy": "continuous",
                  "devices_per_replica": tr.devices_per_replica}),
    }


def lean_label(tr: Track) -> str:
    """The lean candidate named for what it is: the tier's weight precision and, for a
    language model, the lowest KV precision the quality floor allows (lower KV precisions
    are offered on the control, and fail quality), so the label never claims the lowest
    precision the controls reach."""
    kv = (f", {tr.min_kv_bits}-bit KV (the lowest KV precision the KV quality floor "
          "allows)" if tr.is_transformer else "")
    return f"{TIER_BITS}-bit weights{kv}, continuous"


def headline(tr: Track, r: Mapping[str, object]) -> str:
    """The synthesis' headline: what the model finds at the student's Part D settings
    (``r``: Part D's results) -- the binding guardrail and any other that fails, or, when
    all pass, the one nearest its limit. Never a claim typed into the track."""
    where = f"On this {tr.replica_noun}, at your Part D settings"
    checks: Mapping[str, Mapping[str, object]] = r["checks"]  # type: ignore[assignment]
    if not r["passed"]:
        binding = str(r["binding"])
        reason = str(r["reason"])
        head = f"{binding} binds: "
        detail = reason[len(head):] if reason.startswith(head) else reason
        def failing(g: str, evaluated: bool) -> bool:   # "not evaluated": no value reached
            c = checks.get(g, {})
            return (g != binding and bool(c) and not c["passed"]
                    and (c["value"] is not None) == evaluated)
        others = [guardrail_label(g) for g in GUARDRAILS if failing(g, True)]
        unknown = [guardrail_label(g) for g in GUARDRAILS if failing(g, False)]
        also = (f"; {' and '.join(others)} also fail{'s' if len(others) == 1 else ''}"
                if others else "")
        also += (f"; {' and '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not "
                 "evaluated (the plan never runs)" if unknown else "")
        order = ", ".join(guardrail_label(g) for g in GUARDRAILS)
        return (f"{where}, the binding guardrail (the first failing, in the order {order}) "
                f"is {guardrail_label(binding)}: {detail}{also}.")
    ratios: Mapping[str, float] = r["ratios"]  # type: ignore[assignment]
    near = max(GUARDRAILS, key=lambda g: ratios[g])
    return (f"{where}, every guardrail passes; the nearest its limit is "
            f"{guardrail_label(near)}, at {ratio_text(ratios[near], float('inf'))}.")


def prediction_spec(tr: Track) -> Spec:
    kv = " and KV cache" if tr.is_transformer else ""
    q = (f"{lw.esc(tr.label)}: the naive release candidate ships the model as released "
         f"({NAIVE_BITS}-bit weights{kv}), serves one {event_noun(tr)} at a time on "
         f"{counted(tr.devices_per_replica, 'device')} per {tr.replica_noun}, at the full "
         "forecast demand. Which guardrail binds first (checked in the order memory, SLO, "
         "quality, cost)?")
    return q, [
        (f"Memory: weights + one {tr.state_noun} do not fit", "memory"),
        ("SLO: the latency target is missed", "slo"),
        ("Quality: the precision loses too much", "quality"),
        ("Cost: the daily budget is exceeded", "cost"),
        ("None: it passes every guardrail", "none"),
    ]


def checkpoint_spec(tr: Track) -> CheckSpec:
    q = "What objective should the release review enforce?"
    opts = [("The lowest recurring cost subject to every guardrail passing", "constrained"),
            (f"The fewest {tr.replica_nouns}, even if the tail latency rises", "replicas"),
            ("The largest batch first", "batch"),
            (f"The biggest {tr.replica_noun} available", "largest")]
    good = ("Right: a plan ships only when memory, SLO, quality and cost pass together; "
            "among those, the cheapest recurring cost wins.")
    bad = ("Not quite: a single-metric objective trades away another guardrail. A plan "
           "ships only when all pass; then take the cheapest.")
    return q, opts, "constrained", {v: (good if v == "constrained" else bad) for _, v in opts}


def ratio_text(ratio: float, cap: float) -> str:
    """A value / limit ratio as text: the true value, said as "over" the chart's cap when
    the chart clamps it (never the clamped number as the value)."""
    if ratio == float("inf"):
        return "not evaluable"
    if ratio > cap:
        return f"over {fmt_num(cap)}x on the chart ({fmt_num(ratio)}x)"
    return f"{ratio:.0%} of it"


def boundary_text(ratios: tuple[float, ...], cap: float) -> str:
    i = max(range(len(GUARDRAILS)), key=lambda k: ratios[k])
    return (f"{guardrail_label(GUARDRAILS[i]).capitalize()} is closest to its limit "
            f"({ratio_text(ratios[i], cap)}).")


def metric_text(tr: Track, pr: PolicyResult) -> str:
    q = ("max (over the simulated stream)" if tr.slo_quantile >= 1
         else f"p{tr.slo_quantile * 100:g}")
    metric = "TPOT" if tr.slo_kind == "tpot" else "latency"
    return (f"{q} {metric} {fmt_time(pr.slo_value_s)} vs SLO {fmt_time(tr.slo_s)}, "
            f"load {pr.utilisation:.0%} of the full-batch capacity, busy "
            f"{pr.busy_share:.0%} of the time with the batches it forms")


def replicas_tex(tr: Track, plan: ServingPlan, lam: float) -> str:
    """R = ceil(lambda / (u_max mu)), capped at the replicas the owner has, from its terms
    (a plan that does not fit memory is not sized: no division by a capacity it lacks)."""
    if not plan.feasible:
        return (f"<p>R is not sized: the plan does not fit memory ({lw.esc(plan.reason)}), so "
                f"one {tr.replica_noun} serves nothing.</p>")
    cap_txt = tex_num(plan.replica_capacity_requests_per_s)
    inner = (f"\\left\\lceil \\frac{{{tex_num(lam)}}}{{{tr.max_utilisation:g} \\times "
             f"{cap_txt}}} \\right\\rceil")
    if tr.max_replicas is not None:
        return (f"$$R = \\min\\left(\\left\\lceil \\frac{{\\lambda}}{{u_{{\\max}}\\,\\mu}}"
                f"\\right\\rceil, R_{{\\max}}\\right) = \\min\\left({inner}, "
                f"{tr.max_replicas}\\right) = {plan.replicas}$$")
    return (f"$$R = \\left\\lceil \\frac{{\\lambda}}{{u_{{\\max}}\\,\\mu}} \\right\\rceil = "
            f"{inner} = {plan.replicas}$$")


def math_html(tr: Track, rr: RoutedRelease, lam: float, basis: str) -> str:
    plan = rr.main
    pr = plan.policy_result
    routed = ("" if rr.tier is None else
              f"<p>The {rr.routed_share:.0%} routed to the {TIER_BITS}-bit tier run on "
              f"{counted(rr.tier.replicas, 'more ' + tr.replica_noun, 'more ' + tr.replica_nouns)}"
              ", sized the same way; quality "
              "loss is the traffic-weighted mean.</p>")
    cost = ("<p>Rented, provisioned: cost/day = replicas × devices × price/h × active "
            "hours.</p>" if tr.cost_unit == "USD" else
            "<p>Owned, busy energy: energy/day = devices × power × busy time / J per unit "
            "(+ each input's front end, where the device computes one).</p>")
    return (
        f"<p>{tr.replica_nouns.capitalize()} R for the demand λ at most u_max busy (μ: "
        f"what one {tr.replica_noun} serves, "
        f"{'prefill' if tr.is_transformer else 'the whole pass'} included), and the daily cost "
        f"({lw.esc(basis)}):</p>"
        + replicas_tex(tr, plan, lam) + routed + cost
        + "<p>Ship only if memory ∧ SLO ∧ quality ∧ cost all pass; the first failure "
        "(in that order) binds. "
        + (f"Now: {metric_text(tr, pr)}. " if pr is not None else "")
        + "Source: <code>labkit.plans.serving.serving_plan</code>, "
        "<code>labkit.plans.serving.release_guardrails</code>.</p>")


def reveal_text(naive_label: str, naive_reason: str, r: Mapping[str, object]) -> str:
    mine = ("your candidate passes every guardrail" if r["passed"]
            else f"your candidate is blocked by <b>{r['binding']}</b>")
    return (
        f"<div>Naive candidate → <b>{naive_label}</b>: {lw.esc(naive_reason)}.</div>"
        f"<div>With your current settings {mine}.</div>"
        "<div style='color:#5d6d7e'>Why: a release ships only when all four guardrails "
        "pass together. Fixing the one that binds often exposes the next.</div>")
