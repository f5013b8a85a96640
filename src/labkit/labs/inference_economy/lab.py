"""Lab 1 for one track: its parts, header hooks, takeaways and ledger entry (the session,
report and synthesis plumbing is :class:`labkit.labs.session.LabBase`)."""

from __future__ import annotations

from labkit import ui as lw
from labkit.core.format import counted, fmt_time, format_bytes, plain_dict
from labkit.core.units import DAYS_PER_YEAR
from labkit.labs.inference_economy import part_d_spec
from labkit.labs.inference_economy.base import Part, event_noun, fmt_cost, fmt_days
from labkit.labs.inference_economy.info import INFO
from labkit.labs.inference_economy.part_a import PartA
from labkit.labs.inference_economy.part_b import PartB
from labkit.labs.inference_economy.part_c import PartC
from labkit.labs.inference_economy.part_c_tokens import PartCTokens
from labkit.labs.inference_economy.part_d import PartD
from labkit.labs.parts import PARTS
from labkit.labs.session import LabBase
from labkit.registries.hardware import Hardware

CUT_SHARE = 0.1   # the cut the takeaway prices when the student set no saving
PART_CLASSES: dict[str, type[Part]] = {"A": PartA, "B": PartB, "C": PartC, "D": PartD}

# -- the lab --------------------------------------------------------------------------------

class Lab(LabBase[Part]):
    """Lab 1 for one track. ``store`` defaults to ``AnswerStore()`` (labkit_answers.json).

    ``gate_explore`` (default True) keeps each part's controls and charts behind its
    prediction, like the reveal; parts are built on first use and cached.
    """

    info = INFO

    def _part_class(self, letter: str) -> type[Part]:
        """The part's class; Part C batches the model's own guessed tokens where the
        track's model checks them (:attr:`labkit.tracks.Track.speculates`): one user
        leaves no other request to batch with."""
        if letter == "C" and self.track.speculates:
            return PartCTokens
        return PART_CLASSES[letter]

    # -- header ----------------------------------------------------------------------------
    def _hardware_summary(self, hw: Hardware) -> str:
        power = f"{hw.power_w:g} W" if hw.power_w is not None else "power n/a"
        price = (f", {hw.price_usd_per_hour:g} USD/h" if hw.price_usd_per_hour is not None
                 else "")
        return (f"{format_bytes(hw.usable_memory_bytes)} usable, "
                f"{format_bytes(hw.memory_bandwidth)}/s, {power}{price}")

    def _header_details(self) -> str:
        tr = self.track
        guard = "".join(f"<li>{lw.esc(g)}</li>" for g in tr.guardrail_metrics)
        return (f"<div>{lw.esc(tr.narrative.intro)}</div>"
                f"<div style='margin-top:6px'><b>Primary metric:</b> {lw.esc(tr.primary_metric)}"
                f"</div><div><b>Guardrails:</b><ul style='margin:2px 0'>{guard}</ul></div>")

    # -- takeaways and ledger --------------------------------------------------------------
    def takeaways(self) -> list[str]:
        """Five takeaways computed from the student's own settings across the parts."""
        a, b, c, d = (self.part(p) for p in PARTS)
        assert isinstance(a, PartA)
        tr = self.track
        u = tr.cost_unit
        assert isinstance(c, PartC | PartCTokens)
        ra, rb, rd = a.results, b.results, d.results
        saving = float(a.controls["saving_pct"].value)
        if saving > 0:
            worth = (f"your {saving:.0f}% saving is worth {fmt_cost(ra['annual_savings'], u)} "
                     "a year")
        else:
            tenth = (float(ra["effective_cost_per_event"]) * CUT_SHARE
                     * float(ra["events_per_day"]) * DAYS_PER_YEAR)
            worth = (f"every {CUT_SHARE:.0%} cut in cost per event is worth "
                     f"{fmt_cost(tenth, u)} a year")
        return [
            f"Two amounts: at your settings one {event_noun(tr)} spends "
            f"{fmt_time(ra['prefill_s'])} in the {a.default_phases.phase_labels['prefill']} and "
            f"{fmt_time(ra['decode_s'])} in the {a.default_phases.phase_labels['decode']}; the "
            f"{ra['binding_label']} binds.",
            f"Recurring cost compounds: {fmt_cost(ra['daily_cost'], u)} per day "
            f"({ra['daily_basis']} basis) "
            + (f"crosses the {fmt_cost(tr.setup_cost, u)} setup after "
               f"{fmt_days(ra['crossover_days'])}" if ra["crossover_days"] is not None else
               f"stays below the {fmt_cost(tr.setup_cost, u)} setup for the whole "
               f"{tr.horizon_days}-day horizon")
            + f"; {worth}.",
            ("State caps concurrency: at your Part B settings "
             + ("nothing fits (out of memory)" if rb["oom"] else
                f"{counted(int(rb['max_sessions']), tr.state_noun, tr.state_nouns)} of "
                f"{format_bytes(rb['bytes_per_session'])} fit")
             + (f" beside {format_bytes(rb['weight_bytes'])} of weights."
                if rb["weight_location"] == "memory" else
                f" in memory, while the {format_bytes(rb['weight_bytes'])} of weights stay in "
                f"{rb['weight_location']}.")),
            c.takeaway(),
            ("A release ships only if every guardrail passes: your candidate "
             + ("passes all four" if rd["passed"] else f"is blocked by {rd['binding']}")
             + (f", at {fmt_cost(rd['daily_cost'], u)} per day ({rd['daily_basis']}) for "
                f"{counted(int(rd['replicas']), tr.replica_noun, tr.replica_nouns)}."
                if rd["feasible"] else ": it does not fit memory, so it serves nothing.")),
        ]

    def ledger_choices(self) -> dict[str, object]:
        """What Lab 1 hands to later labs: the release candidate and the key numbers."""
        a, b, c, d = (self.part(p) for p in PARTS)
        assert isinstance(c, PartC | PartCTokens)
        spec = d.results["spec"]
        return plain_dict({
            "weight_bits": spec["weight_bits"],
            "kv_bits": spec["kv_bits"] if self.track.is_transformer else None,
            "policy": spec["policy"],
            "devices_per_replica": spec["devices_per_replica"],
            "demand_share": d.results["demand_share"], "passed": d.results["passed"],
            "binding": d.results["binding"], "replicas": d.results["replicas"],
            "daily_cost": d.results["daily_cost"], "cost_unit": self.track.cost_unit,
            "crossover_days": a.results["crossover_days"],
            "max_sessions": b.results["max_sessions"],
            **c.ledger(),
        })

    # -- synthesis hooks -------------------------------------------------------------------
    def _takeaway_items(self) -> list[str]:
        return self.takeaways()  # already HTML: the batching reason is escaped where it is used

    def _synthesis_lead(self) -> str:
        """The headline: a template over Part D's computed guardrails (the track's typed
        narrative takeaway claimed a binding guardrail the model may contradict)."""
        return f"<div>{lw.esc(part_d_spec.headline(self.track, self.part('D').results))}</div>"
