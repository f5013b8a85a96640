"""Lab 2 -- Accelerators: the one source of truth for all four track notebooks.

Roofline (B*, L*, short vs long context), three-axis capacity planning, parallelism
selection and a design challenge, from the paper section in shared/reference. Exercise
numbers are computed here at build time and written into the notebook; hidden tests
recompute answers with labkit. Instructor material: not installed with labkit.
"""

from __future__ import annotations

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
from labkit.labs.accelerators.info import INFO
from labkit.labs.parts import PARTS
from labkit.physics.edge import edge_profile, get_link
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.parallelism import tp_allreduce_messages
from labkit.physics.phases import cnn_inference_time, request_phases
from labkit.physics.roofline import decode_roofline
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track, get_track

# The lab's id, title, time, objectives and part titles are INFO's (a LabInfo shared with
# the widgets); `labkit course build` calls build_notebook for every track.
FLOOR_MARGIN = 0.20
TP_DEGREES = (2, 4, 8, 16, 32, 64)
POINTS = {"exercise": 2, "design": 3, "memo": 3}

HOOKS = {
    "A": "Every decode step reads the weights once, computes with them for each sequence and "
         "reads each sequence's KV cache. Which of the three is your track paying for?",
    "B": "Devices are bought for one of three reasons: to hold the weights, to hold the live "
         "state, or to meet the latency target for enough users. Which one binds here?",
    "C": "Splitting work across devices buys memory and speed but costs communication on a "
         "link. Which axis does the symptom call for, and when does adding more stop paying?",
    "D": "Now meet the target: the fewest devices that pass every constraint.",
}


def _lit(x: float) -> str:
    return repr(float(x))


def _hw_model(t: Track) -> tuple[Hardware, object]:
    return get_hardware(t.hardware_id), get_model(t.model_id)


# -- header ------------------------------------------------------------------------------
def _header(t: Track, ids: c.CellIds) -> list[NotebookNode]:
    intro = f"""
{t.narrative.intro} Lab 1 asked what serving costs; this lab asks what the hardware can do:
where the time goes inside one step, how many devices the workload needs and how to split
it across them.
""".strip()
    return header_cells(INFO, t, ids, intro=intro)


# -- Part A: roofline ----------------------------------------------------------------------
def exercise_a(t: Track) -> Exercise:
    hw, m = _hw_model(t)
    if m.is_transformer:
        tp = t.devices_per_replica
        r = decode_roofline(hw, m, 1, t.context_tokens, t.weight_bits, t.kv_bits, tp=tp,
                            mode="peak")
        w, comp, kv = r.weight_s * 1e3, r.compute_s * 1e3, r.kv_s * 1e3
        statement = f"""
On the peak roofline one token at batch 1 costs weight fetch + compute + KV read (numbers
below, per device, at the track's {t.context_tokens:,}-token context). Batching shares the
weight fetch; the other two are per sequence. **At what batch size is the time per token
within {FLOOR_MARGIN:.0%} of its floor (compute + KV)?** Store it in `answer_A` (a real
number, not rounded).
"""
        data = f"""
# Part A numbers for this track (read-only), ms per token at batch 1, peak roofline
WEIGHT_MS = {_lit(w)}  # weight fetch: shared by the whole batch
COMPUTE_MS = {_lit(comp)}  # 2 FLOP per active weight: per sequence
KV_MS = {_lit(kv)}  # this sequence's KV cache: per sequence
MARGIN = {FLOOR_MARGIN}  # within 20% of the floor
"""
        solution = "answer_A = WEIGHT_MS / (MARGIN * (COMPUTE_MS + KV_MS))"
        hidden = f"""
from labkit.grading import expect_close
from labkit.physics.roofline import decode_roofline
_r = decode_roofline("{hw.id}", "{m.id}", 1, {t.context_tokens}, {t.weight_bits}, {t.kv_bits}, tp={tp}, mode="peak")
expect_close("answer_A", answer_A, _r.weight_s / ({FLOOR_MARGIN} * (_r.compute_s + _r.kv_s)), "A", rel=0.01,
             revisit="per-token weight time is WEIGHT_MS / B; set it to MARGIN x (compute + KV)")
"""
    else:
        cnn = cnn_inference_time(hw, m, t.weight_bits, 1, mode="peak")
        flops_per_s = cnn.flops / cnn.compute_s
        statement = f"""
One inference reads the weights and the live activations and does a fixed amount of
arithmetic; on the peak roofline its time is the larger of the two (compute and memory
overlap). Inputs arrive {t.demand_rate_per_s:g} times per second. **What fraction of the
time is the device busy at batch 1?** Store a number between 0 and 1 in `answer_A`.
"""
        data = f"""
# Part A numbers for this track (read-only)
FLOP_PER_INFERENCE = {_lit(m.flops_per_inference)}
PEAK_OPS_PER_S = {_lit(flops_per_s)}  # at the {t.weight_bits}-bit datapath
BYTES_PER_INFERENCE = {_lit(cnn.bytes_moved)}  # weights + live activations
BANDWIDTH = {_lit(hw.memory_bandwidth)}  # bytes/s
ARRIVALS_PER_S = {_lit(t.demand_rate_per_s)}
"""
        solution = ("latency = max(FLOP_PER_INFERENCE / PEAK_OPS_PER_S, "
                    "BYTES_PER_INFERENCE / BANDWIDTH)\nanswer_A = ARRIVALS_PER_S * latency")
        hidden = f"""
from labkit.grading import expect_close
from labkit.physics.phases import cnn_inference_time
_lat = cnn_inference_time("{hw.id}", "{m.id}", {t.weight_bits}, 1, mode="peak").latency_s
expect_close("answer_A", answer_A, {_lit(t.demand_rate_per_s)} * _lat, "A", rel=0.01,
             revisit="roofline time = max(FLOP / peak, bytes / bandwidth); busy = rate x time")
"""
    return Exercise(statement, data, "answer_A", solution,
                    'expect_number("answer_A", answer_A, "A")', hidden, POINTS["exercise"])


# -- Part B: capacity ----------------------------------------------------------------------
def exercise_b(t: Track) -> Exercise:
    hw, m = _hw_model(t)
    if m.is_transformer:
        d, b = t.devices_per_replica, t.batch_size
        wb = t.weight_bits / 8
        statement = f"""
A replica of {d} device(s) shares the weight fetch, the compute and the KV reads of one
decode step evenly (the paper's pooled convention, peak roofline). With {b} sequences per
step and a TPOT budget of {t.slo_s * 1e3:g} ms, **what is the longest context (tokens per
sequence) that still meets the budget?** Store it in `answer_B` (a real number).
"""
        data = f"""
# Part B numbers for this track (read-only)
WEIGHT_BYTES = {_lit(m.block_params_total * wb)}  # decoder blocks at {t.weight_bits}-bit
ACTIVE_PARAMS = {_lit(m.block_params_active)}  # weights one token computes with
KV_BYTES_PER_TOKEN = {_lit(kv_bytes_per_token(m, t.kv_bits))}  # one sequence, all layers
PEAK_FLOPS = {_lit(hw.flops())}  # FLOP/s per device
BANDWIDTH = {_lit(hw.memory_bandwidth)}  # bytes/s per device
DEVICES = {d}
BATCH = {b}
TPOT_S = {_lit(t.slo_s)}
"""
        solution = """per_seq_budget = (TPOT_S * DEVICES - WEIGHT_BYTES / BANDWIDTH) / BATCH
answer_B = (per_seq_budget - 2 * ACTIVE_PARAMS / PEAK_FLOPS) * BANDWIDTH / KV_BYTES_PER_TOKEN"""
        hidden = f"""
from labkit.grading import expect_true
from labkit.physics.roofline import decode_roofline
expect_number("answer_B", answer_B, "B")
_r = decode_roofline("{hw.id}", "{m.id}", {b}, answer_B, {t.weight_bits}, {t.kv_bits}, tp=1, mode="peak")
_step = (_r.weight_step_s + _r.compute_step_s + _r.kv_step_s) / {d}
expect_true(abs(_step - {_lit(t.slo_s)}) <= 0.01 * {_lit(t.slo_s)}, "B",
            "we ran one decode step at your context on the replica",
            f"it takes {{_step * 1e3:.2f}} ms instead of {t.slo_s * 1e3:g} ms",
            "step = (weights / BW + B x (2N / C + S x KV bytes / BW)) / devices; solve for S")
"""
    else:
        lat = cnn_inference_time(hw, m, t.weight_bits, 1, mode="peak").latency_s
        statement = f"""
Owned devices pay in energy: each inference keeps the device busy (at {hw.power_w:g} W) for
its roofline time. The daily budget for this model is {t.daily_budget:g} {t.cost_unit}, over
{t.active_hours_per_day:g} active hours a day. **What is the highest steady input rate
(inferences per second) the budget allows?** Store it in `answer_B`.
"""
        j_per_unit = {"mWh": 3.6, "Wh": 3600.0}[t.cost_unit]
        data = f"""
# Part B numbers for this track (read-only)
LATENCY_S = {_lit(lat)}  # one inference, peak roofline, batch 1
POWER_W = {_lit(hw.power_w)}
DAILY_BUDGET = {_lit(t.daily_budget)}  # {t.cost_unit} per day
JOULES_PER_UNIT = {j_per_unit}  # 1 {t.cost_unit} in joules
ACTIVE_HOURS = {_lit(t.active_hours_per_day)}
"""
        solution = ("answer_B = DAILY_BUDGET * JOULES_PER_UNIT / (POWER_W * LATENCY_S * "
                    "ACTIVE_HOURS * 3600)")
        hidden = f"""
from labkit.grading import expect_close
from labkit.registries.hardware import get_hardware
from labkit.physics.phases import cnn_inference_time
_lat = cnn_inference_time("{hw.id}", "{m.id}", {t.weight_bits}, 1, mode="peak").latency_s
_want = {_lit(t.daily_budget)} * {j_per_unit} / (get_hardware("{hw.id}").power_w * _lat * {_lit(t.active_hours_per_day)} * 3600)
expect_close("answer_B", answer_B, _want, "B", rel=0.01,
             revisit="energy per day = rate x latency x power x active seconds; convert the budget to joules")
"""
    return Exercise(statement, data, "answer_B", solution,
                    'expect_number("answer_B", answer_B, "B")', hidden, POINTS["exercise"])


# -- Part C: parallelism -------------------------------------------------------------------
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


def _handoff(t: Track) -> tuple[float, float, float, str]:
    """(local seconds, link bytes/s, link latency s, link name) of handing one request off."""
    hw, m = _hw_model(t)
    if m.is_transformer:
        local = request_phases(hw, m, prompt_tokens=t.prompt_tokens,
                               output_tokens=t.output_tokens, weight_bits=t.weight_bits,
                               kv_bits=t.kv_bits, mode="achievable").latency_s
    else:
        local = cnn_inference_time(hw, m, t.weight_bits, 1, mode="achievable").latency_s
    profile = edge_profile(hw.id)
    if profile is not None and profile.offload_links:
        link = get_link(profile.offload_links[0])
        return local, link.up_bytes_per_s, link.rtt_s, link.name
    return (local, hw.interconnect_bandwidth, hw.interconnect_latency_s,
            "the board interconnect to a second SoC")


def exercise_c(t: Track) -> Exercise:
    hw, m = _hw_model(t)
    if m.is_transformer and _has_peers(hw):
        one_ms, want = _tp_stop(t)
        statement = f"""
Tensor parallelism splits each token's work `t` ways, but every layer ends in two
all-reduces: a ring all-reduce over `t` devices takes `2 (t - 1)` steps, and every step
pays the link's latency — the fast link inside a {hw.domain_size}-device domain, the slower
scale-out network beyond it. **What is the smallest TP degree in {TP_DEGREES} at which the
all-reduce latency per token exceeds the per-device share of the roofline time (one-device
time / t)?** That is where adding TP stops paying. Store it in `answer_C` (0 if none does).
"""
        data = f"""
# Part C numbers for this track (read-only)
ONE_DEVICE_MS = {_lit(one_ms)}  # per-token roofline time if one device did all the work
LAYERS = {m.layers}  # two all-reduces per layer
DOMAIN_SIZE = {hw.domain_size}  # devices on the fast link
LATENCY_INSIDE_S = {_lit(hw.interconnect_latency_s)}  # per ring step, fast link
LATENCY_OUTSIDE_S = {_lit(hw.scaleout_latency_s)}  # per ring step, scale-out network
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
    else:
        local, bw, alpha, link = _handoff(t)
        statement = f"""
Instead of computing locally, the device could hand the request off over its link
({link}). Handing off pays once the transfer — the link's latency plus bytes / bandwidth —
is faster than computing here. **What is the largest payload, in bytes, that can be handed
off faster than the local computation takes?** Store it in `answer_C` (0 if none).
"""
        data = f"""
# Part C numbers for this track (read-only)
LOCAL_S = {_lit(local)}  # one request/inference computed on this device (achievable)
LINK_BYTES_PER_S = {_lit(bw)}  # {link}
LINK_LATENCY_S = {_lit(alpha)}
"""
        solution = "answer_C = max(0.0, (LOCAL_S - LINK_LATENCY_S) * LINK_BYTES_PER_S)"
        want = max(0.0, (local - alpha) * bw)
        hidden = f"""
from labkit.grading import expect_close
expect_close("answer_C", answer_C, {_lit(want)}, "C", rel=0.01,
             revisit="transfer time = latency + bytes / bandwidth; set it equal to the local time")
"""
        visible = 'expect_number("answer_C", answer_C, "C", positive=False)'
    return Exercise(statement, data, "answer_C", solution, visible, hidden,
                    POINTS["exercise"])


# -- Part D: design challenge --------------------------------------------------------------
# One extra requirement per scenario that labkit's own search does not apply: calling
# ``reference_design`` does not answer the exercise. (text, hidden-test predicate, grid filter)
EXTRA = {
    "fleet": ("the quality team keeps the KV cache at 16 bits", 'design_D.get("kv_bits") == 16',
              lambda cfg: cfg["kv_bits"] == 16),
    "handheld": ("long conversations keep the KV cache at 16 bits",
                 'design_D.get("kv_bits") == 16', lambda cfg: cfg["kv_bits"] == 16),
    "wearable": ("the phone is often out of range, so the ring must decide on its own "
                 "(split = 'on_device')", 'design_D.get("split") == "on_device"',
                 lambda cfg: cfg["split"] == "on_device"),
    "vehicle": ("the second SoC is the planner's hot spare, so perception runs on one SoC "
                "(layout = 'single')", 'design_D.get("layout") == "single"',
                lambda cfg: cfg["layout"] == "single"),
}
# The values a text-valued design key takes (the controls of Part D show their labels).
CHOICES = {
    "vehicle": {"layout": (("single", "one SoC"), ("cameras", "two SoCs, the cameras split"),
                           ("model", "two SoCs, the model split"))},
    "wearable": {"split": (("on_device", "run the model on the ring"),
                           ("features", "send features to the phone"),
                           ("raw", "send raw audio to the phone"))},
}
SLACK = 1.25      # near-optimal: at most 25% more devices than the fewest that work
DUTY_SLACK = 0.05  # wearable: within 5 points of the highest feasible duty cycle


def _grid(t: Track, sc: str) -> list[dict[str, object]]:
    from labkit.plans.design import DUTY_STEPS, INTERVALS_MS, VEHICLE_LAYOUTS

    bits = (4, 8, 16)
    if sc == "fleet":
        p2 = (1, 2, 4, 8, 16, 32, 64)
        return [dict(weight_bits=w, kv_bits=k, tp=tp, cp=1, pp=pp, dp=dp, ep=1)
                for w in bits for k in bits for tp in p2[:4] for pp in (1, 2, 4) for dp in p2]
    if sc == "handheld":
        return [dict(weight_bits=w, kv_bits=k, context_tokens=t.context_tokens)
                for w in bits for k in bits]
    if sc == "wearable":
        return [dict(weight_bits=w, duty=d, split=sp, interval_ms=i) for w in bits
                for d in DUTY_STEPS for sp in ("on_device", "features", "raw")
                for i in INTERVALS_MS]
    return [dict(weight_bits=w, layout=lay) for w in bits for lay in VEHICLE_LAYOUTS]


def _best_design(t: Track) -> tuple[dict[str, object], int, float | None]:
    """(config, fewest devices, best duty) under the extra requirement, by brute force."""
    from labkit.plans.design import design_check, scenario

    sc = scenario(t)
    keep = EXTRA[sc][2]
    best: tuple[tuple[float, float], dict[str, object], int] | None = None
    for cfg in _grid(t, sc):
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
        raise ValueError(f"track {t.id!r}: no Part D design meets the extra requirement")
    _, cfg, devices = best
    return cfg, devices, (float(cfg["duty"]) if "duty" in cfg else None)


def exercise_d(t: Track) -> Exercise:
    from labkit.plans.design import DESIGN_KEYS, scenario

    sc = scenario(t)
    text, predicate, _ = EXTRA[sc]
    config, min_devices, best_duty = _best_design(t)
    keys = ", ".join(f"`{k}`" for k in DESIGN_KEYS[sc])
    statement = f"""
Write your design in `design_D`, a dict with the keys {keys}. The autograder checks it
with labkit against every constraint Part D shows, plus one requirement the search in Part D
does not apply by itself: **{text}**. It must also be near the best design under that
requirement: at most {SLACK:.2f}× the fewest devices that work"""
    statement += (f", and a duty cycle within {DUTY_SLACK:.2f} of the highest that works."
                  if best_duty is not None else ".")
    choices = CHOICES.get(sc, {})
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
print("Part D: design_D has every key, each a valid value")
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
    memo = f"""
### Memo to {t.stakeholder.name} (manually graded, {POINTS["memo"]} points)

In 150–250 words, recommend the deployment for the {t.label} track: which roofline regime it
runs in and the number that shows it, the binding capacity axis and the lever you pulled,
the parallelism (or hand-off) you chose and the communication it costs, and how your Lab 1
release choice changes any of it.

### BEGIN SOLUTION
A strong memo quotes B*, L* or the busy fraction for the regime, names the binding axis
with its device count, justifies the parallel split by the link it crosses, and connects
the Lab 1 precision choice to B*, the KV headroom or the energy budget.
### END SOLUTION
"""
    intro = ("## Synthesis\n\nComputed from *your* settings in Parts A–D, and connected to "
             "your Lab 1 design-ledger entry when you have one.")
    return synthesis_cells(intro, memo, ids, POINTS["memo"])


def build_notebook(track_id: str) -> NotebookNode:
    """The nbgrader source notebook of Lab 2 for one track."""
    t = get_track(track_id)
    ids = c.CellIds(prefix=INFO.id)
    cells = _header(t, ids)
    for part in PARTS:
        cells += part_cells(part, INFO.part_titles[part], HOOKS[part], ids, EXERCISES[part](t))
    cells += _synthesis(t, ids)
    return finish(cells, notebook_title(INFO, t))
