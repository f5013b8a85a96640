"""What the handheld scenario says about itself, plain text for every layer: its
learning objectives per lab, its reading, the terms its Lab 2 widgets show and the
memo's topics. (One phone serving its user's conversations on the device.)"""

from __future__ import annotations

from labkit.core.vocabulary import BRACKET_PLURAL

LAB2_OBJECTIVES = (
    "Place on-device decode on the roofline: B*, L* and why a phone is memory-bound.",
    "Find what fits beside the OS and which limit a longer conversation hits first: memory, TPOT, "
    "TTFT or the battery.",
    "Price the cloud hand-off: bytes over the radio against energy and latency.",
    "Design within the memory, latency and battery budgets.",
)

LAB1_OBJECTIVES = (
    "Split a rewrite into its one-time pass over the email (prefill) and its repeated output "
    "loop (decode), and say which one takes most of the reply's time.",
    "Find when the battery an on-device optimisation saves repays the energy of downloading and "
    "compiling it again, in mWh.",
    "Compute how many cached conversations (their KV caches) fit beside the weights in the "
    "app's memory, and which knob frees memory first.",
    "Batch one user's own tokens: decide when checking guessed tokens in one pass keeps the "
    "requests that accept fewest of them within the SLO.",
    "Defend a release plan against every guardrail -- memory, SLO, quality and battery -- and "
    "name the one that binds.",
)

OBJECTIVES = {"lab2": LAB2_OBJECTIVES, "lab1": LAB1_OBJECTIVES}
"""Objectives by lab id; a lab without an entry uses its own (``LabInfo.objectives``)."""

READING = (
    "W. Kwon et al., *Efficient memory management for large language model serving with "
    "PagedAttention*, SOSP 2023 (the KV cache in memory).",
    "J. Huang et al., *A close examination of performance and power characteristics of 4G LTE "
    "networks*, MobiSys 2012 (the radio model of Part C).",
)
"""Lab 2's scenario reading, after the common reading."""

SHOWN_TERMS: tuple[str, ...] = ('SLO', 'TPOT', 'TTFT', 'KV', 'B*', 'L*')
"""Terms Lab 2's widgets show on this scenario (the glossary defines them too)."""

MEMO_ASK = (
    "which roofline regime decode runs in on the phone and the number that shows it, the limit "
    "a longer conversation hits first, when the cloud hand-off pays and what it costs in "
    "latency and battery"
)
"""What the Lab 2 memo recommends, after "recommend the deployment for the track: "."""


FOREIGN: tuple[str, ...] = (
    r"\breplicas?\b",
    r"\bwindows? in flight\b",
    r"\bcameras?\b",
    r"\bMFCC\b",
    BRACKET_PLURAL,
)
"""Words of another deployment's story (regular expressions) that no screen, option or
exercise of this scenario may show: its own nouns are the track's (tested over every
rendered string)."""
