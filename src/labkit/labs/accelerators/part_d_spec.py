"""Lab 2 Part D's declarative text: constraint titles, labels and fallback hints, the
hook, the prediction and checkpoint, and the sentences chosen by predicates over the
design check's computed fields (:mod:`labkit.plans.design`, :mod:`labkit.plans.lab2`).
Every number here is formatted from a computed value or a constant the check uses."""

from __future__ import annotations

from collections.abc import Sequence

from labkit import ui as lw
from labkit.core.format import fmt, fmt_amount, fmt_bytes, fmt_count, fmt_pct, fmt_time
from labkit.core.grids import PRECISIONS
from labkit.labs.accelerators.base import feedback_map
from labkit.labs.common import CheckSpec, Spec
from labkit.plans.design import (
    CONTEXT_BUCKETS,
    DEVICE_BUCKETS,
    DUTY_BUCKETS,
    OFF_SCALE,
    PrecisionChange,
    ReferenceDesign,
    fleet_users,
)
from labkit.plans.lab2 import BindingConstraint
from labkit.plans.scenarios.common import CONTEXT_ABOVE, DEVICES_ABOVE, context_tokens
from labkit.tracks import Track

CONSTRAINT_TITLES = {
    "layout": "Not a possible layout", "memory": "Out of memory (OOM)",
    "tpot": "TPOT SLO missed", "ttft": "First token too late", "quality": "Below the quality floor",
    "cost": "Over the daily budget", "energy": "Over the energy budget",
    "context": "Conversation shorter than the product needs", "flash": "Weights exceed flash",
    "sram": "Out of SRAM", "deadline": "Deadline missed", "coverage": "Listening too rarely",
    "link": "Link saturated", "throughput": "SoC overloaded", "socs": "More SoCs than the board",
    "utilisation": "Replicas busier than the utilisation cap",
}
CONSTRAINT_FIX = {
    "layout": "pick degrees that exist (powers of two within the model's heads, layers and "
              "the sequences)",
    "memory": "split weights (TP/PP), one sequence's KV (CP) or the sequences (DP); lower "
              "the precision",
    "tpot": "more TP inside the fast domain; fewer sequences per replica (more DP); lower "
            "precision",
    "ttft": "a shorter prompt or faster prefill", "quality": "raise the precision to the floor",
    "cost": "fewer devices: lower precision frees memory for more sequences per device",
    "energy": "lower precision, less work per day, or a cheaper place to do it",
    "context": "serve longer conversations", "flash": "lower the weight precision",
    "sram": "a lower-precision datapath", "deadline": "shorten the path to a decision",
    "coverage": "process more windows", "link": "send fewer bytes",
    "throughput": "spread the load over a second SoC", "socs": "use the SoCs the board has",
    "utilisation": "more replicas (DP), or faster prefill and steps per replica (TP, CP)",
}
# where a scenario has other levers than the fleet's (one phone has no TP, PP, CP or DP;
# a vehicle's SoCs split cameras or the model, not tensors)
SCENARIO_FIX = {
    ("handheld", "memory"): "lower the weight or KV precision, or serve shorter conversations",
    ("handheld", "tpot"): "lower the weight or KV precision, or serve shorter conversations",
    ("handheld", "energy"): "lower the weight or KV precision, or serve shorter conversations",
    ("vehicle", "memory"): "lower the weight precision, or split the cameras over two SoCs",
}
# what the student reads for a constraint (never its id)
CONSTRAINT_LABELS = {
    "layout": "layout", "memory": "memory", "tpot": "TPOT", "ttft": "TTFT",
    "quality": "quality", "cost": "daily cost", "energy": "energy", "context": "context",
    "flash": "flash", "sram": "SRAM", "deadline": "deadline", "coverage": "coverage",
    "link": "link", "throughput": "throughput", "socs": "SoCs", "utilisation": "utilisation",
}
NO_SINGLE_FIX = "no single setting here fixes it; "


def constraint_label(name: str) -> str:
    """A constraint's display name (its id with underscores as spaces when unknown)."""
    return CONSTRAINT_LABELS.get(name, name.replace("_", " "))


def fallback_fix(scenario: str, name: str) -> str:
    """The hint when no single control passes a constraint (it names no control)."""
    return NO_SINGLE_FIX + (SCENARIO_FIX.get((scenario, name))
                            or CONSTRAINT_FIX.get(name, "change more than one setting"))


def ratio_text(b: BindingConstraint) -> str:
    """A constraint's use of its limit as plain text (escape it for HTML): the true ratio,
    and where the chart caps the bar at :data:`OFF_SCALE`, that it is capped (``over 3x on
    the chart (5.2x)``); beyond any ratio, why (the constraint's detail)."""
    if b.ratio is None:
        return f"beyond any ratio: {b.detail} (its bar is drawn at {OFF_SCALE:g}, capped)"
    if b.capped:
        return f"over {OFF_SCALE:g}x, capped on the chart ({fmt(b.ratio)}x of its limit)"
    return f"{fmt(b.ratio)}x of its limit"


def objective_label(rented: bool, name: str, basis: str = "") -> str:
    """The objective with its basis: a rented fleet's cost is provisioned (every device
    rented all day), an owned device's energy is what it uses (``basis``: how the
    scenario counts it, e.g. one frame per pass)."""
    if rented:
        return f"{name} (provisioned)"
    return f"{name} ({basis})" if basis else name


def hook_text(tr: Track, scenario: str, hw_name: str) -> str:
    """What Part D asks of the track (its numbers from the track's fields)."""
    if scenario == "fleet":
        ttft = ("" if tr.ttft_slo_s is None
                else f", first token within {fmt_time(tr.ttft_slo_s)}")
        return (f"The target: {fleet_users(tr):,} concurrent conversations at "
                f"{context_tokens(tr):,} tokens, TPOT within {fmt_time(tr.slo_s)}{ttft}, each "
                f"request's prefill on the same replicas and every replica at most "
                f"{fmt_pct(tr.max_utilisation)} busy, quality loss within "
                f"{fmt_count(tr.max_quality_loss_pct)} point(s), inside {tr.budget_text}/day. "
                f"Meet it with the fewest {hw_name} devices.")
    if scenario == "handheld":
        return (f"Serve {context_tokens(tr):,}-token conversations on the phone "
                "within its memory, TPOT, TTFT, quality and battery budgets, spending as "
                "little energy as possible.")
    if scenario == "wearable":
        return ("Listen as often as the ring can afford: every constraint (flash, SRAM, "
                "deadline, accuracy, energy, coverage, link) at once, with the highest "
                "duty.")
    return ("Never miss a frame: deadline, throughput, memory, accuracy and energy at "
            "once, with the fewest SoCs.")


def prediction_spec(tr: Track, scenario: str, hw_name: str) -> Spec:
    """Part D's prediction: the question and its options (bucket labels of the check)."""
    if scenario == "fleet":
        ttft = "" if tr.ttft_slo_s is None else f", first token within {fmt_time(tr.ttft_slo_s)}"
        q = (f"{lw.esc(tr.label)}: {fleet_users(tr):,} users at {context_tokens(tr):,} tokens "
             f"within {fmt_time(tr.slo_s)} per token{ttft}, prefill on the same replicas, "
             f"replicas at most {fmt_pct(tr.max_utilisation)} busy, inside the budget, at "
             f"any precision that keeps quality. How many {lw.esc(hw_name)} devices does "
             "the smallest design need?")
        labels = [b for _, b in DEVICE_BUCKETS] + [DEVICES_ABOVE]
        return q, [(f"{lab} devices" if lab[0].isdigit() else lab.capitalize(), lab)
                   for lab in labels] + [("No design fits the budget", "none fits")]
    if scenario == "handheld":
        q = (f"{lw.esc(tr.label)}: at any precision that keeps quality, what is the "
             "longest conversation the phone can serve within memory, TPOT, TTFT and the "
             "battery budget?")
        return q, [(lab, lab) for lab in
                   [b for _, b in CONTEXT_BUCKETS] + [CONTEXT_ABOVE, "none fits"]]
    if scenario == "wearable":
        q = (f"{lw.esc(tr.label)}: using any precision, cut point and BLE interval, what "
             "share of the windows can the ring afford to process within every "
             "constraint?")
        return q, [(lab, lab) for lab in
                   ["every window", *[b for _, b in reversed(DUTY_BUCKETS)], "none fits"]]
    q = (f"{lw.esc(tr.label)}: with any precision and layout, how many SoCs does the "
         "smallest design that meets every constraint use?")
    return q, [("One SoC", "1"), ("Two SoCs", "2"), ("None fits", "none fits")]


def checkpoint_spec(ranking: str) -> CheckSpec:
    """``ranking``: the scenario's order of feasible designs, in words."""
    q = "What objective should the design review enforce?"
    opts = [(f"Among designs that pass every constraint, {ranking}", "constrained"),
            ("The lowest latency, whatever it costs", "latency"),
            ("The largest parallelism degree available", "largest"),
            ("The cheapest design, even if one constraint fails", "cheapest")]
    good = ("Right: feasibility first (every constraint at once), then the objective. A "
            "design that fails one constraint is not a cheaper design; it is no design.")
    bad = ("Not quite: a design ships only when every constraint passes; among those, "
           f"{ranking} wins.")
    return q, opts, "constrained", feedback_map(opts, "constrained", good, bad)


def next_precision(bits: int) -> int | None:
    """The precision above ``bits`` (None at the top)."""
    above = [p for p in PRECISIONS if p > bits]
    return above[0] if above else None


def _value(unit: str, x: float | None) -> str:
    if unit == "bytes":
        return fmt_bytes(x)
    if unit == "s":
        return fmt_time(x)
    return fmt_amount(x, unit)


def _aspects(changes: Sequence[PrecisionChange], lower: bool) -> list[str]:
    seen: dict[str, list[str]] = {}
    for c in changes:
        if c.lower == lower:
            seen.setdefault(c.aspect, []).append(
                f"{constraint_label(c.name)} {_value(c.unit, c.value)} vs "
                f"{_value(c.unit, c.other_value)}")
    return [f"{aspect} ({'; '.join(items)})" for aspect, items in seen.items()]


def precision_sentence(ref: ReferenceDesign | None, floor: int,
                       changes: Sequence[PrecisionChange]) -> str:
    """Where labkit's best design puts the weight precision and what that precision
    changes on this track against the next precision up, by predicate on each memory,
    latency and energy constraint at both precisions (empty without weight precision)."""
    if ref is None or "weight_bits" not in ref.config:
        return ""
    bits = int(ref.config["weight_bits"])
    head = (f" labkit's best design keeps {bits}-bit weights, above the {floor}-bit floor."
            if bits != floor else
            f" labkit's best design lowers the weights to the quality floor ({bits}-bit).")
    if not changes:
        return head
    other = changes[0].other_bits
    relieved, same = _aspects(changes, True), _aspects(changes, False)
    text = head + f" Against {other}-bit weights, everything else equal, "
    if relieved:
        text += "fewer bytes per weight relieve " + ", ".join(relieved)
        text += ("; they leave " + ", ".join(same) + " unchanged." if same else ".")
    else:
        text += "fewer bytes per weight change none of " + ", ".join(same) + "."
    return text
