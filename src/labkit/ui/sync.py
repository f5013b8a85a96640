"""Cheap widget updates: :func:`update_marks` sets the traits of several marks, scales or
widgets in one ``hold_sync()`` block each and skips values that did not move, so a slider
move sends only what changed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from labkit.ui.headless import Sink

if TYPE_CHECKING:
    import ipywidgets as ipw


def _differs(old: object, new: object) -> bool:
    if isinstance(old, np.ndarray) or isinstance(new, np.ndarray):
        a, b = np.asarray(old), np.asarray(new)
        return a.shape != b.shape or a.dtype.kind != b.dtype.kind or not np.array_equal(a, b)
    try:
        return bool(old != new)
    except ValueError:  # ambiguous comparisons: treat as changed
        return True


def update_marks(updates: Mapping[ipw.Widget, Mapping[str, object]] |
                 Iterable[tuple[ipw.Widget, Mapping[str, object]]]) -> None:
    """Set traits of several marks/scales/widgets in one ``hold_sync()`` block each.

    Unchanged values are skipped, so a callback pays only for what really moved; a
    headless build's :class:`~labkit.ui.headless.Sink` is skipped whole.
    """
    items = [(w, t) for w, t in (updates.items() if isinstance(updates, Mapping) else updates)
             if not isinstance(w, Sink)]
    pending = [(w, {k: v for k, v in t.items() if _differs(getattr(w, k), v)})
               for w, t in items]
    pending = [(w, t) for w, t in pending if t]
    with contextlib.ExitStack() as stack:
        for w, _ in pending:
            stack.enter_context(w.hold_sync())
        for w, traits in pending:
            for k, v in traits.items():
                setattr(w, k, v)

