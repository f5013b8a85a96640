"""Each Lab 1 part's task, judged at one setting (:class:`labkit.labs.common.Decision`).

One function per part, set on the part's class as its ``_decision`` method: it reads the
same model figures the part renders (its ``failed`` checks and computed values), so the
decision line, the callouts and the recovery hints can never disagree.
"""

from __future__ import annotations

from typing import Any

from labkit.core.format import counted, fmt_num, fmt_time
from labkit.labs.common import Decision, Settings
from labkit.labs.inference_economy.base import cost_noun, fmt_cost, guardrail_label
from labkit.plans.economy import busy_daily_cost
from labkit.plans.serving import GUARDRAILS
from labkit.plans.workload import policy_label

NAIVE_POLICY = "static"
"""Part C's policy control starts here: fill a batch, then run it (pad to the longest)."""


def part_a(part: Any, s: Settings) -> Decision:
    """Keep the busy-basis daily bill within the daily budget."""
    tr = part.track
    daily = busy_daily_cost(tr, part.event(s).total, float(str(s["demand"])),
                            float(str(s["saving_pct"])) / 100.0)
    return Decision(f"keep the {cost_noun(tr)} within the daily budget of "
                    f"{fmt_cost(tr.daily_budget, tr.cost_unit)}",
                    daily <= tr.daily_budget, f"{fmt_cost(daily, tr.cost_unit)} a day")


def part_b(part: Any, s: Settings) -> Decision:
    """Hold the weights and every slot the scheduler fills."""
    tr = part.track
    cap = part._capacity(s)
    slots = counted(part.slots, tr.state_noun, tr.state_nouns)
    standing = ("the weights alone do not fit" if cap.oom else
                f"{counted(cap.max_sessions, tr.state_noun, tr.state_nouns)} fit")
    return Decision(f"hold the weights and the {slots} the scheduler keeps in flight",
                    not part.failed(s), standing)


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
