"""The question that opens each part of a Lab 2 notebook: the track's scenario folder's
``hooks.hooks(track)`` (:mod:`labkit.scenarios`), in the track's own terms and numbers
(``course/labs/lab2.py`` puts them under the part titles)."""

from __future__ import annotations

from labkit import scenarios as folders
from labkit.core.keys import PARTS
from labkit.plans.design import scenario
from labkit.tracks import Track


def lab2_hooks(t: Track) -> dict[str, str]:
    """The question that opens each part, from the track's data and its scenario."""
    found = folders.piece(scenario(t), "hooks").hooks(t)
    if tuple(found) != PARTS:
        raise ValueError(f"track {t.id!r}: its scenario's hooks must cover parts "
                         f"{', '.join(PARTS)} in order, got {', '.join(found)}")
    return dict(found)
