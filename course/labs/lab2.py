"""Lab 2 -- Accelerators: the one source of truth for all four track notebooks.

Roofline (B*, L*, short vs long context), three-axis capacity planning, parallelism
selection and a design challenge, from the paper section in shared/reference. Exercise
numbers are computed here at build time and written into the notebook; hidden tests
recompute answers with labkit. Instructor material: not installed with labkit.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from nbformat import NotebookNode

from labkit import scenarios as folders
from labkit.core.format import counted, fmt_count, fmt_num, fmt_time
from labkit.course import cells as c
from labkit.course.hooks import lab2_hooks as hooks
from labkit.course.scaffold import (
    Exercise,
    Requirement,
    checkpoint_answers,
    finish,
    header_cells,
    literal,
    notebook_title,
    part_cells,
    synthesis_cells,
    unit_noun,
)
from labkit.labs.accelerators.info import INFO
from labkit.labs.parts import PARTS
from labkit.physics.parallelism import tp_allreduce_messages
from labkit.physics.phases import cnn_inference_time
from labkit.physics.roofline import decode_roofline
from labkit.plans.design import (
    DESIGN_MODE,
    scenario,
)
from labkit.plans.serving import track_capacity
from labkit.plans.workload import front_end_s
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track, get_track

# The lab's id, title, time, objectives and part titles are INFO's (a LabInfo shared with
# the widgets); `labkit course build` calls build_notebook for every track.
TP_DEGREES = (2, 4, 8, 16, 32, 64)
POINTS = {"exercise": 2, "design": 3, "memo": 3}
MEMO_WORDS = (150, 250)  # the memo's length, words

SCENARIO_DIRS = [Path(__file__).resolve().parent / "scenarios"]
"""Where each scenario's instructor module ``<scenario id>.py`` is found (hidden tests stay
out of the installed package)."""


def instructor(t: Track) -> ModuleType:
    """The instructor module of the track's scenario: ``EXTRA``, ``grid``, ``MEMO_KEY`` and,
    optionally, ``exercise_b``/``exercise_c`` (else the language-model exercises),
    ``CHOICES`` and ``DEVICE_NOUN`` (the device count Part D asks to keep near the fewest)."""
    sc = scenario(t)
    for folder in SCENARIO_DIRS:
        path = folder / f"{sc}.py"
        if path.is_file():
            name = f"labkit_course_lab2_{sc}"
            if name not in sys.modules:
                spec = importlib.util.spec_from_file_location(name, path)
                if spec is None or spec.loader is None:
                    raise ValueError(f"scenario {sc!r}: {path} cannot be imported")
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
            return sys.modules[name]
    raise ValueError(f"scenario {sc!r}: no instructor module {sc}.py in "
                     f"{', '.join(str(d) for d in SCENARIO_DIRS)}")


def _hw_model(t: Track) -> tuple[Hardware, object]:
    return get_hardware(t.hardware_id), get_model(t.model_id)


# -- header ------------------------------------------------------------------------------
PREREQUISITES_LM = (
    "Lab 1 on this track: the prompt pass (prefill) and the output loop (decode), the KV "
    "cache beside the weights, and your release choice, which the synthesis reads back.",
    "Bytes, FLOP and seconds: a time is work / rate, and two times add when they do not "
    "overlap.",
)
PREREQUISITES_CNN = (
    "Lab 1 on this track: one input pass per {one}, the memory it needs and your release "
    "choice, which the synthesis reads back.",
    "Bytes, FLOP, seconds and joules: a time is work / rate, energy is power x time.",
)
READING_COMMON = (
    "Course reading: the co-design paper's section 5 — roofline analysis, capacity "
    "planning on three axes, and parallelism selection.",
    "S. Williams, A. Waterman, D. Patterson, *Roofline: an insightful visual performance "
    "model for multicore architectures*, Communications of the ACM 52(4), 2009.",
)


def _header(t: Track, ids: c.CellIds, later: list[NotebookNode]) -> list[NotebookNode]:
    sc = scenario(t)
    if t.is_transformer:
        ask = ("where the time goes inside one decode step, how many devices the workload "
               "needs and how to split it across them")
        prereq: tuple[str, ...] = PREREQUISITES_LM
    else:
        ask = (f"where the time of one {unit_noun(t)[0]} goes, how much load one device "
               "carries, and what handing work to a second device costs")
        prereq = tuple(x.format(one=unit_noun(t)[0]) for x in PREREQUISITES_CNN)
    intro = (f"{t.narrative.intro} Lab 1 asked what this deployment costs; this lab asks "
             f"what the hardware can do: {ask}.")
    about = folders.piece(sc, "about")
    reading = (*READING_COMMON, *about.READING)
    return header_cells(INFO, t, ids, intro=intro, later=later, prerequisites=prereq,
                        reading=reading, shown_terms=about.SHOWN_TERMS)


# -- Part A: roofline ----------------------------------------------------------------------
def roofline_batch_limit(t: Track) -> int:
    """Exercise A's batch (language models): the most sequences of the track's context that
    fit one replica's memory beside the weights and whose decode step meets the TPOT budget
    on the peak roofline Part A draws (at least 1)."""
    hw, m = _hw_model(t)
    fits = track_capacity(t).max_sessions
    for b in range(max(1, fits), 0, -1):
        r = decode_roofline(hw, m, b, t.context_tokens, t.weight_bits, t.kv_bits,
                            tp=t.devices_per_replica, mode="peak")
        if float(r.step_s) <= t.slo_s:
            return b
    return 1


def exercise_a(t: Track) -> Exercise:
    hw, m = _hw_model(t)
    if m.is_transformer:
        tp = t.devices_per_replica
        r = decode_roofline(hw, m, 1, t.context_tokens, t.weight_bits, t.kv_bits, tp=tp,
                            mode="peak")
        w, comp, kv = r.weight_s * 1e3, r.compute_s * 1e3, r.kv_s * 1e3
        top = roofline_batch_limit(t)
        statement = f"""
On the peak roofline one generated token at batch one costs weight fetch + compute + KV read
(numbers below, per device, at the track's {fmt_count(t.context_tokens)}-token context).
Batching shares the weight fetch: at batch `B` the time per generated token is the step
time / `B` = weight fetch / `B` + compute + KV read. Its floor is compute + KV read, but the
batch cannot grow past **{fmt_count(top)} sequences**: the most of this context that fit the
{t.replica_noun}'s memory beside the weights with a step inside the {fmt_time(t.slo_s)} TPOT budget
on the peak roofline these numbers use (the achievable step at that batch is longer).
**At that batch, how many times its floor is the time per generated token?** Store the
ratio in `answer_A` (a real number, at least one).
"""
        data = f"""
# Part A numbers for this track (read-only), ms per generated token at batch 1, peak roofline
WEIGHT_MS = {literal(w)}  # weight fetch: shared by the whole batch
COMPUTE_MS = {literal(comp)}  # 2 FLOP per active weight: per sequence
KV_MS = {literal(kv)}  # this sequence's KV cache: per sequence
MAX_BATCH = {top}  # the most sequences that fit memory and the TPOT budget (peak roofline)
"""
        solution = ("answer_A = (WEIGHT_MS / MAX_BATCH + COMPUTE_MS + KV_MS) / "
                    "(COMPUTE_MS + KV_MS)")
        visible = ('expect_number("answer_A", answer_A, "A", above=1,\n'
                   '              why="the shared weight fetch keeps a batched token above its '
                   'per-sequence floor: a ratio above one")')
        mistakes: tuple[str, ...] = (
            "answer_A = (COMPUTE_MS + KV_MS) / (WEIGHT_MS / MAX_BATCH + COMPUTE_MS + KV_MS)",)
        hidden = f"""
from labkit.grading import expect_close
from labkit.physics.roofline import decode_roofline
_r = decode_roofline("{hw.id}", "{m.id}", 1, {t.context_tokens}, {t.weight_bits}, {t.kv_bits}, tp={tp}, mode="peak")
expect_close("answer_A", answer_A, (_r.weight_s / {top} + _r.compute_s + _r.kv_s) / (_r.compute_s + _r.kv_s), "A", rel=0.01,
             revisit="per generated token = WEIGHT_MS / B + COMPUTE_MS + KV_MS; divide by its floor, COMPUTE_MS + KV_MS")
"""
    else:
        cnn = cnn_inference_time(hw, m, t.weight_bits, 1, mode="peak")
        flops_per_s = cnn.flops / cnn.compute_s
        one, many = unit_noun(t)
        fe = front_end_s(t)
        front = f" and each {one}'s front end ({fmt_time(fe)})" if fe > 0 else ""
        statement = f"""
One {one} is one pass of the model: it reads the weights and the live activations and does
a fixed amount of arithmetic. On the peak roofline (Part A's default) its time is the larger
of the two, because compute and memory traffic overlap. {many.capitalize()} arrive at
{fmt_num(t.demand_rate_per_s)} per second. **What fraction of the time is the device busy
with the model, processing them one at a time on the peak roofline?** Store a number between
zero and one in `answer_A`. (The model alone: Lab 1's busy share and Part D's add the
achievable rate{front}.)
"""
        data = f"""
# Part A numbers for this track (read-only)
FLOP_PER_INFERENCE = {literal(m.flops_per_inference)}  # one {one}
PEAK_OPS_PER_S = {literal(flops_per_s)}  # at the {t.weight_bits}-bit datapath
BYTES_PER_INFERENCE = {literal(cnn.bytes_moved)}  # weights + live activations of one {one}
BANDWIDTH = {literal(hw.memory_bandwidth)}  # bytes/s
ARRIVALS_PER_S = {literal(t.demand_rate_per_s)}  # {many} per second
"""
        solution = ("latency = max(FLOP_PER_INFERENCE / PEAK_OPS_PER_S, "
                    "BYTES_PER_INFERENCE / BANDWIDTH)\nanswer_A = ARRIVALS_PER_S * latency")
        visible, mistakes = 'expect_number("answer_A", answer_A, "A")', ()
        hidden = f"""
from labkit.grading import expect_close
from labkit.physics.phases import cnn_inference_time
_lat = cnn_inference_time("{hw.id}", "{m.id}", {t.weight_bits}, 1, mode="peak").latency_s
expect_close("answer_A", answer_A, {literal(t.demand_rate_per_s)} * _lat, "A", rel=0.01,
             revisit="roofline time = max(FLOP / peak, bytes / bandwidth); busy = rate x time")
"""
    return Exercise(statement, data, "answer_A", solution, visible, hidden, POINTS["exercise"],
                    mistakes=mistakes)


# -- Part B: capacity ----------------------------------------------------------------------
def _lm_step_terms(t: Track) -> tuple[float, float, float, float]:
    """(weight fetch s, compute s per sequence, KV s per context token per sequence,
    fixed overhead s) of one decode step on one device, Part B's achievable roofline."""
    hw, m = _hw_model(t)
    r = decode_roofline(hw, m, 1, 1.0, t.weight_bits, t.kv_bits, tp=1, mode=DESIGN_MODE)
    return (float(r.weight_step_s), float(r.compute_step_s), float(r.kv_step_s),
            float(r.overhead_step_s))


def exercise_b_lm(t: Track) -> Exercise:
    """The longest context one replica's decode step fits in the TPOT budget and its batch
    fits in memory."""
    hw, m = _hw_model(t)
    d, b = t.devices_per_replica, t.batch_size
    w, comp, kv, over = _lm_step_terms(t)
    per_seq = (d * (t.slo_s - over) - w) / b
    by_tpot = (per_seq - comp) / kv
    cap = track_capacity(t)
    kv_bytes = cap.bytes_per_session / float(cap.context_tokens or 1)
    by_memory = cap.free_bytes / (b * kv_bytes)
    want = min(by_tpot, by_memory)
    if want <= 0:
        raise ValueError(f"track {t.id!r}: no context fits the TPOT budget in Exercise B")
    seqs = "one sequence" if b == 1 else f"{fmt_count(b)} sequences"
    who = (f"The {t.replica_noun} runs" if d == 1 else
           f"A {t.replica_noun} of {counted(d, 'device')} shares")
    pooled = "" if d == 1 else " evenly (the paper's pooled convention)"
    statement = f"""
{who} the weight fetch, the compute and the KV reads of
one decode step{pooled} and pays a fixed overhead per step, on
the achievable roofline Part B sizes with. With {seqs} per step and a TPOT budget of
{fmt_time(t.slo_s)} (one step, no prefill in it), **what is the longest context (tokens per
sequence) that still meets the budget *and* lets all the sequences' KV caches fit the memory
left beside the weights?** Store it in `answer_B` (a real number).
"""
    data = f"""
# Part B numbers for this track (read-only): one decode step on ONE device, achievable roofline
WEIGHT_S = {literal(w)}  # reading every weight once (shared by the batch)
COMPUTE_S_PER_SEQ = {literal(comp)}  # 2 FLOP per active weight, one sequence
KV_S_PER_TOKEN = {literal(kv)}  # reading one context token's KV cache, one sequence
OVERHEAD_S = {literal(over)}  # fixed per step (launch, sampling); not shared out
DEVICES = {d}
BATCH = {b}
TPOT_S = {literal(t.slo_s)}
# memory of the whole {t.replica_noun}
FREE_BYTES = {literal(cap.free_bytes)}  # left for KV caches after the weights and the reserve
KV_BYTES_PER_TOKEN = {literal(kv_bytes)}  # one context token of one sequence, all devices
"""
    solution = """per_seq = (DEVICES * (TPOT_S - OVERHEAD_S) - WEIGHT_S) / BATCH
by_tpot = (per_seq - COMPUTE_S_PER_SEQ) / KV_S_PER_TOKEN
by_memory = FREE_BYTES / (BATCH * KV_BYTES_PER_TOKEN)
answer_B = min(by_tpot, by_memory)"""
    hidden = f"""
from labkit.grading import expect_close, expect_true
from labkit.physics.roofline import decode_roofline
expect_number("answer_B", answer_B, "B")
_r = decode_roofline("{hw.id}", "{m.id}", {b}, answer_B, {t.weight_bits}, {t.kv_bits}, tp=1, mode="{DESIGN_MODE}")
_step = (_r.weight_step_s + _r.compute_step_s + _r.kv_step_s) / {d} + _r.overhead_step_s
expect_true(_step <= 1.01 * {literal(t.slo_s)}, "B",
            "we ran one decode step at your context on the {t.replica_noun} (achievable roofline)",
            f"it takes {{_step * 1e3:.2f}} ms, over the {t.slo_s * 1e3:g} ms budget",
            "step = (weights + B x (compute + S x KV per token)) / devices + overhead; solve for S")
expect_close("answer_B", answer_B, {literal(want)}, "B", rel=0.01,
             revisit="the context must meet the budget AND fit memory: take the smaller of the two bounds")
"""
    alone = cap.free_bytes / kv_bytes   # one sequence's context in all the free memory
    word = "below" if want < 0.95 * alone else "at_most"
    why = ("one sequence alone could hold no more context in the free memory; the batch "
           "shares it")
    visible = (f'expect_number("answer_B", answer_B, "B", {word}=FREE_BYTES / '
               f'KV_BYTES_PER_TOKEN,\n              why="{why}")')
    # a batch that shares memory, counted once per sequence; or one sequence, only one bound
    mistake = ("answer_B = FREE_BYTES / KV_BYTES_PER_TOKEN * BATCH" if b > 1 else
               "answer_B = FREE_BYTES / (BATCH * KV_BYTES_PER_TOKEN)")
    return Exercise(statement, data, "answer_B", solution, visible, hidden, POINTS["exercise"],
                    mistakes=(mistake,))


def exercise_b(t: Track) -> Exercise:
    """The scenario's Part B exercise, else the language-model one."""
    own = getattr(instructor(t), "exercise_b", None)
    if own is not None:
        return own(t, POINTS["exercise"])
    if not t.is_transformer:
        raise ValueError(f"track {t.id!r}: its scenario's instructor module needs an "
                         "exercise_b (the default is for language models)")
    return exercise_b_lm(t)


# -- Part C: parallelism and hand-off ------------------------------------------------------
def _has_peers(hw: Hardware) -> bool:
    return hw.domain_size > 1 and hw.interconnect_bandwidth > 0


def _tp_stop(t: Track) -> tuple[float, int]:
    """(one-device per-token ms at batch 1, smallest TP whose all-reduce latency exceeds
    the per-device roofline share; 0 if none up to 64)."""
    hw, m = _hw_model(t)
    one = decode_roofline(hw, m, 1, t.context_tokens, t.weight_bits, t.kv_bits, tp=1,
                          mode="peak").per_token_s
    for tp in TP_DEGREES:
        alpha = hw.interconnect_latency_s if tp <= hw.domain_size else hw.scaleout_latency_s
        if tp_allreduce_messages(m.layers, tp) * alpha > one / tp:
            return one * 1e3, tp
    return one * 1e3, 0


def exercise_c_tp(t: Track) -> Exercise:
    hw, m = _hw_model(t)
    one_ms, want = _tp_stop(t)
    statement = f"""
Tensor parallelism splits each token's work `t` ways, but every layer ends in two
all-reduces: a ring all-reduce over `t` devices takes `2 (t - 1)` steps, and every step
pays the link's latency — the fast link inside a {hw.domain_size}-device domain, the slower
scale-out network beyond it. **What is the smallest TP degree in {TP_DEGREES} at which the
all-reduce latency per token exceeds the per-device share of the roofline time (one-device
time / t)?** That is where adding TP stops paying. Store it in `answer_C` (`0` if none
does).
"""
    data = f"""
# Part C numbers for this track (read-only)
ONE_DEVICE_MS = {literal(one_ms)}  # per-token roofline time if one device did all the work
LAYERS = {m.layers}  # two all-reduces per layer
DOMAIN_SIZE = {hw.domain_size}  # devices on the fast link
LATENCY_INSIDE_S = {literal(hw.interconnect_latency_s)}  # per ring step, fast link
LATENCY_OUTSIDE_S = {literal(hw.scaleout_latency_s)}  # per ring step, scale-out network
TP_DEGREES = {TP_DEGREES}
"""
    solution = """answer_C = 0
for t in TP_DEGREES:
    alpha = LATENCY_INSIDE_S if t <= DOMAIN_SIZE else LATENCY_OUTSIDE_S
    if 2 * LAYERS * 2 * (t - 1) * alpha * 1e3 > ONE_DEVICE_MS / t:
        answer_C = t
        break"""
    hidden = f"""
from labkit.grading import expect_true
expect_true(answer_C == {want}, "C", "we compared all-reduce latency with the roofline share for each TP degree",
            f"you gave {{answer_C!r}}",
            "2 all-reduces per layer x 2 (t - 1) ring steps x the latency of the link they cross")
"""
    visible = f'expect_choice("answer_C", answer_C, (0,) + {TP_DEGREES}, "C")'
    return Exercise(statement, data, "answer_C", solution, visible, hidden, POINTS["exercise"])


def exercise_c(t: Track) -> Exercise:
    """The scenario's Part C exercise, else tensor parallelism's stop rule."""
    own = getattr(instructor(t), "exercise_c", None)
    if own is not None:
        return own(t, POINTS["exercise"])
    hw, m = _hw_model(t)
    if not (m.is_transformer and _has_peers(hw)):
        raise ValueError(f"track {t.id!r}: its scenario's instructor module needs an "
                         "exercise_c (the default is for models split over peers)")
    return exercise_c_tp(t)


SLACK = 1.25      # near-optimal: at most 25% more devices than the fewest that work
DUTY_SLACK = 0.01  # wearable: within 1 point of the highest feasible duty cycle


def _best_design(t: Track) -> tuple[Requirement, dict[str, object], int, float | None]:
    """(requirement, config, fewest devices, best duty) under the first extra requirement
    some design meets, by brute force."""
    for req in instructor(t).EXTRA:
        found = _best_under(t, req[2])
        if found is not None:
            return (req, *found)
    raise ValueError(f"track {t.id!r}: no Part D design meets an extra requirement")


def _best_under(t: Track, keep: Callable[[dict[str, object]], bool]
                ) -> tuple[dict[str, object], int, float | None] | None:
    """(config, fewest devices, best duty) of the designs ``keep`` accepts; None if none
    is feasible."""
    from labkit.plans.design import design_check

    best: tuple[tuple[float, float], dict[str, object], int] | None = None
    for cfg in instructor(t).grid(t):
        if not keep(cfg):
            continue
        try:
            chk = design_check(t.id, cfg)
        except ValueError:
            continue
        if not chk.feasible:
            continue
        rank = (chk.devices, -float(cfg.get("duty", 0.0)))
        if best is None or rank < best[0]:
            best = (rank, cfg, chk.devices)
    if best is None:
        return None
    _, cfg, devices = best
    return cfg, devices, (float(cfg["duty"]) if "duty" in cfg else None)


def exercise_d(t: Track) -> Exercise:
    from labkit.plans.design import DESIGN_KEYS

    sc = scenario(t)
    (text, predicate, _), config, min_devices, best_duty = _best_design(t)
    keys = ", ".join(f"`{k}`" for k in DESIGN_KEYS[sc])
    statement = f"""
Write your design in `design_D`, a dict with the keys {keys}. The autograder checks it
with labkit against every constraint Part D shows, plus one requirement the search in Part D
does not apply by itself: **{text}**."""
    near = []
    noun = getattr(instructor(t), "DEVICE_NOUN", None)
    if noun is not None:
        near.append(f"at most {SLACK:.2f}× the fewest {noun} that work")
    if best_duty is not None:
        near.append(f"a duty cycle within {DUTY_SLACK:.2f} of the highest that works")
    if near:
        statement += (" It must also be near the best design under that requirement: "
                      + ", and ".join(near) + ".")
    choices = getattr(instructor(t), "CHOICES", {})
    for key, values in choices.items():
        listed = "; ".join(f"`{v!r}` ({label})" for v, label in values)
        statement += f"\n\n`{key}` is one of: {listed}."
    allowed = {key: tuple(v for v, _ in values) for key, values in choices.items()}
    data = f"""
# Part D (read-only): the keys of your design, and the values a text key may take
DESIGN_KEYS_D = {tuple(DESIGN_KEYS[sc])!r}
DESIGN_CHOICES_D = {allowed!r}
"""
    solution = f"design_D = {config!r}"
    visible = """
assert isinstance(design_D, dict), "Part D: design_D must be a dict of your design's settings"
_missing = set(DESIGN_KEYS_D) - set(design_D)
assert not _missing, f"Part D: design_D is missing {sorted(_missing)}; see DESIGN_KEYS_D"
for _key, _values in DESIGN_CHOICES_D.items():
    assert design_D[_key] in _values, (
        f"Part D: {_key} must be one of {_values}, got {design_D[_key]!r}")
print("Part D: design_D has every key, each a valid value. Self-check passed; whether "
      "it meets every constraint is checked when your notebook is graded.")
"""
    duty_check = "" if best_duty is None else f"""
expect_true(float(design_D["duty"]) >= {best_duty - DUTY_SLACK!r}, "D",
            "we compared your duty cycle with the highest that meets every constraint",
            f"{{design_D['duty']}} is well below what works", "Part D: raise the duty until energy binds")"""
    hidden = f"""
from labkit.grading import expect_true
from labkit.plans.design import design_check
expect_true({predicate}, "D", "we checked the extra requirement: {text}",
            "your design does not meet it", "the exercise statement")
_c = design_check("{t.id}", dict(design_D))
expect_true(_c.feasible, "D", "we checked your design against every constraint",
            f"it fails: {{', '.join(_c.failed)}}", "Part D's constraint table")
expect_true(_c.devices <= {int(SLACK * min_devices)}, "D",
            "we compared your device count with the fewest that work under the requirement",
            f"you use {{_c.devices}}, and a design with fewer devices also meets every constraint", "Part D: remove devices until a constraint binds"){duty_check}
"""
    return Exercise(statement, data, "design_D", solution, visible, hidden, POINTS["design"])


EXERCISES = {"A": exercise_a, "B": exercise_b, "C": exercise_c, "D": exercise_d}


def _synthesis(t: Track, ids: c.CellIds) -> list[NotebookNode]:
    key = instructor(t).MEMO_KEY
    memo = f"""
### Memo to {t.stakeholder.name} (manually graded, {POINTS["memo"]} points)

In {MEMO_WORDS[0]}–{MEMO_WORDS[1]} words: {INFO.memo_brief(t)}

### BEGIN SOLUTION
{key}
### END SOLUTION
"""
    intro = ("## Synthesis\n\nComputed from *your* settings in Parts A–D, and connected to "
             "your Lab 1 design-ledger entry when you have one.")
    return synthesis_cells(intro, memo, ids, POINTS["memo"])


def build_notebook(track_id: str) -> NotebookNode:
    """The nbgrader source notebook of Lab 2 for one track (the header is built last: it
    counts the points and lists the terms of the cells after it)."""
    t = get_track(track_id)
    ids = c.CellIds(prefix=INFO.id)
    story = hooks(t)
    checkpoints = checkpoint_answers(INFO.id, t.id)
    cells: list[NotebookNode] = []
    for part in PARTS:
        cells += part_cells(part, INFO.part_titles[part], story[part], ids, EXERCISES[part](t),
                            checkpoints[part])
    cells += _synthesis(t, ids)
    return finish(_header(t, ids, cells) + cells, notebook_title(INFO, t))
