"""Lab 2 Parts B and C, vehicle scenario: the questions, options and prose templates. Every
number is formatted from a computed field (:mod:`..plan.cameras`); energy per day states
its basis (frames per pass)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labkit import ui as lw
from labkit.core.format import fmt_count, fmt_pct, fmt_time, format_bytes
from labkit.labs.accelerators.base import feedback_map
from labkit.labs.common import CheckSpec, Spec
from labkit.scenarios.vehicle.plan.cameras import CameraPoint, VehicleBatch
from labkit.tracks import Track

LIMIT_TITLES = {"deadline": "Hard deadline missed", "throughput": "SoC overloaded",
                "memory": "Out of memory", "energy": "Over the energy budget",
                "link": "Inter-SoC link saturated"}


def basis(batch: int) -> str:
    """The energy basis: how many frames one pass carries."""
    what = "each frame its own pass" if batch == 1 else f"{fmt_count(batch)} frames per pass"
    return f"batch {fmt_count(batch)}: {what}"


def worst_text(p: CameraPoint) -> str:
    """The worst case in a sentence: a time, or unbounded past a saturated SoC."""
    cl = p.load
    if cl.max_busy >= 1:
        return f"no bounded worst case (the busiest SoC {fmt_pct(cl.max_busy)} busy)"
    return f"a worst case of {fmt_time(cl.worst_latency_s)}"


WORST_BASIS = ("every camera's frame arriving at once, the bound a hard deadline must meet "
               "(Lab 1's simulated stream starts at that instant too)")


def worst_card(p: CameraPoint, slo_s: float) -> tuple[str, str, str, str]:
    """The worst-case latency card; past 100% busy no latency is bounded, so none is
    quoted as one."""
    cl = p.load
    if cl.max_busy >= 1:
        return ("worst-case latency", "unbounded",
                f"the busiest SoC would be {fmt_pct(cl.max_busy)} busy: queues grow without "
                f"end (a single burst takes {fmt_time(cl.worst_latency_s)})", lw.PALETTE["red"])
    return ("worst-case latency", fmt_time(cl.worst_latency_s),
            f"deadline {fmt_time(slo_s)}; {WORST_BASIS}", lw.PALETTE["red"])


def energy_card(p: CameraPoint, budget_text: str) -> tuple[str, str, str, str]:
    """Energy per day with its basis; past 100% busy it is the work demanded, not done."""
    note = f"{basis(p.batch)}; budget {budget_text}"
    if p.load.max_busy > 1:
        note += (f"; work demanded: the SoC can do {fmt_pct(1 / p.load.max_busy)} of it")
    return ("energy", f"{fmt_count(p.daily_wh)} Wh/day", note, lw.PALETTE["teal"])


def walls_text(walls: Sequence[tuple[str, int | None]], top: int) -> str:
    return "; ".join(f"{k} from {fmt_count(x)}" if x is not None
                     else f"{k} not within {fmt_count(top)}" for k, x in walls)


# -- Part B -----------------------------------------------------------------------------------

def b_hook(n: int, fps: float, hw_name: str, frame_s: float, slo_s: float) -> str:
    return (f"{fmt_count(n)} unsynchronised cameras at {fmt_count(fps)} fps feed one "
            f"{hw_name}; a frame takes {fmt_time(frame_s)} and must be done within "
            f"{fmt_time(slo_s)} even when every camera's frame lands at once. How many "
            "cameras can one SoC carry, and what stops it?")


def b_prediction(tr: Track, model_name: str, fps: float) -> Spec:
    q = (f"{lw.esc(tr.label)}: {tr.weight_bits}-bit {lw.esc(model_name)} at "
         f"{fmt_count(fps)} fps per camera on one SoC. Adding cameras one by one, which "
         "limit fails first?")
    return q, [("Deadline: the last of simultaneous frames is late", "deadline"),
               ("Throughput: the SoC is busier than it may be", "throughput"),
               ("Memory: frames in flight no longer fit", "memory"),
               ("Energy: perception exceeds its daily energy budget", "energy")]


def b_checkpoint() -> CheckSpec:
    q = "Why is the worst-case latency of unsynchronised cameras cameras x frame time?"
    opts = [("All cameras can deliver a frame at the same instant; one SoC serves them one "
             "after another", "simultaneous"),
            ("Cameras are synchronised by the vehicle", "synced"),
            ("Frames are batched to the largest batch", "batched"),
            ("It is not: latency is one frame time", "one")]
    good = ("Right: a hard deadline must hold in the worst case, when every camera's frame "
            "arrives together and the last one waits for all the others.")
    bad = ("Not quite: unsynchronised cameras can all deliver at once; the last frame waits "
           "for every other frame served before it.")
    return q, opts, "simultaneous", feedback_map(opts, "simultaneous", good, bad)


def b_details(p: CameraPoint, slo_s: float, max_busy: float, budget_text: str
              ) -> dict[str, str]:
    cl = p.load
    return {
        "deadline": (f"{fmt_count(cl.cameras)} frames at once x {fmt_time(cl.frame_s)} = "
                     f"{fmt_time(cl.worst_latency_s)} vs {fmt_time(slo_s)}"
                     + (", and with the SoC saturated the queue grows without end."
                        if cl.max_busy >= 1 else ".")),
        "throughput": (f"{fmt_count(cl.frames_per_s)} frames/s x {fmt_time(cl.frame_s)} = "
                       f"{fmt_pct(cl.max_busy)} busy vs {fmt_pct(max_busy)}."),
        "memory": (f"Weights + {fmt_count(cl.cameras)} frames in flight with their "
                   f"activations = {format_bytes(p.memory_bytes)} vs "
                   f"{format_bytes(p.usable_bytes)}."),
        "energy": (f"{fmt_count(p.daily_wh)} Wh/day ({basis(p.batch)}"
                   + ("; work demanded, beyond what the SoC can do" if cl.max_busy > 1 else "")
                   + f") vs {budget_text}."),
    }


def b_closest(p: CameraPoint, walls_first: str, at: int | None) -> str:
    """The boundary sentence: the limit closest to its bound on the true ratios."""
    name = p.closest
    return (f"Closest limit: {name} at {fmt_pct(p.ratios[name])} of it; first to fail as "
            f"cameras grow: {walls_first}" + ("" if at is None else f" at {fmt_count(at)}")
            + ".")


def b_batch_note(here: CameraPoint, batched: VehicleBatch, slo_s: float) -> str:
    """Energy per day at batch 1 (shown) beside full batches (what batching could save at
    best; Lab 1's dynamic plan forms smaller batches at this load)."""
    late = batched.wait_s + batched.pass_s > slo_s
    return (f"<p class='labkit-basis'><b>Energy basis:</b> {basis(here.batch)}, "
            f"{fmt_count(here.daily_wh)} Wh/day here. Batching "
            f"{fmt_count(batched.batch)} frames in every pass (full batches, the best "
            f"batching can do) would cost "
            f"{fmt_count(batched.daily_wh)} Wh/day at the default cameras and fps, but with "
            f"frames spread evenly the first of a batch waits {fmt_time(batched.wait_s)} for "
            f"the last, and the pass takes "
            f"{fmt_time(batched.pass_s)}: "
            + (f"past the {fmt_time(slo_s)} deadline" if late
               else f"within the {fmt_time(slo_s)} deadline") + ".</p>")


def b_reveal(computed_line: str, first: str, at: int | None, model_name: str, hw_name: str,
             frame_s: float, slo_s: float, fps: float, walls: str) -> str:
    return (f"{computed_line}<div>{first.capitalize()} fails first"
            + ("" if at is None else f", at {fmt_count(at)} cameras") + ".</div>"
            f"<div style='color:#5d6d7e'>Why: a {lw.esc(model_name)} frame takes "
            f"{fmt_time(frame_s)} on the {lw.esc(hw_name)}, against a {fmt_time(slo_s)} "
            f"deadline. Adding cameras at {fmt_count(fps)} fps, each limit fails at ({walls} "
            "cameras): the deadline and throughput scale with the frames in flight, memory "
            "with the frames held, energy with every frame processed all day long.</div>")


def b_takeaway(p: CameraPoint, first: str, at: int | None) -> str:
    cl = p.load
    return (f"Capacity on the SoC: {fmt_count(cl.cameras)} cameras x {fmt_count(cl.fps)} fps "
            f"have {worst_text(p)} and demand {fmt_count(p.daily_wh)} Wh/day "
            f"({basis(p.batch)}); adding cameras, {first} "
            "fails first" + ("" if at is None else f" at {fmt_count(at)}") + ".")


# -- Part C -----------------------------------------------------------------------------------

def c_hook(socs: int, link_bytes_per_s: float) -> str:
    return (f"The board carries {fmt_count(socs)} SoCs joined by "
            f"{format_bytes(link_bytes_per_s)}/s. A second SoC can take half the cameras "
            "(their frames cross the link) or the second half of the model (every frame's "
            "activations cross it). Which split helps the hard deadline?")


def c_prediction(tr: Track, n: int, fps: float) -> Spec:
    q = (f"{lw.esc(tr.label)}: {fmt_count(n)} cameras at {fmt_count(fps)} fps, "
         f"{tr.weight_bits}-bit. Which layout has the lowest worst-case frame latency?")
    return q, [("One SoC", "single"), ("Two SoCs, cameras split between them", "cameras"),
               ("Two SoCs, the model split between them", "model")]


def c_checkpoint() -> CheckSpec:
    q = ("Why does splitting the model's layers across two SoCs not cut the time of one "
         "frame on its own (no other frame queued ahead of it)?")
    opts = [("Every frame still passes both halves, plus the hand-off and a second fixed "
             "overhead: the split adds throughput, not speed", "pipeline"),
            ("The link is too slow for any data", "link"),
            ("The second SoC is idle", "idle"),
            ("It does: it halves the latency", "halves")]
    good = ("Right: a pipeline overlaps different frames; one frame sees stage A + transfer + "
            "stage B. What it can cut is the queue: with several cameras' frames waiting, the "
            "worst case falls because two frames are in flight at once, as the reveal shows. "
            "Splitting cameras shortens that queue more directly.")
    bad = ("Not quite: one frame still goes through both stages in turn, plus the "
           "activations' hand-off and each stage's overhead.")
    return q, opts, "pipeline", feedback_map(opts, "pipeline", good, bad)


def c_reveal(computed_line: str, labels: Mapping[str, str],
             loads: Mapping[str, CameraPoint]) -> str:
    txt = ", ".join(f"{labels[k]} {fmt_time(v.load.worst_latency_s)}" for k, v in loads.items())
    cams, model, single = loads["cameras"].load, loads["model"].load, loads["single"].load
    cams_faster = cams.worst_latency_s < single.worst_latency_s
    model_faster = model.worst_latency_s < single.worst_latency_s
    return (f"{computed_line}<div>At the defaults: {txt}.</div>"
            "<div style='color:#5d6d7e'>Why: splitting cameras halves the queue of "
            f"simultaneous frames each SoC works through, for one frame transfer of "
            f"{fmt_time(cams.transfer_s)}"
            + ("" if cams_faster else ", which here does not pay for itself")
            + "; splitting the model makes every frame cross the link "
            f"({fmt_time(model.transfer_s)}) and pay the per-pass overhead twice"
            + (", and still comes out ahead of one SoC here" if model_faster else "")
            + ".</div>")


def c_takeaway(label: str, p: CameraPoint, best_label: str) -> str:
    cl = p.load
    return (f"Split: '{label}' with {fmt_count(cl.cameras)} cameras at {fmt_count(cl.fps)} "
            f"fps has {worst_text(p)} and moves "
            f"{format_bytes(cl.link_bytes_per_s)}/s between SoCs; the lowest-latency layout "
            f"there is {best_label}.")


LIMIT_WORDS = {"deadline": "deadline", "throughput": "SoC load cap", "memory": "memory",
               "energy": "energy budget", "link": "inter-SoC link",
               "slowest": "another layout finishes the last frame sooner"}
"""Each limit of Parts B and C as the decision line names it."""


def b_task(tr: Track) -> str:
    """Part B's task: the cameras on one SoC within every limit."""
    return (f"carry the cameras on one SoC with every frame done within {fmt_time(tr.slo_s)}, "
            f"inside its load cap, memory and the {tr.budget_text} a day budget")


def c_task(tr: Track) -> str:
    """Part C's task: the layout that finishes the last simultaneous frame soonest, within
    every limit."""
    return (f"lay the work out so the last of the simultaneous frames is done soonest, "
            f"within {fmt_time(tr.slo_s)}, the load cap, the link and the {tr.budget_text} "
            "a day budget")
