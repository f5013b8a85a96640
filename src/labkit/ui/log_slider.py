"""The log slider of a live notebook: :class:`GridLogSlider` (a headless build uses
:class:`~labkit.ui.text_controls.TextLogSlider`, with the same snap)."""

from __future__ import annotations

from typing import Any

import ipywidgets as ipw
import traitlets

from labkit.ui.text_controls import snap_to_grid


class GridLogSlider(ipw.FloatLogSlider):  # type: ignore[misc, unused-ignore]  # no stubs
    """A FloatLogSlider whose value sits exactly on its own grid of stops.

    The front end keeps the slider's *position* (the exponent) on ``min + k * step`` and,
    when it renders, sends back ``base ** position`` computed in JavaScript; a value off that
    grid (or the float noise of the round trip) would come back as another number and move
    every figure a student sees before they touch anything. :func:`~labkit.ui.controls.
    log_control` lays the grid through the starting value, and this class maps a value
    within a thousandth of a stop of a grid point to that point's exact value (the starting
    value itself at its stop).
    """

    anchor = traitlets.Float(1.0).tag(sync=False)

    @traitlets.validate("value")
    def _validate_value(self, proposal: dict[str, Any]) -> float:
        """ipywidgets' clamp into [base**min, base**max], then the snap to the grid."""
        v = float(super()._validate_value(proposal))
        return snap_to_grid(v, self.anchor, self.base, self.step)
