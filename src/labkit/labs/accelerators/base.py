"""What every Lab 2 part shares: the :class:`Part` base (hardware, model and scenario of
the track, figures two per row, the takeaway hook) and :func:`feedback_map`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, cast

from labkit import ui as lw
from labkit.core.format import fmt, fmt_count, fmt_time, fmt_tokens, format_bytes
from labkit.core.grids import PRECISIONS
from labkit.labs.accelerators.info import LAB_ID, PART_MINUTES, PART_TITLES
from labkit.labs.accelerators.stack_text import stack_options
from labkit.labs.common import LabLike, LabPart, Settings, html_table
from labkit.plans.roofline import paper_regime_rows, precision_floor
from labkit.plans.stacks import NO_STACK, stack_choices
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model, get_model
from labkit.ui.headless import LazyModule

if TYPE_CHECKING:
    import ipywidgets as ipw
else:
    ipw = LazyModule("ipywidgets")  # a live notebook's widgets: never imported headless


class Lab2Like(LabLike, Protocol):
    """What a Lab 2 part needs from its lab: also the track's scenario."""

    scenario: str


def feedback_map(opts: Sequence[tuple[str, str]], expected: str, good: str,
                 bad: str) -> dict[str, str]:
    """Checkpoint feedback: ``good`` for the expected option, ``bad`` for the others."""
    return {val: (good if val == expected else bad) for _, val in opts}


def paper_ms(seconds: float) -> str:
    """A time as the paper rounds it: whole ms from 100 ms to 10 s, else :func:`fmt_time`
    (3 significant digits: 29.7 ms)."""
    return f"{seconds * 1e3:.0f} ms" if 0.1 <= seconds < 10.0 else fmt_time(seconds)


def tokens_label(n: int) -> str:
    """A slider label: binary thousands, binary millions from 1,048,576 (``1M``)."""
    return f"{n / (1 << 20):g}M" if n >= 1 << 20 else fmt_tokens(n)


def thousands(tokens: float) -> str:
    return f"{fmt(tokens / 1e3)} thousand" if tokens >= 1e3 else f"{tokens:,.0f}"


def rules_table_html(batch: int, context: int, b_star: float, l_star: float) -> str:
    """The paper's regime rules (section 5.2) with the row of (batch, context) marked,
    read the paper's way (weight share B*/B, KV share S/L*: a dense model at peak; Part A
    shows its own computed terms instead, :func:`~labkit.labs.accelerators.part_a_text.
    rules_html`)."""
    rows = []
    for r in paper_regime_rows(batch, context, b_star, l_star):
        cells = [r.condition, r.paper_batch, "◀ your settings" if r.here else ""]
        rows.append([f"<b style='background:#fdebd0'>{lw.esc(c)}</b>" if r.here else lw.esc(c)
                     for c in cells])
    return (f"<div class='labkit-rules'><b>The paper's regime rules (§5.2)</b>: your settings "
            f"put S = {context:,} tokens at {fmt(context / l_star)} L* and B = {batch:,} at "
            f"{fmt(batch / b_star)} B* (peak)."
            + html_table(["regime", "paper's batch", ""], rows) + "</div>")


def precision_floor_note(hw: Hardware, model: Model, bits: int, noun: str, batch: int = 1,
                         mode: str = "achievable", stack: str = NO_STACK) -> str:
    """Why a CNN pass at ``bits`` is no faster than at the next wider precision ("" when
    it is faster, or at the widest): both widths run on one datapath and the pass is
    compute-bound, so only the bytes shrink (:func:`labkit.plans.roofline.precision_floor`)."""
    f = precision_floor(hw, model, bits, PRECISIONS, batch, mode, stack)
    if f is None:
        return ""
    here, up = fmt_count(f.bits), fmt_count(f.wider_bits)
    return (f"<p class='labkit-floor'><b>Why {here}-bit is no faster than {up}-bit:</b> "
            f"the device runs both on its {f.precision.upper()} datapath, and the pass is "
            f"{f.regime} ({fmt_time(f.compute_s)} of "
            f"arithmetic against {fmt_time(f.memory_s)} of memory traffic), so it "
            f"still takes {fmt_time(f.latency_s)} per "
            f"{noun if batch == 1 else f'pass of {batch} {noun}s'}. Only the bytes moved per "
            f"pass fall ({format_bytes(f.bytes_wider)} → "
            f"{format_bytes(f.bytes_here)}, the weights shrinking): memory use "
            "drops, time and energy do not.</p>")


class Part(LabPart):
    """A Lab 2 part (the skeleton is :class:`labkit.labs.common.LabPart`); subclasses also
    define ``takeaway``. A control runs only the refresh steps that depend on it (see
    :func:`labkit.labs.common.depends_on`); :meth:`update` redraws everything."""

    lab_id = LAB_ID
    titles = PART_TITLES
    minutes = PART_MINUTES
    kicker = "Lab 2 · "

    def _init_context(self) -> None:
        self.hw: Hardware = get_hardware(self.track.hardware_id)
        self.model: Model = get_model(self.track.model_id)
        self.scenario: str = cast(Lab2Like, self.lab).scenario

    def _state_extra(self) -> dict[str, object]:
        return {"scenario": self.scenario}

    def takeaway(self) -> str:
        raise NotImplementedError

    def _figure_rows(self) -> list[ipw.Widget]:
        figs = list(self.figures.values())
        rows: list[ipw.Widget] = []
        for i in range(0, len(figs), 2):
            pair = figs[i:i + 2]
            rows.append(ipw.HBox(pair, layout=ipw.Layout(width="100%")) if len(pair) == 2
                        else pair[0])
        return rows

    # -- internals -------------------------------------------------------------------------
    def _computed_line(self) -> str:
        return (f"<div>{self._prediction_line()}.</div><div>Computed at the track defaults: "
                f"<b>{lw.esc(self.predict.label_for(self.expected))}</b>.</div>")

    def _noun(self) -> str:
        """One of what the track's model handles per pass (``frame``, ``window``)."""
        noun = self.track.input_noun
        return noun[:-1] if noun.endswith("s") else noun

    def _callout(self, name: str, kind: str) -> lw.Callout | lw.TextCallout:
        self.callouts[name] = lw.callout(kind)
        return self.callouts[name]

    def _add_stack_control(self, workload: str) -> None:
        """The software stack achievable runs: none named, then the stacks the device
        class's published ``workload`` cases ran (:func:`labkit.plans.stacks.stack_choices`)."""
        self.controls["stack"] = lw.choice_control(
            "Software stack (achievable)", stack_options(stack_choices(self.hw, workload)),
            NO_STACK)

    @staticmethod
    def _stack(s: Settings) -> str:
        """The software stack achievable runs (:data:`NO_STACK`: the class line)."""
        return str(s.get("stack", NO_STACK))
