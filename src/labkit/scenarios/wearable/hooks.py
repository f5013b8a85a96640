"""The questions that open each Lab 2 part of a wearable track (``course/labs/lab2.py``
puts them under the part titles), in the track's own terms and numbers."""

from __future__ import annotations

from labkit.core.format import fmt_si, format_bytes
from labkit.course.scaffold import unit_noun
from labkit.physics import edge
from labkit.physics.phases import cnn_inference_time
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track


def hooks(t: Track) -> dict[str, str]:
    """The question that opens each Lab 2 part, from the track's data."""
    hw, m = get_hardware(t.hardware_id), get_model(t.model_id)
    one = unit_noun(t)[0]
    cnn = cnn_inference_time(hw, m, t.weight_bits, 1, mode="peak")
    prof = edge.edge_profile(hw.id)
    link = edge.get_link(prof.offload_links[0]).name if prof and prof.offload_links \
        else "its radio"
    return {
        "A": f"One {one} is one pass of the {m.name}: {fmt_si(float(cnn.flops), 'FLOP')} of "
             f"arithmetic and {format_bytes(float(cnn.bytes_moved))} of weights and "
             f"activations on a {fmt_si(hw.flops(), 'FLOP/s')} microcontroller. Which one "
             "sets its time?",
        "B": f"Weights live in {format_bytes(float(hw.flash_bytes or 0))} of flash, each "
             f"{one} and its activations in {format_bytes(hw.usable_memory_bytes)} of SRAM, "
             f"and the spotter gets {t.budget_text} a day. Which runs out first, and how "
             "often can the ring afford to listen?",
        "C": f"The ring could send the audio, or its features, to the phone over {link}, "
             "and let the phone run the model. Every byte costs radio energy and waiting "
             "for the link costs latency. Where should the pipeline be cut?",
        "D": f"Now meet every budget at once on one ring: energy, memory, the "
             f"{t.slo_s * 1e3:g} ms deadline and how often it listens.",
    }
