"""No dead chart: for every lab, track and part, each chart shows data that varies at the
track's defaults (the marks shown, taken together), so no chart is a flat line or a row
of zeros the student can do nothing about."""

from __future__ import annotations

import re

import numpy as np

from labkit.ui.charts import tick_labels


def _shown_values(fig) -> np.ndarray:
    values = []
    for mark in fig.marks:
        if not mark.visible or mark.y is None:
            continue
        y = np.asarray(mark.y, dtype=float).ravel()
        values.append(y[np.isfinite(y)])
    return np.concatenate(values) if values else np.asarray([])


def test_every_chart_shows_varying_data_at_the_defaults(any_lab):
    lab = any_lab
    dead = []
    for letter in "ABCD":
        for name, fig in lab.part(letter).figures.items():
            y = _shown_values(fig)
            if y.size < 2 or np.ptp(y) == 0:
                dead.append(f"{letter}/{name}: {y.tolist()[:8]}")
    assert not dead, dead


def test_no_axis_writes_a_number_in_e_notation(any_lab):
    """Tick labels a student reads are plain numbers or SI prefixes, never ``1e+6``."""
    bad = []
    for letter in "ABCD":
        for name, fig in any_lab.part(letter).figures.items():
            for axis in fig.axes:
                fmt = str(axis.tick_format or "")
                labels = tick_labels(axis)
                if "e" in fmt.lstrip("~") or any(re.search(r"\de[+-]?\d", t) for t in labels):
                    bad.append(f"{letter}/{name}: {fmt} {labels[:4]}")
    assert not bad, bad
