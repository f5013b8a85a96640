"""Lab 2's instructor material for handheld tracks: Part C's cloud hand-off exercise, Part D's extra requirement and search grid, and the memo's key (Part B uses the language-model exercise of the lab spec). Hidden tests live here,
never in the installed package; ``course/labs/lab2.py`` loads this file for a track whose
scenario folder is ``labkit/scenarios/handheld/``."""

from __future__ import annotations

from labkit.course.scaffold import Exercise, Requirement
from labkit.course.scaffold import literal as _lit
from labkit.physics import edge
from labkit.scenarios.handheld.plan.device import handheld_handoff
from labkit.tracks import Track


def exercise_c(t: Track, points: int) -> Exercise:
    f = handheld_handoff(t)
    lk = edge.get_link(edge.edge_profile(t.hardware_id).offload_links[0])  # type: ignore[union-attr]
    want = (f["local"] - f["wake"] - f["rtt"] - f["server"]) * f["up"]
    if want <= 0:
        raise ValueError(f"track {t.id!r}: the cloud never answers sooner in Exercise C")
    statement = f"""
Instead of answering on the phone, the app could send the prompt to a cloud model over
{lk.name}. The cloud still has to run the model: the hand-off takes the radio's wake-up, a
round trip, the upload (bytes / uplink bandwidth) **and** the server's own time for the
whole {t.output_tokens}-token reply (its TTFT plus one TPOT per further token). **What is the
largest upload, in bytes, for which the hand-off still delivers the whole reply sooner than
answering on the phone?** Store it in `answer_C`.
"""
    data = f"""
# Part C numbers for this track (read-only)
LOCAL_S = {_lit(f["local"])}  # the whole request on the phone, achievable roofline
WAKE_S = {_lit(f["wake"])}  # radio promotion from idle
RTT_S = {_lit(f["rtt"])}  # round trip to the cloud region
UPLINK_BYTES_PER_S = {_lit(f["up"])}
SERVER_S = {_lit(f["server"])}  # server TTFT + (output tokens - 1) x server TPOT
"""
    solution = "answer_C = (LOCAL_S - WAKE_S - RTT_S - SERVER_S) * UPLINK_BYTES_PER_S"
    hidden = f"""
from labkit.grading import expect_close
expect_close("answer_C", answer_C, {_lit(want)}, "C", rel=0.01,
             revisit="hand-off = wake + RTT + bytes / uplink + server time; set it equal to the phone's time")
"""
    visible = ('expect_number("answer_C", answer_C, "C", at_most=LOCAL_S * '
               'UPLINK_BYTES_PER_S,\n              why="in bytes: the uplink carries at most '
               'this while the phone would run the whole request")')
    return Exercise(statement, data, "answer_C", solution, visible, hidden, points,
                    mistakes=("answer_C = 8 * (LOCAL_S - WAKE_S - RTT_S - SERVER_S) * "
                              "UPLINK_BYTES_PER_S",))


EXTRA: tuple[Requirement, ...] = (
    ("long conversations keep the KV cache at 16 bits (`kv_bits = 16`)",
     'design_D.get("kv_bits") == 16', lambda cfg: cfg["kv_bits"] == 16),
)
"""Part D's extra requirement candidates, in order (text, hidden-test predicate, filter)."""


def grid(t: Track) -> list[dict[str, object]]:
    """Every design Part D's exercise searches."""
    bits = (4, 8, 16)
    return [dict(weight_bits=w, kv_bits=k, context_tokens=t.context_tokens)
            for w in bits for k in bits]


MEMO_KEY = ("A strong memo quotes B* or L* (decode is memory-bound at batch 1), names the "
            "first limit with its number, prices the hand-off against the phone's own time "
            "and energy, and connects the Lab 1 precision to memory and battery.")
