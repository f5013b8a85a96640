"""Lab 2's instructor material for fleet tracks: Part D's extra requirements and search grid, and the memo's key (Parts B and C use the language-model exercises of the lab spec). Hidden tests live here,
never in the installed package; ``course/labs/lab2.py`` loads this file for a track whose
scenario folder is ``labkit/scenarios/fleet/``."""

from __future__ import annotations

from labkit.course.scaffold import Requirement
from labkit.tracks import Track

EXTRA: tuple[Requirement, ...] = (
    ("the quality team keeps the KV cache at 16 bits (`kv_bits = 16`)",
     'design_D.get("kv_bits") == 16', lambda cfg: cfg["kv_bits"] == 16),
    ("the quality team keeps the weights at 16 bits (`weight_bits = 16`)",
     'design_D.get("weight_bits") == 16', lambda cfg: cfg["weight_bits"] == 16),
    ("a replica stays inside half an NVLink node (`tp` at most 4)",
     'int(design_D.get("tp", 0)) <= 4', lambda cfg: int(cfg["tp"]) <= 4),  # type: ignore[call-overload]
)
"""Part D's extra requirement candidates, in order (text, hidden-test predicate, filter)."""
DEVICE_NOUN = "GPUs"  # the device count varies: Part D asks for near the fewest


def grid(t: Track) -> list[dict[str, object]]:
    """Every design Part D's exercise searches."""
    bits = (4, 8, 16)
    p2 = (1, 2, 4, 8, 16, 32, 64)
    return [dict(weight_bits=w, kv_bits=k, tp=tp, cp=1, pp=pp, dp=dp, ep=1)
            for w in bits for k in bits for tp in p2[:4] for pp in (1, 2, 4) for dp in p2]


MEMO_KEY = ("A strong memo quotes B* or L* for the regime, names the binding axis with its "
            "device count, justifies the parallel split by the link it crosses, and connects "
            "the Lab 1 precision choice to B* or the KV headroom.")
