"""The questions that open each Lab 2 part of a handheld track (``course/labs/lab2.py``
puts them under the part titles), in the track's own terms and numbers."""

from __future__ import annotations

from labkit.core.format import fmt_si, format_bytes
from labkit.physics import edge
from labkit.registries.hardware import get_hardware
from labkit.tracks import Track


def hooks(t: Track) -> dict[str, str]:
    """The question that opens each Lab 2 part, from the track's data."""
    hw = get_hardware(t.hardware_id)
    links = edge.edge_profile(hw.id)
    names = " or ".join(edge.get_link(x).name for x in (links.offload_links if links
                                                        else ()))
    return {
        "A": f"One user, one conversation: every decode step streams the transformer "
             f"blocks' weights (the paper's roofline leaves the LM head out) "
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
