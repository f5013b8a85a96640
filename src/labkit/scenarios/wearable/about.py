"""What the wearable scenario says about itself, plain text for every layer: its
learning objectives per lab, its reading, the terms its Lab 2 widgets show and the
memo's topics. (A ring that listens in audio windows on a microcontroller.)"""

from __future__ import annotations

from labkit.core.vocabulary import BRACKET_PLURAL, TOKEN_STREAM

LAB2_OBJECTIVES = (
    "Place the model on the classic roofline: compute-bound at a tiny FLOP/s.",
    "Fit weights in flash and windows in SRAM; trade duty cycle for battery life.",
    "Cut the pipeline between ring and phone: compute vs BLE bytes vs the deadline.",
    "Design within the energy, memory, deadline and coverage budgets.",
)

LAB1_OBJECTIVES = (
    "Split one audio window's work into the input pass through the model and the short pass that "
    "slides the window buffer and writes the decision, and say which one takes most of the "
    "window's time.",
    "Find when the energy of listening all day overtakes the one-time energy of personalising the "
    "model, in mWh.",
    "Compute how many audio windows fit in SRAM while the weights stay in flash.",
    "Decide whether batching windows that arrive on a fixed clock can ever meet the detection "
    "deadline.",
    "Defend a listening plan against every guardrail -- memory, deadline, accuracy and energy -- "
    "and name the one that binds.",
)

OBJECTIVES = {"lab2": LAB2_OBJECTIVES, "lab1": LAB1_OBJECTIVES}
"""Objectives by lab id; a lab without an entry uses its own (``LabInfo.objectives``)."""

READING = (
    "Y. Zhang et al., *Hello Edge: keyword spotting on microcontrollers*, arXiv:1711.07128, 2017 "
    "(the DS-CNN spotter).",
    "C. Banbury et al., *MLPerf Tiny benchmark*, NeurIPS Datasets and Benchmarks 2021 (keyword "
    "spotting on microcontrollers, measured).",
)
"""Lab 2's scenario reading, after the common reading."""

SHOWN_TERMS: tuple[str, ...] = ()
"""Terms Lab 2's widgets show on this scenario (the glossary defines them too)."""

MEMO_ASK = (
    "whether one window is compute- or memory-bound and how busy the ring is, the budget that "
    "limits how often it listens, where you cut the pipeline between ring and phone and what "
    "the radio costs"
)
"""What the Lab 2 memo recommends, after "recommend the deployment for the track: "."""


FOREIGN: tuple[str, ...] = (*TOKEN_STREAM, BRACKET_PLURAL, r"\bcameras?\b")
"""Words of another deployment's story (regular expressions) that no screen, option or
exercise of this scenario may show: its own nouns are the track's (tested over every
rendered string)."""
