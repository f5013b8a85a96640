"""Lab 2 Parts B and C, wearable scenario: the questions, options and prose templates. Every
number is formatted from a computed field (:mod:`..plan.window`); energy per window is
always shown as its named parts."""

from __future__ import annotations

from collections.abc import Mapping

from labkit import ui as lw
from labkit.core.format import (
    counted,
    energy_scale,
    fmt,
    fmt_count,
    fmt_energy,
    fmt_pct,
    fmt_time,
    format_bytes,
)
from labkit.core.grids import PRECISIONS
from labkit.labs.accelerators.base import feedback_map
from labkit.labs.common import CheckSpec, Spec
from labkit.registries.edge import Link
from labkit.scenarios.wearable.plan.window import RingDesign, SplitCost, WindowEnergy
from labkit.tracks import Track

RING_TITLES = {"flash": "Weights do not fit in flash", "sram": "Out of SRAM",
               "energy": "Over the energy budget", "coverage": "Listening too rarely"}


def fmt_power(watts: float) -> str:
    """A power in mW below 1 W, else W."""
    return f"{fmt_count(watts * 1e3)} mW" if watts < 1 else f"{fmt_count(watts)} W"


ENERGY_BASIS = "BLE payload + link idle"
"""What a window's energy here adds to Lab 1's (the ring's compute): the link's share."""


def energy_parts(e: WindowEnergy, *, link: bool = True) -> str:
    """``MFCC front end 2.38 mJ + DS-CNN 3.17 mJ (+ BLE ...) = 5.56 mJ``: the named parts
    of a window's energy and their total."""
    parts = [(e.front_end_name, e.front_end_j), ("model", e.model_j)]
    if link:
        parts.append((ENERGY_BASIS, e.radio_j + e.idle_j))
    scale, unit = energy_unit(e.energy_j)   # one unit for the parts and their sum
    return (" + ".join(f"{name} {fmt(j / scale)} {unit}" for name, j in parts)
            + f" = {fmt(e.energy_j / scale)} {unit}")


def energy_unit(total_j: float) -> tuple[float, str]:
    """(J per unit, unit) fmt_energy prints ``total_j`` in (:func:`energy_scale`)."""
    return energy_scale(total_j)


# -- Part B -----------------------------------------------------------------------------------

def b_hook(flash: float, sram: float, budget_text: str, battery_mwh: float) -> str:
    return (f"Weights sit in {format_bytes(flash)} of flash, each window and its activations "
            f"in {format_bytes(sram)} of SRAM, and the spotter may spend {budget_text} a day "
            f"of a {fmt_count(battery_mwh)} mWh battery. Does it fit, and how often can it "
            "listen?")


def b_prediction(tr: Track) -> Spec:
    q = (f"{lw.esc(tr.label)}: {tr.weight_bits}-bit weights, every window processed on the "
         "ring (front end + model), one window buffered. Which constraint fails first?")
    return q, [("Flash: the weights do not fit", "flash"),
               ("SRAM: the window and its activations do not fit", "sram"),
               ("Energy: the spotter's daily budget", "energy"),
               ("None: it fits and lasts", "none")]


def b_checkpoint(energy_here_j: float, energy_widest_j: float) -> CheckSpec:
    q = ("When the spotter is over its energy budget, which lever fixes it without new "
         "hardware?")
    opts = [("Process fewer windows (duty cycle) or hand work off to the phone", "duty"),
            ("Buffer more windows in SRAM", "buffer"),
            (f"Use {max(PRECISIONS)}-bit weights for accuracy", "precision_up"),
            ("Nothing: energy is fixed by the battery", "nothing")]
    good = ("Right: energy per day = energy per window x windows processed per day; the duty "
            "cycle scales it directly (down to the least share the product accepts), and "
            "Part C prices the BLE hand-off.")
    widest = (f"{max(PRECISIONS)}-bit costs {fmt_energy(energy_widest_j)} per window vs "
              f"{fmt_energy(energy_here_j)}" if energy_widest_j > energy_here_j else
              f"{max(PRECISIONS)}-bit costs no less per window")
    bad = ("Not quite: energy per day = energy per window x windows per day. Buffering "
           f"changes SRAM, not energy; {widest}.")
    return q, opts, "duty", feedback_map(opts, "duty", good, bad)


def b_details(d: RingDesign, budget_text: str) -> dict[str, str]:
    return {
        "flash": f"{format_bytes(d.weights_bytes)} vs {format_bytes(d.flash_bytes)}.",
        "sram": (f"{counted(d.windows_buffered, 'window')} of {format_bytes(d.window_bytes)}"
                 f" + activations {format_bytes(d.activation_bytes)} = "
                 f"{format_bytes(d.sram_bytes_used)} vs {format_bytes(d.sram_bytes)}."),
        "energy": (f"{fmt_count(d.windows_per_day)} windows/day x "
                   f"({energy_parts(d.energy)}) = {fmt_count(d.daily_mwh)} mWh/day vs "
                   f"{budget_text}: the battery lasts {fmt_count(d.battery_days)} days, not "
                   f"{fmt_count(d.target_days)}."),
        "coverage": (f"{fmt_pct(d.duty)} of windows is below the {fmt_pct(d.duty_floor)} "
                     "the product needs."),
    }


def b_reveal(computed_line: str, d: RingDesign, tr: Track, params: float) -> str:
    walls = [k for k, failed in d.fails.items() if failed]
    return (f"{computed_line}"
            f"<div>At the defaults the spotter needs {fmt_count(d.daily_mwh)} mWh/day "
            f"({energy_parts(d.energy)} per window): the battery lasts "
            f"{fmt_count(d.battery_days)} days.</div>"
            "<div style='color:#5d6d7e'>Why: the "
            f"{fmt_count(params)}-parameter model's {tr.weight_bits}-bit weights fill "
            f"{fmt_pct(d.flash_share)} of flash and one window with its activations "
            f"{fmt_pct(d.sram_share)} of SRAM, while processing every window all day costs "
            f"{fmt_count(d.daily_mwh / d.budget_mwh)}x the {tr.budget_text} budget. At the "
            "defaults "
            + (f"{' and '.join(walls)} fail{'s' if len(walls) == 1 else ''}"
               if walls else "nothing fails") + ".</div>")


def b_takeaway(d: RingDesign) -> str:
    return (f"Capacity on the ring: at {d.weight_bits}-bit and {fmt_pct(d.duty)} duty the "
            f"spotter spends {fmt_count(d.daily_mwh)} mWh/day (budget "
            f"{fmt_count(d.budget_mwh)}; {energy_parts(d.energy)} per window) and the ring "
            f"lasts {fmt_count(d.battery_days)} days; first failure: {d.first}.")


# -- Part C -----------------------------------------------------------------------------------

def c_hook(link_name: str, window_bytes: float, feature_bytes: float) -> str:
    return (f"The phone is never far: over {link_name} the ring could send a "
            f"{format_bytes(window_bytes)} audio window, or {format_bytes(feature_bytes)} of "
            "features, and let the phone classify it. Bytes cost radio energy; keeping the "
            "link responsive costs energy too. Where should the ring cut its pipeline?")


def c_prediction(tr: Track, interval_s: float) -> Spec:
    q = (f"{lw.esc(tr.label)}: every window processed, the phone link at a "
         f"{fmt_time(interval_s)} connection interval. Which cut spends the least ring "
         f"energy while still deciding within {fmt_time(tr.slo_s)}?")
    return q, [("Run the model on the ring, send only the decision", "on_device"),
               ("Compute features on the ring, send them", "features"),
               ("Send the raw audio window", "raw"),
               ("None meets the deadline", "none")]


def c_checkpoint(cuts: Mapping[str, SplitCost], link: Link, slo_s: float) -> CheckSpec:
    on, feat, raw = cuts["on_device"], cuts["features"], cuts["raw"]
    q = "Why can sending features cost the ring less energy than running the model?"
    opts = [(f"{format_bytes(feat.bytes_sent)} over BLE cost less than "
             f"{fmt_time(on.model_s)} of MCU compute, if the link's idle cost stays small",
             "bytes_vs_compute"),
            ("Radios use no energy", "free"),
            ("The phone's battery pays for the ring", "phone"),
            ("Features are compressed audio", "compressed")]
    raw_late = raw.latency_s > slo_s
    good = (f"Right: {format_bytes(feat.bytes_sent)} x {fmt_energy(link.up_j_per_byte)}/B "
            f"is {fmt_energy(feat.radio_j)}, vs {fmt_energy(on.model_j)} of model compute. "
            f"Raw audio is {fmt_count(raw.bytes_sent / feat.bytes_sent)}x more bytes"
            + (" and misses the deadline" if raw_late else "")
            + ", and a short connection interval costs energy every interval.")
    bad = (f"Not quite: the ring pays for every byte it sends "
           f"({fmt_energy(link.up_j_per_byte)}/B over BLE) and for every connection event; "
           "a small feature vector is cheaper than the model.")
    return q, opts, "bytes_vs_compute", feedback_map(opts, "bytes_vs_compute", good, bad)


def c_why(cuts: Mapping[str, SplitCost], power_w: float, slo_s: float) -> str:
    """The reveal's "why", each clause chosen by the cuts' computed energies and times."""
    on, feat, raw = cuts["on_device"], cuts["features"], cuts["raw"]
    cheaper = feat.radio_j < on.model_j
    raw_energy = raw.energy_j > min(on.energy_j, feat.energy_j)
    raw_late = raw.latency_s > slo_s
    raw_clause = " and ".join(x for x, flag in (("too much energy", raw_energy),
                                                ("too much airtime for the deadline",
                                                 raw_late)) if flag)
    return ("Why: the model costs "
            f"{fmt_time(on.model_s)} of a {fmt_power(power_w)} MCU per window "
            f"({fmt_energy(on.model_j)}); {format_bytes(feat.bytes_sent)} of features cost "
            f"{fmt_energy(feat.radio_j)} over BLE, "
            + ("a fraction of that" if cheaper else "more than that") + ". "
            f"Raw audio is {format_bytes(raw.bytes_sent)}"
            + (f": {raw_clause}" if raw_clause else ", and it fits both energy and deadline")
            + ". A shorter connection interval answers sooner but pays an empty event every "
              "interval.")


def c_takeaway(split_label: str, interval_s: float, cost: SplitCost, daily_mwh: float,
               best: str | None) -> str:
    return (f"Hand-off: cutting at '{split_label}' with a {fmt_time(interval_s)} interval "
            f"costs {fmt_energy(cost.energy_j)} per window (front end "
            f"{fmt_energy(cost.front_end_j)} + model {fmt_energy(cost.model_j)} + BLE "
            f"{fmt_energy(cost.radio_j + cost.idle_j)}) and {fmt_time(cost.latency_s)} to "
            f"decide ({fmt_count(daily_mwh)} mWh/day); the cheapest cut that meets the "
            f"deadline there is {str(best or 'none').replace('_', ' ')}.")


LIMIT_WORDS = {"flash": "flash", "sram": "SRAM", "energy": "energy budget",
               "coverage": "coverage floor", "deadline": "deadline", "link": "BLE link",
               "costlier": "another cut spends less ring energy per window"}
"""Each limit of Parts B and C as the decision line names it."""


def b_task(tr: Track) -> str:
    """Part B's task: every limit of the ring at once."""
    return (f"keep the spotter within flash, SRAM and the {tr.budget_text} a day budget while "
            "listening to enough windows")


def c_task(tr: Track) -> str:
    """Part C's task: the cut that spends the least ring energy and still decides in time."""
    return (f"cut the pipeline where the ring spends the least energy per window while each "
            f"window is still decided within {fmt_time(tr.slo_s)}")
