"""TODO doc."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import ipywidgets as ipw

from labkit.core import validation as v
from labkit.core.answers import AnswerStore, now_iso, read_ledger, record_ledger, write_json_atomic
from labkit.core.format import (
    fmt_si,
    fmt_time,
    format_bytes,
    plain,
)
from labkit.core.grids import PRECISIONS
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.info import (
    LAB_ID,
    LAB_TITLE,
    REPORT_JSON,
    REPORT_MD,
    REPORT_SCHEMA,
    REPORT_VERSION,
    TIME_ESTIMATE,
)
from labkit.labs.accelerators.part_a import PartACNN, PartALM
from labkit.labs.accelerators.part_b_fleet import PartBFleet
from labkit.labs.accelerators.part_b_handheld import PartBHandheld
from labkit.labs.accelerators.part_b_vehicle import PartBVehicle
from labkit.labs.accelerators.part_b_wearable import PartBWearable
from labkit.labs.accelerators.part_c_fleet import PartCFleet
from labkit.labs.accelerators.part_c_handheld import PartCHandheld
from labkit.labs.accelerators.part_c_vehicle import PartCVehicle
from labkit.labs.accelerators.part_c_wearable import PartCWearable
from labkit.labs.accelerators.part_d import PartD
from labkit.labs.common import _download_link, _md_entry, answer_key
from labkit.physics.phases import (
    cnn_inference_time,
)
from labkit.physics.roofline import (
    balance_context,
    critical_batch,
)
from labkit.plans.design import SCENARIOS, design_check, fleet_users, scenario
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import PARTS, get_track
from labkit.ui import widgets as lw

PART_CLASSES: Mapping[str, Mapping[str, type[Part]]] = {
    "A": {"fleet": PartALM, "handheld": PartALM, "wearable": PartACNN, "vehicle": PartACNN},
    "B": {"fleet": PartBFleet, "handheld": PartBHandheld, "wearable": PartBWearable,
          "vehicle": PartBVehicle},
    "C": {"fleet": PartCFleet, "handheld": PartCHandheld, "wearable": PartCWearable,
          "vehicle": PartCVehicle},
    "D": {sc: PartD for sc in SCENARIOS},
}


# -- the lab --------------------------------------------------------------------------------------

_OBJECTIVES = {
    "fleet": ["Place decode on the roofline: B*, L*, the knee, and why real systems sit above "
              "the peak roofline.",
              "Size a fleet on three axes (weights, KV headroom, TPOT throughput), name the "
              "one that binds and the paper's first lever for it.",
              "Choose TP x CP x PP x DP from the symptom, see what each axis sends on which "
              "link, and when to stop adding it.",
              "Meet the target with the fewest devices, every constraint at once."],
    "handheld": ["Place on-device decode on the roofline: B*, L* and why a phone is "
                 "memory-bound.",
                 "Find what fits beside the OS and which limit a longer conversation hits "
                 "first: memory, TPOT, TTFT or the battery.",
                 "Price the cloud hand-off: bytes over the radio against energy and latency.",
                 "Design within the memory, latency and battery budgets."],
    "wearable": ["Place the model on the classic roofline: compute-bound at a tiny FLOP/s.",
                 "Fit weights in flash and windows in SRAM; trade duty cycle for battery life.",
                 "Cut the pipeline between ring and phone: compute vs BLE bytes vs the "
                 "deadline.",
                 "Design within the energy, memory, deadline and coverage budgets."],
    "vehicle": ["Place the model on the classic roofline per precision and batch.",
                "Load one SoC with cameras x fps against a hard deadline, memory and energy.",
                "Split cameras or the model across two SoCs: interconnect bytes vs the "
                "deadline.",
                "Design with the fewest SoCs that never miss a frame."],
}


class Lab:
    """Lab 2 for one track. ``store`` defaults to ``AnswerStore()`` (labkit_answers.json).

    ``gate_explore`` (default True) keeps each part's controls and charts behind its
    prediction; parts are built on first use and cached.
    """

    def __init__(self, track_id: str, store: AnswerStore | None = None, *,
                 gate_explore: bool = True) -> None:
        self.track = get_track(track_id)
        self.track_id = self.track.id
        self.scenario = scenario(self.track)
        self.store = store if store is not None else AnswerStore()
        self.gate_explore = gate_explore
        self._parts: dict[str, Part] = {}
        self._synthesis: ipw.VBox | None = None

    def __repr__(self) -> str:
        return f"Lab({self.track_id!r}, store={self.store!r})"

    def part(self, letter: str) -> Part:
        key = str(letter).upper()
        if key not in PART_CLASSES:
            raise ValueError(f"part must be one of {', '.join(PARTS)}; got {letter!r}")
        if key not in self._parts:
            self._parts[key] = PART_CLASSES[key][self.scenario](self)
        return self._parts[key]

    def parts(self) -> list[Part]:
        return [self.part(p) for p in PARTS]

    def check(self, config: Mapping[str, object]) -> dict[str, object]:
        """:func:`design_check` for this lab's track."""
        return design_check(self.track, config)

    # -- header ------------------------------------------------------------------------------
    def header(self) -> ipw.HTML:
        tr = self.track
        hw = get_hardware(tr.hardware_id)
        m = get_model(tr.model_id)
        st = tr.stakeholder
        n = m.params_total
        params = (f"{n / 1e9:.3g}B" if n >= 1e9 else f"{n / 1e6:.3g}M" if n >= 1e6
                  else f"{n / 1e3:.3g}k")
        prec = hw.default_precision
        ask = {
            "fleet": f"How many {hw.name} devices do {fleet_users(tr):,} live conversations need, "
                     "which axis sets that number, and how should each replica be sharded?",
            "handheld": "Where does the phone's time go per token, what limits a longer "
                        "conversation, and when should a request go to the cloud instead?",
            "wearable": "Is the spotter compute- or memory-bound, how often can it listen on "
                        "this battery, and should the ring hand work to the phone?",
            "vehicle": "How much headroom does one SoC have for cameras, and does a second SoC "
                       "help the hard deadline?",
        }[self.scenario]
        objs = "".join(f"<li>{lw.esc(o)}</li>" for o in _OBJECTIVES[self.scenario])
        return ipw.HTML(
            f"<div class='labkit-header' style='border:1px solid #d5d8dc;border-radius:6px;"
            f"padding:12px 16px'>"
            f"<div style='font-size:0.8em;color:#5d6d7e;text-transform:uppercase'>Lab 2 · "
            f"{lw.esc(LAB_TITLE)} · {lw.esc(TIME_ESTIMATE)}</div>"
            f"<div style='font-size:1.5em;font-weight:700;margin:4px 0'>{lw.esc(tr.label)}</div>"
            f"<div><b>Hardware:</b> {lw.esc(hw.name)} ({format_bytes(hw.usable_memory_bytes)} "
            f"usable, {fmt_si(hw.memory_bandwidth, 'B/s')}, {fmt_si(hw.flops(), 'FLOP/s')} "
            f"{prec}; machine balance {hw.arithmetic_intensity:,.3g} FLOP/B) · "
            f"<b>Model:</b> {lw.esc(m.name)} ({params} parameters) · <b>Unit:</b> "
            f"{tr.cost_unit}</div>"
            f"<div style='margin:8px 0;padding:8px 12px;background:#f4f6f7;border-left:4px "
            f"solid #7d3c98'><b>{lw.esc(st.name)}</b>, {lw.esc(st.role)}: "
            f"<i>“{lw.esc(ask)}”</i></div>"
            f"<div><b>You will:</b><ol style='margin:2px 0'>{objs}</ol></div></div>")

    # -- Lab 1 connection, synthesis and report ---------------------------------------------
    def lab1_entry(self) -> dict[str, object] | None:
        """The latest Lab 1 design-ledger entry for this track, or None."""
        try:
            entries = read_ledger(self.track_id, lab="lab1")
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
                    f"{float(r16.flops / r16.bytes_moved):,.3g}) and {fmt_time(float(rx.latency_s))} "
                    f"per pass (16-bit: {fmt_time(float(r16.latency_s))})")
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
        return plain({
            "scenario": self.scenario, "design": rd["config"], "feasible": rd["feasible"],
            "failed": rd["failed"], "devices": rd["devices"], "min_devices": rd["min_devices"],
            "objective": rd["objective"], "regime": a.results.get("regime"),
            "capacity_binding": b.results.get("binding_axis", b.results.get("first_failure")),
            "part_c": {k: c.results.get(k) for k in ("layout", "split", "winner", "symptom",
                                                     "search_chosen") if k in c.results},
            "lab1_found": self.lab1_entry() is not None,
        })  # type: ignore[return-value]

    def report(self) -> tuple[str, dict[str, object]]:
        """(Markdown, JSON-ready dict): settings, predictions and results of every part."""
        tr = self.track
        hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
        parts = {p.letter: p.state() for p in self.parts()}
        memo = self.store.get(LAB_ID, answer_key(tr.id, "", "memo"))
        takeaways = self.takeaways()
        choices = self.ledger_choices()
        lab1 = self.lab1_entry()
        data: dict[str, object] = plain({  # type: ignore[assignment]
            "schema": REPORT_SCHEMA, "version": REPORT_VERSION, "lab": LAB_ID,
            "title": LAB_TITLE, "generated_at": now_iso(),
            "track": {"id": tr.id, "label": tr.label, "hardware": hw.name, "model": m.name,
                      "cost_unit": tr.cost_unit, "stakeholder": tr.stakeholder.name,
                      "scenario": self.scenario},
            "parts": parts, "takeaways": takeaways,
            "memo": None if memo is None else memo.to_dict(), "ledger_choices": choices,
            "lab1": None if lab1 is None else lab1.get("choices"),
        })
        lines = [f"# Lab 2: {LAB_TITLE} ({tr.label})", "",
                 f"Generated {data['generated_at']}. Track `{tr.id}` ({self.scenario}): "
                 f"{hw.name}, {m.name}. Stakeholder: {tr.stakeholder.name}, "
                 f"{tr.stakeholder.role}.", ""]
        for p in self.parts():
            st = parts[p.letter]
            lines += [f"## Part {p.letter}: {p.title}", ""]
            lines.append("- Prediction: " + _md_entry(p.predict, p.predict.entry))
            lines.append(f"- Computed answer at the track defaults: "
                         f"{p.predict.label_for(p.expected)}")
            settings = ", ".join(f"{k} = {v_}" for k, v_ in st["settings"].items())  # type: ignore[index, union-attr]
            lines.append(f"- Your settings: {settings}")
            lines.append("- Checkpoint: " + _md_entry(p.checkpoint, p.checkpoint.entry))
            lines.append("")
        lines += ["## Takeaways", "", *(f"{i}. {t}" for i, t in enumerate(takeaways, 1)), "",
                  "## Memo", "", memo.current if memo is not None else "(not saved yet)", "",  # type: ignore[list-item]
                  "## Design ledger entry", "", "```json",
                  json.dumps(choices, indent=2, sort_keys=True), "```", ""]
        return "\n".join(str(x) for x in lines), data

    def write_report(self, directory: str | os.PathLike[str] = ".", *,
                     overwrite: bool = True) -> tuple[Path, Path]:
        """Write ``labkit_lab2_report.md`` and ``.json`` (atomic) into ``directory``."""
        md, data = self.report()
        d = Path(directory)
        md_path, json_path = d / REPORT_MD, d / REPORT_JSON
        if overwrite or not md_path.exists():
            tmp = md_path.with_name(f".{md_path.name}.tmp")
            tmp.write_text(md, encoding="utf-8")
            os.replace(tmp, md_path)
        if overwrite or not json_path.exists():
            write_json_atomic(json_path, data)
        return md_path, json_path

    def synthesis(self, *, write: bool | None = None) -> ipw.VBox:
        """Takeaways (with the Lab 1 link), memo prompt, report downloads; writes the report
        files and the design ledger.

        ``write`` None: write the report to the working directory and record the ledger,
        except under nbgrader autograde (``NBGRADER_EXECUTION=autograde``), where existing
        report files are kept and the ledger is not touched. True/False force it.
        """
        tr = self.track
        st = tr.stakeholder
        takeaways_html, links_html, status = ipw.HTML(), ipw.HTML(), ipw.HTML()
        lab1_html = ipw.HTML()
        refresh = ipw.Button(description="Refresh report", icon="refresh")
        autograde = os.environ.get("NBGRADER_EXECUTION") == "autograde"

        def render(do_write: bool) -> None:
            items = "".join(f"<li style='margin-bottom:4px'>{lw.esc(t)}</li>"
                            for t in self.takeaways()[:-1])
            takeaways_html.value = (f"<div class='labkit-takeaways'><b>Key takeaways from your "
                                    f"own settings</b><ol>{items}</ol></div>")
            found = self.lab1_entry() is not None
            lab1_html.value = (
                f"<div class='labkit-lab1' style='margin:6px 0;padding:6px 10px;border-left:4px "
                f"solid {'#1f6fb2' if found else '#b9770e'};background:#f4f8fb'><b>From Lab 1:"
                f"</b> {lw.esc(self.lab1_connection())}</div>")
            md, data = self.report()
            links_html.value = (
                "<div class='labkit-downloads'><b>Download your report:</b> "
                + _download_link(md, f"labkit_lab2_report_{tr.id}.md", "text/markdown",
                                 "Markdown report")
                + " · "
                + _download_link(json.dumps(data, indent=2, sort_keys=True),
                                 f"labkit_lab2_report_{tr.id}.json", "application/json",
                                 "JSON snapshot") + "</div>")
            notes = []
            if do_write:
                self.write_report(".", overwrite=not autograde)
                notes.append(f"wrote {REPORT_MD} and {REPORT_JSON}")
                if not autograde:
                    record_ledger(LAB_ID, tr.id, self.ledger_choices())
                    notes.append("recorded your design in the ledger")
            status.value = f"<span style='color:#5d6d7e'>{'; '.join(notes)}</span>"

        refresh.on_click(lambda _b: render(write is not False))
        render(write is not False)
        prompt = ipw.HTML(
            f"<div style='margin-top:8px'><b>Memo to {lw.esc(st.name)}</b> "
            f"({lw.esc(st.role)}). Recommend your Part D design with its numbers: where the "
            "workload sits on the roofline, which capacity axis binds, how you split or hand "
            "off the work, and how far you are from labkit's fewest-devices design. Write it "
            "in the graded memo cell below; <b>Refresh report</b> after you change any "
            "setting above.</div>")
        box = ipw.VBox([
            ipw.HTML(f"<div style='font-size:1.3em;font-weight:700;margin-top:12px'>Synthesis: "
                     f"{lw.esc(tr.label)}</div>"),
            takeaways_html, lab1_html, prompt, refresh, links_html, status,
        ])
        box.add_class("labkit-synthesis")
        self._synthesis = box
        return box
