"""Lab 1 for one track: its parts, header, report and synthesis."""

from __future__ import annotations

import json
import os
from pathlib import Path

import ipywidgets as ipw

from labkit.core.answers import (
    AnswerStore,
    now_iso,
    record_ledger,
    write_json_atomic,
)
from labkit.core.format import fmt_time, format_bytes, plain
from labkit.labs.common import _download_link, _md_entry, answer_key
from labkit.labs.inference_economy.base import Part, cost_noun, event_noun, fmt_cost, fmt_days
from labkit.labs.inference_economy.info import (
    LAB_ID,
    LAB_TITLE,
    REPORT_JSON,
    REPORT_MD,
    REPORT_SCHEMA,
    REPORT_VERSION,
    TIME_ESTIMATE,
)
from labkit.labs.inference_economy.part_a import PartA
from labkit.labs.inference_economy.part_b import PartB
from labkit.labs.inference_economy.part_c import PartC
from labkit.labs.inference_economy.part_d import PartD
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import PARTS, get_track
from labkit.ui import widgets as lw

PART_CLASSES: dict[str, type[Part]] = {"A": PartA, "B": PartB, "C": PartC, "D": PartD}

# -- the lab --------------------------------------------------------------------------------

class Lab:
    """Lab 1 for one track. ``store`` defaults to ``AnswerStore()`` (labkit_answers.json).

    ``gate_explore`` (default True) keeps each part's controls and charts behind its
    prediction, like the reveal; parts are built on first use and cached.
    """

    def __init__(self, track_id: str, store: AnswerStore | None = None, *,
                 gate_explore: bool = True) -> None:
        self.track = get_track(track_id)
        self.track_id = self.track.id
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
            self._parts[key] = PART_CLASSES[key](self)
        return self._parts[key]

    def parts(self) -> list[Part]:
        return [self.part(p) for p in PARTS]

    # -- header ----------------------------------------------------------------------------
    def header(self) -> ipw.HTML:
        tr = self.track
        hw = get_hardware(tr.hardware_id)
        m = get_model(tr.model_id)
        st = tr.stakeholder
        params = f"{m.params_total / 1e9:.3g}B" if m.params_total >= 1e9 else \
            f"{m.params_total / 1e6:.3g}M" if m.params_total >= 1e6 else \
            f"{m.params_total / 1e3:.3g}k"
        power = f"{hw.power_w:g} W" if hw.power_w is not None else "power n/a"
        price = (f", {hw.price_usd_per_hour:g} USD/h" if hw.price_usd_per_hour is not None
                 else "")
        slo = tr.guardrail_metrics[0]
        objectives = [
            f"Split one {event_noun(tr)} into its two amounts (prefill or input pass vs decode "
            f"or output) and find when the recurring {cost_noun(tr)} overtakes the one-time "
            "setup.",
            "Size the live state (KV cache or sensor windows) that caps concurrency beside "
            "the weights, and recognise out-of-memory as a failure, not a number.",
            f"Compare four batching policies under variance against the SLO ({slo}).",
            "Run a release review: memory, SLO, quality and cost guardrails together, and "
            "name the one that binds.",
        ]
        guard = "".join(f"<li>{lw.esc(g)}</li>" for g in tr.guardrail_metrics)
        objs = "".join(f"<li>{lw.esc(o)}</li>" for o in objectives)
        return ipw.HTML(
            f"<div class='labkit-header' style='border:1px solid #d5d8dc;border-radius:6px;"
            f"padding:12px 16px'>"
            f"<div style='font-size:0.8em;color:#5d6d7e;text-transform:uppercase'>Lab 1 · "
            f"{LAB_TITLE} · {lw.esc(TIME_ESTIMATE)}</div>"
            f"<div style='font-size:1.5em;font-weight:700;margin:4px 0'>{lw.esc(tr.label)}</div>"
            f"<div><b>Hardware:</b> {lw.esc(hw.name)} ({format_bytes(hw.usable_memory_bytes)} "
            f"usable, {format_bytes(hw.memory_bandwidth)}/s, {power}{price}) · "
            f"<b>Model:</b> {lw.esc(m.name)} ({params} parameters) · <b>Unit:</b> "
            f"{tr.cost_unit}</div>"
            f"<div style='margin:8px 0;padding:8px 12px;background:#f4f6f7;border-left:4px "
            f"solid #7d3c98'><b>{lw.esc(st.name)}</b>, {lw.esc(st.role)}: "
            f"<i>“{lw.esc(st.message)}”</i></div>"
            f"<div>{lw.esc(tr.narrative.intro)}</div>"
            f"<div style='margin-top:6px'><b>Primary metric:</b> {lw.esc(tr.primary_metric)}"
            f"</div><div><b>Guardrails:</b><ul style='margin:2px 0'>{guard}</ul></div>"
            f"<div><b>You will:</b><ol style='margin:2px 0'>{objs}</ol></div></div>")

    # -- synthesis and report --------------------------------------------------------------
    def takeaways(self) -> list[str]:
        """Five takeaways computed from the student's own settings across the parts."""
        a, b, c, d = (self.part(p) for p in PARTS)
        tr = self.track
        u = tr.cost_unit
        ra, rb, rc, rd = a.results, b.results, c.results, d.results
        saving = float(a.settings()["saving_pct"])  # type: ignore[arg-type]
        if saving > 0:
            worth = (f"your {saving:.0f}% saving is worth {fmt_cost(ra['annual_savings'], u)} "  # type: ignore[arg-type]
                     "a year")
        else:
            tenth = float(ra["effective_cost_per_event"]) * 0.1 * float(ra["events_per_day"]) * 365  # type: ignore[arg-type]
            worth = f"every 10% cut in cost per event is worth {fmt_cost(tenth, u)} a year"
        return [
            f"Two amounts: at your settings one {event_noun(tr)} spends "
            f"{fmt_time(ra['prefill_s'])} in the {a.default_phases.phase_labels['prefill']} and "  # type: ignore[arg-type]
            f"{fmt_time(ra['decode_s'])} in the {a.default_phases.phase_labels['decode']}; the "  # type: ignore[arg-type]
            f"{ra['binding_label']} binds.",
            f"Recurring cost compounds: {fmt_cost(ra['daily_cost'], u)} per day crosses the "  # type: ignore[arg-type]
            f"{fmt_cost(tr.setup_cost, u)} setup after "
            f"{fmt_days(ra['crossover_days'], tr.horizon_days)}; {worth}.",  # type: ignore[arg-type]
            ("State caps concurrency: at your Part B settings "
             + ("nothing fits (out of memory)" if rb["oom"] else
                f"{rb['max_sessions']:,} session(s) of "
                f"{format_bytes(rb['bytes_per_session'])} fit")  # type: ignore[arg-type]
             + f" beside {format_bytes(rb['weight_bytes'])} of weights."),  # type: ignore[arg-type]
            f"Batching depends on the workload: at your Part C settings {rc['winner']} wins "
            f"({lw.esc(rc['reason'])}).",
            ("A release ships only if every guardrail passes: your candidate "
             + ("passes all four" if rd["passed"] else f"is blocked by {rd['binding']}")
             + f", at {fmt_cost(rd['daily_cost'], u)} per day for "  # type: ignore[arg-type]
             f"{rd['replicas']} replica(s)."),
        ]

    def ledger_choices(self) -> dict[str, object]:
        """What Lab 1 hands to later labs: the release candidate and the key numbers."""
        a, b, c, d = (self.part(p) for p in PARTS)
        spec = d.results["spec"]
        return plain({
            "weight_bits": spec["weight_bits"],  # type: ignore[index]
            "kv_bits": spec["kv_bits"] if self.track.is_transformer else None,  # type: ignore[index]
            "policy": spec["policy"],  # type: ignore[index]
            "devices_per_replica": spec["devices_per_replica"],  # type: ignore[index]
            "demand_share": d.results["demand_share"], "passed": d.results["passed"],
            "binding": d.results["binding"], "replicas": d.results["replicas"],
            "daily_cost": d.results["daily_cost"], "cost_unit": self.track.cost_unit,
            "crossover_days": a.results["crossover_days"],
            "max_sessions": b.results["max_sessions"],
            "batching_winner": c.results["winner"],
        })  # type: ignore[return-value]

    def report(self) -> tuple[str, dict[str, object]]:
        """(Markdown, JSON-ready dict): settings, predictions and results of every part."""
        tr = self.track
        hw = get_hardware(tr.hardware_id)
        m = get_model(tr.model_id)
        parts = {p.letter: p.state() for p in self.parts()}
        memo = self.store.get(LAB_ID, answer_key(tr.id, "", "memo"))
        takeaways = self.takeaways()
        choices = self.ledger_choices()
        data: dict[str, object] = plain({  # type: ignore[assignment]
            "schema": REPORT_SCHEMA, "version": REPORT_VERSION, "lab": LAB_ID,
            "title": LAB_TITLE, "generated_at": now_iso(),
            "track": {"id": tr.id, "label": tr.label, "hardware": hw.name, "model": m.name,
                      "cost_unit": tr.cost_unit, "stakeholder": tr.stakeholder.name},
            "parts": parts, "takeaways": takeaways,
            "memo": None if memo is None else memo.to_dict(), "ledger_choices": choices,
        })
        lines = [f"# Lab 1: {LAB_TITLE} ({tr.label})", "",
                 f"Generated {data['generated_at']}. Track `{tr.id}`: {hw.name}, {m.name}. "
                 f"Stakeholder: {tr.stakeholder.name}, {tr.stakeholder.role}.", ""]
        for p in self.parts():
            st = parts[p.letter]
            lines += [f"## Part {p.letter}: {p.title}", ""]
            lines.append("- Prediction: " + _md_entry(p.predict, p.predict.entry))
            lines.append(f"- Computed answer at the track defaults: "
                         f"{p.predict.label_for(p.expected)}")
            settings = ", ".join(f"{k} = {v}" for k, v in st["settings"].items())  # type: ignore[index, union-attr]
            lines.append(f"- Your settings: {settings}")
            lines.append("- Checkpoint: " + _md_entry(p.checkpoint, p.checkpoint.entry))
            lines.append("")
        lines += ["## Takeaways", "", *(f"{i}. {t}" for i, t in enumerate(takeaways, 1)), "",
                  "## Memo", "", memo.current if memo is not None else "(not saved yet)", "",  # type: ignore[list-item]
                  "## Design ledger entry", "", "```json",
                  json.dumps(choices, indent=2, sort_keys=True), "```", ""]
        md = "\n".join(str(x) for x in lines)
        return md, data

    def write_report(self, directory: str | os.PathLike[str] = ".", *,
                     overwrite: bool = True) -> tuple[Path, Path]:
        """Write ``labkit_report.md`` and ``labkit_report.json`` (atomic) into ``directory``."""
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
        """Takeaways, memo prompt, report downloads; writes report files and the ledger.

        ``write`` None: write ``labkit_report.{md,json}`` to the working directory and
        record the design ledger, except under nbgrader autograde
        (``NBGRADER_EXECUTION=autograde``), where existing report files are kept (fresh
        widgets would overwrite the student's explored settings with defaults) and the
        ledger is not touched. True/False force writing on or off.
        """
        tr = self.track
        st = tr.stakeholder
        takeaways_html = ipw.HTML()
        links_html = ipw.HTML()
        status = ipw.HTML()
        refresh = ipw.Button(description="Refresh report", icon="refresh")
        autograde = os.environ.get("NBGRADER_EXECUTION") == "autograde"

        def render(do_write: bool) -> None:
            items = "".join(f"<li style='margin-bottom:4px'>{t}</li>" for t in self.takeaways())
            takeaways_html.value = (f"<div class='labkit-takeaways'><b>Key takeaways from your "
                                    f"own settings</b><ol>{items}</ol></div>")
            md, data = self.report()
            links_html.value = (
                "<div class='labkit-downloads'><b>Download your report:</b> "
                + _download_link(md, f"labkit_report_{tr.id}.md", "text/markdown",
                                 "Markdown report")
                + " · "
                + _download_link(json.dumps(data, indent=2, sort_keys=True),
                                 f"labkit_report_{tr.id}.json", "application/json",
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
            f"({lw.esc(st.role)}). Answer their question with your numbers: "
            f"<i>“{lw.esc(st.message)}”</i> Name your release candidate, what binds, the "
            "alternative you rejected and why. Write it in the graded memo cell below; "
            "<b>Refresh report</b> after you change any setting above.</div>")
        box = ipw.VBox([
            ipw.HTML(f"<div style='font-size:1.3em;font-weight:700;margin-top:12px'>Synthesis: "
                     f"{lw.esc(tr.label)}</div><div>{lw.esc(tr.narrative.takeaway)}</div>"),
            takeaways_html, prompt, refresh, links_html, status,
        ])
        box.add_class("labkit-synthesis")
        self._synthesis = box
        return box
