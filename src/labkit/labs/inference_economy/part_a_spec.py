"""Lab 1 Part A's declarative text: questions, options and prose templates. Every number
comes from a computed :class:`~labkit.plans.economy.CrossoverPoint` (or a module constant
the computation uses) through the :mod:`labkit.core.format` formatters."""

from __future__ import annotations

from labkit import ui as lw
from labkit.core.format import fmt_count, fmt_num, fmt_time, tex_num
from labkit.core.units import SECONDS_PER_HOUR
from labkit.labs.common import CheckSpec, Spec, html_table
from labkit.labs.inference_economy.base import (
    DAYS_BUCKET_MAX,
    WEEKS_BUCKET_MAX,
    cost_noun,
    event_noun,
    fmt_cost,
    fmt_days,
)
from labkit.plans.economy import (
    CrossoverPoint,
    EventCost,
    PrecisionFloor,
    RequestPhases,
    pass_basis_figures,
)
from labkit.plans.workload import front_end_label, front_end_s
from labkit.tracks import Track

DAYS_PER_WEEK = 7.0

MISCONCEPTIONS: dict[str, frozenset[str]] = {"prediction": frozenset(),
                                             "checkpoint": frozenset()}
"""Option values whose label states a misconception (never the computed answer)."""


def weeks(days: float) -> str:
    return fmt_count(days / DAYS_PER_WEEK)


def prediction_spec(tr: Track) -> Spec:
    h = fmt_num(tr.horizon_days)
    d, w = weeks(DAYS_BUCKET_MAX), weeks(WEEKS_BUCKET_MAX)
    q = (f"{lw.esc(tr.label)}: at the track's default settings, when does the cumulative "
         f"recurring {cost_noun(tr)} ({tr.cost_unit}) overtake the one-time setup budget "
         f"of {fmt_cost(tr.setup_cost, tr.cost_unit)}?")
    return q, [
        (f"Days: within {d} weeks of launch", "days"),
        (f"Weeks: between {d} and {w} weeks", "weeks"),
        (f"Months: after {w} weeks, within the {h}-day horizon", "months"),
        (f"Never within the {h}-day horizon: setup dominates", "never"),
    ]


def checkpoint_spec(tr: Track, ph: RequestPhases) -> CheckSpec:
    noun = event_noun(tr)
    pre, dec = ph.phase_labels["prefill"], ph.phase_labels["decode"]
    q = (f"{lw.esc(tr.label)}: at the track's default settings, which phase takes most of "
         f"one {noun}'s time once it is live?")
    after = ("the repeated output loop" if tr.is_transformer else
             "the short pass that follows it")
    opts = [(f"The {pre}: the one-time pass over the input", "prefill"),
            (f"The {dec}: {after}", "decode")]
    why = (f"at the defaults the {pre} takes {fmt_time(ph.prefill_s)} and the {dec} "
           f"{fmt_time(ph.decode_s)}, {time_basis(tr, tr.weight_bits)}, so the "
           f"{ph.binding_label} binds")
    good = f"Right: {why}."
    bad = f"Not quite: {why}. The phase chart shows the split at your settings."
    return q, opts, ph.binding_phase, {v: (good if v == ph.binding_phase else bad)
                                       for _, v in opts}


def chart_x_label() -> str:
    return (f"days since launch (log scale; dotted: {fmt_num(1.0)} day, "
            f"{weeks(DAYS_BUCKET_MAX)} and {weeks(WEEKS_BUCKET_MAX)} weeks)")


def daily_note(tr: Track, p: CrossoverPoint) -> str:
    """The basis of Part A's daily figure, said on the card."""
    noun = event_noun(tr)
    hours = float(tr.active_hours_per_day)
    rate = p.events_per_day / (hours * SECONDS_PER_HOUR)   # the demand the day runs at
    head = (f"{fmt_num(p.events_per_day)} {noun}s/day ({fmt_num(rate)}/s over "
            f"{fmt_num(hours)} active hours), {p.event.basis}")
    if tr.cost_unit == "USD":
        return (f"{head}; basis: {p.daily_basis} (device-time used, no whole replicas); "
                "the crossover uses it. Part D's plan is provisioned")
    return f"{head}; basis: {p.daily_basis} energy; the crossover uses it"


def parts_table(ev: EventCost) -> str:
    """The cost of one event as its named parts, and their sum."""
    u = ev.cost_unit
    rows = [[lw.esc(p.name), fmt_cost(p.cost, u), fmt_time(p.busy_s)] for p in ev.parts]
    rows.append(["<b>total (one event)</b>", f"<b>{fmt_cost(ev.total, u)}</b>",
                 fmt_time(sum(p.busy_s for p in ev.parts))])
    what = "cost" if u == "USD" else "energy"
    return html_table(["part", f"{what} per event ({ev.basis})", "busy time"], rows)


def budget_text(tr: Track, p: CrossoverPoint) -> tuple[str, str]:
    u = tr.cost_unit
    return ("Over the daily budget",
            f"The recurring {cost_noun(tr)} ({p.daily_basis} basis, {p.event.basis}) is "
            f"{fmt_cost(p.daily_cost, u)}/day against a budget of "
            f"{fmt_cost(tr.daily_budget, u)}/day ({fmt_num(p.budget_ratio)}x).")


def boundary_text(tr: Track, p: CrossoverPoint) -> tuple[str, str]:
    u = tr.cost_unit
    t = p.crossover_days
    cross = (f"the recurring line crosses the setup budget after {fmt_days(t)}"
             if t is not None else
             f"the recurring line stays below the setup budget for the whole "
             f"{fmt_num(tr.horizon_days)}-day horizon")
    return (f"Within the daily budget ({p.budget_ratio:.0%} used)",
            f"{fmt_cost(p.daily_cost, u)}/day ({p.daily_basis} basis) of "
            f"{fmt_cost(tr.daily_budget, u)}; {cross}. "
            "Watch demand: it scales the bill one for one.")


def floor_text(tr: Track, f: PrecisionFloor) -> tuple[str, str]:
    same = " and ".join(f"{p}-bit" for p in f.peers)
    b = f.basis or pass_basis_figures(tr, f.bits)
    return (f"{f.bits}-bit weights cost the same as {same}",
            f"{fmt_cost(f.cost_per_event, tr.cost_unit)} per {event_noun(tr)} at each: "
            f"{lw.esc(f.device)} runs them all on its {f.datapath} datapath (narrower weights "
            f"are unpacked to it), and one pass is {pass_regime(f)} "
            f"({fmt_time(f.compute_s)} of arithmetic at the achievable rate — "
            f"{lw.esc(b.derating_text)}; {fmt_time(b.peak_compute_s)} at its peak — vs "
            f"{fmt_time(f.memory_s)} of memory traffic at the achievable bandwidth, plus "
            f"{fmt_time(f.overhead_s)} of "
            f"fixed overhead: {fmt_time(f.pass_s)}), so fewer weight bytes save no time and "
            "no energy. The lines do not move.")


def time_basis(tr: Track, bits: int) -> str:
    """The roofline Lab 1's times are on, in words: the achievable rate (for a CNN, whose
    device class it is, and the input pass at peak beside it, as Lab 2 computes it)."""
    if tr.is_transformer:
        return "at the achievable rate"
    b = pass_basis_figures(tr, bits)
    return (f"at the achievable rate ({b.derating_text}; the input pass is "
            f"{fmt_time(b.peak_pass_s)} at peak)")


def pass_regime(f: PrecisionFloor) -> str:
    """What bounds the pass: its fixed overhead when that is the largest term, else the
    roofline regime (compute- or memory-bound)."""
    if f.overhead_s > max(f.compute_s, f.memory_s):
        return f"mostly fixed overhead (and {f.regime} beneath it)"
    return f.regime


def reveal_text(tr: Track, p0: CrossoverPoint, p: CrossoverPoint, label: str,
                bucket: str) -> str:
    u = tr.cost_unit
    ph = p.phases
    return (
        f"<div>At the track defaults: {fmt_cost(tr.setup_cost, u)} / "
        f"{fmt_cost(p0.daily_cost, u)} per day ({p0.daily_basis}) = "
        f"<b>{fmt_days(p0.crossover_days, tr.horizon_days)}</b> → <b>{label}</b>.</div>"
        f"<div>With your current settings: <b>{fmt_days(p.crossover_days, tr.horizon_days)}"
        f"</b> (bucket: {bucket}).</div>"
        f"<div style='color:#5d6d7e'>Why: the setup is paid once, the recurring cost every "
        f"day; t* = setup / daily cost, so demand and cost per event move it one for one. "
        f"Inside one {event_noun(tr)}, the {ph.binding_label} takes "
        f"{fmt_time(max(ph.prefill_s, ph.decode_s))} of "
        f"{fmt_time(ph.prefill_s + ph.decode_s)}{front_end_note(tr)}, "
        f"{time_basis(tr, p.weight_bits)}.</div>")


def front_end_note(tr: Track) -> str:
    """The signal front end that runs before both phases, where the device computes one."""
    fe = front_end_s(tr)
    return ("" if fe <= 0 else
            f" (and the {front_end_label(tr)} runs {fmt_time(fe)} before both, on the same "
            "device)")


def payback_tex(tr: Track, p: CrossoverPoint) -> str:
    """The payback of a second setup spent on the optimisation, from its printed terms."""
    if p.payback_days is None:
        return ("<p>With no saving, a second setup spent on an optimisation never repays; "
                f"a saving of {fmt_num(100 * p.repay_saving)}% repays it in "
                f"{tr.horizon_days} days.</p>")
    c_ev, n_day = r"c_{\text{event}}", r"N_{\text{day}}"
    return (f"$$t_{{\\text{{pay}}}} = \\frac{{C_{{\\text{{setup}}}}}}{{{c_ev}\\,s\\,{n_day}}} = "
            f"\\frac{{{tex_num(tr.setup_cost, sig=4)}}}{{{tex_num(p.event.total, sig=4)} "
            f"\\times {p.saving:.2f} \\times {tex_num(p.events_per_day, sig=4)}}} = "
            f"{tex_num(p.payback_days, sig=3)}\\ \\text{{days}}$$")
