"""Lab 2 for one track: its parts (chosen by the track's deployment scenario), header
hooks, the Lab 1 connection, takeaways and ledger entry (the session, report and synthesis
plumbing is :class:`labkit.labs.session.LabBase`)."""

from __future__ import annotations

from collections.abc import Mapping

from labkit import ui as lw
from labkit.core import validation as v
from labkit.core.answers import AnswerStore, read_ledger
from labkit.core.format import (
    counted,
    fmt,
    fmt_count,
    fmt_pct,
    fmt_si,
    fmt_time,
    plain_dict,
)
from labkit.core.grids import PRECISIONS
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.info import INFO
from labkit.labs.accelerators.part_d import PartD
from labkit.labs.accelerators.part_d_spec import constraint_label, ratio_text
from labkit.labs.accelerators.scenario_views import views
from labkit.labs.inference_economy.info import INFO as LAB1
from labkit.labs.session import LabBase
from labkit.plans.design import DesignCheck, design_check, scenario
from labkit.plans.lab2 import PrecisionEffect, binding_constraint, lab1_precision_effect
from labkit.plans.scenarios.common import memory_basis
from labkit.registries.hardware import Hardware
from labkit.tracks import Track

# -- the lab --------------------------------------------------------------------------------------

class Lab(LabBase[Part]):
    """Lab 2 for one track. ``store`` defaults to ``AnswerStore()`` (labkit_answers.json).

    ``gate_explore`` (default True) keeps each part's controls and charts behind its
    prediction; parts are built on first use and cached.
    """

    info = INFO

    def __init__(self, track_id: str | Track, store: AnswerStore | None = None, *,
                 gate_explore: bool = True, headless: bool | None = None) -> None:
        super().__init__(track_id, store, gate_explore=gate_explore, headless=headless)
        self.scenario = scenario(self.track)

    def _part_class(self, letter: str) -> type[Part]:
        """Part D is shared; Parts A-C are the scenario's (its folder's views)."""
        return PartD if letter == "D" else views(self.scenario).parts[letter]

    def check(self, config: Mapping[str, object]) -> DesignCheck:
        """:func:`design_check` for this lab's track."""
        return design_check(self.track, config)

    # -- header ------------------------------------------------------------------------------
    def _hardware_summary(self, hw: Hardware) -> str:
        return (f"{memory_basis(self.track)}, "
                f"{fmt_si(hw.memory_bandwidth, 'B/s')}, {fmt_si(hw.flops(), 'FLOP/s')} "
                f"{hw.default_precision}; machine balance {fmt(hw.arithmetic_intensity)} FLOP/B")

    def _stakeholder_question(self) -> str:
        return views(self.scenario).question(self.track)

    # -- Lab 1 connection, takeaways and ledger ---------------------------------------------
    def lab1_entry(self) -> dict[str, object] | None:
        """The latest Lab 1 design-ledger entry for this track, or None."""
        try:
            entries = read_ledger(self.track_id, lab=LAB1.id)
        except ValueError:
            return None
        return entries[-1] if entries else None

    def lab1_connection(self) -> str:
        """One or two sentences tying the student's Lab 1 release to this lab's physics."""
        e = self.lab1_entry()
        tr = self.track
        if e is None:
            return ("No Lab 1 design for this track was found in the design ledger "
                    "($LABKIT_LEDGER or ~/.labkit/ledger.json): finish Lab 1's synthesis to "
                    "connect its release candidate to these numbers.")
        ch = e.get("choices") or {}
        if not isinstance(ch, Mapping):
            return "The Lab 1 ledger entry for this track has no design choices."
        try:
            wb = v.precision_bits("weight_bits", ch.get("weight_bits", tr.weight_bits))
        except ValueError:
            return "The Lab 1 ledger entry for this track has an unreadable precision."
        kb = ch.get("kv_bits")
        kv = kb if isinstance(kb, int) and kb in PRECISIONS else None
        status = "shipped" if ch.get("passed") else "proposed"
        text = (f"In Lab 1 you {status} {wb}-bit weights; "
                + _precision_effect_text(lab1_precision_effect(tr, wb, kv)))
        dpr = ch.get("devices_per_replica")
        if isinstance(dpr, int) and tr.can_add_replicas:   # a fleet: replicas of devices
            text += (f". Lab 1 ran {counted(dpr, 'device', 'devices')} per "
                     f"{tr.replica_noun}")
            if "D" in self._parts:
                text += (f"; your Part D design uses "
                         f"{fmt_count(self._parts['D'].results['devices'])} in all")
        return text + "."

    def takeaways(self) -> list[str]:
        """One takeaway per part from the student's own settings, then the Lab 1 link."""
        return [p.takeaway() for p in self.parts()] + [self.lab1_connection()]

    def ledger_choices(self) -> dict[str, object]:
        """What Lab 2 hands to later labs: the Part D design and the key findings."""
        a, b, c, d = self.parts()
        rd = d.results
        fleet = self.fleet_size()
        return plain_dict({
            "scenario": self.scenario, "design": rd["config"], "feasible": rd["feasible"],
            "failed": rd["failed"], "devices": rd["devices"], "min_devices": rd["min_devices"],
            "objective": rd["objective"], "regime": a.results.get("regime"),
            "capacity_binding": b.results.get("binding_axis", b.results.get("first_failure")),
            "part_c": {k: c.results.get(k) for k in ("layout", "split", "winner", "symptom",
                                                     "search_chosen") if k in c.results},
            "fleet_devices": None if fleet is None else fleet[0],
            "lab1_found": self.lab1_entry() is not None,
        })

    # -- report and synthesis hooks ------------------------------------------------------------
    def fleet_size(self) -> tuple[int, str] | None:
        """(devices, basis) of the fleet Part B's card shows (None where Part B sizes no
        fleet): with prefill and the utilisation cap when Part B could count them."""
        r = self.part("B").results
        n = r.get("fleet_devices")
        if not isinstance(n, int | float):
            return None
        if r.get("fleet_includes_prefill"):
            cap = r.get("max_utilisation")
            basis = ("decode + prefill, replicas at most "
                     f"{fmt_pct(cap if isinstance(cap, float) else None)} busy")
        else:
            basis = "decode only: excludes prefill and the utilisation cap"
        return int(n), basis

    def synthesis_facts(self) -> list[str]:
        """The numbers the memo should carry, each read from the part that shows it (plain
        text; the binding constraint is the largest true ratio of the Part D design)."""
        out = []
        fleet = self.fleet_size()
        if fleet is not None:
            out.append(f"Part B's fleet: {fmt_count(fleet[0])} devices ({fleet[1]}).")
        d = self.part("D")
        chk = self.check(d.results["config"])
        verdict = ("passes every constraint" if chk.feasible else
                   "fails " + ", ".join(constraint_label(n) for n in chk.failed))
        fewest = ("labkit's fewest: none fits" if chk.min_devices is None
                  else f"labkit's fewest: {fmt_count(chk.min_devices)}")
        out.append(f"Part D: your design uses {counted(chk.devices, 'device')} and "
                   f"{verdict} ({fewest}).")
        b = binding_constraint(chk.constraints)
        if b is not None:
            lead = "Furthest past its limit" if b.fails else "Closest to its limit"
            out.append(f"{lead}: {constraint_label(b.name)}, {ratio_text(b)}.")
        return out

    def _synthesis_lead(self) -> str:
        items = "".join(f"<li>{lw.esc(t)}</li>" for t in self.synthesis_facts())
        return (f"<div class='labkit-carry'><b>Numbers to carry into the memo</b>"
                f"<ul style='margin:2px 0'>{items}</ul></div>")

    def _track_tag(self) -> str:
        return f" ({self.scenario})"

    def _report_track(self) -> dict[str, object]:
        return {"scenario": self.scenario}

    def _report_extra(self) -> dict[str, object]:
        lab1 = self.lab1_entry()
        return {"lab1": None if lab1 is None else lab1.get("choices"),
                "synthesis_facts": self.synthesis_facts()}

    def _takeaway_items(self) -> list[str]:
        return [lw.esc(t) for t in self.takeaways()[:-1]]  # the Lab 1 link has its own panel

    def _synthesis_note(self) -> str:
        found = self.lab1_entry() is not None
        return (f"<div class='labkit-lab1' style='margin:6px 0;padding:6px 10px;border-left:4px "
                f"solid {'#1f6fb2' if found else '#b9770e'};background:#f4f8fb'><b>From Lab 1:"
                f"</b> {lw.esc(self.lab1_connection())}</div>")


def _precision_effect_text(pe: PrecisionEffect) -> str:
    """What a Lab 1 precision does here, each figure beside its base-precision value and
    with the roofline mode it is computed in."""
    base = f"{pe.base_bits}-bit"
    same_w = pe.weight_bits == pe.base_bits
    if pe.transformer:  # each B* names its weights: Part A's may be at another precision
        text = (f"here, with {pe.label}, B* ({pe.mode}) is {fmt_count(pe.b_star)} sequences"
                if same_w else
                f"here that moves B* ({pe.mode}) from {fmt_count(pe.b_star_base)} "
                f"({pe.base_label}) to {fmt_count(pe.b_star)} ({pe.label})")
        if pe.l_star is not None:
            text += (f", and your {pe.kv_bits}-bit KV puts L* ({pe.mode}) at "
                     f"{fmt_count(pe.l_star)} tokens")
            if pe.kv_bits != pe.base_bits:
                text += f" ({base} KV: {fmt_count(pe.l_star_base)})"
        return text
    if same_w:
        return (f"here, at {pe.label}, the model runs at {fmt_count(pe.flop_per_byte)} FLOP/B "
                f"and {fmt_time(pe.pass_s)} per pass ({pe.mode} roofline)")
    return (f"here that puts the model at {fmt_count(pe.flop_per_byte)} FLOP/B with "
            f"{pe.label} ({pe.base_label}: {fmt_count(pe.flop_per_byte_base)}) and "
            f"{fmt_time(pe.pass_s)} per pass ({pe.mode} roofline; {pe.base_label}: "
            f"{fmt_time(pe.pass_s_base)})")
