"""Lab 2 Part D's declarative text: constraint titles, labels and fallback hints, the
hook, the prediction and checkpoint, and the sentences chosen by predicates over the
design check's computed fields (:mod:`labkit.plans.design`, :mod:`labkit.plans.lab2`).
Every number here is formatted from a computed value or a constant the check uses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labkit.core.format import fmt, fmt_amount, fmt_bytes, fmt_time
from labkit.core.grids import PRECISIONS
from labkit.labs.accelerators.base import feedback_map
from labkit.labs.common import CheckSpec
from labkit.plans.design import (
    OFF_SCALE,
    PrecisionChange,
    ReferenceDesign,
)
from labkit.plans.lab2 import BindingConstraint

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


def fallback_fix(fixes: Mapping[str, str], name: str) -> str:
    """The hint when no single control passes a constraint (it names no control):
    the scenario's own words for it (``fixes``, its views'), else the generic ones."""
    return NO_SINGLE_FIX + (fixes.get(name)
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
