"""Lab 1 -- The Inference Economy: the one source of truth for all four track notebooks.

``build_notebook(track_id)`` renders the instructor (nbgrader *source*) notebook for one
track. Every difference between tracks comes from labkit's track data; the exercises'
numbers are computed here at build time and written into the notebook as literals, and
the hidden tests recompute the answers with labkit, so nothing a student can import
returns a graded answer. This file is instructor material: it is not installed with
labkit and must not be handed to students.
"""

from __future__ import annotations

import inspect
import math

from nbformat import NotebookNode

from labkit.core.format import counted, fmt_count, fmt_num, fmt_pct, fmt_time
from labkit.core.grids import context_options
from labkit.core.units import GB, J_PER_MWH, J_PER_WH
from labkit.course import cells as c
from labkit.course.scaffold import (
    Exercise,
    checkpoint_answers,
    finish,
    header_cells,
    notebook_title,
    part_cells,
    synthesis_cells,
    unit_noun,
)
from labkit.labs.inference_economy.info import INFO
from labkit.labs.parts import PARTS
from labkit.physics.batching import sample_lengths
from labkit.physics.kvcache import kv_fraction_per_device
from labkit.physics.roofline import decode_roofline
from labkit.plans.economy import event_cost
from labkit.plans.serving import serving_plan, track_capacity
from labkit.plans.speculation import probe_tokens, speculation_curve, speculation_of, start_bits
from labkit.plans.workload import front_end_label, front_end_s, pass_table_s
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track, get_track

# The lab's id, title, time, objectives and part titles are INFO's (a LabInfo shared with
# the widgets); `labkit course build` calls build_notebook for every track.

# Exercise parameters shared by every track (the numbers they act on come from the track).
TARGET_DAY_CHOICES = (1, 7, 30, 90, 365)  # Exercise A's crossover targets, days
SAVING = 0.20
SESSION_GROWTH = 1.5
BATCH_LENGTHS = 8  # Exercise C's static batch (language models), at most
MAX_STATIC_BATCH = 16
SERVING_MODE = "achievable"  # the roofline Lab 1 sizes plans with (serving_plan's default)
SECONDS_PER_HOUR = 3600.0
POINTS = {"exercise": 2, "release": 3, "memo": 3}
MEMO_WORDS = (150, 250)  # the memo's length, words


def _fmt(x: float) -> str:
    """A literal that round-trips exactly and reads well."""
    return repr(float(x)) if not float(x).is_integer() else f"{x:.1f}"


def _unit(t: Track) -> str:
    return {"USD": "USD", "mWh": "mWh", "Wh": "Wh"}[t.cost_unit]


# -- notebook sections ------------------------------------------------------------------
PREREQUISITES = (
    "Python and Jupyter basics: run a cell, assign a variable.",
    f"Arithmetic with units: bytes (`1 GB = 1e{round(math.log10(GB))} bytes`), seconds, joules "
    f"(`1 mWh = {J_PER_MWH:g} J`, `1 Wh = {J_PER_WH:,.0f} J`) and, for rented devices, USD "
    "per hour.",
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


def demand_range(t: Track) -> tuple[float, float]:
    """(lowest, highest) demand, events per second, Part A's demand control spans: down to a
    tenth of the track's demand (or the least the product accepts), up to ten times it."""
    d0 = t.demand_rate_per_s
    return min(d0 / 10, t.min_demand_rate_per_s), d0 * 10


def demand_servable(t: Track, rate_per_s: float) -> bool:
    """Whether the track's default plan serves ``rate_per_s`` on the devices it may use
    (owned devices cannot scale past ``max_replicas``)."""
    plan = serving_plan(t, demand_rate_per_s=rate_per_s, with_baseline=False)
    return plan.feasible and not plan.exceeds_max_replicas


def break_even_demand(t: Track, days: float) -> float:
    """Events per day at which recurring cost (after the saving) reaches the setup cost in
    ``days``."""
    return t.setup_cost / (days * event_cost(t).total * (1 - SAVING))


def target_days(t: Track) -> int:
    """Exercise A's target: of TARGET_DAY_CHOICES within the horizon, the one whose
    break-even demand is a demand Part A shows and the deployment serves, closest to the
    track's own demand."""
    lo, hi = demand_range(t)
    secs = t.active_hours_per_day * SECONDS_PER_HOUR
    ok = [d for d in TARGET_DAY_CHOICES if d <= t.horizon_days
          and lo <= break_even_demand(t, d) / secs <= hi
          and demand_servable(t, break_even_demand(t, d) / secs)]
    if not ok:
        raise ValueError(f"track {t.id!r}: no crossover target gives a servable demand")
    return min(ok, key=lambda d: abs(math.log(break_even_demand(t, d) / t.events_per_day)))


def exercise_a(t: Track) -> Exercise:
    """Break-even demand: invert the crossover (labkit only goes from demand to days)."""
    unit = _unit(t)
    one, many = unit_noun(t)
    days = target_days(t)
    cost = event_cost(t)
    parts = " + ".join(f"{p.name} {p.cost:.4g}" for p in cost.parts)
    statement = f"""
The setup budget is a one-time amount; every {one} processed costs a little, every day. An
optimisation (say, a better kernel) cuts the cost per {one} by {fmt_pct(SAVING)}. **At how
many {many} per day would the cumulative recurring cost reach the setup budget in exactly
{counted(days, "day")}?** Store it in `answer_A` ({many} per
day). Use the numbers in the cell below, in {unit}: the cost per {one} is the sum of its
named parts ({cost.basis}). (The target is chosen so the answer is a demand Part A's control
reaches and this deployment can process.)
"""
    data = f"""
# Part A numbers for this track (read-only)
SETUP_COST = {_fmt(t.setup_cost)}  # {unit}, paid once
COST_PER_EVENT = {_fmt(cost.total)}  # {unit} per {one}, before the optimisation
# ... the sum of its parts ({cost.basis}): {parts}
SAVING = {SAVING}  # fraction of the cost per {one} the optimisation removes
TARGET_DAYS = {days}  # days until recurring cost equals the setup budget
"""
    solution = "answer_A = SETUP_COST / (TARGET_DAYS * COST_PER_EVENT * (1 - SAVING))"
    hidden = f"""
from labkit.physics.economy import cost_crossover
from labkit.grading import expect_true
_c = cost_crossover({_fmt(t.setup_cost)}, {_fmt(cost.total)}, answer_A,
                    horizon_days={max(365, 2 * days)}, optimisation_saving={SAVING})
expect_true(
    _c.crossover_days is not None and abs(_c.crossover_days - {days}) <= 0.01 * {days},
    "A", "we fed your {many}/day into the crossover model with the {SAVING:.0%} saving",
    (f"it crosses after {{_c.crossover_days:.1f}} days instead of {days}"
     if _c.crossover_days is not None else
     f"it does not cross within {{_c.horizon_days}} days (the target is {days})"),
    "busy daily cost (device-time used) = {many}/day x cost per {one} x (1 - saving); crossover = setup / daily cost")
"""
    visible = f"""expect_number("answer_A", answer_A, "A",
              above=SETUP_COST / (TARGET_DAYS * COST_PER_EVENT),
              why="the saving makes each {one} cheaper, so it takes more {many} per day than without it")"""
    return Exercise(statement, data, "answer_A", solution, visible, hidden, POINTS["exercise"],
                    mistakes=("answer_A = SETUP_COST / (TARGET_DAYS * COST_PER_EVENT)",))


def _step_terms(t: Track, sessions: int) -> tuple[float, float]:
    """(one decode step of ``sessions`` sequences at zero context, s; KV read time one
    context token of one sequence adds to the step, s), one replica, Lab 1's roofline."""
    kw = dict(tp=t.devices_per_replica, mode=SERVING_MODE)
    r0 = decode_roofline(t.hardware_id, t.model_id, sessions, 0.0, t.weight_bits, t.kv_bits,
                         **kw)
    r1 = decode_roofline(t.hardware_id, t.model_id, sessions, 1.0, t.weight_bits, t.kv_bits,
                         **kw)
    return float(r0.step_s), float(r1.kv_step_s) / sessions


# Part B's context control starts here (labkit.core.grids.context_options' default).
MIN_CONTEXT = int(inspect.signature(context_options).parameters["min_context"].default)


def session_target(t: Track) -> int:
    """Exercise B's target (language models): SESSION_GROWTH x the sessions that fit today,
    lowered until the answer -- the longest context that fits memory and the TPOT budget --
    is one Part B's context control reaches (MIN_CONTEXT tokens or more)."""
    target = max(2, math.ceil(track_capacity(t).max_sessions * SESSION_GROWTH))
    while target > 1:
        if longest_context(t, target)[0] >= MIN_CONTEXT:
            return target
        target -= 1
    raise ValueError(f"track {t.id!r}: no session count meets the TPOT budget in Exercise B")


def longest_context(t: Track, sessions: int) -> tuple[int, float, float]:
    """(longest whole context per session that fits memory AND the TPOT budget, the memory
    bound, the TPOT bound), tokens, for ``sessions`` sessions on one replica."""
    hw, m = get_hardware(t.hardware_id), get_model(t.model_id)
    cap = track_capacity(t)
    frac = kv_fraction_per_device(m, t.devices_per_replica) * t.devices_per_replica
    per_token = 2 * m.layers * m.kv_heads * m.d_head * t.kv_bits / 8 * frac
    free = (t.devices_per_replica * hw.usable_memory_bytes * (1 - t.memory_reserve_fraction)
            - cap.weight_bytes)
    by_memory = free / (sessions * per_token)
    step0, kv = _step_terms(t, sessions)
    by_tpot = (t.slo_s - step0) / (sessions * kv)
    return int(min(by_memory, by_tpot)), by_memory, by_tpot


def in_flight_target(t: Track) -> tuple[int, float]:
    """Exercise B's target (CNN tracks): the largest static batch (up to the table's
    length) the device finishes within the deadline, and its time, s."""
    table = batch_table_ms(t)
    fits = [b for b in range(1, len(table) + 1) if table[b - 1] / 1e3 <= t.slo_s]
    if not fits:
        raise ValueError(f"track {t.id!r}: not even one input meets the deadline")
    return max(fits), table[max(fits) - 1] / 1e3


def _exercise_b_lm(t: Track, common: str) -> tuple[str, str, str]:
    """(statement, data, solution) of the memory-and-TPOT wall."""
    m = get_model(t.model_id)
    target = session_target(t)
    step0, kv = _step_terms(t, target)
    frac = kv_fraction_per_device(m, t.devices_per_replica) * t.devices_per_replica
    statement = f"""
Product wants **{fmt_count(target)} concurrent conversations** (sessions) on one
{t.replica_noun} at
today's precision ({t.weight_bits}-bit weights, {t.kv_bits}-bit KV cache), every decode step
of all {fmt_count(target)} within the TPOT budget ({fmt_time(t.slo_s)} per step, no prefill in
it). **What is the longest context, in tokens, each session may hold so that all
{fmt_count(target)} sessions fit beside the weights *and* one decode step of all of them
meets the budget?** Store the largest whole number of tokens in `answer_B`. You need the KV
bytes one token adds (every layer keeps K and V for each *KV* head — this model uses
grouped-query attention), the memory left after the weights, and the step time (on the
achievable roofline Lab 1 sizes plans with): it grows by one token's KV read per session
per token of context.
"""
    data = common + f"""WEIGHT_BYTES = {_fmt(track_capacity(t).weight_bytes)}  # resident weights of one {t.replica_noun}, bytes
LAYERS = {m.layers}
KV_HEADS = {m.kv_heads}  # grouped-query attention: {m.q_heads} query heads share {m.kv_heads} KV heads
D_HEAD = {m.d_head}
KV_BITS = {t.kv_bits}
KV_COPIES = {_fmt(frac)}  # copies of each KV head across the {t.replica_noun} (1 unless DEVICES > KV_HEADS)
TPOT_BUDGET_S = {t.slo_s!r}  # one decode step of every session, s
STEP_S_AT_ZERO_CONTEXT = {step0!r}  # one step of TARGET_SESSIONS sequences before any KV read, s
KV_READ_S_PER_TOKEN = {kv!r}  # one context token of one session read in a step, s
"""
    solution = """kv_bytes_per_token = 2 * LAYERS * KV_HEADS * D_HEAD * KV_BITS / 8 * KV_COPIES
free = DEVICES * USABLE_BYTES_PER_DEVICE * (1 - RESERVE) - WEIGHT_BYTES
by_memory = free / (TARGET_SESSIONS * kv_bytes_per_token)
by_tpot = (TPOT_BUDGET_S - STEP_S_AT_ZERO_CONTEXT) / (TARGET_SESSIONS * KV_READ_S_PER_TOKEN)
answer_B = int(min(by_memory, by_tpot))"""
    return statement, data, solution


def _exercise_b_lm_hidden(t: Track, target: int) -> str:
    cap = (f"state_capacity(\"{t.hardware_id}\", \"{t.model_id}\", weight_bits={t.weight_bits}, "
           f"kv_bits={t.kv_bits}, devices_per_replica={t.devices_per_replica}, "
           f"reserve_fraction={t.memory_reserve_fraction}, context_tokens={{x}})")
    step = (f"float(decode_roofline(\"{t.hardware_id}\", \"{t.model_id}\", {target}, {{x}}, "
            f"{t.weight_bits}, {t.kv_bits}, tp={t.devices_per_replica}, "
            f"mode=\"{SERVING_MODE}\").step_s)")
    return f"""
from labkit.grading import expect_true
from labkit.physics.memory import state_capacity
from labkit.physics.roofline import decode_roofline
_fits = {cap.format(x="answer_B")}.max_sessions
_step = {step.format(x="answer_B")}
_x = answer_B * 1.02 + 1
_over = {cap.format(x="_x")}.max_sessions < {target} or {step.format(x="_x")} > {t.slo_s!r}
expect_true(_fits >= {target} and _step <= {t.slo_s!r}, "B",
            "we loaded {target} conversations of your context beside the weights and ran one decode step",
            f"{{_fits}} fit and the step takes {{_step * 1e3:.1f}} ms: your context is too long",
            "memory bound = free / (sessions x KV bytes per token); TPOT bound = (budget - step at zero context) / (sessions x KV read per token)")
expect_true(_over, "B", "we checked your answer is the longest that fits",
            "2% more would still fit memory and the budget: your context is too short",
            "take the smaller of the memory and the TPOT bound")
"""


def exercise_b(t: Track) -> Exercise:
    """Memory wall: the largest state per session for a target number of sessions (and,
    for a language model, the TPOT budget of one step of them all)."""
    hw, m = get_hardware(t.hardware_id), get_model(t.model_id)
    one, many = unit_noun(t)
    if m.is_transformer:
        target = session_target(t)
        held = ("TARGET_SESSIONS", "concurrent conversations product wants to hold",
                f"devices in one {t.replica_noun}")
    else:
        target, batch_s = in_flight_target(t)
        held = ("TARGET_IN_FLIGHT", f"{many} in flight at once", "devices running the model")
    common = f"""
# Part B numbers for this track (read-only)
{held[0]} = {target}  # {held[1]}
DEVICES = {t.devices_per_replica}  # {held[2]}
USABLE_BYTES_PER_DEVICE = {_fmt(hw.usable_memory_bytes)}  # bytes a model may use per device
RESERVE = {t.memory_reserve_fraction}  # fraction of that memory kept free (fragmentation, runtime)
"""
    if m.is_transformer:
        statement, data, solution = _exercise_b_lm(t, common)
        hidden = _exercise_b_lm_hidden(t, target)
        visible = ('expect_number("answer_B", answer_B, "B",\n'
                   '              at_most=TPOT_BUDGET_S / (TARGET_SESSIONS * KV_READ_S_PER_TOKEN),\n'
                   '              why="within the TPOT budget even a step with nothing else to do '
                   'reads at most this many context tokens per session")')
        return Exercise(statement, data, "answer_B", solution, visible, hidden,
                        POINTS["exercise"], mistakes=(
                            "answer_B = int((DEVICES * USABLE_BYTES_PER_DEVICE * (1 - RESERVE)"
                            " - WEIGHT_BYTES) / (2 * LAYERS * KV_HEADS * D_HEAD * KV_BITS / 8"
                            " * KV_COPIES))",))
    cap = track_capacity(t)
    where = (f" (weights execute from flash; every {one} in flight needs its input buffer "
             "and activations in SRAM)" if cap.weight_location == "flash" else
             f" (every {one} in flight needs its input buffer and activations in memory "
             "beside the weights)")
    longest = len(batch_table_ms(t))
    more = (f"; a batch of {fmt_count(target + 1)} would not" if target < longest else "")
    fit = f"all {fmt_count(target)} fit" if target > 1 else f"the {one} fits"
    statement = f"""
The device's pass over a static batch of **{counted(target, one, many)}** fits within the
{fmt_time(t.slo_s)} deadline (it takes {fmt_time(batch_s)}: {pass_basis(t)}; the pass alone, before
any wait for the batch to fill, which Part C adds){more}, so product wants room for
{counted(target, one, many)} in flight at once{where}. **What is the largest state per {one},
in bytes, so that {fit}?** Store the largest whole number of bytes in `answer_B`.
"""
    data = common + ("WEIGHTS_IN_FLASH = True  # weights do not use SRAM on this device\n"
                     if cap.weight_location == "flash" else
                     f"WEIGHT_BYTES = {_fmt(cap.weight_bytes)}  # resident weights, bytes\n")
    weights = "" if cap.weight_location == "flash" else " - WEIGHT_BYTES"
    solution = (f"free = DEVICES * USABLE_BYTES_PER_DEVICE * (1 - RESERVE){weights}\n"
                "answer_B = int(free // TARGET_IN_FLIGHT)")
    call = (f"state_capacity(\"{t.hardware_id}\", \"{t.model_id}\", weight_bits={t.weight_bits}, "
            f"kv_bits={t.kv_bits}, devices_per_replica={t.devices_per_replica}, "
            f"reserve_fraction={t.memory_reserve_fraction}, state_bytes_per_request={{x}})")
    hidden = f"""
from labkit.grading import expect_true
from labkit.physics.memory import state_capacity
_fits = {call.format(x="answer_B")}.max_sessions
_over = {call.format(x="answer_B * 1.02 + 1")}.max_sessions
expect_true(_fits >= {target}, "B", "we loaded {counted(target, one, many)} in flight of your size beside the weights",
            f"only {{_fits}} fit: your bytes per {one} is too large",
            "free memory = devices x usable x (1 - reserve) - weights; divide by the {many} in flight")
expect_true(_over < {target}, "B", "we checked your answer is the largest that fits",
            "2% more would still fit {target}: your bytes per {one} is too small",
            "every {one} in flight holds the same state; use all the free memory")
"""
    return Exercise(statement, data, "answer_B", solution,
                    'expect_number("answer_B", answer_B, "B")', hidden, POINTS["exercise"],
                    values=(target + 1, batch_s))


def batch_table_ms(t: Track, largest: int = MAX_STATIC_BATCH) -> list[float]:
    """Time to process a static batch of b = 1..largest inputs, ms (rounded as the notebook
    prints it): labkit.plans.workload.pass_table_s, the p(B) Part C's widget shows (a CNN's
    pass with each input's signal front end)."""
    return [round(float(x) * 1e3, 4) for x in pass_table_s(t, largest)]


def pass_basis(t: Track) -> str:
    """What a batch time counts, in words: the model pass, with each input's signal front
    end where the device computes one (as Part C's p(B) does)."""
    one, _ = unit_noun(t)
    if front_end_s(t) > 0:
        return f"the model pass with each {one}'s {front_end_label(t)}, as Part C times it"
    return "the model pass, as Part C times it"


def static_batch_limit(t: Track) -> int:
    """The largest static batch Exercise C offers: MAX_STATIC_BATCH, or fewer when memory
    holds fewer inputs at once (Part B's capacity)."""
    return max(1, min(MAX_STATIC_BATCH, track_capacity(t).max_sessions))


def largest_static_batch(t: Track, table: list[float]) -> int:
    """The largest b whose oldest input, waiting (b - 1) / rate for the batch to fill, still
    meets the deadline (0 if none)."""
    fits = [b for b in range(1, len(table) + 1)
            if (b - 1) / t.demand_rate_per_s + table[b - 1] / 1e3 <= t.slo_s]
    return max(fits) if fits else 0


def sustainable_rate(t: Track, table: list[float]) -> tuple[int, float]:
    """(b, highest arrival rate per s some static batch b of the table sustains while its
    oldest input meets the deadline). A batch of b keeps up up to b / T(b); at that rate
    the oldest waits (b - 1) T(b) / b, so it qualifies when (2b - 1) T(b) / b <= deadline.
    (0, 0.0) when no batch does."""
    ok = [(b / (table[b - 1] / 1e3), b) for b in range(1, len(table) + 1)
          if (2 * b - 1) * table[b - 1] / 1e3 / b <= t.slo_s]
    if not ok:
        return 0, 0.0
    rate, b = max(ok)
    return b, rate


def _exercise_c_cnn(t: Track) -> tuple[str, str, str, str, str]:
    """Static batching under a deadline. When the wait for a second input alone exceeds the
    deadline (the answer would be 1 whatever the device), the question is turned round: how
    fast may inputs arrive before no static batch both keeps up and meets the deadline?"""
    largest = static_batch_limit(t)
    table = batch_table_ms(t, largest)
    rate = t.demand_rate_per_s
    one, many = unit_noun(t)
    expected = largest_static_batch(t, table)
    deadline = f"{fmt_time(t.slo_s)} deadline"
    memory = ("" if largest == MAX_STATIC_BATCH else
              f": memory holds at most {fmt_count(largest)} {many} at once")
    data = f"""
# Part C numbers for this track (read-only)
ARRIVALS_PER_S = {rate!r}  # {many} per second
DEADLINE_MS = {t.slo_s * 1e3!r}
BATCH_MS = {table}  # BATCH_MS[b - 1] = time to process a batch of b {many}, ms ({pass_basis(t)})
"""
    if expected >= 2 or (len(table) > 1 and 1 / rate + table[1] / 1e3 <= t.slo_s):
        statement = f"""
{many.capitalize()} arrive at {fmt_num(rate)} per second. A **static** batch of `b` {many}
starts only when the `b`-th has arrived, so the oldest one first waits `(b - 1) / rate`
seconds, then the whole batch takes the time in the table. **What is the largest `b` (one of
the table's batches{memory}) whose oldest {one} still meets the {deadline}?** Store it in
`answer_C` (`0` if none does).
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
        visible = f'expect_choice("answer_C", answer_C, range(0, {largest + 1}), "C")'
        return statement, data, solution, hidden, visible
    b, top = sustainable_rate(t, table)
    statement = f"""
{many.capitalize()} arrive at {fmt_num(rate)} per second, so a **static** batch of two would
make the first {one} wait {fmt_time(1 / rate)} for the second — longer than the {deadline}
by itself: at this rate the device processes each {one} alone ({fmt_time(table[0] / 1e3)}
each: {pass_basis(t)}), busy {fmt_pct(rate * table[0] / 1e3)} of the
time.
How much faster could {many} arrive? A batch of `b` {many} (one of the table's
batches{memory}) keeps up with arrivals only up to `b / T(b)` per second; at a rate `r` its
oldest {one} waits `(b - 1) / r`, then the batch takes `T(b)` from the table. **What is the
highest arrival rate ({many} per second) at which some static batch both keeps up and
meets the deadline?** Store it in `answer_C` (`0` if none does).
"""
    solution = """rates = [b / (BATCH_MS[b - 1] / 1e3) for b in range(1, len(BATCH_MS) + 1)
         if (b - 1) * BATCH_MS[b - 1] / b + BATCH_MS[b - 1] <= DEADLINE_MS]
answer_C = max(rates, default=0.0)"""
    hidden = f"""
from labkit.grading import expect_close
expect_close("answer_C", answer_C, {top!r}, "C", rel=0.01,
             revisit="a batch of b keeps up to b / T(b); at that rate the oldest waits (b - 1) T(b) / b, then T(b): compare with the deadline (here b = {b})")
"""
    visible = 'expect_number("answer_C", answer_C, "C", positive=False)'
    return statement, data, solution, hidden, visible


def padding_batch(t: Track) -> list[int]:
    """Exercise C's output lengths (language models): the largest static batch, up to
    BATCH_LENGTHS, whose sequences fit memory at the longest one's context and whose decode
    step meets the TPOT budget there."""
    for n in range(BATCH_LENGTHS, 1, -1):
        lengths = [int(x) for x in sample_lengths(t.output_tokens, t.output_tokens_cv, n=n,
                                                  seed=7)]
        ctx = float(t.prompt_tokens or 0) + max(lengths)
        fits = track_capacity(t, context_tokens=ctx).max_sessions >= n
        step = float(decode_roofline(t.hardware_id, t.model_id, n, ctx, t.weight_bits,
                                     t.kv_bits, tp=t.devices_per_replica,
                                     mode=SERVING_MODE).step_s)
        if fits and step <= t.slo_s:
            return lengths
    raise ValueError(f"track {t.id!r}: no static batch of two fits Exercise C")


def _exercise_c_tokens(t: Track) -> Exercise:
    """One user, its own tokens batched: the tail request's time per token when a pass
    checks K guesses (Part C's prediction setting, at its starting weights)."""
    k = probe_tokens(t)
    bits = start_bits(t)
    curve = speculation_curve(t, weight_bits=bits)
    passes = [round(p.check.pass_s * 1e3, 4) for p in curve]
    tail = round(curve[k].acceptance_tail, 4)
    mean_ms = round(curve[k].tpot_mean_s * 1e3, 4)
    q = f"p{t.slo_quantile * 100:g}"
    spec = speculation_of(t)
    expected = passes[k] * (1 - tail) / (1 - tail ** (k + 1))
    statement = f"""
{spec.proposer.capitalize()} guesses the next `K` tokens; one pass of the model checks all
`K + 1` positions and takes `PASS_MS[K]` ms ({bits}-bit weights). The guesses are checked in
order: each is kept with probability `α` if every guess before it was kept, and the pass
then adds one token of its own (the correction, or one more after `K` kept guesses). The
{q} request, at the tail of the spread across requests, has `α = ALPHA_TAIL`.
**What is its time per output token, in ms?** Store it in `answer_C`.
"""
    data = f"""
# Part C numbers for this track (read-only)
K = {k}  # guesses a pass checks
PASS_MS = {passes}  # PASS_MS[k] = one pass checking k guesses, ms
ALPHA_TAIL = {tail!r}  # acceptance of a guess, {q} request
AVERAGE_REQUEST_MS = {mean_ms!r}  # the average request's time per token at K, ms (Part C)
"""
    solution = "answer_C = PASS_MS[K] * (1 - ALPHA_TAIL) / (1 - ALPHA_TAIL ** (K + 1))"
    hidden = f"""
from labkit.grading import expect_close
expect_close("answer_C", answer_C, {expected!r}, "C", rel=0.01,
             revisit="tokens a pass = 1 + α + α² + ... + α^K (a guess counts only if every one before it was kept); time per token = pass time / tokens a pass")
"""
    visible = ('expect_number("answer_C", answer_C, "C", above=AVERAGE_REQUEST_MS, '
               'below=PASS_MS[K],\n              why="the tail request is slower than the '
               'average one, and a pass emits at least one token")')
    mean = spec.acceptance_mean
    mistakes = (f"answer_C = PASS_MS[K] * (1 - {mean!r}) / (1 - {mean!r} ** (K + 1))",
                "answer_C = PASS_MS[K] / (K + 1)", "answer_C = PASS_MS[K]")
    return Exercise(statement, data, "answer_C", solution, visible, hidden, POINTS["exercise"],
                    mistakes=mistakes)


def exercise_c(t: Track) -> Exercise:
    """Variance: padding waste (token streams), batch-formation wait (sensor frames), or
    the acceptance of a model's guesses of its own tokens (one user, nothing to batch)."""
    if t.speculates:
        return _exercise_c_tokens(t)
    if t.is_transformer:
        lengths = padding_batch(t)
        n = len(lengths)
        expected = 1 - sum(lengths) / (len(lengths) * max(lengths))
        statement = f"""
A **static** batch holds every slot until its longest request finishes; shorter requests
leave their slots idle (padding). For the {fmt_count(n)} output lengths below, drawn from
this track's request mix (a batch that fits memory and the TPOT budget), **what fraction of
the batch's decode slot-steps is padding?** Store a number between zero and one in
`answer_C`.
"""
        data = f"""
# Part C numbers for this track (read-only)
OUTPUT_TOKENS = {lengths}  # output tokens of the {n} requests in one static batch
"""
        solution = ("answer_C = 1 - sum(OUTPUT_TOKENS) / (len(OUTPUT_TOKENS) * "
                    "max(OUTPUT_TOKENS))")
        hidden = f"""
from labkit.grading import expect_close
expect_close("answer_C", answer_C, {expected!r}, "C", rel=0.01,
             revisit="padding = 1 - useful token-steps / (batch size x longest request)")
"""
        visible = ('expect_number("answer_C", answer_C, "C", positive=False, above=0, '
                   'below=1,\n              why="a share of the batch\'s slot-steps, not a '
                   'percentage")')
        mistakes = ("answer_C = 100 * (1 - sum(OUTPUT_TOKENS) / (len(OUTPUT_TOKENS) * "
                    "max(OUTPUT_TOKENS)))",)
    else:
        statement, data, solution, hidden, visible = _exercise_c_cnn(t)
        # the busy share the turned-round statement quotes: arrivals x one input's pass
        busy = t.demand_rate_per_s * batch_table_ms(t, static_batch_limit(t))[0] / 1e3
        return Exercise(statement, data, "answer_C", solution, visible, hidden,
                        POINTS["exercise"], values=(busy,))
    return Exercise(statement, data, "answer_C", solution, visible, hidden, POINTS["exercise"],
                    mistakes=mistakes)


def release_keys(t: Track) -> tuple[str, ...]:
    """The keys of ``release_D``: a model with no KV cache has no KV precision to choose."""
    kv = ("kv_bits",) if t.is_transformer else ()
    return ("weight_bits", *kv, "policy", "devices_per_replica", "rate_per_s")


def exercise_d(t: Track) -> Exercise:
    """Release choice: a plan that passes every guardrail, checked with labkit."""
    one, many = unit_noun(t)
    lo, hi = t.min_demand_rate_per_s, t.demand_rate_per_s
    rate = (f"exactly {fmt_num(hi)} {many} per second: every {one} must be processed"
            if lo == hi else f"{many} per second, at least {fmt_num(lo)} and at most "
            f"{fmt_num(hi)}")
    if t.is_transformer:
        knobs = ("weight and KV precision (bits), the scheduling policy, devices per "
                 f"{t.replica_noun}")
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

In {MEMO_WORDS[0]}–{MEMO_WORDS[1]} words: {INFO.memo_brief(t)}

### BEGIN SOLUTION
A strong memo names the release (precision, policy, devices, rate), quotes the binding
guardrail with its measured value and limit, ties the crossover from Part A to the
recurring cost, and names a measurable assumption (e.g. achievable bandwidth or
{"the request-length spread" if t.is_transformer else "the arrival pattern of the " + unit_noun(t)[1]}).
### END SOLUTION
"""
    return synthesis_cells(memo_prompt, memo, ids, POINTS["memo"])


def build_notebook(track_id: str) -> NotebookNode:
    """The nbgrader source notebook of Lab 1 for one track (the header is built last: it
    counts the points and lists the terms of the cells after it)."""
    t = get_track(track_id)
    ids = c.CellIds(prefix=INFO.id)
    cells: list[NotebookNode] = []
    checkpoints = checkpoint_answers(INFO.id, t.id)
    for part in PARTS:
        cells += part_cells(part, INFO.part_titles[part], t.narrative.hooks[part], ids,
                            EXERCISES[part](t), checkpoints[part])
    cells += _synthesis(t, ids)
    return finish(_header(t, ids, cells) + cells, notebook_title(INFO, t))
