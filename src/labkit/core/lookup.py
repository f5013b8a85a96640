"""Id lookup shared by the hardware, model and track registries."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")


class UnknownIdError(ValueError):
    """An id that is not in a registry; the message lists the close matches."""


def lookup(parameter: str, table: Mapping[str, T], key: object) -> T:
    """Return ``table[key]`` or raise :class:`UnknownIdError` naming ``parameter``.

    Hardware, model and track objects pass through unchanged, so every public function
    accepts either an id string or the registry object itself.
    """
    if not isinstance(key, str):
        for held in table.values():
            if held is key or held == key:
                return held
        raise UnknownIdError(f"{parameter} must be a registry id string, got {key!r}")
    if key in table:
        return table[key]
    normalised = key.strip().lower().replace("_", "-")
    for known in table:
        if known.replace("_", "-") == normalised:
            return table[known]
    close = [k for k in table if normalised in k.replace("_", "-")][:3]
    close += [k for k in difflib.get_close_matches(normalised, list(table), n=3, cutoff=0.5)
              if k not in close][: 3 - len(close)]
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise UnknownIdError(
        f"unknown {parameter} id {key!r}.{hint} Known: {', '.join(sorted(table))}"
    )
