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
def _header(t: Track, ids: c.CellIds) -> list[NotebookNode]:
    return header_cells(INFO, t, ids, intro=t.narrative.intro,
                        rows=[("Primary metric", t.primary_metric)])


def exercise_a(t: Track) -> Exercise:
    """Break-even demand: invert the crossover (labkit only goes from demand to days)."""
    unit = _unit(t)
    statement = f"""
The setup budget is a one-time amount; serving costs a little per event, every day. An
optimisation (say, a better kernel) cuts the cost per event by {SAVING:.0%}. **At how many
events per day would the cumulative recurring cost reach the setup budget in exactly
{TARGET_DAYS} days?** Store it in `answer_A` (events per day). Use the numbers in the cell
below, in {unit}.
"""
    data = f"""
# Part A numbers for this track (read-only)
SETUP_COST = {_fmt(t.setup_cost)}  # {unit}, paid once
COST_PER_EVENT = {_fmt(t.cost_per_event)}  # {unit} per event, before the optimisation
SAVING = {SAVING}  # fraction of the cost per event the optimisation removes
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
    "A", "we fed your events/day into the crossover model with the {SAVING:.0%} saving",
    f"it crosses after {{_c.crossover_days_capped:.1f}} days instead of {TARGET_DAYS}",
    "daily cost = events/day x cost per event x (1 - saving); crossover = setup / daily")
"""
    return Exercise(statement, data, "answer_A", solution,
                    'expect_number("answer_A", answer_A, "A")', hidden, POINTS["exercise"])


def exercise_b(t: Track) -> Exercise:
    """Memory wall: the largest state per session for a target number of sessions."""
    cap = track_capacity(t)
    target = max(2, math.ceil(cap.max_sessions * SESSION_GROWTH))
    hw, m = get_hardware(t.hardware_id), get_model(t.model_id)
    common = f"""
# Part B numbers for this track (read-only)
TARGET_SESSIONS = {target}  # concurrent sessions product wants to hold
DEVICES = {t.devices_per_replica}  # devices in one replica
USABLE_BYTES_PER_DEVICE = {_fmt(hw.usable_memory_bytes)}  # bytes a model may use per device
RESERVE = {t.memory_reserve_fraction}  # fraction of that memory kept free (fragmentation, runtime)
"""
    if m.is_transformer:
        frac = kv_fraction_per_device(m, t.devices_per_replica) * t.devices_per_replica
        statement = f"""
Product wants **{target} concurrent sessions** on one replica at today's precision
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
        statement = f"""
Product wants **{target} windows in flight** at once (weights execute from flash; every
in-flight window needs its input buffer and activations in SRAM). **What is the largest
state per window, in bytes, so that all {target} fit?** Store the largest whole number of
bytes in `answer_B`.
"""
        data = common + ("WEIGHTS_IN_FLASH = True  # weights do not use SRAM on this device\n"
                         if cap.weight_location == "flash" else
                         f"WEIGHT_BYTES = {_fmt(cap.weight_bytes)}  # resident weights, bytes\n")
        if cap.weight_location == "flash":
            solution = ("free = DEVICES * USABLE_BYTES_PER_DEVICE * (1 - RESERVE)\n"
                        "answer_B = int(free // TARGET_SESSIONS)")
        else:
            solution = ("free = DEVICES * USABLE_BYTES_PER_DEVICE * (1 - RESERVE) - WEIGHT_BYTES\n"
                        "answer_B = int(free // TARGET_SESSIONS)")
        probe = "state_bytes_per_request={x}"
        what = "bytes per window"
    call = (f"state_capacity(\"{t.hardware_id}\", \"{t.model_id}\", weight_bits={t.weight_bits}, "
            f"kv_bits={t.kv_bits}, devices_per_replica={t.devices_per_replica}, "
            f"reserve_fraction={t.memory_reserve_fraction}, {probe})")
    hidden = f"""
from labkit.grading import expect_true
from labkit.physics.memory import state_capacity
_fits = {call.format(x="answer_B")}.max_sessions
_over = {call.format(x="answer_B * 1.02 + 1")}.max_sessions
expect_true(_fits >= {target}, "B", "we loaded {target} sessions of your size beside the weights",
            f"only {{_fits}} fit: your {what} is too large",
            "free memory = devices x usable x (1 - reserve) - weights; divide by the sessions")
expect_true(_over < {target}, "B", "we checked your answer is the largest that fits",
            "2% more would still fit {target}: your {what} is too small",
            "KV bytes per token use the KV heads, not the query heads")
"""
    return Exercise(statement, data, "answer_B", solution,
                    'expect_number("answer_B", answer_B, "B")', hidden, POINTS["exercise"])


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
        step, _ = step_tables(t.hardware_id, t.model_id, MAX_STATIC_BATCH,
                              weight_bits=t.weight_bits, kv_bits=t.kv_bits,
                              window_bytes=t.window_bytes)
        table = [round(float(s) * 1e3, 4) for s in step]
        rate = t.demand_rate_per_s
        fits = [b for b in range(1, MAX_STATIC_BATCH + 1)
                if (b - 1) / rate + table[b - 1] / 1e3 <= t.slo_s]
        expected = max(fits) if fits else 0
        statement = f"""
Inputs arrive {rate:g} times per second. A **static** batch of `b` inputs starts only when
the `b`-th input has arrived, so the oldest one first waits `(b - 1) / rate` seconds, then
the whole batch takes the time in the table. **What is the largest `b` (1 to
{MAX_STATIC_BATCH}) whose oldest input still meets the {t.slo_s * 1e3:g} ms deadline?** Store
it in `answer_C` (0 if none does).
"""
        data = f"""
# Part C numbers for this track (read-only)
ARRIVALS_PER_S = {rate!r}
DEADLINE_MS = {t.slo_s * 1e3!r}
BATCH_MS = {table}  # BATCH_MS[b - 1] = time to process a batch of b inputs, ms
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
        visible = ('expect_choice("answer_C", answer_C, range(0, '
                   f'{MAX_STATIC_BATCH + 1}), "C")')
    return Exercise(statement, data, "answer_C", solution, visible, hidden, POINTS["exercise"])


def exercise_d(t: Track) -> Exercise:
    """Release choice: a plan that passes every guardrail, checked with labkit."""
    statement = f"""
Write the release you would ship in `release_D`: weight and KV precision (bits), the
scheduling policy, devices per replica, and the rate you will serve (events per second,
at least {t.min_demand_rate_per_s:g} and at most {t.demand_rate_per_s:g}). The autograder
sizes the plan with labkit and checks **every guardrail** — memory, SLO, quality and cost.
Use Part D's controls to find one that passes.
"""
    data = f"""
# Part D choices for this track (read-only)
BITS = (4, 8, 16)
POLICIES = ("none", "static", "dynamic", "continuous")
MAX_DEVICES_PER_REPLICA = {_max_devices(t)}
MIN_RATE_PER_S = {t.min_demand_rate_per_s!r}
MAX_RATE_PER_S = {t.demand_rate_per_s!r}
"""
    solution = f"release_D = {_passing_release(t)!r}"
    visible = """
_keys = {"weight_bits", "kv_bits", "policy", "devices_per_replica", "rate_per_s"}
assert isinstance(release_D, dict) and set(release_D) == _keys, (
    "Part D: release_D must be a dict with keys " + ", ".join(sorted(_keys)))
expect_choice("weight_bits", release_D["weight_bits"], BITS, "D")
expect_choice("kv_bits", release_D["kv_bits"], BITS, "D")
expect_choice("policy", release_D["policy"], POLICIES, "D")
expect_choice("devices_per_replica", release_D["devices_per_replica"],
              range(1, MAX_DEVICES_PER_REPLICA + 1), "D")
expect_number("rate_per_s", release_D["rate_per_s"], "D")
"""
    hidden = f"""
from labkit.grading import expect_true
from labkit.plans.serving import release_guardrails
_r = dict(release_D)
expect_true({t.min_demand_rate_per_s!r} <= _r["rate_per_s"] <= {t.demand_rate_per_s!r}, "D",
            "we checked the served rate", f"{{_r['rate_per_s']!r}} is outside the allowed range",
            "the product's minimum and today's demand")
_g = release_guardrails("{t.id}", weight_bits=_r["weight_bits"], kv_bits=_r["kv_bits"],
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
                for kb in (8, 16, 4):
                    for policy in ("continuous", "dynamic", "none", "static"):
                        try:
                            g = release_guardrails(t.id, weight_bits=wb, kv_bits=kb,
                                                   policy=policy, devices_per_replica=devices,
                                                   demand_rate_per_s=rate)
                        except ValueError:
                            continue
                        if g.passed:
                            return {"weight_bits": wb, "kv_bits": kb, "policy": policy,
                                    "devices_per_replica": devices, "rate_per_s": rate}
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
    """The nbgrader source notebook of Lab 1 for one track."""
    t = get_track(track_id)
    ids = c.CellIds(prefix=INFO.id)
    cells = _header(t, ids)
    for part in PARTS:
        cells += part_cells(part, INFO.part_titles[part], t.narrative.hooks[part], ids,
                            EXERCISES[part](t))
    cells += _synthesis(t, ids)
    return finish(cells, notebook_title(INFO, t))
