"""Lab 2's instructor material for wearable tracks: Parts B and C (duty under the energy budget; the feature payload worth sending), Part D's extra requirement, choices and search grid, and the memo's key. Hidden tests live here,
never in the installed package; ``course/labs/lab2.py`` loads this file for a track whose
scenario folder is ``labkit/scenarios/wearable/``."""

from __future__ import annotations

from labkit.core.format import fmt_num, fmt_time
from labkit.course.scaffold import Exercise, Requirement, joules_per_unit
from labkit.course.scaffold import literal as _lit
from labkit.physics import edge
from labkit.plans.design import DUTY_STEPS, INTERVALS_MS, active_seconds, design_defaults
from labkit.scenarios.wearable.plan.scenario import ring_split
from labkit.scenarios.wearable.plan.window import WEARABLE_INTERVAL_S, ring_feature_limit
from labkit.tracks import Track


def _ring_energy(t: Track) -> tuple[float, float, float]:
    """(J of ring compute per processed window, link idle W, Part B's interval s), on the
    on-device cut at Part B's connection interval (``ring_split``)."""
    interval = float(design_defaults(t)["interval_ms"]) / 1e3
    sp = ring_split(t, t.weight_bits, "on_device", interval, 1.0)
    idle_w = sp.idle_j * t.demand_rate_per_s  # idle_j = idle power / windows per second
    return sp.energy_j - sp.idle_j, idle_w, interval


def exercise_b(t: Track, points: int) -> Exercise:
    """The highest duty cycle the daily energy budget allows (Part B's energy model)."""
    active_j, idle_w, interval = _ring_energy(t)
    secs = active_seconds(t)
    budget_j = t.daily_budget * joules_per_unit(t)
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
                    'expect_number("answer_B", answer_B, "B")', hidden, points)


def exercise_c(t: Track, points: int) -> Exercise:
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
    visible = ('expect_number("answer_C", answer_C, "C", positive=False, at_most=DEADLINE_S * '
               'LINK_BYTES_PER_S,\n              why="in bytes: the link carries at most this '
               'within the deadline")')
    return Exercise(statement, data, "answer_C", solution, visible, hidden, points,
                    mistakes=("answer_C = 8 * (DEADLINE_S - FRONT_END_S - WAIT_S - "
                              "PHONE_MODEL_S) * LINK_BYTES_PER_S",))


EXTRA: tuple[Requirement, ...] = (
    ("the phone is often out of range, so the ring must decide on its own "
     "(`split = 'on_device'`)", 'design_D.get("split") == "on_device"',
     lambda cfg: cfg["split"] == "on_device"),
)
"""Part D's extra requirement candidates, in order (text, hidden-test predicate, filter)."""
CHOICES = {"split": tuple((v, label) for v, label in (
    ("on_device", "run the model on the ring"), ("features", "send features to the phone"),
    ("raw", "send raw audio to the phone")) if v in edge.SPLITS)}
"""The values a text-valued design key takes, with the words Part C's controls show."""


def grid(t: Track) -> list[dict[str, object]]:
    """Every design Part D's exercise searches."""
    bits = (4, 8, 16)
    return [dict(weight_bits=w, duty=d, split=sp, interval_ms=i) for w in bits
            for d in DUTY_STEPS for sp in ("on_device", "features", "raw")
            for i in INTERVALS_MS]


MEMO_KEY = ("A strong memo quotes the busy fraction, names energy (or SRAM) as the limit with "
            "its number, compares the ring's energy per window for each cut, and connects "
            "the Lab 1 precision to the energy budget.")
