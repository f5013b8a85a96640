"""Lab 2 Part C, fleet scenario: the declarative spec -- questions, options and the prose
templates of the callouts and cards, each filled from a :class:`~..plan.sizing.LayoutEval`
(no number typed here: every one is a computed field through :mod:`labkit.core.format`).
The paper's sentences and tables are in :mod:`.part_c_paper`."""

from __future__ import annotations

from labkit import ui as lw
from labkit.core.format import counted, fmt_count, fmt_time, format_bytes
from labkit.labs.common import CheckSpec, Spec
from labkit.registries.hardware import Hardware
from labkit.scenarios.fleet.plan.sizing import LayoutEval, ParallelismSearch, layout_label
from labkit.tracks import Track

PREDICTION_LAYOUTS = ("TP2", "TP4", "TP8", "PP4", "TP2 x PP2")
RULE_OF_THUMB = "TP8"
"""The layout a fixed rule of thumb picks, whatever the workload (a misconception option)."""


def hook() -> str:
    return ("Memory decides whether a layout fits; after that the question is which "
            "communication is left exposed. Pick the problem you see, add the axis the "
            "paper reaches for first, and watch what each axis sends on which link.")


def prediction(track: Track, hw: Hardware, batch: int, context: int, expected: str) -> Spec:
    """The question; the rule-of-thumb label only on an option that is not the answer."""
    q = (f"{lw.esc(track.label)}: {fmt_count(batch)} sequences at {fmt_count(context)} "
         f"tokens, {track.weight_bits}-bit weights, each decode step (every sequence's TPOT) "
         f"within {fmt_time(track.slo_s)} on {lw.esc(hw.name)} devices ({hw.domain_size} per "
         "fast domain). Which layout uses the fewest devices (labkit's search)?")
    return q, [(lab + (f" (the 'always start at {RULE_OF_THUMB}' rule of thumb)"
                       if lab == RULE_OF_THUMB and lab != expected else ""), lab)
               for lab in PREDICTION_LAYOUTS]


def checkpoint() -> CheckSpec:
    q = "When should you stop adding tensor parallelism?"
    opts = [("When its all-reduces dominate the step, it would leave the fast "
             "domain, or past the KV heads", "stop_rule"),
            ("Never: more TP always lowers latency", "never"),
            (f"Always at {RULE_OF_THUMB} (a fixed rule of thumb)", "tp8"),
            ("As soon as the weights fit", "fits")]
    good = ("Right: TP's all-reduce volume per token does not shrink with the degree, only "
            "the compute does; across the slow link or past the KV heads it stops paying. "
            "Start from the smallest TP that fits and meets latency, then measure.")
    bad = ("Not quite: every TP rank all-reduces the full activation twice per layer; "
           "past the fast domain or the KV heads, more TP costs more than it saves.")
    return q, opts, "stop_rule", {v: (good if v == "stop_rule" else bad) for _, v in opts}


def symptom_present(sr: ParallelismSearch | None, hw: Hardware) -> str:
    if sr is None:
        return "No layout up to the device cap fixes this workload."
    c = sr.chosen
    return (f"labkit's fewest-device fix is {layout_label(c.degrees)} ("
            f"{counted(c.devices, 'device')}, step {fmt_time(c.per_token_latency_s)}"
            + (", beyond one fast domain" if c.devices > hw.domain_size else "") + ").")


def diagnosis(lay: LayoutEval, sr: ParallelismSearch | None, hw: Hardware,
              memory_basis: str) -> str:
    """The symptom's first axis, and the next layout along it only when it is one
    (``memory_basis``: the served device's memory in words, as the plans count it)."""
    m, p = lay.model, lay.preset
    if p.axis == "ep" and not m.is_moe:
        return (f"{lw.esc(m.name)} is dense: every token uses every FFN weight, so there are "
                "no experts to shard. Pick a mixture-of-experts model to see EP.")
    ax = p.axis.upper()
    c2 = lay.next_config
    if c2 is None:
        nxt = (f" Doubling {ax} from {layout_label(lay.degrees)} is not a layout: "
               f"{lw.esc(lay.next_reason)}.")
    else:
        fit = ("" if c2.fits else
               f", which does not fit the {memory_basis}")
        nxt = (f" Adding {ax} here gives {layout_label(lay.next_degrees)}: step "
               f"{fmt_time(c2.per_token_latency_s)}, {format_bytes(c2.used_bytes)} per "
               f"device{fit}.")
    return symptom_present(sr, hw) + nxt


STEP_BASIS = "every sequence at the full context, communication included"
"""How Part C's step is counted (Lab 1's TPOT: the mean context, no collective)."""


def cards(lay: LayoutEval, sr: ParallelismSearch | None,
          memory_basis: str) -> list[tuple[str, str, str, str]]:
    c, p = lay.config, lay.preset
    return [
        ("workload", f"{fmt_count(p.batch)} x {fmt_count(p.context)} tokens",
         f"{lay.model.name}, TPOT ≤ {fmt_time(p.slo)}", lw.PALETTE["grey"]),
        ("your layout", layout_label(lay.degrees), counted(lay.devices, "device"),
         lw.PALETTE["blue"]),
        ("memory", "—" if c is None else format_bytes(c.used_bytes),
         f"of {memory_basis}", lw.PALETTE["purple"]),
        ("step (each sequence's TPOT)", "—" if c is None else fmt_time(c.per_token_latency_s),
         "—" if c is None else
         f"{STEP_BASIS}; per token (step / B) {fmt_time(lay.per_token_s)}; comm "
         f"{fmt_time(c.comm_s)}"
         + ("" if c.fits else "; not reachable: the layout does not fit memory"),
         lw.PALETTE["orange"]),
        ("labkit's fewest", "none fits" if sr is None else layout_label(sr.chosen.degrees),
         "" if sr is None else f"{counted(sr.chosen.devices, 'device')}, decode only (no prefill)",
         lw.PALETTE["green"]),
    ]


def oom_detail(lay: LayoutEval, memory_basis: str) -> str:
    c = lay.config
    if c is None:
        return ""
    return (f"{format_bytes(c.weights_bytes)} weights + {format_bytes(c.kv_bytes)} KV + "
            f"{format_bytes(c.transient_bytes)} transient = {format_bytes(c.used_bytes)} of "
            f"{memory_basis}.")


def slo_detail(lay: LayoutEval) -> str:
    c = lay.config
    if c is None:
        return ""
    return (f"Decode step {fmt_time(c.per_token_latency_s)} (each sequence gains one token "
            f"per step, so this is its TPOT before any prefill) vs {fmt_time(lay.preset.slo)}.")


def comm_detail(lay: LayoutEval) -> str:
    c = lay.config
    if c is None:
        return ""
    return (f"{fmt_time(c.comm_s)} of communication vs {fmt_time(c.roofline_s)} of compute "
            "and memory in each step.")


def kv_heads_detail(lay: LayoutEval) -> str:
    return (f"TP{lay.degrees[0]} > {lay.model.kv_heads} KV heads: each head is replicated, so "
            "KV memory per device stops shrinking (an efficiency limit, not a correctness "
            "one).")


def scaleout_detail(hw: Hardware) -> str:
    return (f"Beyond {hw.domain_size} devices traffic leaves the fast domain "
            f"({format_bytes(hw.interconnect_bandwidth)}/s) for the network "
            f"({format_bytes(hw.scaleout_bandwidth)}/s), paying its latency per message.")


def boundary(lay: LayoutEval, sr: ParallelismSearch | None) -> tuple[str, str]:
    extra = "" if sr is None else (
        f"; labkit's fewest-device layout is {layout_label(sr.chosen.degrees)} "
        f"({counted(sr.chosen.devices, 'device')})")
    pre = lay.prefill
    if pre is None:
        colocated = ""
    elif pre.ttft_missed or pre.disaggregate:   # a callout below says what prefill does
        colocated = " (prefill on the same replica is the callout below)"
    else:
        colocated = (f"; with prefill on the same replica the mean TPOT is "
                     f"{fmt_time(pre.tpot_colocated_s)}, still within it")
    return (f"{layout_label(lay.degrees)} fits and its decode-only step meets the TPOT "
            f"budget{colocated}", f"{counted(lay.devices, 'device')}{extra}.")


def reveal(sr: ParallelismSearch | None, layout: str, devices: int) -> str:
    frontier = "" if sr is None else ", ".join(
        f"{layout_label(c.degrees)} (step {fmt_time(c.per_token_latency_s)})"
        for c in sr.frontier[:4])
    return (("" if sr is None else f"<div>The frontier: {frontier}.</div>")
            + f"<div>Your layout: <b>{layout}</b> ({counted(devices, 'device')}).</div>"
            "<div style='color:#5d6d7e'>Why: the smallest TP that fits memory and meets "
            "latency wins on devices; a wider TP is faster but uses more devices. Rank axes "
            "by how much they communicate per unit of compute and keep the chattiest on the "
            "fastest link.</div>")


def takeaway(label: str, model: str, axis: str, layout: str, devices: int, status: str,
             chosen: str) -> str:
    return (f"Parallelism: for '{label}' on {model} the first axis is {axis.upper()}; your "
            f"{layout} ({counted(devices, 'device')}) {status}; labkit's fewest-device layout is "
            f"{chosen}.")


def status(candidate: bool, fits: bool | None, meets: bool | None) -> str:
    if not candidate:
        return "not a possible layout"
    return (("fits" if fits else "does not fit")
            + (" and its step meets" if meets else " and its step misses") + " the TPOT budget")


C_LIMIT_WORDS = {"oom": "memory", "slo": "TPOT", "ttft": "TTFT"}
"""The limits Part C's task keeps (its checks), as the decision line names them."""

C_TASK = ("the layout with the fewest devices that fits memory and keeps the TPOT budget and "
          "the first-token limit, for the problem you picked")
C_START_NOTE = "The controls start at one device per replica (every degree 1)."
