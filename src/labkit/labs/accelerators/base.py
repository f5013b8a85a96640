"""What every Lab 2 part shares: the :class:`Part` base (hardware, model and scenario of
the track, figures two per row, the takeaway hook) and :func:`feedback_map`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast

import ipywidgets as ipw

from labkit import ui as lw
from labkit.labs.accelerators.info import LAB_ID, PART_MINUTES, PART_TITLES
from labkit.labs.common import LabLike, LabPart
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model, get_model


class Lab2Like(LabLike, Protocol):
    """What a Lab 2 part needs from its lab: also the track's scenario."""

    scenario: str


def feedback_map(opts: Sequence[tuple[str, str]], expected: str, good: str,
                 bad: str) -> dict[str, str]:
    """Checkpoint feedback: ``good`` for the expected option, ``bad`` for the others."""
    return {val: (good if val == expected else bad) for _, val in opts}


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

    def _callout(self, name: str, kind: str) -> lw.Callout:
        self.callouts[name] = lw.Callout(kind)
        return self.callouts[name]
