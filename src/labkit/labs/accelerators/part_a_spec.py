"""Lab 2 Part A (transformer): the declarative side -- questions, options, feedback, and
the prose templates of the hook, readout cards, callouts, reveal and takeaway. Every
number comes from a plans result (:class:`~labkit.plans.roofline.DecodeView`,
:class:`~labkit.plans.roofline.PaperExample`) through :mod:`labkit.core.format`; every
conditional sentence is chosen by a predicate on those fields."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labkit import ui as lw
from labkit.core.format import counted, fmt, fmt_count, fmt_pct, fmt_time, format_bytes
from labkit.labs.accelerators.base import feedback_map, paper_ms, thousands, tokens_label
from labkit.labs.common import CheckSpec, Spec
from labkit.plans.moves import Move
from labkit.plans.roofline import STALL, Balance, DecodeView
from labkit.plans.roofline_sweeps import PaperExample
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model
from labkit.tracks import Track

PREDICTION_OPTIONS = [
    ("Memory-bound: fetching the weights dominates", "memory-bound"),
    ("Compute-bound: the matrix multiplies dominate", "compute-bound"),
    ("KV-bound: reading every sequence's KV cache dominates", "kv-bound"),
]
CHECKPOINT_OPTIONS = [
    ("When B*/B is small next to 1 + S/L*: the weight share is the only one a bigger batch "
     "divides", "weight_share"),
    ("As soon as the context passes L*", "past_l_star"),
    ("Never: twice the sequences share the same weights, so it always halves", "never"),
    ("Once the step is memory-bound", "memory_bound"),
]
VIEW_OPTIONS = [("per token (step ÷ B)", "token"), ("per step", "step")]
MODE_OPTIONS = [("peak (paper)", "peak"), ("achievable (real system)", "achievable")]
Card = tuple[str, str, str, str]


def device_options(hw: Hardware, paper_hw: Hardware, tp: int) -> list[tuple[str, str]]:
    """The device toggle: the track's replica, or the paper's single PE (section 5.1)."""
    return [(f"{hw.name} (track, {tp} per replica)", "track"),
            (f"one {paper_hw.name}, §5.1", "paper")]


def paper_context_options(options: Sequence[tuple[str, int]], model: Model
                          ) -> list[tuple[str, int]]:
    """The paper's context options, each past the model's window saying so."""
    return [(label if v <= model.max_context else
             f"{tokens_label(v)} (past the model's window)", v) for label, v in options]


def hook(model: Model, hw: Hardware, bal: Balance, batch: int, context: int) -> str:
    return (f"{model.name} decodes on {hw.name}. At {bal.b_label} = {bal.b_star:,.0f} "
            "sequences a step's compute catches up with its weight fetch; at "
            f"{bal.l_label} = {bal.l_star:,.0f} tokens a sequence's own KV read catches up "
            f"with its compute. Where does the track's operating point, "
            f"{counted(batch, 'sequence')} at {context:,} tokens, sit?")


def prediction_spec(tr: Track, hw: Hardware, batch: int, context: int, tp: int) -> Spec:
    q = (f"{lw.esc(tr.label)}: one decode step of {counted(batch, 'sequence')} at "
         f"{context:,} tokens of context, {fmt_count(tr.weight_bits)}-bit weights and "
         f"{fmt_count(tr.kv_bits)}-bit KV on {fmt_count(tp)} x {lw.esc(hw.name)} (peak "
         "roofline). Which term of the step is the largest?")
    return q, list(PREDICTION_OPTIONS)


def checkpoint_spec(ex: PaperExample) -> CheckSpec:
    """The stall rule, with the paper's PE as the worked case (peak, analytic)."""
    q = ("Per generated token (step ÷ B), in units of one token's compute, a decode step "
         "costs B*/B + 1 + S/L* (weight fetch + compute + KV read). When does doubling the "
         "batch stop paying?")
    short, long = ex.contexts
    lo, hi = ex.batches
    t_long = ex.per_token_s[long]
    good = (f"Right: doubling B saves (B*/2B) / (B*/B + 1 + S/L*), under {fmt_pct(STALL)} "
            "once B > 4 B*/(1 + S/L*). Long context only lowers that batch: on the paper's "
            f"PE ({ex.mode}, analytic; B* = {fmt(ex.b_star, sig=4)}) B = {fmt_count(lo)} → "
            f"{fmt_count(hi)} cuts the time per token {fmt(ex.gain(short), sig=2)}x at "
            f"{tokens_label(short)} tokens but {fmt_pct(1 - t_long[1] / t_long[0], sig=2)} at "
            f"{tokens_label(long)} ({long / ex.l_star:.0f} L*).")
    bad = ("Not quite: per token = B*/B + 1 + S/L*. Only the weight share B*/B falls with "
           "B, so doubling stops paying once that share is small next to 1 + S/L*, past "
           "L* or not.")
    opts = list(CHECKPOINT_OPTIONS)
    return q, opts, "weight_share", feedback_map(opts, "weight_share", good, bad)


def cards(v: DecodeView, hw_name: str) -> list[Card]:
    """The readout: regime, B*, L*, knee, per token and step, batching gain."""
    bal, pt, g = v.balance, v.point, v.gain
    knee = v.knee_batch
    return [
        ("regime", str(pt.regime), f"{v.mode} roofline, {fmt_count(v.tp)} x {hw_name}",
         lw.PALETTE["red"]),
        (bal.b_label, f"{fmt(bal.b_star, sig=4)}",
         f"critical batch, {fmt_count(bal.weight_bits)}-bit weights", lw.PALETTE["blue"]),
        (bal.l_label, f"{bal.l_star:,.0f} tokens",
         f"{fmt_count(bal.kv_bits)}-bit KV; {thousands(bal.l_star)}", lw.PALETTE["purple"]),
        (f"knee ({v.mode})", "none (S ≥ L*)" if knee is None else f"B = {knee:,.0f}",
         f"B*/(1 − S/L*); per token KV {fmt_time(float(pt.kv_s))} vs compute "
         f"{fmt_time(float(pt.compute_s))}", lw.PALETTE["green"]),
        ("per token (step ÷ B)", paper_ms(v.per_token_s),
         f"step {fmt_time(v.step_s)} · {fmt_count(float(pt.tokens_per_s))} tokens/s",
         lw.PALETTE["orange"]),
        ("batching gain here", "n/a" if g.batch_to is None else f"{fmt(g.gain)}x",
         f"{g.label} at {v.context_tokens:,} tokens", lw.PALETTE["teal"]),
    ]


def paper_card(ex_t: tuple[float, float], batches: tuple[int, int], context: int,
               mode: str) -> Card:
    """The paper's B = 1 -> 256 pair at the context on screen (one PE, analytic)."""
    t1, t2 = ex_t
    lo, hi = batches
    cut = (f"time per token cut {fmt(t1 / t2, sig=2)}x" if t1 / t2 >= 2
           else f"time per token cut {fmt_pct(1 - t2 / t1, sig=2)}")
    return (f"paper §5.1: B = {fmt_count(lo)} → {fmt_count(hi)}",
            f"{paper_ms(t1)} → {paper_ms(t2)}",
            f"{cut} at {context:,} tokens ({mode}; analytic, one PE)", lw.PALETTE["grey"])


def window_text(model: Model, context: int) -> tuple[str, str]:
    return (f"Past {model.name}'s {model.max_context:,}-token window",
            f"{context:,} tokens is {fmt(context / model.max_context)}x the context the model "
            "was trained for. The paper evaluates it analytically (the roofline arithmetic "
            "holds for any S); a deployment would need a model trained that far.")


def floor_text(v: DecodeView) -> str:
    """What sets the per-token floor here: the KV read (past L*) or compute."""
    if v.kv_share > 1:
        return (f"The KV read is the floor here (S/L* = {fmt(v.kv_share)} > 1): fewer KV "
                "bytes (a lower KV precision, GQA/MLA) or context parallelism lower it.")
    return ("Compute is the floor here: more FLOP/s (or fewer weights per token) lower it; "
            "batching does not.")


def doubling_blocked(v: DecodeView) -> str:
    """Why no saving of doubling the batch is quoted (``v.doubling_block``): 2B does not fit
    memory, or is past the slider ("" when 2B is a setting that fits)."""
    b, b2 = fmt_count(v.batch), fmt_count(v.doubled_batch)
    if v.doubling_block == "memory":
        most = ("" if v.most_fit is None or v.most_fit <= v.batch else
                f"; memory holds at most {fmt_count(v.most_fit)} sequences of this context, "
                "between the slider's batches")
        return (f"doubling the batch to B = {b2} would not fit memory "
                f"({format_bytes(v.doubled_used_bytes)} of "
                f"{format_bytes(v.memory.capacity_bytes)} per device), so B = {b} is the "
                f"last of the slider's batches that fits at this context{most}")
    if v.doubling_block == "slider":
        return f"B = {b} is the largest batch the slider offers"
    return ""


def stall_text(v: DecodeView) -> tuple[str, str]:
    w, k, o = v.weight_share, v.kv_share, v.overhead_share
    divided = _divided(v)
    g = v.gain
    gain = ("" if g.batch_to is None else
            f" Batching ({g.label}) cuts the time per token {fmt(g.gain)}x at this context.")
    blocked = doubling_blocked(v)
    return (f"Batching has stalled: {blocked}" if blocked else
            f"Batching has stalled: doubling the batch saves {v.doubling_saving:.0%} per "
            "token",
            f"Per token (step ÷ B), in units of one token's compute: {fmt(w)} (weight fetch) "
            f"+ 1 (compute) + {fmt(k)} (KV read)"
            + (f" + {fmt(o)} ({_o_name(v)})" if o > 0 else "")
            + f"; a bigger batch divides only the {divided}.{gain} " + floor_text(v)
            + " Past this point the batch is set by the SLO and memory, not by speed per "
              "token.")


def _o_name(v: DecodeView) -> str:
    """The last per-token term's name, as the math peek names it."""
    return "overhead and TP comm" if float(v.point.comm_s) > 0 else "overhead"


def _divided(v: DecodeView) -> str:
    """The per-token terms a bigger batch divides, named as the math peek names them."""
    if float(v.point.comm_s) > 0:
        return "weight fetch, overhead and TP comm"
    return "weight fetch and overhead" if v.overhead_share > 0 else "weight fetch"


def boundary_text(v: DecodeView) -> tuple[str, str]:
    w, k, o = v.weight_share, v.kv_share, v.overhead_share
    divided = _divided(v)
    pt, mem = v.point, v.memory
    if v.knee_batch is None:
        knee = ""
    elif v.overlapped:
        knee = (f"Compute ({fmt_time(float(pt.compute_step_s))} per step) already outlasts "
                "all memory traffic (weights + KV); ")
    else:
        knee = (f"Compute would outlast all memory traffic only from the knee, B ≈ "
                f"{v.knee_batch:,.0f} ({v.mode}); ")
    shares = f"the {divided} share {fmt(w + o)} against the floor 1 + S/L* = {fmt(1 + k)}"
    blocked = doubling_blocked(v)
    pays = (f"Batching stops here: {blocked} ({shares}). " if blocked else
            f"Batching still pays here: doubling the batch would save "
            f"{v.doubling_saving:.0%} per token ({shares}). ")
    return (f"{str(pt.regime).capitalize()} and within the limits",
            pays + knee
            + f"memory {format_bytes(float(mem.used_bytes))} of "
              f"{format_bytes(mem.capacity_bytes)} per device at B = {v.batch:,}.")


def _doubling_reveal(r: Mapping[str, Any]) -> str:
    """The reveal's doubling clause: the saving only where 2B is a setting that fits."""
    b2 = fmt_count(int(r["doubled_batch"]))
    if r["doubling_block"] == "memory":
        return (f"at your settings doubling the batch to B = {b2} would not fit memory, so "
                "the batch is set by memory, not by speed per token")
    if r["doubling_block"] == "slider":
        return f"your batch is the largest the slider offers (B = {b2} is past it)"
    return (f"doubling the batch saves {float(r['doubling_saving']):.0%} per token at your "
            "settings")


def reveal_body(computed_line: str, d: DecodeView, r: Mapping[str, Any]) -> str:
    """The reveal: the defaults' terms, your point, and why (from the results)."""
    parts = ", ".join(f"{t.label} {fmt_time(t.step_s)}" for t in d.step_terms[:3])
    terms = [f"{lw.esc(str(label))} (+{fmt_time(float(sec))})"
             for label, sec in r["largest_derating_terms"]]
    largest = ("" if not terms else
               f"; its largest derating term{'s' if len(terms) > 1 else ''}: "
               f"{' and '.join(terms)}")
    return (f"{computed_line}"
            f"<div>At the defaults one step spends {parts}.</div>"
            f"<div>With your settings: <b>{r['regime']}</b> ({r['mode']}, "
            f"{lw.esc(str(r['hardware']))}), {fmt_time(float(r['per_token_s']))} per token "
            f"(step ÷ B; the step {fmt_time(float(r['step_s']))}).</div>"
            "<div style='color:#5d6d7e'>Why: the weights are read once per step whatever "
            "the batch, so their share of the time per token, B*/B, falls as the batch "
            "grows; every sequence reads its own KV, a share S/L* no batch divides; "
            "compute's share is one token's compute. Batching pays while B*/B is large next "
            f"to 1 + S/L*: {_doubling_reveal(r)}. Real systems sit above the roofline: "
            f"achievable is {fmt(float(r['achievable_over_peak']), sig=2)}x the peak step "
            f"here{largest}; {lw.esc(str(r['real_systems']))}.</div>")


def takeaway(r: Mapping[str, Any]) -> str:
    mode = r["mode"]
    gain = (f"batching ({r['batching_gain_span']}) cuts the per-token time (step ÷ B) "
            f"{fmt(r['batching_gain'])}x at this context" if r["batching_gain"] is not None
            else "no batch fits memory at this context")
    return (f"Roofline: at {counted(r['batch'], 'sequence')} and {r['context_tokens']:,} "
            f"tokens the step is {r['regime']} ({mode}, {r['hardware']}); B* ({mode}, "
            f"{r['weight_bits']}-bit weights) = {fmt(r['b_star'], sig=4)}, L* ({mode}, "
            f"{r['kv_bits']}-bit KV) = {r['l_star']:,.0f} tokens; {gain}.")


def _value(key: str, value: object) -> str:
    n = float(str(value))   # a move's value: an option of an integer control
    if key == "context":
        return f"{fmt_count(n)} tokens"
    return f"{fmt_count(n)}-bit" if key.endswith("_bits") else fmt_count(n)


def hint(fixes: tuple[Move, ...], labels: Mapping[str, str]) -> str:
    """A recovery hint naming only controls on screen that, moved alone, pass the check
    (:func:`labkit.plans.roofline.decode_fixes` re-ran it at each move)."""
    if not fixes:
        return "no single control on this screen fixes it"
    moves = [f"{labels[f.control]} → {_value(f.control, f.value)}" for f in fixes]
    return "move one control: " + (moves[0] if len(moves) == 1 else
                                   ", or ".join([", ".join(moves[:-1]), moves[-1]]))


def paper_oom(paper: bool) -> str:
    return (" On one PE: the paper reads B* and L* off a single PE, and both are ratios of "
            "its FLOP/s to its bandwidth, whatever its memory holds; Part B sizes how many "
            "PEs hold the model." if paper else "")


def slo_text(v: DecodeView, slo_s: float) -> str:
    return (f"One step of {fmt_count(v.batch)} sequences takes {fmt_time(v.step_s)} "
            f"({v.mode}); every sequence waits a whole step per token (its TPOT in steady "
            f"decode), against {fmt_time(slo_s)}.")
