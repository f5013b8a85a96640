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

    An object of a type the table holds (a registry entry, or a modified copy made with
    ``dataclasses.replace``) passes through unchanged, so every public function accepts
    either an id string or such an object; any other non-string raises naming
    ``parameter``.
    """
    if not isinstance(key, str):
        for held in table.values():  # (a registry holds one type: the first answers)
            if isinstance(key, type(held)):
                return key
        held_types = tuple({type(held) for held in table.values()})
        kinds = " or ".join(sorted(t.__name__ for t in held_types)) or "registry object"
        raise UnknownIdError(
            f"{parameter} must be a registry id string or a {kinds}, got {key!r}")
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
