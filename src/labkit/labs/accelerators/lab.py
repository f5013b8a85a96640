"""Lab 2 for one track: its parts (chosen by the track's deployment scenario), header
hooks, the Lab 1 connection, takeaways and ledger entry (the session, report and synthesis
plumbing is :class:`labkit.labs.session.LabBase`)."""

from __future__ import annotations

from collections.abc import Mapping

from labkit import ui as lw
from labkit.core import validation as v
from labkit.core.answers import AnswerStore, read_ledger
from labkit.core.format import fmt_si, fmt_time, format_bytes, plain_dict
from labkit.core.grids import PRECISIONS
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.info import INFO
from labkit.labs.accelerators.part_a import PartALM
from labkit.labs.accelerators.part_a_cnn import PartACNN
from labkit.labs.accelerators.part_b_fleet import PartBFleet
from labkit.labs.accelerators.part_b_handheld import PartBHandheld
from labkit.labs.accelerators.part_b_vehicle import PartBVehicle
from labkit.labs.accelerators.part_b_wearable import PartBWearable
from labkit.labs.accelerators.part_c_fleet import PartCFleet
from labkit.labs.accelerators.part_c_handheld import PartCHandheld
from labkit.labs.accelerators.part_c_vehicle import PartCVehicle
from labkit.labs.accelerators.part_c_wearable import PartCWearable
from labkit.labs.accelerators.part_d import PartD
from labkit.labs.inference_economy.info import INFO as LAB1
from labkit.labs.session import LabBase
from labkit.physics.phases import cnn_inference_time
from labkit.physics.roofline import balance_context, critical_batch
from labkit.plans.design import SCENARIOS, DesignCheck, design_check, fleet_users, scenario
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track

PART_CLASSES: Mapping[str, Mapping[str, type[Part]]] = {
    "A": {"fleet": PartALM, "handheld": PartALM, "wearable": PartACNN, "vehicle": PartACNN},
    "B": {"fleet": PartBFleet, "handheld": PartBHandheld, "wearable": PartBWearable,
          "vehicle": PartBVehicle},
    "C": {"fleet": PartCFleet, "handheld": PartCHandheld, "wearable": PartCWearable,
          "vehicle": PartCVehicle},
    "D": {sc: PartD for sc in SCENARIOS},
}


# -- the lab --------------------------------------------------------------------------------------

class Lab(LabBase[Part]):
    """Lab 2 for one track. ``store`` defaults to ``AnswerStore()`` (labkit_answers.json).

    ``gate_explore`` (default True) keeps each part's controls and charts behind its
    prediction; parts are built on first use and cached.
    """

    info = INFO

    def __init__(self, track_id: str | Track, store: AnswerStore | None = None, *,
                 gate_explore: bool = True) -> None:
        super().__init__(track_id, store, gate_explore=gate_explore)
        self.scenario = scenario(self.track)

    def _part_class(self, letter: str) -> type[Part]:
        return PART_CLASSES[letter][self.scenario]

    def check(self, config: Mapping[str, object]) -> DesignCheck:
        """:func:`design_check` for this lab's track."""
        return design_check(self.track, config)

    # -- header ------------------------------------------------------------------------------
    def _hardware_summary(self, hw: Hardware) -> str:
        return (f"{format_bytes(hw.usable_memory_bytes)} usable, "
                f"{fmt_si(hw.memory_bandwidth, 'B/s')}, {fmt_si(hw.flops(), 'FLOP/s')} "
                f"{hw.default_precision}; machine balance {hw.arithmetic_intensity:,.3g} FLOP/B")

    def _stakeholder_question(self) -> str:
        tr = self.track
        hw = get_hardware(tr.hardware_id)
        return {
            "fleet": f"How many {hw.name} devices do {fleet_users(tr):,} live conversations need, "
                     "which axis sets that number, and how should each replica be sharded?",
            "handheld": "Where does the phone's time go per token, what limits a longer "
                        "conversation, and when should a request go to the cloud instead?",
            "wearable": "Is the spotter compute- or memory-bound, how often can it listen on "
                        "this battery, and should the ring hand work to the phone?",
            "vehicle": "How much headroom does one SoC have for cameras, and does a second SoC "
                       "help the hard deadline?",
        }[self.scenario]

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
        hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
        status = "shipped" if ch.get("passed") else "proposed"
        if tr.is_transformer:
            b16 = critical_batch(hw, m, 16, mode="peak")
            bx = critical_batch(hw, m, wb, mode="peak")
            text = (f"In Lab 1 you {status} {wb}-bit weights; here that moves B* from "
                    f"{b16:,.0f} (16-bit) to {bx:,.0f} sequences")
            kb = ch.get("kv_bits")
            if isinstance(kb, int) and kb in PRECISIONS:
                text += (f", and your {kb}-bit KV puts L* at "
                         f"{balance_context(hw, m, kb, mode='peak'):,.0f} tokens "
                         f"(16-bit: {balance_context(hw, m, 16, mode='peak'):,.0f})")
        else:
            r16 = cnn_inference_time(hw, m, 16, 1, "peak")
            rx = cnn_inference_time(hw, m, wb, 1, "peak")
            text = (f"In Lab 1 you {status} {wb}-bit weights; here that puts the model at "
                    f"{float(rx.flops / rx.bytes_moved):,.3g} FLOP/B (16-bit: "
                    f"{float(r16.flops / r16.bytes_moved):,.3g}) and "
                    f"{fmt_time(float(rx.latency_s))} per pass (16-bit: "
                    f"{fmt_time(float(r16.latency_s))})")
        dpr = ch.get("devices_per_replica")
        if isinstance(dpr, int):
            text += f". Lab 1 ran {dpr} device(s) per replica"
            if "D" in self._parts:
                text += f"; your Part D design uses {self._parts['D'].results['devices']}"
        return text + "."

    def takeaways(self) -> list[str]:
        """One takeaway per part from the student's own settings, then the Lab 1 link."""
        return [p.takeaway() for p in self.parts()] + [self.lab1_connection()]

    def ledger_choices(self) -> dict[str, object]:
        """What Lab 2 hands to later labs: the Part D design and the key findings."""
        a, b, c, d = self.parts()
        rd = d.results
        return plain_dict({
            "scenario": self.scenario, "design": rd["config"], "feasible": rd["feasible"],
            "failed": rd["failed"], "devices": rd["devices"], "min_devices": rd["min_devices"],
            "objective": rd["objective"], "regime": a.results.get("regime"),
            "capacity_binding": b.results.get("binding_axis", b.results.get("first_failure")),
            "part_c": {k: c.results.get(k) for k in ("layout", "split", "winner", "symptom",
                                                     "search_chosen") if k in c.results},
            "lab1_found": self.lab1_entry() is not None,
        })

    # -- report and synthesis hooks ------------------------------------------------------------
    def _track_tag(self) -> str:
        return f" ({self.scenario})"

    def _report_track(self) -> dict[str, object]:
        return {"scenario": self.scenario}

    def _report_extra(self) -> dict[str, object]:
        lab1 = self.lab1_entry()
        return {"lab1": None if lab1 is None else lab1.get("choices")}

    def _takeaway_items(self) -> list[str]:
        return [lw.esc(t) for t in self.takeaways()[:-1]]  # the Lab 1 link has its own panel

    def _synthesis_note(self) -> str:
        found = self.lab1_entry() is not None
        return (f"<div class='labkit-lab1' style='margin:6px 0;padding:6px 10px;border-left:4px "
                f"solid {'#1f6fb2' if found else '#b9770e'};background:#f4f8fb'><b>From Lab 1:"
                f"</b> {lw.esc(self.lab1_connection())}</div>")

    def _memo_prompt(self) -> str:
        return ("Recommend your Part D design with its numbers: where the workload sits on the "
                "roofline, which capacity axis binds, how you split or hand off the work, and "
                "how far you are from labkit's fewest-devices design.")
