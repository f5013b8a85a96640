"""The questions that open each Lab 2 part of a vehicle track (``course/labs/lab2.py``
puts them under the part titles), in the track's own terms and numbers."""

from __future__ import annotations

from labkit.plans.design import cameras_and_fps
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track


def hooks(t: Track) -> dict[str, str]:
    """The question that opens each Lab 2 part, from the track's data."""
    hw, m = get_hardware(t.hardware_id), get_model(t.model_id)
    n, fps = cameras_and_fps(t)
    return {
        "A": f"Each camera frame is one pass of {m.name} on {hw.name}. Is it compute-bound or "
             f"memory-bound, and how much of the {t.slo_s * 1e3:g} ms deadline does one frame "
             "use?",
        "B": f"{n} cameras at {fps:g} frames per second land on one SoC: how many can it carry "
             f"within the hard deadline, its throughput, its memory and {t.budget_text} of "
             "energy a day?",
        "C": f"The board carries {t.max_replicas or 1} SoCs. A second SoC can take half the "
             "cameras or the second half of the model; either way it still runs its share of "
             "the inference after the hand-off. Which split helps the hard deadline?",
        "D": "Now meet the target: the fewest SoCs that never miss a frame.",
    }
