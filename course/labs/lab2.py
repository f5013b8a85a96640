"""Lab 2 -- Accelerators: the one source of truth for all four track notebooks.

Roofline (B*, L*, short vs long context), three-axis capacity planning, parallelism
selection and a design challenge, from the paper section in shared/reference. Exercise
numbers are computed here at build time and written into the notebook; hidden tests
recompute answers with labkit. Instructor material: not installed with labkit.
"""

from __future__ import annotations

from collections.abc import Callable

from nbformat import NotebookNode

from labkit.core.format import fmt_count, fmt_num, fmt_time
from labkit.course import cells as c
from labkit.course.hooks import lab2_hooks as hooks
from labkit.course.scaffold import (
    Exercise,
    finish,
    header_cells,
    notebook_title,
    part_cells,
    synthesis_cells,
    unit_noun,
)
from labkit.labs.accelerators.info import INFO
from labkit.labs.parts import PARTS
from labkit.physics import edge
from labkit.physics.parallelism import tp_allreduce_messages
from labkit.physics.phases import cnn_inference_time
from labkit.physics.roofline import decode_roofline
from labkit.plans.design import (
    DESIGN_MODE,
    VEHICLE_LAYOUTS,
    active_seconds,
    design_defaults,
    ring_split,
    scenario,
    vehicle_frame,
)
from labkit.plans.handoff import (
    WEARABLE_INTERVAL_S,
    camera_split_limit,
    handheld_handoff,
    ring_feature_limit,
)
from labkit.plans.serving import track_capacity
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track, get_track

# The lab's id, title, time, objectives and part titles are INFO's (a LabInfo shared with
# the widgets); `labkit course build` calls build_notebook for every track.
TP_DEGREES = (2, 4, 8, 16, 32, 64)
POINTS = {"exercise": 2, "design": 3, "memo": 3}
MEMO_WORDS = (150, 250)  # the memo's length, words

def _hw_model(t: Track) -> tuple[Hardware, object]:
    return get_hardware(t.hardware_id), get_model(t.model_id)


def _lit(x: float) -> str:
    return repr(float(x))


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
READING = {
    "fleet": ("M. Shoeybi et al., *Megatron-LM: Training multi-billion parameter language "
              "models using model parallelism*, arXiv:1909.08053, 2019 (tensor parallelism).",
              "W. Kwon et al., *Efficient memory management for large language model serving "
              "with PagedAttention*, SOSP 2023 (the KV cache in memory).",
              "G.-I. Yu et al., *Orca: a distributed serving system for transformer-based "
              "generative models*, OSDI 2022 (iteration-level scheduling)."),
    "handheld": ("W. Kwon et al., *Efficient memory management for large language model "
                 "serving with PagedAttention*, SOSP 2023 (the KV cache in memory).",
                 "J. Huang et al., *A close examination of performance and power "
                 "characteristics of 4G LTE networks*, MobiSys 2012 (the radio model of "
                 "Part C)."),
    "wearable": ("Y. Zhang et al., *Hello Edge: keyword spotting on microcontrollers*, "
                 "arXiv:1711.07128, 2017 (the DS-CNN spotter).",
                 "C. Banbury et al., *MLPerf Tiny benchmark*, NeurIPS Datasets and Benchmarks "
                 "2021 (keyword spotting on microcontrollers, measured)."),
    "vehicle": ("J. Redmon et al., *You only look once: unified, real-time object detection*, "
                "CVPR 2016, and the Ultralytics YOLOv8 documentation (the detector).",),
}
# Terms Lab 2's widgets show on each scenario (the glossary defines them too).
SHOWN_TERMS = {"fleet": ("SLO", "TPOT", "KV", "B*", "L*", "Pareto"),
               "handheld": ("SLO", "TPOT", "TTFT", "KV", "B*", "L*"),
               "wearable": (), "vehicle": ()}


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
    reading = (*READING_COMMON, *READING.get(sc, ()))
    return header_cells(INFO, t, ids, intro=intro, later=later, prerequisites=prereq,
                        reading=reading, shown_terms=SHOWN_TERMS.get(sc, ()))


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
replica's memory beside the weights with a step inside the {fmt_time(t.slo_s)} TPOT budget.
**At that batch, how many times its floor is the time per generated token?** Store the
ratio in `answer_A` (a real number, at least one).
"""
        data = f"""
# Part A numbers for this track (read-only), ms per generated token at batch 1, peak roofline
WEIGHT_MS = {_lit(w)}  # weight fetch: shared by the whole batch
COMPUTE_MS = {_lit(comp)}  # 2 FLOP per active weight: per sequence
KV_MS = {_lit(kv)}  # this sequence's KV cache: per sequence
MAX_BATCH = {top}  # the most sequences that fit memory and the TPOT budget
"""
        solution = ("answer_A = (WEIGHT_MS / MAX_BATCH + COMPUTE_MS + KV_MS) / "
                    "(COMPUTE_MS + KV_MS)")
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
        statement = f"""
One {one} is one pass of the model: it reads the weights and the live activations and does
a fixed amount of arithmetic. On the peak roofline (Part A's default) its time is the larger
of the two, because compute and memory traffic overlap. {many.capitalize()} arrive at
{fmt_num(t.demand_rate_per_s)} per second. **What fraction of the time is the device busy,
processing them one at a time?** Store a number between zero and one in `answer_A`.
"""
        data = f"""
# Part A numbers for this track (read-only)
FLOP_PER_INFERENCE = {_lit(m.flops_per_inference)}  # one {one}
PEAK_OPS_PER_S = {_lit(flops_per_s)}  # at the {t.weight_bits}-bit datapath
BYTES_PER_INFERENCE = {_lit(cnn.bytes_moved)}  # weights + live activations of one {one}
BANDWIDTH = {_lit(hw.memory_bandwidth)}  # bytes/s
ARRIVALS_PER_S = {_lit(t.demand_rate_per_s)}  # {many} per second
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
    statement = f"""
A replica of {fmt_count(d)} device(s) shares the weight fetch, the compute and the KV reads of
one decode step evenly (the paper's pooled convention) and pays a fixed overhead per step, on
the achievable roofline Part B sizes with. With {seqs} per step and a TPOT budget of
{fmt_time(t.slo_s)} (one step, no prefill in it), **what is the longest context (tokens per
sequence) that still meets the budget *and* lets all the sequences' KV caches fit the memory
left beside the weights?** Store it in `answer_B` (a real number).
"""
    data = f"""
# Part B numbers for this track (read-only): one decode step on ONE device, achievable roofline
WEIGHT_S = {_lit(w)}  # reading every weight once (shared by the batch)
COMPUTE_S_PER_SEQ = {_lit(comp)}  # 2 FLOP per active weight, one sequence
KV_S_PER_TOKEN = {_lit(kv)}  # reading one context token's KV cache, one sequence
OVERHEAD_S = {_lit(over)}  # fixed per step (launch, sampling); not shared out
DEVICES = {d}
BATCH = {b}
TPOT_S = {_lit(t.slo_s)}
# memory of the whole replica
FREE_BYTES = {_lit(cap.free_bytes)}  # left for KV caches after the weights and the reserve
KV_BYTES_PER_TOKEN = {_lit(kv_bytes)}  # one context token of one sequence, all devices
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
expect_true(_step <= 1.01 * {_lit(t.slo_s)}, "B",
            "we ran one decode step at your context on the replica (achievable roofline)",
            f"it takes {{_step * 1e3:.2f}} ms, over the {t.slo_s * 1e3:g} ms budget",
            "step = (weights + B x (compute + S x KV per token)) / devices + overhead; solve for S")
expect_close("answer_B", answer_B, {_lit(want)}, "B", rel=0.01,
             revisit="the context must meet the budget AND fit memory: take the smaller of the two bounds")
"""
    return Exercise(statement, data, "answer_B", solution,
                    'expect_number("answer_B", answer_B, "B")', hidden, POINTS["exercise"])


def _j_per_unit(t: Track) -> float:
    """Joules in one of the track's energy units (an owned-device track)."""
    j = t.joules_per_cost_unit
    if j is None:
        raise ValueError(f"track {t.id!r}: cost_unit {t.cost_unit!r} is not an energy unit")
    return j


def _ring_energy(t: Track) -> tuple[float, float, float]:
    """(J of ring compute per processed window, link idle W, Part B's interval s), on the
    on-device cut at Part B's connection interval (``ring_split``)."""
    interval = float(design_defaults(t)["interval_ms"]) / 1e3
    sp = ring_split(t, t.weight_bits, "on_device", interval, 1.0)
    idle_w = sp.idle_j * t.demand_rate_per_s  # idle_j = idle power / windows per second
    return sp.energy_j - sp.idle_j, idle_w, interval


def exercise_b_wearable(t: Track) -> Exercise:
    """The highest duty cycle the daily energy budget allows (Part B's energy model)."""
    active_j, idle_w, interval = _ring_energy(t)
    secs = active_seconds(t)
    budget_j = t.daily_budget * _j_per_unit(t)
    statement = f"""
The ring processes only a share of its windows (the *duty*) and pays, per processed window,
the energy of its front end and the model; the phone link costs a constant idle power at
Part B's {fmt_time(interval)} connection interval, whatever the duty. The spotter gets
{t.budget_text} a day over {fmt_num(t.active_hours_per_day)} active hours. **What is the
highest duty (between zero and one) the budget allows?** Store it in `answer_B` (a real
number; above one means the budget is not binding).
"""
    data = f"""
# Part B numbers for this track (read-only)
ACTIVE_J_PER_WINDOW = {_lit(active_j)}  # front end + model on the ring, J
LINK_IDLE_W = {_lit(idle_w)}  # BLE connection kept alive, W
WINDOWS_PER_S = {_lit(t.demand_rate_per_s)}  # every window, duty 1
DAILY_BUDGET_MWH = {_lit(t.daily_budget)}
J_PER_MWH = 3.6
ACTIVE_HOURS = {_lit(t.active_hours_per_day)}
"""
    solution = """seconds = ACTIVE_HOURS * 3600
answer_B = (DAILY_BUDGET_MWH * J_PER_MWH / seconds - LINK_IDLE_W) / (ACTIVE_J_PER_WINDOW * WINDOWS_PER_S)"""
    hidden = f"""
from labkit.grading import expect_close
from labkit.plans.design import ring_split
from labkit.tracks import get_track
_sp = ring_split(get_track("{t.id}"), {t.weight_bits}, "on_device", {interval!r}, 1.0)
_want = ({_lit(budget_j)} / {_lit(secs)} - _sp.idle_j * {_lit(t.demand_rate_per_s)}) / ((_sp.energy_j - _sp.idle_j) * {_lit(t.demand_rate_per_s)})
expect_close("answer_B", answer_B, _want, "B", rel=0.01,
             revisit="energy per day = (duty x windows/s x J per window + idle W) x active seconds")
"""
    return Exercise(statement, data, "answer_B", solution,
                    'expect_number("answer_B", answer_B, "B")', hidden, POINTS["exercise"])


def exercise_b_vehicle(t: Track) -> Exercise:
    """The highest frame rate one SoC's daily energy budget allows (Part B's frame time)."""
    hw = get_hardware(t.hardware_id)
    frame_s, _ = vehicle_frame(t, t.weight_bits)
    j_per_unit = _j_per_unit(t)
    statement = f"""
An owned SoC pays in energy: each frame keeps it busy (at {fmt_num(hw.power_w)} W) for one
pass on the achievable roofline — the {fmt_time(frame_s)} per frame Part B uses. Perception
gets {t.budget_text} a day over {fmt_num(t.active_hours_per_day)} active hours. **What is the highest
steady frame rate (frames per second, all cameras together) the budget allows?** Store it
in `answer_B`.
"""
    data = f"""
# Part B numbers for this track (read-only)
FRAME_S = {_lit(frame_s)}  # one frame on one SoC, achievable roofline, batch 1
POWER_W = {_lit(float(hw.power_w or 0.0))}
DAILY_BUDGET = {_lit(t.daily_budget)}  # {t.cost_unit} per day
JOULES_PER_UNIT = {j_per_unit}  # 1 {t.cost_unit} in joules
ACTIVE_HOURS = {_lit(t.active_hours_per_day)}
"""
    solution = ("answer_B = DAILY_BUDGET * JOULES_PER_UNIT / (POWER_W * FRAME_S * "
                "ACTIVE_HOURS * 3600)")
    hidden = f"""
from labkit.grading import expect_close
from labkit.plans.design import vehicle_frame
from labkit.tracks import get_track
_t, _ = vehicle_frame(get_track("{t.id}"), {t.weight_bits})
_want = {_lit(t.daily_budget)} * {j_per_unit} / ({_lit(float(hw.power_w or 0.0))} * _t * {_lit(t.active_hours_per_day)} * 3600)
expect_close("answer_B", answer_B, _want, "B", rel=0.01,
             revisit="energy per day = frames/s x frame time x power x active seconds; convert the budget to joules")
"""
    return Exercise(statement, data, "answer_B", solution,
                    'expect_number("answer_B", answer_B, "B")', hidden, POINTS["exercise"])


def exercise_b(t: Track) -> Exercise:
    sc = scenario(t)
    if t.is_transformer:
        return exercise_b_lm(t)
    return exercise_b_wearable(t) if sc == "wearable" else exercise_b_vehicle(t)


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
    return Exercise(statement, data, "answer_C", solution, visible, hidden, POINTS["exercise"])


def exercise_c_handheld(t: Track) -> Exercise:
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
    return Exercise(statement, data, "answer_C", solution,
                    'expect_number("answer_C", answer_C, "C")', hidden, POINTS["exercise"])


def exercise_c_wearable(t: Track) -> Exercise:
    prof = edge.edge_profile(t.hardware_id)
    assert prof is not None and prof.offload_links
    link = edge.get_link(prof.offload_links[0])
    iv = WEARABLE_INTERVAL_S
    here = ring_split(t, t.weight_bits, "on_device", iv, 1.0)
    base = ring_split(t, t.weight_bits, "features", iv, 1.0)
    want = ring_feature_limit(t, iv)
    statement = f"""
The ring could compute the audio features and send them over {link.name}, and let the phone
run the model. The ring then skips the model but pays radio energy per byte, and the
decision waits up to one {fmt_time(iv)} connection interval, the airtime and the phone's
own model time. **What is the largest feature payload, in bytes, for which sending features
both costs the ring less energy per window than running the model on it and still decides
within the {fmt_time(t.slo_s)} deadline?** Store it in `answer_C` (`0` if none).
"""
    data = f"""
# Part C numbers for this track (read-only), one window, every window processed
ON_RING_J = {_lit(here.energy_j)}  # run the model on the ring: front end + model + result + idle link
FRONT_END_J = {_lit(base.front_end_j)}  # features on the ring
LINK_IDLE_J = {_lit(base.idle_j)}  # the connection's share of one window
RADIO_J_PER_BYTE = {_lit(link.up_j_per_byte)}
FRONT_END_S = {_lit(base.front_end_s)}
WAIT_S = {_lit(base.wait_s)}  # worst case: one whole connection interval
PHONE_MODEL_S = {_lit(base.host_s)}  # the model on the phone
LINK_BYTES_PER_S = {_lit(link.up_bytes_per_s)}
DEADLINE_S = {_lit(t.slo_s)}
"""
    solution = """by_energy = (ON_RING_J - FRONT_END_J - LINK_IDLE_J) / RADIO_J_PER_BYTE
by_deadline = (DEADLINE_S - FRONT_END_S - WAIT_S - PHONE_MODEL_S) * LINK_BYTES_PER_S
answer_C = max(0.0, min(by_energy, by_deadline))"""
    hidden = f"""
from labkit.grading import expect_close
expect_close("answer_C", answer_C, {_lit(want)}, "C", rel=0.01,
             revisit="the features must win on ring energy AND meet the deadline: take the smaller bound")
"""
    return Exercise(statement, data, "answer_C", solution,
                    'expect_number("answer_C", answer_C, "C", positive=False)', hidden,
                    POINTS["exercise"])


def exercise_c_vehicle(t: Track) -> Exercise:
    frame_s, _ = vehicle_frame(t, t.weight_bits)
    _, today, n = camera_split_limit(t)
    statement = f"""
Two SoCs can split the cameras: the first keeps {-(-n // 2)} of the {n} cameras, the second
gets the other {n // 2}, and each of their frames first crosses the board link (the hand-off
time `x`) — and then the second SoC still runs the inference on it. When every camera's
frame lands at once, one SoC finishes the last after `N t`; split, the worst case is
`max(ceil(N/2) t, x + floor(N/2) max(t, x))`. Today `x` is {fmt_time(today)}. **What is the
largest hand-off time `x`, in ms, for which splitting the cameras still has a lower worst
case than one SoC?** Store it in `answer_C`.
"""
    data = f"""
# Part C numbers for this track (read-only)
FRAME_S = {_lit(frame_s)}  # one frame on one SoC, achievable roofline (t)
CAMERAS = {n}  # N, every frame landing at once
"""
    solution = """import math
single = CAMERAS * FRAME_S
first, second = math.ceil(CAMERAS / 2), CAMERAS // 2
# split < single needs first * t < N t (true for N > 1) and x + second * max(t, x) < N t
x_small = single - second * FRAME_S  # if x <= t
answer_C = 1e3 * (x_small if x_small <= FRAME_S else single / (second + 1))"""
    hidden = f"""
from labkit.grading import expect_true
from labkit.physics.edge import worst_latency
expect_number("answer_C", answer_C, "C")
_x = answer_C / 1e3
_single = {_lit(frame_s)} * {n}
_at = worst_latency({_lit(frame_s)}, 0.0, {n}, "cameras", link_bytes_per_s=1.0, link_latency_s=_x * 0.99, frame_bytes=0.0)
_over = worst_latency({_lit(frame_s)}, 0.0, {n}, "cameras", link_bytes_per_s=1.0, link_latency_s=_x * 1.01, frame_bytes=0.0)
expect_true(_at < _single <= _over, "C", "we ran both layouts with your hand-off time",
            f"at {{answer_C:.4g}} ms the split's worst case is {{_at * 1e3:.4g}} ms vs one SoC's {{_single * 1e3:.4g}} ms",
            "the second SoC's last frame waits x, then floor(N/2) frames of max(t, x) each")
"""
    return Exercise(statement, data, "answer_C", solution,
                    'expect_number("answer_C", answer_C, "C")', hidden, POINTS["exercise"],
                    values=(-(-n // 2), n // 2, today))


def exercise_c(t: Track) -> Exercise:
    hw, m = _hw_model(t)
    sc = scenario(t)
    if m.is_transformer and _has_peers(hw):
        return exercise_c_tp(t)
    if sc == "handheld":
        return exercise_c_handheld(t)
    if sc == "wearable":
        return exercise_c_wearable(t)
    return exercise_c_vehicle(t)


# -- Part D: design challenge --------------------------------------------------------------
# One extra requirement per scenario that labkit's own search does not apply: calling
# ``reference_design`` does not answer the exercise. (text, hidden-test predicate, grid filter)
# Candidates in order: the exercise asks the first one some design meets (a requirement no
# design can meet would ask for an impossible design).
Requirement = tuple[str, str, Callable[[dict[str, object]], bool]]
EXTRA: dict[str, tuple[Requirement, ...]] = {
    "fleet": (("the quality team keeps the KV cache at 16 bits (`kv_bits = 16`)",
               'design_D.get("kv_bits") == 16', lambda cfg: cfg["kv_bits"] == 16),
              ("the quality team keeps the weights at 16 bits (`weight_bits = 16`)",
               'design_D.get("weight_bits") == 16', lambda cfg: cfg["weight_bits"] == 16),
              ("a replica stays inside half an NVLink node (`tp` at most 4)",
               'int(design_D.get("tp", 0)) <= 4', lambda cfg: int(cfg["tp"]) <= 4)),  # type: ignore[call-overload]
    "handheld": (("long conversations keep the KV cache at 16 bits (`kv_bits = 16`)",
                  'design_D.get("kv_bits") == 16', lambda cfg: cfg["kv_bits"] == 16),),
    "wearable": (("the phone is often out of range, so the ring must decide on its own "
                  "(`split = 'on_device'`)", 'design_D.get("split") == "on_device"',
                  lambda cfg: cfg["split"] == "on_device"),),
    "vehicle": (("the second SoC is the planner's hot spare, so perception runs on one SoC "
                 "(`layout = 'single'`)", 'design_D.get("layout") == "single"',
                 lambda cfg: cfg["layout"] == "single"),),
}
# The values a text-valued design key takes, with the words Part C's controls show for them.
LAYOUT_LABELS = {"single": "one SoC", "cameras": "two SoCs, the cameras split between them",
                 "model": "two SoCs, the model split between them"}
CHOICES = {
    "vehicle": {"layout": tuple((v, LAYOUT_LABELS[v]) for v in VEHICLE_LAYOUTS)},
    "wearable": {"split": tuple((v, label) for v, label in (
        ("on_device", "run the model on the ring"), ("features", "send features to the phone"),
        ("raw", "send raw audio to the phone")) if v in edge.SPLITS)},
}
DEVICE_NOUN = {"fleet": "GPUs", "vehicle": "SoCs"}  # scenarios whose device count varies
SLACK = 1.25      # near-optimal: at most 25% more devices than the fewest that work
DUTY_SLACK = 0.01  # wearable: within 1 point of the highest feasible duty cycle


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


def _best_design(t: Track) -> tuple[Requirement, dict[str, object], int, float | None]:
    """(requirement, config, fewest devices, best duty) under the first extra requirement
    some design meets, by brute force."""
    for req in EXTRA[scenario(t)]:
        found = _best_under(t, req[2])
        if found is not None:
            return (req, *found)
    raise ValueError(f"track {t.id!r}: no Part D design meets an extra requirement")


def _best_under(t: Track, keep: Callable[[dict[str, object]], bool]
                ) -> tuple[dict[str, object], int, float | None] | None:
    """(config, fewest devices, best duty) of the designs ``keep`` accepts; None if none
    is feasible."""
    from labkit.plans.design import design_check

    sc = scenario(t)
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
    if sc in DEVICE_NOUN:
        near.append(f"at most {SLACK:.2f}× the fewest {DEVICE_NOUN[sc]} that work")
    if best_duty is not None:
        near.append(f"a duty cycle within {DUTY_SLACK:.2f} of the highest that works")
    if near:
        statement += (" It must also be near the best design under that requirement: "
                      + ", and ".join(near) + ".")
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


MEMO_ASK = {
    "fleet": "which roofline regime decode runs in and the number that shows it, the binding "
             "capacity axis and the lever you pulled, the parallelism you chose and the "
             "communication it costs",
    "handheld": "which roofline regime decode runs in on the phone and the number that shows "
                "it, the limit a longer conversation hits first, when the cloud hand-off pays "
                "and what it costs in latency and battery",
    "wearable": "whether one window is compute- or memory-bound and how busy the ring is, "
                "the budget that limits how often it listens, where you cut the pipeline "
                "between ring and phone and what the radio costs",
    "vehicle": "whether one frame is compute- or memory-bound and how much of the deadline "
               "it uses, the limit that caps the cameras per SoC, the layout you chose and "
               "what its hand-offs cost",
}
MEMO_KEY = {
    "fleet": "A strong memo quotes B* or L* for the regime, names the binding axis with its "
             "device count, justifies the parallel split by the link it crosses, and connects "
             "the Lab 1 precision choice to B* or the KV headroom.",
    "handheld": "A strong memo quotes B* or L* (decode is memory-bound at batch 1), names the "
                "first limit with its number, prices the hand-off against the phone's own "
                "time and energy, and connects the Lab 1 precision to memory and battery.",
    "wearable": "A strong memo quotes the busy fraction, names energy (or SRAM) as the limit "
                "with its number, compares the ring's energy per window for each cut, and "
                "connects the Lab 1 precision to the energy budget.",
    "vehicle": "A strong memo quotes the frame time against the deadline, names the limit on "
               "cameras per SoC, explains why splitting the model does not cut latency, and "
               "connects the Lab 1 precision to the validated accuracy floor and energy.",
}


def _synthesis(t: Track, ids: c.CellIds) -> list[NotebookNode]:
    sc = scenario(t)
    memo = f"""
### Memo to {t.stakeholder.name} (manually graded, {POINTS["memo"]} points)

In {MEMO_WORDS[0]}–{MEMO_WORDS[1]} words, recommend the deployment for the {t.label} track: {MEMO_ASK[sc]}, and how
your Lab 1 release choice changes any of it.

### BEGIN SOLUTION
{MEMO_KEY[sc]}
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
    cells: list[NotebookNode] = []
    for part in PARTS:
        cells += part_cells(part, INFO.part_titles[part], story[part], ids, EXERCISES[part](t))
    cells += _synthesis(t, ids)
    return finish(_header(t, ids, cells) + cells, notebook_title(INFO, t))
