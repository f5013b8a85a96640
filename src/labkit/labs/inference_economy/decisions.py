"""Each Lab 1 part's task, judged at one setting (:class:`labkit.labs.common.Decision`).

One function per part, set on the part's class as its ``_decision`` method: it reads the
same model figures the part renders (its ``failed`` checks and computed values), so the
decision line, the callouts and the recovery hints can never disagree.
"""

from __future__ import annotations

from typing import Any

from labkit.core.format import counted, fmt, fmt_num, fmt_time
from labkit.labs.common import Decision, Settings
from labkit.labs.inference_economy.base import (
    NAIVE_BITS,
    cost_noun,
    fmt_cost,
    fmt_days,
    guardrail_label,
)
from labkit.plans.economy import busy_daily_cost
from labkit.plans.serving import GUARDRAILS
from labkit.plans.speculation import start_bits
from labkit.plans.workload import policy_label

NAIVE_POLICY = "static"
"""Part C's policy control starts here: fill a batch, then run it (pad to the longest)."""


def payback_task(part: Any) -> bool:
    """Whether Part A's task is the payback of an optimisation (else the daily budget): the
    default plan is within its budget and some saving the slider offers repays a second
    setup within the horizon (a predicate over the defaults' model fields)."""
    d = part.default
    top = float(part.controls["saving_pct"].max) / 100.0
    return not d.over_budget and d.repay_saving <= top


def part_a(part: Any, s: Settings) -> Decision:
    """Over budget at the defaults: keep the busy-basis daily bill within the budget.
    Otherwise: spend a second setup on an optimisation only if its saving repays it within
    the horizon (the crossover, read as a decision)."""
    tr = part.track
    u = tr.cost_unit
    if payback_task(part):
        p = part.point(s)
        days = p.payback_days
        standing = ("with no saving it never repays" if days is None else
                    f"at a {p.saving:.0%} saving it repays in {fmt_days(days)}")
        return Decision(f"an optimisation that costs a second setup "
                        f"({fmt_cost(tr.setup_cost, u)}) must repay it through its saving "
                        f"within {tr.horizon_days} days", days is not None
                        and days <= tr.horizon_days, standing)
    daily = busy_daily_cost(tr, part.event(s).total, float(str(s["demand"])),
                            float(str(s["saving_pct"])) / 100.0)
    return Decision(f"keep the {cost_noun(tr)} within the daily budget of "
                    f"{fmt_cost(tr.daily_budget, u)}",
                    daily <= tr.daily_budget, f"{fmt_cost(daily, u)} a day")


def a_start(part: Any) -> dict[str, object]:
    """Where Part A's controls start: where its task is the daily budget and the track's
    plan keeps it, the model as released (:data:`NAIVE_BITS` weights) when the controls
    offer it and it does not; else the track's plan."""
    d0 = {k: c.value for k, c in part.controls.items()}
    naive = {**d0, "weight_bits": NAIVE_BITS}
    if (payback_task(part) or NAIVE_BITS not in part.bits_options
            or not part_a(part, d0).passed or part_a(part, naive).passed):
        return d0
    return naive


def a_start_note(part: Any, start: dict[str, object]) -> str:
    """The sentence naming Part A's starting candidate ("" when it is the track's plan)."""
    if start["weight_bits"] == part.track.weight_bits:
        return ""
    return (f"The controls start at the model as released ({NAIVE_BITS}-bit weights), "
            f"where the plan has {part.track.weight_bits}-bit.")


def b_start(part: Any) -> dict[str, object]:
    """Where Part B's controls start: the model as released (:data:`NAIVE_BITS` weights
    and KV) on the fewest devices that hold its weights and one state, where that plan fails
    the task; else the track's plan."""
    d0 = part._defaults()
    naive = {**d0, "weight_bits": NAIVE_BITS}
    if "kv_bits" in d0:
        naive["kv_bits"] = NAIVE_BITS
    if "devices" in part.controls:
        fits = [n for n in range(1, part.max_dev + 1)
                if not part._capacity({**naive, "devices": n}).oom]
        naive["devices"] = fits[0] if fits else part.max_dev
    return naive if part.failed(naive) else d0


def b_start_note(part: Any, start: dict[str, object]) -> str:
    """The sentence naming Part B's starting candidate ("" when it is the track's plan)."""
    if start == part._defaults():
        return ""
    tr = part.track
    kv = " and KV cache" if "kv_bits" in start else ""
    where = (f" on the fewest devices that hold them ({start['devices']} per "
             f"{tr.replica_noun}, where the plan has {tr.devices_per_replica})"
             if start.get("devices", tr.devices_per_replica) != tr.devices_per_replica
             else "")
    return (f"The controls start at the model as released ({NAIVE_BITS}-bit weights{kv})"
            f"{where}.")


def part_b(part: Any, s: Settings) -> Decision:
    """Hold the weights and every slot the scheduler fills (under a hard deadline: and clear
    them within it)."""
    tr = part.track
    p = part.point(s)
    cap = p.capacity
    slots = counted(part.slots, tr.state_noun, tr.state_nouns)
    standing = (f"the weights and one {tr.state_noun} do not fit" if cap.oom else
                f"{counted(cap.max_sessions, tr.state_noun, tr.state_nouns)} fit")
    task = (f"hold the weights and one {tr.state_noun}" if part.slots == 1 else
            f"hold the weights and {slots}, the batch the scheduler keeps")
    if p.clear_s is not None:
        task += f", and clear them within the {fmt_time(tr.slo_s)} deadline"
        if not cap.oom:
            standing += f"; the last is done after {fmt_time(p.clear_s)}"
    return Decision(task, not p.failed(part.slots, tr.slo_s), standing)


def part_c(part: Any, s: Settings) -> Decision:
    """Keep the policy the student runs (the naive one at first: fill a batch, then run
    it) within the SLO."""
    tr = part.track
    policy = str(s.get("policy", NAIVE_POLICY))
    r = part.compare_at(s).results[policy]
    tail = (f"its tail {fmt_time(r.slo_value_s)}, {fmt_num(r.slo_ratio)}x the limit"
            if r.stable and r.slo_value_s is not None else "its queue grows without bound")
    return Decision(f"run a batching policy whose tail stays within the SLO of "
                    f"{fmt_time(tr.slo_s)}", r.slo_met,
                    f"{policy_label(tr, policy)}: {tail}")


def part_d(part: Any, s: Settings) -> Decision:
    """Pass every guardrail of the release review."""
    failed = part.failed(s)
    names = ", ".join(guardrail_label(g) for g in GUARDRAILS)
    standing = ("every guardrail passes" if not failed else
                "fails: " + ", ".join(guardrail_label(g) for g in failed))
    return Decision(f"ship a release that passes every guardrail ({names})", not failed,
                    standing)


def tokens_start(part: Any) -> dict[str, object]:
    """Where the guessing part's controls start: the weights of
    :func:`labkit.plans.speculation.start_bits` (the most accurate that fit, where the plan
    misses the SLO there), no guesses."""
    return {**{k: c.value for k, c in part.controls.items()},
            "weight_bits": start_bits(part.track)}


def tokens_start_note(part: Any, start: dict[str, object]) -> str:
    """The sentence naming that starting candidate ("" when it is the track's plan)."""
    tr = part.track
    bits = int(str(start["weight_bits"]))
    if bits == tr.weight_bits:
        return ""
    loss = tr.quality_loss_pct
    return (f"The controls start at {bits}-bit weights, the most accurate that fit (a quality "
            f"loss of {fmt(loss[bits])} points, where the plan's {tr.weight_bits}-bit "
            f"weights lose {fmt(loss[tr.weight_bits])}).")


def part_c_tokens(part: Any, s: Settings) -> Decision:
    """Keep the tail request's time per token within the SLO (guessing its own tokens)."""
    tr = part.track
    p = part.point(s)
    k = p.k
    how = "without guesses" if k == 0 else f"checking {k} guess{'' if k == 1 else 'es'} a pass"
    return Decision(f"stream every reply within the SLO of {fmt_time(tr.slo_s)} a token, "
                    f"p{tr.slo_quantile * 100:g} across requests", p.met,
                    f"{p.weight_bits}-bit weights {how}: the p{tr.slo_quantile * 100:g} "
                    f"request takes {fmt_time(p.tpot_tail_s)} a token")
