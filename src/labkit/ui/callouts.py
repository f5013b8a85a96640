"""A part's status box, live or headless: :func:`callout`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from labkit.ui.headless import TextCallout, active
from labkit.ui.html import check_kind

if TYPE_CHECKING:
    from labkit.ui.boxes import Callout


def callout(kind: str = "info") -> Callout | TextCallout:
    """A status box of one ``kind`` (:class:`~labkit.ui.boxes.Callout`); in a headless
    build its :class:`~labkit.ui.headless.TextCallout` (no widget, ipywidgets not
    imported)."""
    check_kind(kind)
    if active():
        return TextCallout(kind)
    from labkit.ui.boxes import Callout

    return Callout(kind)
