"""What every lab's ``Lab`` class shares: :class:`LabBase`.

One lab session for one track: its parts (built on first use and cached), the header, the
report (Markdown and JSON), ``write_report`` and the synthesis (takeaways, memo prompt,
report downloads, report files and the design ledger). Each lab subclasses it, sets
``info`` (its :class:`~labkit.labs.info.LabInfo`) and fills in the hooks for what differs:

* :meth:`~LabBase._part_class` -- the part class for a letter (and scenario);
* :meth:`~LabBase.takeaways` and :meth:`~LabBase.ledger_choices` (required);
* header: :meth:`~LabBase._hardware_summary`, :meth:`~LabBase._stakeholder_question`,
  :meth:`~LabBase._header_details`;
* report: :meth:`~LabBase._track_tag`, :meth:`~LabBase._report_track`,
  :meth:`~LabBase._report_extra`;
* synthesis: :meth:`~LabBase._synthesis_lead`, :meth:`~LabBase._takeaway_items`,
  :meth:`~LabBase._synthesis_note`, :meth:`~LabBase._memo_prompt`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

from labkit import ui as lw
from labkit.core.answers import AnswerStore, now_iso, record_ledger, write_json_atomic
from labkit.core.format import fmt, plain_dict
from labkit.core.headless import is_headless
from labkit.labs.common import LabPart, answer_key, download_link, md_entry
from labkit.labs.info import LabInfo
from labkit.labs.parts import PARTS
from labkit.plans.scenarios.common import memory_basis
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track, get_track
from labkit.ui.headless import LazyModule

if TYPE_CHECKING:
    import ipywidgets as ipw
else:
    ipw = LazyModule("ipywidgets")  # a live notebook's widgets: never imported headless

P = TypeVar("P", bound=LabPart)

_BOX = ("border:1px solid #d5d8dc;border-radius:6px;padding:12px 16px")
_QUOTE = ("margin:8px 0;padding:8px 12px;background:#f4f6f7;border-left:4px solid #7d3c98")


def params_label(n: float) -> str:
    """``70.6B``, ``3.4M``, ``38.6k``: a model's parameter count for a header."""
    return (f"{fmt(n / 1e9)}B" if n >= 1e9 else f"{fmt(n / 1e6)}M" if n >= 1e6
            else f"{fmt(n / 1e3)}k")


class LabBase(Generic[P]):
    """One lab for one track. ``store`` defaults to ``AnswerStore()`` (labkit_answers.json).

    ``gate_explore`` (default True) keeps each part's controls and charts behind its
    prediction, like the reveal; parts are built on first use and cached. ``headless``
    (default: :func:`labkit.core.headless.is_headless`, decided from the environment the
    kernel started with) builds no views: the same API, plain text where a view would be.
    """

    info: ClassVar[LabInfo]

    def __init__(self, track_id: str | Track, store: AnswerStore | None = None, *,
                 gate_explore: bool = True, headless: bool | None = None) -> None:
        self.track = get_track(track_id)
        self.track_id = self.track.id
        self.store = store if store is not None else AnswerStore()
        self.gate_explore = gate_explore
        self.headless = is_headless() if headless is None else bool(headless)
        self._parts: dict[str, P] = {}
        self._synthesis: ipw.VBox | None = None

    def __repr__(self) -> str:
        return f"Lab({self.track_id!r}, store={self.store!r})"

    # -- parts ---------------------------------------------------------------------------
    def _part_class(self, letter: str) -> type[P]:
        """The class of part ``letter`` (one of ``PARTS``) for this lab's track."""
        raise NotImplementedError

    def part(self, letter: str) -> P:
        """Part ``letter`` (built on first use, headless when the lab is)."""
        key = str(letter).upper()
        if key not in PARTS:
            raise ValueError(f"part must be one of {', '.join(PARTS)}; got {letter!r}")
        if key not in self._parts:
            self._parts[key] = self._part_class(key)(self)
        return self._parts[key]

    def parts(self) -> list[P]:
        return [self.part(p) for p in PARTS]

    # -- what each lab computes -----------------------------------------------------------
    def takeaways(self) -> list[str]:
        """The synthesis' takeaways, computed from the student's own settings."""
        raise NotImplementedError

    def ledger_choices(self) -> dict[str, object]:
        """What this lab hands to later labs through the design ledger."""
        raise NotImplementedError

    # -- header --------------------------------------------------------------------------
    def _hardware_summary(self, hw: Hardware) -> str:
        """The figures after the hardware's name in the header (escaped HTML): the memory a
        served model may fill, with its basis (the serving reserve)."""
        return memory_basis(self.track)

    def _stakeholder_question(self) -> str:
        """What the stakeholder asks in the header (plain text)."""
        return self.track.stakeholder.message

    def _header_details(self) -> str:
        """HTML between the stakeholder's question and the objectives."""
        return ""

    def header(self) -> ipw.HTML | lw.TextView:
        """The lab's header (headless: its heading and track, as text)."""
        info, tr = self.info, self.track
        if self.headless:
            return lw.TextView(f"{info.heading}: {tr.label}")
        hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
        st = tr.stakeholder
        objs = "".join(f"<li>{lw.esc(o)}</li>" for o in info.objectives_for(tr))
        return ipw.HTML(
            f"<div class='labkit-header' style='{_BOX}'>"
            f"<div style='font-size:0.8em;color:#5d6d7e;text-transform:uppercase'>"
            f"{lw.esc(info.heading)} · {lw.esc(info.time_estimate)}</div>"
            f"<div style='font-size:1.5em;font-weight:700;margin:4px 0'>{lw.esc(tr.label)}</div>"
            f"<div><b>Hardware:</b> {lw.esc(hw.name)} ({self._hardware_summary(hw)}) · "
            f"<b>Model:</b> {lw.esc(m.name)} ({params_label(m.params_total)} parameters) · "
            f"<b>Unit:</b> {tr.cost_unit}</div>"
            f"<div style='{_QUOTE}'><b>{lw.esc(st.name)}</b>, {lw.esc(st.role)}: "
            f"<i>“{lw.esc(self._stakeholder_question())}”</i></div>"
            f"{self._header_details()}"
            f"<div><b>You will:</b><ol style='margin:2px 0'>{objs}</ol></div></div>")

    # -- report --------------------------------------------------------------------------
    def _track_tag(self) -> str:
        """Text after the track id in the report's first line (e.g. its scenario)."""
        return ""

    def _report_track(self) -> dict[str, object]:
        """Extra fields of the report's ``track`` object."""
        return {}

    def _report_extra(self) -> dict[str, object]:
        """Extra top-level fields of the JSON report."""
        return {}

    def report(self) -> tuple[str, dict[str, object]]:
        """(Markdown, JSON-ready dict): settings, predictions and results of every part."""
        info, tr = self.info, self.track
        hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
        parts = {p.letter: p.state() for p in self.parts()}
        memo = self.store.get(info.id, answer_key(tr.id, "", "memo"))
        takeaways = self.takeaways()
        choices = self.ledger_choices()
        data = plain_dict({
            "schema": info.report_schema, "version": info.report_version, "lab": info.id,
            "title": info.title, "generated_at": now_iso(),
            "track": {"id": tr.id, "label": tr.label, "hardware": hw.name, "model": m.name,
                      "cost_unit": tr.cost_unit, "stakeholder": tr.stakeholder.name,
                      **self._report_track()},
            "parts": parts, "takeaways": takeaways,
            "memo": None if memo is None else memo.to_dict(), "ledger_choices": choices,
            **self._report_extra(),
        })
        lines = [f"# Lab {info.number}: {info.title} ({tr.label})", "",
                 f"Generated {data['generated_at']}. Track `{tr.id}`{self._track_tag()}: "
                 f"{hw.name}, {m.name}. Stakeholder: {tr.stakeholder.name}, "
                 f"{tr.stakeholder.role}.", ""]
        for p in self.parts():
            lines += [f"## Part {p.letter}: {p.title}", ""]
            lines.append("- Prediction: " + md_entry(p.predict, p.predict.entry))
            lines.append(f"- Computed answer at the track defaults: "
                         f"{p.predict.label_for(p.expected)}")
            settings = ", ".join(f"{k} = {v}" for k, v in p.settings().items())
            lines.append(f"- Your settings: {settings}")
            lines.append("- Checkpoint: " + md_entry(p.checkpoint, p.checkpoint.entry))
            lines.append("")
        lines += ["## Takeaways", "", *(f"{i}. {t}" for i, t in enumerate(takeaways, 1)), "",
                  "## Memo", "", str(memo.current) if memo is not None else "(not saved yet)", "",
                  "## Design ledger entry", "", "```json",
                  json.dumps(choices, indent=2, sort_keys=True), "```", ""]
        return "\n".join(str(x) for x in lines), data

    def write_report(self, directory: str | os.PathLike[str] = ".", *,
                     overwrite: bool = True) -> tuple[Path, Path]:
        """Write the lab's Markdown and JSON report files (atomic) into ``directory``."""
        md, data = self.report()
        d = Path(directory)
        md_path, json_path = d / self.info.report_md, d / self.info.report_json
        if overwrite or not md_path.exists():
            tmp = md_path.with_name(f".{md_path.name}.tmp")
            tmp.write_text(md, encoding="utf-8")
            os.replace(tmp, md_path)
        if overwrite or not json_path.exists():
            write_json_atomic(json_path, data)
        return md_path, json_path

    # -- synthesis -----------------------------------------------------------------------
    def _synthesis_lead(self) -> str:
        """HTML under the synthesis title."""
        return ""

    def _takeaway_items(self) -> list[str]:
        """The synthesis' takeaway list items (HTML)."""
        return [lw.esc(t) for t in self.takeaways()]

    def _synthesis_note(self) -> str | None:
        """An HTML panel between the takeaways and the memo prompt, or None for none."""
        return None

    def _memo_prompt(self) -> str:
        """What the memo should contain (HTML), after "Memo to <name> (<role>).": the lab's
        one memo brief, the notebook's memo cell's too."""
        return lw.esc(self.info.memo_brief(self.track))

    def _download_name(self, filename: str) -> str:
        stem, dot, suffix = filename.rpartition(".")
        return f"{stem}_{self.track_id}{dot}{suffix}"

    def _write_outputs(self, do_write: bool, autograde: bool) -> list[str]:
        """Write the report files and record the ledger as :meth:`synthesis` says; what
        was done, in words."""
        info, notes = self.info, []
        if do_write:
            self.write_report(".", overwrite=not autograde)
            notes.append(f"wrote {info.report_md} and {info.report_json}")
            if not autograde:
                record_ledger(info.id, self.track.id, self.ledger_choices())
                notes.append("recorded your design in the ledger")
        return notes

    def _synthesis_text(self, write: bool | None) -> lw.TextView:
        """A headless run's synthesis: the same files written, one line of text (no
        figure: a grading kernel's outputs reach the student's feedback)."""
        autograde = os.environ.get("NBGRADER_EXECUTION") == "autograde"
        self.takeaways()  # computed, so a broken model fails here as with views
        notes = self._write_outputs(write is not False, autograde)
        done = f" ({'; '.join(notes)})" if notes else ""
        return lw.TextView(f"Synthesis: {self.track.label}{done}; the takeaways and the memo "
                           f"brief {lw.LIVE}.")

    def synthesis(self, *, write: bool | None = None) -> ipw.VBox | lw.TextView:
        """Takeaways, memo prompt, report downloads; writes report files and the ledger.

        ``write`` None: write the report files to the working directory and record the
        design ledger, except under nbgrader autograde (``NBGRADER_EXECUTION=autograde``),
        where existing report files are kept (fresh widgets would overwrite the student's
        explored settings with defaults) and the ledger is not touched. True/False force
        writing on or off. Headless: the same files, the synthesis as text.
        """
        if self.headless:
            return self._synthesis_text(write)
        info, tr = self.info, self.track
        st = tr.stakeholder
        takeaways_html, links_html, status = ipw.HTML(), ipw.HTML(), ipw.HTML()
        note_html = ipw.HTML() if self._synthesis_note() is not None else None
        refresh = ipw.Button(description="Refresh report", icon="refresh")
        autograde = os.environ.get("NBGRADER_EXECUTION") == "autograde"

        def render(do_write: bool) -> None:
            items = "".join(f"<li style='margin-bottom:4px'>{t}</li>"
                            for t in self._takeaway_items())
            takeaways_html.value = (f"<div class='labkit-takeaways'><b>Key takeaways from your "
                                    f"own settings</b><ol>{items}</ol></div>")
            if note_html is not None:
                note_html.value = self._synthesis_note() or ""
            md, data = self.report()
            links_html.value = (
                "<div class='labkit-downloads'><b>Download your report:</b> "
                + download_link(md, self._download_name(info.report_md), "text/markdown",
                                 "Markdown report")
                + " · "
                + download_link(json.dumps(data, indent=2, sort_keys=True),
                                 self._download_name(info.report_json), "application/json",
                                 "JSON snapshot") + "</div>")
            notes = self._write_outputs(do_write, autograde)
            status.value = f"<span style='color:#5d6d7e'>{'; '.join(notes)}</span>"

        refresh.on_click(lambda _b: render(write is not False))
        render(write is not False)
        prompt = ipw.HTML(
            f"<div style='margin-top:8px'><b>Memo to {lw.esc(st.name)}</b> "
            f"({lw.esc(st.role)}). {self._memo_prompt()} Write it in the graded memo cell "
            "below; <b>Refresh report</b> after you change any setting above.</div>")
        title = ipw.HTML(f"<div style='font-size:1.3em;font-weight:700;margin-top:12px'>"
                         f"Synthesis: {lw.esc(tr.label)}</div>{self._synthesis_lead()}")
        box = ipw.VBox([title, takeaways_html, *([note_html] if note_html is not None else []),
                        prompt, refresh, links_html, status])
        box.add_class("labkit-synthesis")
        self._synthesis = box
        return box
