"""What the vehicle scenario says about itself, plain text for every layer: its
learning objectives per lab, its reading, the terms its Lab 2 widgets show and the
memo's topics. (A vehicle's perception stack: camera frames on one or two SoCs.)"""

from __future__ import annotations

from labkit.core.vocabulary import BRACKET_PLURAL, TOKEN_STREAM

LAB2_OBJECTIVES = (
    "Place the model on the classic roofline per precision and batch.",
    "Load one SoC with cameras x fps against a hard deadline, memory and energy.",
    "Split cameras or the model across two SoCs: interconnect bytes vs the deadline.",
    "Design with the fewest SoCs that never miss a frame.",
)

LAB1_OBJECTIVES = (
    "Measure one camera frame's input pass through the model on the SoC, and how much of the hard "
    "deadline it uses.",
    "Compare a year of perception energy with the one-time energy of validating a release, in Wh.",
    "Compute how many camera frames fit in flight in the SoC's memory beside the weights.",
    "Find the largest batch of frames from unsynchronised cameras that still meets the hard "
    "deadline.",
    "Defend a perception plan against every guardrail -- memory, deadline, accuracy and energy -- "
    "and name the one that binds.",
)

OBJECTIVES = {"lab2": LAB2_OBJECTIVES, "lab1": LAB1_OBJECTIVES}
"""Objectives by lab id; a lab without an entry uses its own (``LabInfo.objectives``)."""

READING = (
    "J. Redmon et al., *You only look once: unified, real-time object detection*, CVPR 2016, and "
    "the Ultralytics YOLOv8 documentation (the detector).",
)
"""Lab 2's scenario reading, after the common reading."""

SHOWN_TERMS: tuple[str, ...] = ()
"""Terms Lab 2's widgets show on this scenario (the glossary defines them too)."""

MEMO_ASK = (
    "whether one frame is compute- or memory-bound and how much of the deadline it uses, the "
    "limit that caps the cameras per SoC, the layout you chose and what its hand-offs cost"
)
"""What the Lab 2 memo recommends, after "recommend the deployment for the track: "."""


FOREIGN: tuple[str, ...] = (*TOKEN_STREAM, BRACKET_PLURAL, r"\bMFCC\b")
"""Words of another deployment's story (regular expressions) that no screen, option or
exercise of this scenario may show: its own nouns are the track's (tested over every
rendered string)."""
