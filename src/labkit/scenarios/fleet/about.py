"""What the fleet scenario says about itself, plain text for every layer: its
learning objectives per lab, its reading, the terms its Lab 2 widgets show and the
memo's topics. (A rented fleet of accelerators serving many live conversations.)"""

from __future__ import annotations

from labkit.core.vocabulary import BRACKET_PLURAL

LAB2_OBJECTIVES = (
    "Place decode on the roofline: B*, L*, the knee, and why real systems sit above the peak "
    "roofline.",
    "Size a fleet on three axes (weights, KV headroom, TPOT throughput), name the one that binds "
    "and the paper's first lever for it.",
    "Choose tensor, context, pipeline and data parallelism (TP x CP x PP x DP) from the symptom, "
    "see what each axis sends on which link, and when to stop adding it.",
    "Meet the target with the fewest devices, every constraint at once.",
)

OBJECTIVES = {"lab2": LAB2_OBJECTIVES}
"""Objectives by lab id; a lab without an entry uses its own (``LabInfo.objectives``)."""

READING = (
    "M. Shoeybi et al., *Megatron-LM: Training multi-billion parameter language models using "
    "model parallelism*, arXiv:1909.08053, 2019 (tensor parallelism).",
    "W. Kwon et al., *Efficient memory management for large language model serving with "
    "PagedAttention*, SOSP 2023 (the KV cache in memory).",
    "G.-I. Yu et al., *Orca: a distributed serving system for transformer-based generative "
    "models*, OSDI 2022 (iteration-level scheduling).",
)
"""Lab 2's scenario reading, after the common reading."""

SHOWN_TERMS: tuple[str, ...] = ('SLO', 'TPOT', 'KV', 'B*', 'L*', 'Pareto')
"""Terms Lab 2's widgets show on this scenario (the glossary defines them too)."""

MEMO_ASK = (
    "which roofline regime decode runs in and the number that shows it, the binding capacity "
    "axis and the lever you pulled, the parallelism you chose and the communication it costs"
)
"""What the Lab 2 memo recommends, after "recommend the deployment for the track: "."""


FOREIGN: tuple[str, ...] = (
    r"\bwindows? in flight\b",
    r"\bframes? in flight\b",
    r"\bcameras?\b",
    r"\bMFCC\b",
    BRACKET_PLURAL,
)
"""Words of another deployment's story (regular expressions) that no screen, option or
exercise of this scenario may show: its own nouns are the track's (tested over every
rendered string)."""
