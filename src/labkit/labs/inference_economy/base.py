"""What every Lab 1 part shares: answer buckets, wording helpers and the Part base."""

from __future__ import annotations

import math

from labkit.core.format import fmt, fmt_num
from labkit.labs.common import LabPart
from labkit.labs.inference_economy.info import LAB_ID, PART_MINUTES, PART_TITLES
from labkit.labs.parts import AS_RELEASED_BITS
from labkit.plans.serving import (
    GUARDRAILS,
)
from labkit.registries.hardware import get_hardware
from labkit.tracks import Track

CROSSOVER_BUCKETS = ("days", "weeks", "months", "never")
SESSION_BUCKETS = ("one", "few", "modest", "many")
BINDING_CHOICES = (*GUARDRAILS, "none")
DAYS_BUCKET_MAX = 14.0     # "days": within two weeks
WEEKS_BUCKET_MAX = 70.0    # "weeks": within ten weeks; "months": later, within the horizon
FEW_MAX, MODEST_MAX = 4, 32
MAX_WINDOWS = 16           # sensor windows a CNN session may hold in Part B
OFF_SCALE = 3.0            # guardrail ratio shown for "not evaluable" / beyond the chart
SLO_RATIO_MAX = 4.0
NAIVE_BITS = AS_RELEASED_BITS   # the naive candidate's weights and KV: as released


# -- buckets --------------------------------------------------------------------------------

def crossover_bucket(days: float | None, horizon_days: float) -> str:
    """days (<= 14) | weeks (<= 70) | months (<= horizon) | never (beyond the horizon)."""
    if days is None or not math.isfinite(days) or days > horizon_days:
        return "never"
    if days <= DAYS_BUCKET_MAX:
        return "days"
    if days <= WEEKS_BUCKET_MAX:
        return "weeks"
    return "months"


def session_bucket(sessions: int) -> str:
    """one (0 or 1) | few (2-4) | modest (5-32) | many (> 32)."""
    if sessions <= 1:
        return "one"
    if sessions <= FEW_MAX:
        return "few"
    if sessions <= MODEST_MAX:
        return "modest"
    return "many"


# -- formatting -----------------------------------------------------------------------------

def fmt_cost(x: float | None, unit: str) -> str:
    """``12,139 USD``, ``583 mWh``, ``0.0014 USD`` (no '$': it would start LaTeX math)."""
    return "n/a" if x is None else f"{fmt_num(x)} {unit}"


def fmt_days(days: float | None, horizon: float | None = None) -> str:
    if days is None or not math.isfinite(days):
        return (f"not within {horizon:g} days" if horizon else "never")
    if days < 1 / 24:
        return f"{fmt(days * 1440)} minutes"
    if days < 1:
        return f"{fmt(days * 24)} hours"
    if days < DAYS_BUCKET_MAX:
        return f"{fmt(days)} days"
    if days <= WEEKS_BUCKET_MAX:
        return f"{fmt(days)} days ({fmt(days / 7)} weeks)"
    return f"{days:,.0f} days ({fmt(days / 30.44)} months)"


def unit_scale(nbytes: float) -> tuple[float, str]:
    for size, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if nbytes >= size:
            return size, unit
    return 1.0, "B"


def max_devices(tr: Track) -> int:
    """Devices one replica may span: the fast domain, capped by devices the owner has."""
    dom = get_hardware(tr.hardware_id).domain_size
    limit = dom if tr.max_replicas is None else min(dom, tr.max_replicas)
    return max(limit, tr.devices_per_replica)


def event_noun(tr: Track) -> str:
    """One thing the track serves (:attr:`Track.event_nouns`): request, window, frame."""
    return tr.event_nouns[0]


def cost_noun(tr: Track) -> str:
    return "serving bill" if tr.cost_unit == "USD" else "inference energy"


def guardrail_label(name: str) -> str:
    return {"memory": "memory", "slo": "SLO", "quality": "quality", "cost": "cost",
            "none": "none"}[name]


# -- parts ----------------------------------------------------------------------------------

class Part(LabPart):
    """A Lab 1 part (the skeleton is :class:`labkit.labs.common.LabPart`)."""

    lab_id = LAB_ID
    titles = PART_TITLES
    minutes = PART_MINUTES

    def _hook(self) -> str:
        return self.track.narrative.hooks[self.letter]
