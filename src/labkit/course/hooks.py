"""The question that opens each part of a Lab 2 notebook, per deployment scenario (fleet,
handheld, wearable, vehicle), in the track's own terms and numbers (``course/labs/lab2.py``
puts them under the part titles)."""

from __future__ import annotations

from labkit.core.format import fmt_si, format_bytes
from labkit.course.scaffold import unit_noun
from labkit.physics import edge
from labkit.physics.phases import cnn_inference_time
from labkit.plans.design import cameras_and_fps, fleet_users, scenario
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track


def lab2_hooks(t: Track) -> dict[str, str]:
    """The question that opens each part, from the track's data and its scenario."""
    hw, m = get_hardware(t.hardware_id), get_model(t.model_id)
    sc = scenario(t)
    one = unit_noun(t)[0]
    if sc == "fleet":
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
    if sc == "handheld":
        links = edge.edge_profile(hw.id)
        names = " or ".join(edge.get_link(x).name for x in (links.offload_links if links
                                                            else ()))
        return {
            "A": f"One user, one conversation: every decode step streams all the weights "
                 f"through {fmt_si(hw.memory_bandwidth, 'B/s')} of memory bandwidth and reads "
                 "the conversation's KV cache. Which term sets the phone's speed?",
            "B": f"The app gets {format_bytes(hw.usable_memory_bytes)} of memory. A longer "
                 "conversation grows the KV cache and every step's time: which limit does it "
                 "hit first — memory, TPOT, TTFT or the battery?",
            "C": f"The phone could send the prompt to a cloud model over {names or 'a radio'}. "
                 "When does the radio cost less battery than answering on the phone, and what "
                 "does it cost in latency?",
            "D": "Now meet every target on one phone: memory, latency and battery at once.",
        }
    cnn = cnn_inference_time(hw, m, t.weight_bits, 1, mode="peak")
    if sc == "wearable":
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
