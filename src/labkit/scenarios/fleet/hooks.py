"""The questions that open each Lab 2 part of a fleet track (``course/labs/lab2.py`` puts
them under the part titles), in the track's own terms and numbers."""

from __future__ import annotations

from labkit.plans.design import fleet_users
from labkit.registries.hardware import get_hardware
from labkit.tracks import Track


def hooks(t: Track) -> dict[str, str]:
    """The question that opens each Lab 2 part, from the track's data."""
    hw = get_hardware(t.hardware_id)
    return {
        "A": f"Every decode step reads the weights once, computes with them for each "
             f"sequence and reads each sequence's KV cache. At {t.context_tokens:,} tokens "
             f"of context on {hw.name}, which of the three is this fleet paying for?",
        "B": f"GPUs are bought for one of three reasons: to hold the weights, to hold the "
             f"live KV caches, or to keep TPOT within {t.slo_s * 1e3:g} ms for "
             f"{fleet_users(t):,} live conversations. Which one binds here?",
        "C": "Splitting the model across GPUs buys memory and speed but costs "
             "communication on a link. Which axis does the symptom call for, and when "
             "does adding more stop paying?",
        "D": "Now meet the target: the fewest GPUs that pass every constraint.",
    }
