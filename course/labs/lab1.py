"""Lab 1 -- The Inference Economy: the one source of truth for all four track notebooks.

``build_notebook(track_id)`` renders the instructor (nbgrader *source*) notebook for one
track. Every difference between tracks comes from labkit's track data; the exercises'
numbers are computed here at build time and written into the notebook as literals, and
the hidden tests recompute the answers with labkit, so nothing a student can import
returns a graded answer. This file is instructor material: it is not installed with
labkit and must not be handed to students.
"""

from __future__ import annotations

import math

from nbformat import NotebookNode

from labkit.course import cells as c
from labkit.course.scaffold import (
    Exercise,
    finish,
    header_cells,
    notebook_title,
    part_cells,
    synthesis_cells,
    unit_noun,
)
from labkit.labs.inference_economy.info import INFO
from labkit.labs.parts import PARTS
from labkit.physics.batching import sample_lengths, step_tables
from labkit.physics.kvcache import kv_fraction_per_device
from labkit.plans.serving import track_capacity
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track, get_track

# The lab's id, title, time, objectives and part titles are INFO's (a LabInfo shared with
# the widgets); `labkit course build` calls build_notebook for every track.

# Exercise parameters shared by every track (the numbers they act on come from the track).
TARGET_DAYS = 30
SAVING = 0.20
SESSION_GROWTH = 1.5
BATCH_LENGTHS = 8
MAX_STATIC_BATCH = 16
POINTS = {"exercise": 2, "release": 3, "memo": 3}


def _fmt(x: float) -> str:
    """A literal that round-trips exactly and reads well."""
    return repr(float(x)) if not float(x).is_integer() else f"{x:.1f}"


def _unit(t: Track) -> str:
    return {"USD": "USD", "mWh": "mWh", "Wh": "Wh"}[t.cost_unit]


# -- notebook sections ------------------------------------------------------------------
PREREQUISITES = (
    "Python and Jupyter basics: run a cell, assign a variable.",
    "Arithmetic with units: bytes (1 GB = 1e9 bytes), seconds, joules (1 mWh = 3.6 J, "
    "1 Wh = 3,600 J) and, for rented devices, USD per hour.",
)
READING_LM = (
    "Course reading: the *Inference Economy* lab notes — one-time vs recurring cost, the "
    "KV wall and batching under variance.",
    "R. Pope et al., *Efficiently scaling transformer inference*, MLSys 2023 "
    "(arXiv:2211.05102): prefill vs decode on the roofline.",
    "W. Kwon et al., *Efficient memory management for large language model serving with "
    "PagedAttention*, SOSP 2023: the KV cache in memory.",
    "G.-I. Yu et al., *Orca: a distributed serving system for transformer-based generative "
    "models*, OSDI 2022: iteration-level (continuous) batching.",
)
READING_CNN = (
    "Course reading: the *Inference Economy* lab notes — one-time vs recurring cost, the "
    "memory wall and batching under a deadline.",
    "S. Williams, A. Waterman, D. Patterson, *Roofline: an insightful visual performance "
    "model for multicore architectures*, Communications of the ACM 52(4), 2009.",
)
# Terms Lab 1's widgets show on language-model tracks (the glossary defines them too).
SHOWN_TERMS_LM = ("SLO", "p99", "TTFT", "TPOT", "KV", "CV")


def _header(t: Track, ids: c.CellIds, later: list[NotebookNode]) -> list[NotebookNode]:
    reading = READING_LM if t.is_transformer else READING_CNN
    if not t.is_transformer and t.sources.get("quality_loss_pct", "").startswith("Hello Edge"):
        reading = (*reading, "Y. Zhang et al., *Hello Edge: keyword spotting on "
                   "microcontrollers*, arXiv:1711.07128, 2017.")
    return header_cells(INFO, t, ids, intro=t.narrative.intro, later=later,
                        prerequisites=PREREQUISITES, reading=reading,
                        shown_terms=SHOWN_TERMS_LM if t.is_transformer else (),
                        rows=[("Primary metric", t.primary_metric)])


def exercise_a(t: Track) -> Exercise:
    """Break-even demand: invert the crossover (labkit only goes from demand to days)."""
    unit = _unit(t)
    one, many = unit_noun(t)
    statement = f"""
The setup budget is a one-time amount; every {one} processed costs a little, every day. An
optimisation (say, a better kernel) cuts the cost per {one} by {SAVING:.0%}. **At how many
{many} per day would the cumulative recurring cost reach the setup budget in exactly
{TARGET_DAYS} days?** Store it in `answer_A` ({many} per day). Use the numbers in the cell
below, in {unit}.
"""
    data = f"""
# Part A numbers for this track (read-only)
SETUP_COST = {_fmt(t.setup_cost)}  # {unit}, paid once
COST_PER_EVENT = {_fmt(t.cost_per_event)}  # {unit} per {one}, before the optimisation
SAVING = {SAVING}  # fraction of the cost per {one} the optimisation removes
TARGET_DAYS = {TARGET_DAYS}  # days until recurring cost equals the setup budget
"""
    solution = "answer_A = SETUP_COST / (TARGET_DAYS * COST_PER_EVENT * (1 - SAVING))"
    hidden = f"""
from labkit.physics.economy import cost_crossover
from labkit.grading import expect_true
_c = cost_crossover({_fmt(t.setup_cost)}, {_fmt(t.cost_per_event)}, answer_A,
                    horizon_days=365, optimisation_saving={SAVING})
expect_true(
    _c.crossover_days is not None and abs(_c.crossover_days - {TARGET_DAYS}) <= 0.01 * {TARGET_DAYS},
    "A", "we fed your {many}/day into the crossover model with the {SAVING:.0%} saving",
    f"it crosses after {{_c.crossover_days_capped:.1f}} days instead of {TARGET_DAYS}",
    "daily cost = {many}/day x cost per {one} x (1 - saving); crossover = setup / daily")
"""
    return Exercise(statement, data, "answer_A", solution,
                    'expect_number("answer_A", answer_A, "A")', hidden, POINTS["exercise"])


def exercise_b(t: Track) -> Exercise:
    """Memory wall: the largest state per session for a target number of sessions."""
    cap = track_capacity(t)
    target = max(2, math.ceil(cap.max_sessions * SESSION_GROWTH))
    hw, m = get_hardware(t.hardware_id), get_model(t.model_id)
    one, many = unit_noun(t)
    held = ("TARGET_SESSIONS", "concurrent conversations product wants to hold",
            "devices in one replica") if m.is_transformer else (
        "TARGET_IN_FLIGHT", f"{many} in flight at once", "devices running the model")
    common = f"""
# Part B numbers for this track (read-only)
{held[0]} = {target}  # {held[1]}
DEVICES = {t.devices_per_replica}  # {held[2]}
USABLE_BYTES_PER_DEVICE = {_fmt(hw.usable_memory_bytes)}  # bytes a model may use per device
RESERVE = {t.memory_reserve_fraction}  # fraction of that memory kept free (fragmentation, runtime)
"""
    if m.is_transformer:
        frac = kv_fraction_per_device(m, t.devices_per_replica) * t.devices_per_replica
        statement = f"""
Product wants **{target} concurrent conversations** (sessions) on one replica at today's precision
({t.weight_bits}-bit weights, {t.kv_bits}-bit KV cache). **What is the longest context, in
tokens, each session may hold so that all {target} sessions fit beside the weights?** Store
the largest whole number of tokens in `answer_B`. You need the KV bytes one token adds
(every layer keeps K and V for each *KV* head — this model uses grouped-query attention),
the memory left after the weights, and the number of sessions.
"""
        data = common + f"""WEIGHT_BYTES = {_fmt(cap.weight_bytes)}  # resident weights of one replica, bytes
LAYERS = {m.layers}
KV_HEADS = {m.kv_heads}  # grouped-query attention: {m.q_heads} query heads share {m.kv_heads} KV heads
D_HEAD = {m.d_head}
KV_BITS = {t.kv_bits}
KV_COPIES = {_fmt(frac)}  # copies of each KV head across the replica (1 unless DEVICES > KV_HEADS)
"""
        solution = """kv_bytes_per_token = 2 * LAYERS * KV_HEADS * D_HEAD * KV_BITS / 8 * KV_COPIES
free = DEVICES * USABLE_BYTES_PER_DEVICE * (1 - RESERVE) - WEIGHT_BYTES
answer_B = int(free // (TARGET_SESSIONS * kv_bytes_per_token))"""
        probe = "context_tokens={x}"
        what = "tokens per session"
    else:
        where = (f" (weights execute from flash; every {one} in flight needs its input buffer "
                 "and activations in SRAM)" if cap.weight_location == "flash" else
                 f" (every {one} in flight needs its input buffer and activations in memory "
                 "beside the weights)")
        statement = f"""
Product wants **{target} {many} in flight** at once{where}. **What is the largest
state per {one}, in bytes, so that all {target} fit?** Store the largest whole number of
bytes in `answer_B`.
"""
        data = common + ("WEIGHTS_IN_FLASH = True  # weights do not use SRAM on this device\n"
                         if cap.weight_location == "flash" else
                         f"WEIGHT_BYTES = {_fmt(cap.weight_bytes)}  # resident weights, bytes\n")
        if cap.weight_location == "flash":
            solution = ("free = DEVICES * USABLE_BYTES_PER_DEVICE * (1 - RESERVE)\n"
                        "answer_B = int(free // TARGET_IN_FLIGHT)")
        else:
            solution = ("free = DEVICES * USABLE_BYTES_PER_DEVICE * (1 - RESERVE) - WEIGHT_BYTES\n"
                        "answer_B = int(free // TARGET_IN_FLIGHT)")
        probe = "state_bytes_per_request={x}"
        what = f"bytes per {one}"
    held_noun = "conversations" if m.is_transformer else f"{many} in flight"
    hint = ("KV bytes per token use the KV heads, not the query heads" if m.is_transformer
            else f"every {one} in flight holds the same state; use all the free memory")
    call = (f"state_capacity(\"{t.hardware_id}\", \"{t.model_id}\", weight_bits={t.weight_bits}, "
            f"kv_bits={t.kv_bits}, devices_per_replica={t.devices_per_replica}, "
            f"reserve_fraction={t.memory_reserve_fraction}, {probe})")
    hidden = f"""
from labkit.grading import expect_true
from labkit.physics.memory import state_capacity
_fits = {call.format(x="answer_B")}.max_sessions
_over = {call.format(x="answer_B * 1.02 + 1")}.max_sessions
expect_true(_fits >= {target}, "B", "we loaded {target} {held_noun} of your size beside the weights",
            f"only {{_fits}} fit: your {what} is too large",
            "free memory = devices x usable x (1 - reserve) - weights; divide by the {held_noun}")
expect_true(_over < {target}, "B", "we checked your answer is the largest that fits",
            "2% more would still fit {target}: your {what} is too small",
            "{hint}")
"""
    return Exercise(statement, data, "answer_B", solution,
                    'expect_number("answer_B", answer_B, "B")', hidden, POINTS["exercise"])


def batch_table_ms(t: Track) -> list[float]:
    """Time to process a static batch of b = 1..MAX_STATIC_BATCH inputs, ms (rounded as the
    notebook prints it)."""
    step, _ = step_tables(t.hardware_id, t.model_id, MAX_STATIC_BATCH,
                          weight_bits=t.weight_bits, kv_bits=t.kv_bits,
                          window_bytes=t.window_bytes)
    return [round(float(x) * 1e3, 4) for x in step]


def largest_static_batch(t: Track, table: list[float]) -> int:
    """The largest b whose oldest input, waiting (b - 1) / rate for the batch to fill, still
    meets the deadline (0 if none)."""
    fits = [b for b in range(1, len(table) + 1)
            if (b - 1) / t.demand_rate_per_s + table[b - 1] / 1e3 <= t.slo_s]
    return max(fits) if fits else 0


def batchable_rate(t: Track, table: list[float]) -> tuple[int, float]:
    """(b, lowest arrival rate per s at which a static batch of b meets the deadline): b is
    the largest batch whose processing alone fits it, rate = (b - 1) / (deadline - T(b))."""
    fits = [b for b in range(2, len(table) + 1) if table[b - 1] / 1e3 < t.slo_s]
    if not fits:
        return 0, 0.0
    b = max(fits)
    return b, (b - 1) / (t.slo_s - table[b - 1] / 1e3)


def _exercise_c_cnn(t: Track) -> tuple[str, str, str, str, str]:
    """Static batching under a deadline. When the wait for a second input alone exceeds the
    deadline (the answer would be 1 whatever the device), the question is turned round:
    how fast would inputs have to arrive for batching to meet the deadline?"""
    table = batch_table_ms(t)
    rate = t.demand_rate_per_s
    one, many = unit_noun(t)
    expected = largest_static_batch(t, table)
    deadline = f"{t.slo_s * 1e3:g} ms deadline"
    data = f"""
# Part C numbers for this track (read-only)
ARRIVALS_PER_S = {rate!r}  # {many} per second
DEADLINE_MS = {t.slo_s * 1e3!r}
BATCH_MS = {table}  # BATCH_MS[b - 1] = time to process a batch of b {many}, ms
"""
    if expected >= 2 or 1 / rate + table[1] / 1e3 <= t.slo_s:
        statement = f"""
{many.capitalize()} arrive at {rate:g} per second. A **static** batch of `b` {many} starts
only when the `b`-th has arrived, so the oldest one first waits `(b - 1) / rate` seconds,
then the whole batch takes the time in the table. **What is the largest `b` (1 to
{MAX_STATIC_BATCH}) whose oldest {one} still meets the {deadline}?** Store it in `answer_C`
(0 if none does).
"""
        solution = ("answer_C = max([b for b in range(1, len(BATCH_MS) + 1)\n"
                    "                if (b - 1) / ARRIVALS_PER_S * 1e3 + BATCH_MS[b - 1] "
                    "<= DEADLINE_MS], default=0)")
        hidden = f"""
from labkit.grading import expect_true
expect_true(answer_C == {expected}, "C", "we checked the largest batch that meets the deadline",
            f"you gave {{answer_C!r}}",
            "oldest input latency = (b - 1) / arrival rate + batch time; compare with the deadline")
"""
        visible = f'expect_choice("answer_C", answer_C, range(0, {MAX_STATIC_BATCH + 1}), "C")'
        return statement, data, solution, hidden, visible
    b, need = batchable_rate(t, table)
    statement = f"""
{many.capitalize()} arrive at {rate:g} per second, so a **static** batch of two would make
the first {one} wait {1 / rate:g} s for the second — longer than the {deadline} by
itself: at this rate the device must process each {one} alone. A batch of `b` {many} starts
when the `b`-th has arrived (the oldest waits `(b - 1) / rate`) and then takes the time in
the table. Take the largest `b` whose processing alone fits the deadline. **What is the
lowest arrival rate ({many} per second) at which a static batch of that `b` would meet
the deadline?** Store it in `answer_C` (0 if no batch of two or more fits at all).
"""
    solution = """fits = [b for b in range(2, len(BATCH_MS) + 1) if BATCH_MS[b - 1] < DEADLINE_MS]
b = max(fits, default=0)
answer_C = (b - 1) / ((DEADLINE_MS - BATCH_MS[b - 1]) / 1e3) if b else 0.0"""
    hidden = f"""
from labkit.grading import expect_close
expect_close("answer_C", answer_C, {need!r}, "C", rel=0.01,
             revisit="(b - 1) / rate + batch time = deadline, with b = {b}; solve for the rate")
"""
    visible = 'expect_number("answer_C", answer_C, "C", positive=False)'
    return statement, data, solution, hidden, visible


def exercise_c(t: Track) -> Exercise:
    """Variance: padding waste (token streams) or batch-formation wait (sensor frames)."""
    if t.is_transformer:
        lengths = [int(x) for x in sample_lengths(t.output_tokens, t.output_tokens_cv,
                                                  n=BATCH_LENGTHS, seed=7)]
        expected = 1 - sum(lengths) / (len(lengths) * max(lengths))
        statement = f"""
A **static** batch holds every slot until its longest request finishes; shorter requests
leave their slots idle (padding). For the {BATCH_LENGTHS} output lengths below, drawn from this
track's request mix, **what fraction of the batch's decode slot-steps is padding?** Store a
number between 0 and 1 in `answer_C`.
"""
        data = f"""
# Part C numbers for this track (read-only)
OUTPUT_TOKENS = {lengths}  # output tokens of the {BATCH_LENGTHS} requests in one static batch
"""
        solution = ("answer_C = 1 - sum(OUTPUT_TOKENS) / (len(OUTPUT_TOKENS) * "
                    "max(OUTPUT_TOKENS))")
        hidden = f"""
from labkit.grading import expect_close
expect_close("answer_C", answer_C, {expected!r}, "C", rel=0.01,
             revisit="padding = 1 - useful token-steps / (batch size x longest request)")
"""
        visible = 'expect_number("answer_C", answer_C, "C", positive=False)'
    else:
        statement, data, solution, hidden, visible = _exercise_c_cnn(t)
    return Exercise(statement, data, "answer_C", solution, visible, hidden, POINTS["exercise"])


def release_keys(t: Track) -> tuple[str, ...]:
    """The keys of ``release_D``: a model with no KV cache has no KV precision to choose."""
    kv = ("kv_bits",) if t.is_transformer else ()
    return ("weight_bits", *kv, "policy", "devices_per_replica", "rate_per_s")


def exercise_d(t: Track) -> Exercise:
    """Release choice: a plan that passes every guardrail, checked with labkit."""
    one, many = unit_noun(t)
    lo, hi = t.min_demand_rate_per_s, t.demand_rate_per_s
    rate = (f"exactly {hi:g} {many} per second: every {one} must be processed" if lo == hi
            else f"{many} per second, at least {lo:g} and at most {hi:g}")
    if t.is_transformer:
        knobs = "weight and KV precision (bits), the scheduling policy, devices per replica"
        limits = "memory, SLO, quality and cost"
        kv_check = 'expect_choice("kv_bits", release_D["kv_bits"], BITS, "D")\n'
        kv_arg = '_r["kv_bits"]'
    else:
        knobs = ("weight precision (bits), the scheduling policy, "
                 "the number of devices running the model")
        limits = "memory, deadline, accuracy and energy"
        kv_check, kv_arg = "", str(t.kv_bits)
    statement = f"""
Write the release you would ship in `release_D`: {knobs}, and the rate you will process
({rate}). The autograder sizes the plan with labkit and checks **every guardrail** —
{limits}. Use Part D's controls to find one that passes.
"""
    data = f"""
# Part D choices for this track (read-only)
RELEASE_KEYS = {release_keys(t)!r}
BITS = (4, 8, 16)
POLICIES = ("none", "static", "dynamic", "continuous")
MAX_DEVICES_PER_REPLICA = {_max_devices(t)}
MIN_RATE_PER_S = {lo!r}
MAX_RATE_PER_S = {hi!r}
"""
    solution = f"release_D = {_passing_release(t)!r}"
    visible = f"""
assert isinstance(release_D, dict) and set(release_D) == set(RELEASE_KEYS), (
    "Part D: release_D must be a dict with keys " + ", ".join(RELEASE_KEYS))
expect_choice("weight_bits", release_D["weight_bits"], BITS, "D")
{kv_check}expect_choice("policy", release_D["policy"], POLICIES, "D")
expect_choice("devices_per_replica", release_D["devices_per_replica"],
              range(1, MAX_DEVICES_PER_REPLICA + 1), "D")
expect_number("rate_per_s", release_D["rate_per_s"], "D")
"""
    hidden = f"""
from labkit.grading import expect_true
from labkit.plans.serving import release_guardrails
_r = dict(release_D)
expect_true({lo!r} <= _r["rate_per_s"] <= {hi!r}, "D",
            "we checked the served rate", f"{{_r['rate_per_s']!r}} is outside the allowed range",
            "the product's minimum and today's demand")
_g = release_guardrails("{t.id}", weight_bits=_r["weight_bits"], kv_bits={kv_arg},
                        policy=_r["policy"], devices_per_replica=_r["devices_per_replica"],
                        demand_rate_per_s=_r["rate_per_s"])
expect_true(_g.passed, "D", "we sized your release and checked every guardrail",
            f"{{_g.binding}} fails: {{_g.reason}}", "Part D's table: change the knob for that guardrail")
"""
    return Exercise(statement, data, "release_D", solution, visible, hidden, POINTS["release"])


def _max_devices(t: Track) -> int:
    """Rented fleets may use up to an 8-GPU node per replica; owned devices what they have."""
    return 8 if t.cost_unit == "USD" else max(1, t.max_replicas or 1)


def _passing_release(t: Track) -> dict[str, object]:
    """The instructor's solution: the first candidate (cheapest search order) that passes."""
    from labkit.plans.serving import release_guardrails

    max_dev = _max_devices(t)
    for rate in (t.demand_rate_per_s, t.min_demand_rate_per_s):
        for devices in range(1, max_dev + 1):
            for wb in (8, 16, 4):
                for kb in ((8, 16, 4) if t.is_transformer else (t.kv_bits,)):
                    for policy in ("continuous", "dynamic", "none", "static"):
                        try:
                            g = release_guardrails(t.id, weight_bits=wb, kv_bits=kb,
                                                   policy=policy, devices_per_replica=devices,
                                                   demand_rate_per_s=rate)
                        except ValueError:
                            continue
                        if g.passed:
                            full = {"weight_bits": wb, "kv_bits": kb, "policy": policy,
                                    "devices_per_replica": devices, "rate_per_s": rate}
                            return {k: full[k] for k in release_keys(t)}
    raise ValueError(f"track {t.id!r}: no release passes every guardrail")


EXERCISES = {"A": exercise_a, "B": exercise_b, "C": exercise_c, "D": exercise_d}


def _synthesis(t: Track, ids: c.CellIds) -> list[NotebookNode]:
    memo_prompt = f"""
## Synthesis

The summary below is computed from *your* settings in Parts A–D. Download the report (it
also saves `{INFO.report_md}` and `{INFO.report_json}` next to this notebook) and record
your design-ledger entry for Lab 2.
"""
    memo = f"""
### Memo to {t.stakeholder.name} (manually graded, {POINTS["memo"]} points)

In 150–250 words, recommend your release for the {t.label} track. Name the binding
guardrail and the number that shows it, say which knob you would turn first if demand
doubled, and state one assumption in this lab you would measure before launch.

### BEGIN SOLUTION
A strong memo names the release (precision, policy, devices, rate), quotes the binding
guardrail with its measured value and limit, ties the crossover from Part A to the
recurring cost, and names a measurable assumption (e.g. achievable bandwidth or the
request-length spread).
### END SOLUTION
"""
    return synthesis_cells(memo_prompt, memo, ids, POINTS["memo"])


def build_notebook(track_id: str) -> NotebookNode:
    """The nbgrader source notebook of Lab 1 for one track (the header is built last: it
    counts the points and lists the terms of the cells after it)."""
    t = get_track(track_id)
    ids = c.CellIds(prefix=INFO.id)
    cells: list[NotebookNode] = []
    for part in PARTS:
        cells += part_cells(part, INFO.part_titles[part], t.narrative.hooks[part], ids,
                            EXERCISES[part](t))
    cells += _synthesis(t, ids)
    return finish(_header(t, ids, cells) + cells, notebook_title(INFO, t))
