"""Lab 2 Part A's "where real systems sit": the published measurements of the device on
screen (:data:`labkit.registries.measurements.MEASUREMENTS`) as points beside the
roofline, and a table of each case with labkit's peak and achievable for its own
configuration (:mod:`labkit.plans.measured`).

Only cases that ran on the device on screen are drawn (a registry device as the registry
holds it: a modified copy is not the measured machine); a part whose devices have none
gets no mark at all, and a sentence naming the device class's cases that ran elsewhere.

* :class:`DecodePoints` -- the LM part's time-vs-batch chart: a case sits at its batch,
  at its measured time per step (or per token, the step over the batch). Cases of the
  track's model and of other models are two marks (the curve is the track's model).
* :class:`RooflinePoints` -- the CNN part's roofline: a case sits at its pass's FLOP per
  byte, at the FLOP/s it achieved (its pass's FLOP over the measured latency).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, TypeAlias

import numpy as np

from labkit import ui as lw
from labkit.core.format import counted, fmt, fmt_count
from labkit.labs.common import html_table

if TYPE_CHECKING:
    import bqplot as bq
from labkit.labs.accelerators.stack_text import band_text
from labkit.plans.measured import (
    CalibrationRow,
    calibration_row,
    class_cases_elsewhere,
    cnn_case_point,
    device_cases,
    device_class,
)
from labkit.plans.stacks import StackChoice, stack_choices
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.measurements import Measurement
from labkit.registries.models import Model, get_model
from labkit.registries.stacks import get_stack

MODEL_COLOR = ("#a04000", "brown")   # (colour, the word a sentence uses for it)
OTHER_COLOR = ("#d4ac0d", "gold")
_BATCHING = {
    "decode-only": "decode steps timed alone",
    "static": "one fixed batch timed end to end (its prefill spread over the steps)",
    "concurrent": "a closed loop of B requests (their prefills interleave)",
}
Updates: TypeAlias = "dict[bq.Mark, dict[str, object]]"  # mark -> traits, for update_marks
HEADERS = ("case", "system", "stack", "model and configuration", "batch", "measured (ms)",
           "peak (ms)", "achievable (ms)", "measured / achievable", "source")


def _ratio_range(cases: Sequence[Measurement]) -> str:
    ratios = [calibration_row(m).ratio for m in cases]
    lo, hi = min(ratios), max(ratios)
    if len(ratios) == 1 or f"{lo:.2f}" == f"{hi:.2f}":
        return f"measured / achievable is {lo:.2f}"
    return f"measured / achievable runs from {lo:.2f} to {hi:.2f}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _and(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _one(unit: str) -> str:
    """The singular of a track's unit (``tokens`` -> ``token``)."""
    return unit[:-1] if unit.endswith("s") else unit


def _source_cell(url: str) -> str:
    return (f"<a href='{lw.esc(url)}' target='_blank' rel='noopener' "
            f"style='word-break:break-all'><code>{lw.esc(url)}</code></a>")


def _span(bounds: tuple[float, float] | None) -> str:
    """``1.2x`` or ``0.9-1.4x`` (measured over achievable)."""
    assert bounds is not None
    lo, hi = bounds
    return f"{lo:.2f}x" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}x"


@dataclass(frozen=True)
class MeasuredSummary:
    """Where real systems sit for the device on screen: the ids of its own published
    cases, else of its device class's cases on other devices (``elsewhere``), the range of
    measured / achievable over them (None without any), and one plain sentence."""

    cases: tuple[str, ...]
    elsewhere: tuple[str, ...]
    measured_over_achievable: tuple[float, float] | None
    text: str

    def as_results(self) -> dict[str, object]:
        """The part's results entries (JSON types) for the student's report."""
        bounds = self.measured_over_achievable
        return {"measured_cases": list(self.cases), "measured_elsewhere": list(self.elsewhere),
                "measured_over_achievable": list(bounds) if bounds else None,
                "real_systems": self.text}


class MeasuredPoints:
    """The published cases of the devices a part can show: marks on one chart, a table.

    ``devices``: every device the part can put on screen (None entries are skipped).
    ``model``: the track's model. ``unit``: what the track counts (``tokens``, ``frames``).
    A subclass says which ``workload`` it shows, what the sentence calls its ``chart``,
    and where a case sits on it (:meth:`_xy`); :meth:`attach` adds one mark per group of
    cases some device has (none when no device has a case).
    """

    workload: ClassVar[str] = ""
    chart: ClassVar[str] = ""
    tooltip: ClassVar[tuple[str, str]] = ("x", "y")  # what a point's x and y are

    def __init__(self, devices: Sequence[Hardware | None], model: Model, unit: str) -> None:
        self.model, self.unit = model, unit
        self.devices = {hw.id: hw for hw in devices if hw is not None}
        self.cases = {i: device_cases(hw, self.workload) for i, hw in self.devices.items()}
        self.marks: dict[str, bq.Scatter] = {}

    # -- what a subclass says --------------------------------------------------------------
    def _group(self, m: Measurement) -> str:
        """Which mark case ``m`` is drawn with."""
        return "all"

    def _mark_style(self, group: str) -> tuple[str, str]:
        """(legend label, colour) of a group's mark."""
        return "measured (real systems)", MODEL_COLOR[0]

    def _xy(self, m: Measurement, view: str) -> tuple[float, float]:
        raise NotImplementedError

    def _points_sentence(self, hw: Hardware, cases: Sequence[Measurement]) -> str:
        raise NotImplementedError

    def _unit_note(self) -> str:
        raise NotImplementedError

    def _config(self, m: Measurement) -> str:
        raise NotImplementedError

    # -- the marks -------------------------------------------------------------------------
    def groups(self) -> list[str]:
        """The groups of cases some device of the part has, in a fixed order."""
        seen = [self._group(m) for cases in self.cases.values() for m in cases]
        return list(dict.fromkeys(seen))

    def attach(self, fig: bq.Figure, x_scale: bq.Scale, y_scale: bq.Scale) -> MeasuredPoints:
        """Add a hidden scatter mark per group to ``fig`` (legend entry on show)."""
        for g in self.groups():
            label, color = self._mark_style(g)
            self.marks[g] = lw.scatter_mark(
                [], [], x_scale, y_scale, color=color, size=70, marker="square",
                labels=[label], display_legend=True, visible=False, names=[],
                display_names=False, stroke="white",
                tooltip=lw.tooltip(["name", "x", "y"], ["case", *self.tooltip]))
        if self.marks:
            fig.marks = [*fig.marks, *self.marks.values()]
        return self

    def xy(self, hw: Hardware, view: str = "step") -> list[tuple[Measurement, float, float]]:
        """Every case of ``hw`` with where it sits on the chart in ``view``."""
        return [(m, *self._xy(m, view)) for m in self.cases.get(hw.id, ())]

    def draw(self, hw: Hardware, view: str = "step") -> tuple[np.ndarray, Updates]:
        """(the y of every point shown, the mark updates) for ``hw`` on screen in ``view``;
        a group with no case on ``hw`` is hidden (and leaves the legend)."""
        pts = self.xy(hw, view)
        updates: Updates = {}
        for g, mark in self.marks.items():
            mine = [p for p in pts if self._group(p[0]) == g]
            updates[mark] = {"x": np.asarray([p[1] for p in mine], dtype=float),
                             "y": np.asarray([p[2] for p in mine], dtype=float),
                             "names": [p[0].id for p in mine], "visible": bool(mine)}
        return np.asarray([p[2] for p in pts], dtype=float), updates

    # -- the table -------------------------------------------------------------------------
    def rows(self, hw: Hardware) -> list[tuple[Measurement, CalibrationRow]]:
        """The table's cases: every published case of ``hw``, with labkit's prediction."""
        return [(m, calibration_row(m)) for m in self.cases.get(hw.id, ())]

    def _choice(self, hw: Hardware, choice: StackChoice | None) -> StackChoice:
        """The stack on screen (default: none named, the class line)."""
        return choice if choice is not None else stack_choices(hw, self.workload)[0]

    def html(self, hw: Hardware, choice: StackChoice | None = None) -> str:
        """The sentence and table for ``hw`` on screen (or why there is no point), with
        the band of the stack ``choice`` (default: none named)."""
        rows = self.rows(hw)
        band = self._band_note(hw, self._choice(hw, choice))
        if not rows:
            return self._none_html(hw, band)
        cells = [[f"<code>{lw.esc(m.id)}</code>", lw.esc(m.system),
                  lw.esc(get_stack(m.stack).label), self._config(m),
                  f"{m.batch:,}", f"{fmt(r.measured_s * 1e3)}", f"{fmt(r.peak_s * 1e3)}",
                  f"{fmt(r.achievable_s * 1e3)}", f"{r.ratio:.2f}", _source_cell(m.source)]
                 for m, r in rows]
        cases = [m for m, _ in rows]
        return (f"<div class='labkit-measured'><p><b>Where real systems sit:</b> "
                f"{self._points_sentence(hw, cases)} labkit's peak and achievable for each "
                "case's own configuration are in the table "
                "(<code>labkit.plans.measured</code>); "
                f"{_ratio_range(cases)} on the {lw.esc(hw.name)} ({fmt_count(1)}: achievable "
                f"lands on the real system; above {fmt_count(1)}: the system is slower). "
                f"{self._unit_note()}{band}</p>"
                + html_table(HEADERS, cells) + "</div>")

    def summary(self, hw: Hardware, choice: StackChoice | None = None) -> MeasuredSummary:
        """What the part's results (the student's report) and its reveal say about real
        systems for ``hw`` on screen: its own cases, or else its class's cases elsewhere,
        and the band of the stack ``choice`` (default: none named)."""
        own = self.cases.get(hw.id, ())
        cases = own or class_cases_elsewhere(hw, self.workload)
        ratios = [calibration_row(m).ratio for m in cases]
        bounds = (min(ratios), max(ratios)) if ratios else None
        cls = device_class(hw).label
        if own:
            one = len(own) == 1
            text = (f"{_count(len(own), 'published measurement')} on the {hw.name} "
                    f"{'sits' if one else 'sit'} at {_span(bounds)} labkit's achievable for "
                    f"{'its own configuration' if one else 'their own configurations'} (the "
                    "table under the charts)")
        elif cases:
            text = (f"no published measurement in labkit's set ran on the {hw.name}; the "
                    f"{cls} class's {_count(len(cases), 'case')} on other devices "
                    f"{'sits' if len(cases) == 1 else 'sit'} at {_span(bounds)} achievable")
        else:
            text = (f"no published measurement in labkit's set ran on the {hw.name} or "
                    f"another {cls}")
        band = band_text(self._choice(hw, choice), cls)
        return MeasuredSummary(tuple(m.id for m in own),
                               tuple(m.id for m in cases) if not own else (), bounds,
                               f"{text}; {band}" if band else text)

    @staticmethod
    def _band_note(hw: Hardware, choice: StackChoice) -> str:
        band = band_text(choice, device_class(hw).label)
        return f" {lw.esc(band[0].upper() + band[1:])}." if band else ""

    def _none_html(self, hw: Hardware, band: str) -> str:
        cls = device_class(hw)
        text = (f"<b>Where real systems sit:</b> no published measurement in labkit's set ran "
                f"on the {lw.esc(hw.name)}, so the {self.chart} shows no measured point.")
        elsewhere = class_cases_elsewhere(hw, self.workload)
        if not elsewhere:
            note = f" ({lw.esc(cls.notes)})" if cls.notes else ""
            return (f"<p class='labkit-measured'>{text} The {lw.esc(cls.label)} class has no "
                    f"measured {self.workload} case on another device either{note}.</p>")
        by_device: dict[str, list[Measurement]] = {}
        for m in elsewhere:
            by_device.setdefault(m.hardware, []).append(m)
        parts = []
        for dev, cases in by_device.items():
            models = list(dict.fromkeys(get_model(m.model).name for m in cases))
            ids = ", ".join(f"<code>{lw.esc(m.id)}</code>" for m in cases)
            parts.append(f"on the {lw.esc(get_hardware(dev).name)}: "
                         f"{lw.esc(_and(models))} ({ids})")
        return (f"<p class='labkit-measured'>{text} The {lw.esc(cls.label)} class's "
                f"{_count(len(elsewhere), 'case')} ran elsewhere: " + "; ".join(parts)
                + f". With the class's derating this part uses, {_ratio_range(elsewhere)} "
                  f"on them (<code>labkit.plans.measured</code>).{band}</p>")


class DecodePoints(MeasuredPoints):
    """Decode cases on the time-vs-batch chart: at the case's batch, its measured time per
    step (``view`` "step") or per token (the step over the batch, ``view`` "token"), ms."""

    workload = "decode"
    chart = "batch chart"
    tooltip = ("batch", "ms")

    def _group(self, m: Measurement) -> str:
        return "model" if m.model == self.model.id else "other"

    def _mark_style(self, group: str) -> tuple[str, str]:
        if group == "model":
            return f"measured, {self.model.name}", MODEL_COLOR[0]
        return "measured, other models", OTHER_COLOR[0]

    def _xy(self, m: Measurement, view: str) -> tuple[float, float]:
        per = m.batch if view == "token" else 1
        return float(m.batch), m.value / per * 1e3

    def _points_sentence(self, hw: Hardware, cases: Sequence[Measurement]) -> str:
        mine = [m for m in cases if self._group(m) == "model"]
        others = list(dict.fromkeys(get_model(m.model).name for m in cases
                                    if self._group(m) == "other"))
        groups = []
        if mine:
            groups.append(f"{len(mine)} of {lw.esc(self.model.name)} "
                          f"({MODEL_COLOR[1]} points)")
        if others:
            groups.append(f"{len(cases) - len(mine)} of other models "
                          f"({lw.esc(_and(others))}; {OTHER_COLOR[1]} points)")
        return (f"{_count(len(cases), 'published measurement')} in labkit's set ran on the "
                f"{lw.esc(hw.name)}: {' and '.join(groups)}. On the {self.chart} each sits "
                "at its batch and its measured time per step (per token in the per-token "
                "view); it ran its own configuration (the table: context, precisions, "
                "devices), so it sits beside your curve, not on it.")

    def _unit_note(self) -> str:
        return (f"Times are ms per decode step, which makes one {_one(self.unit)} for each "
                "of the batch's B sequences (the per-token view divides by B).")

    def _config(self, m: Measurement) -> str:
        return lw.esc(f"{get_model(m.model).name}; "
                      f"{counted(m.tp, 'device') + (' per replica' if m.tp > 1 else '')}; "
                      f"{m.weight_bits}-bit weights, {m.kv_bits}-bit KV; {m.context_tokens:,} "
                      f"tokens of context; {_BATCHING[m.batching]}")


class RooflinePoints(MeasuredPoints):
    """CNN cases on the roofline: at the FLOP per byte of the case's pass (its model,
    precision and batch), the FLOP/s it achieved (the pass's FLOP over the measured
    latency). The roofline is the device's, so every model's case belongs on it."""

    workload = "cnn"
    chart = "roofline chart"
    tooltip = ("FLOP/B", "FLOP/s")

    def _xy(self, m: Measurement, view: str) -> tuple[float, float]:
        return cnn_case_point(m)

    def _points_sentence(self, hw: Hardware, cases: Sequence[Measurement]) -> str:
        return (f"{_count(len(cases), 'published measurement')} in labkit's set ran on the "
                f"{lw.esc(hw.name)} ({MODEL_COLOR[1]} points on the {self.chart}): each sits "
                "at its pass's FLOP per byte and the FLOP/s it achieved, its pass's FLOP over "
                "its measured latency.")

    def _unit_note(self) -> str:
        return (f"Times are ms per pass, one inference over all the batch's {self.unit} "
                f"(per {_one(self.unit)}: the pass divided by the batch).")

    def _config(self, m: Measurement) -> str:
        return lw.esc(f"{get_model(m.model).name}; {m.weight_bits}-bit weights")
