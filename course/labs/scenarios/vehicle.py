"""Lab 2's instructor material for vehicle tracks: Parts B and C (frame rate under the energy budget; the largest hand-off worth splitting the cameras for), Part D's extra requirement, choices and search grid, and the memo's key. Hidden tests live here,
never in the installed package; ``course/labs/lab2.py`` loads this file for a track whose
scenario folder is ``labkit/scenarios/vehicle/``."""

from __future__ import annotations

from labkit.core.format import fmt_num, fmt_time
from labkit.course.scaffold import Exercise, Requirement, joules_per_unit
from labkit.course.scaffold import literal as _lit
from labkit.registries.hardware import get_hardware
from labkit.scenarios.vehicle.plan.cameras import camera_split_limit
from labkit.scenarios.vehicle.plan.scenario import VEHICLE_LAYOUTS, vehicle_frame
from labkit.tracks import Track


def exercise_b(t: Track, points: int) -> Exercise:
    """The highest frame rate one SoC's daily energy budget allows (Part B's frame time)."""
    hw = get_hardware(t.hardware_id)
    frame_s, _ = vehicle_frame(t, t.weight_bits)
    j_per_unit = joules_per_unit(t)
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
                    'expect_number("answer_B", answer_B, "B")', hidden, points)


def exercise_c(t: Track, points: int) -> Exercise:
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
    visible = ('expect_number("answer_C", answer_C, "C", at_most=1e3 * CAMERAS * FRAME_S,\n'
               '              why="in ms: a split is worth nothing once the second SoC takes as '
               'long as one SoC running every frame")')
    return Exercise(statement, data, "answer_C", solution, visible, hidden, points,
                    mistakes=("answer_C = 1e6 * (CAMERAS * FRAME_S - CAMERAS // 2 * FRAME_S)",),
                    values=(-(-n // 2), n // 2, today))


EXTRA: tuple[Requirement, ...] = (
    ("the second SoC is the planner's hot spare, so perception runs on one SoC "
     "(`layout = 'single'`)", 'design_D.get("layout") == "single"',
     lambda cfg: cfg["layout"] == "single"),
)
"""Part D's extra requirement candidates, in order (text, hidden-test predicate, filter)."""
LAYOUT_LABELS = {"single": "one SoC", "cameras": "two SoCs, the cameras split between them",
                 "model": "two SoCs, the model split between them"}
CHOICES = {"layout": tuple((v, LAYOUT_LABELS[v]) for v in VEHICLE_LAYOUTS)}
"""The values a text-valued design key takes, with the words Part C's controls show."""
DEVICE_NOUN = "SoCs"  # the device count varies: Part D asks for near the fewest


def grid(t: Track) -> list[dict[str, object]]:
    """Every design Part D's exercise searches."""
    return [dict(weight_bits=w, layout=lay) for w in (4, 8, 16) for lay in VEHICLE_LAYOUTS]


MEMO_KEY = ("A strong memo quotes the frame time against the deadline, names the limit on "
            "cameras per SoC, explains why splitting the model does not cut latency, and "
            "connects the Lab 1 precision to the validated accuracy floor and energy.")
