"""The track registry: the four course tracks, plus any an instructor adds.

:data:`TRACKS` is a read-only mapping, id -> :class:`~labkit.tracks.base.Track`: the four
built-in tracks first, then every registered one in order. Add a track with
:func:`register_track` (a :class:`Track`, e.g. from :func:`custom_track`) or
:func:`load_tracks_file`, or, without touching any code, list tracks files in the
environment variable ``LABKIT_TRACKS`` (paths separated by ``os.pathsep``): they are loaded
the first time the registry is used after the variable is set or changed -- in the
process that builds a course as in a notebook kernel started with it.

A tracks file is JSON: a list of specs ::

    [{"id": "cloud_fleet_8k",
      "base": "cloud_fleet",
      "changes": {"label": "Cloud Fleet, 8K prompts", "prompt_tokens": 8192},
      "sources": {"prompt_tokens": "assumption: long-document assistant"}}]

* ``id`` (required): the new track's id -- letters, digits, ``_`` and ``-``; it must not
  be taken (after the registry's ``_``/``-`` normalisation) unless the same spec is
  loaded again.
* ``base`` (required): the id of a track it is derived from: a built-in track or one
  defined earlier (in this file or one loaded before).
* ``changes`` (optional): Track fields to change, **scalar fields only** -- strings,
  numbers, ``null`` where the field allows it (``label``, ``hardware_id``, ``model_id``,
  ``prompt_tokens``, ``slo_s``, ``daily_budget``, ...). Structured fields (``stakeholder``,
  ``narrative``, ``guardrail_metrics``, ``quality_loss_pct``, ``sources``) are taken from
  the base; ``id`` is the spec's. Derived fields (``context_tokens``,
  ``state_bytes_per_request`` of a transformer, ``cost_per_event``) are re-derived unless
  changed (:func:`custom_track`); other figures computed from the base's defaults, such as
  an energy track's ``setup_cost``, are not.
* ``sources`` (optional): text naming where a changed figure comes from, by field; a
  changed field without one is sourced as "custom track <id> (<file>): ...".

Every error is a ``ValueError`` naming the file, the spec and the field.
:func:`track_spec` writes a custom track back as such a spec (it round-trips).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import fields
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, get_args, get_type_hints

from labkit.core.lookup import lookup
from labkit.tracks.base import DERIVED_FIELDS, FIELDS, Track, track_with
from labkit.tracks.cloud_fleet import CLOUD_FLEET
from labkit.tracks.iphone import IPHONE
from labkit.tracks.oura_ring import OURA_RING
from labkit.tracks.robotaxi import ROBOTAXI

ENV_VAR = "LABKIT_TRACKS"
BUILTIN_TRACKS: tuple[Track, ...] = (CLOUD_FLEET, IPHONE, OURA_RING, ROBOTAXI)
SPEC_KEYS = ("id", "base", "changes", "sources")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def _scalar_types() -> dict[str, tuple[type, ...]]:
    """Track field -> the JSON value types a tracks file may set it to (scalar fields)."""
    hints = get_type_hints(Track)
    out: dict[str, tuple[type, ...]] = {}
    for f in fields(Track):
        hint = hints[f.name]
        options = get_args(hint) if isinstance(hint, UnionType) else (hint,)
        if all(o in (str, int, float, NoneType) for o in options):
            out[f.name] = tuple(options)
    return out


SCALAR_FIELDS: Mapping[str, tuple[type, ...]] = _scalar_types()


class TrackRegistry(Mapping[str, Track]):
    """Read-only id -> Track mapping that picks up ``LABKIT_TRACKS`` files when used."""

    def __init__(self, builtins: tuple[Track, ...]) -> None:
        self._tracks: dict[str, Track] = {t.id: t for t in builtins}
        self._builtin = frozenset(self._tracks)
        self._env_seen: str | None = None
        self._loaded: set[Path] = set()
        self._origin: dict[str, Path] = {}
        self._syncing = False

    def _sync(self) -> None:
        env = os.environ.get(ENV_VAR, "")
        if env == self._env_seen or self._syncing:
            return
        self._syncing = True
        try:
            for part in env.split(os.pathsep):
                if part.strip() and Path(part).resolve() not in self._loaded:
                    try:
                        load_tracks_file(part)
                    except ValueError as e:
                        raise ValueError(f"{ENV_VAR}: {e}") from None
            self._env_seen = env
        finally:
            self._syncing = False

    def __getitem__(self, key: str) -> Track:
        self._sync()
        return self._tracks[key]

    def __iter__(self) -> Iterator[str]:
        self._sync()
        return iter(tuple(self._tracks))

    def __len__(self) -> int:
        self._sync()
        return len(self._tracks)

    def __contains__(self, key: object) -> bool:
        self._sync()
        return key in self._tracks

    def __repr__(self) -> str:
        return f"TrackRegistry({', '.join(self)})"

    def is_builtin(self, track_id: str) -> bool:
        return track_id in self._builtin


TRACKS = TrackRegistry(BUILTIN_TRACKS)


def get_track(track: str | Track) -> Track:
    """Look up a track by id (or pass any :class:`Track`, e.g. from :func:`custom_track`)."""
    if isinstance(track, Track):
        return track
    return lookup("track", TRACKS, track)


def custom_track(base: str | Track, **changes: Any) -> Track:
    """A copy of a track with some fields changed and the derived fields re-derived.

    ``context_tokens``, ``state_bytes_per_request`` (transformers) and ``cost_per_event``
    are recomputed from the new figures unless they are among ``changes``. Every function
    that takes a track id also takes the result, e.g.
    ``serving_plan(custom_track("cloud_fleet", prompt_tokens=1024))``; to make it
    resolvable by id too, :func:`register_track` it.
    """
    return track_with(get_track(base), **changes)


def _normalised(track_id: str) -> str:
    return track_id.strip().lower().replace("_", "-")


def _check_new(track: Track) -> Track | None:
    """The registered track equal to ``track`` (None: its id is free); ValueError when the
    id is malformed or taken by a different track."""
    if not isinstance(track, Track):
        raise ValueError(f"track must be a Track, got {type(track).__name__}")
    if not isinstance(track.id, str) or not _ID.fullmatch(track.id):
        raise ValueError(f"id must be letters, digits, '_' and '-', got {track.id!r}")
    for known, held in TRACKS._tracks.items():
        if _normalised(known) == _normalised(track.id):
            if held == track:
                return held
            raise ValueError(f"id {track.id!r} is already a track ({known!r})")
    return None


def register_track(track: Track) -> Track:
    """Add ``track`` to :data:`TRACKS` under its id and return it.

    Registering an equal track again is a no-op (returns the one held); a different track
    under a taken id (or one that differs only in ``_``/``-`` and case) is a ``ValueError``.
    """
    held = _check_new(track)
    if held is not None:
        return held
    TRACKS._tracks[track.id] = track
    return track


def unregister_track(track_id: str) -> None:
    """Remove a registered (not built-in) track; unknown ids are ignored. A tracks file it
    came from is read again if ``LABKIT_TRACKS`` still lists it."""
    if TRACKS.is_builtin(track_id):
        raise ValueError(f"id {track_id!r} is a built-in track and cannot be removed")
    TRACKS._tracks.pop(track_id, None)
    origin = TRACKS._origin.pop(track_id, None)
    if origin is not None:
        TRACKS._loaded.discard(origin)
        TRACKS._env_seen = None


def _check_change(where: str, name: str, value: object) -> object:
    if name == "id":
        raise ValueError(f"{where}: changes.id: give the id as the spec's 'id'")
    if name not in FIELDS:
        raise ValueError(f"{where}: changes.{name} is not a Track field")
    if name not in SCALAR_FIELDS:
        raise ValueError(f"{where}: changes.{name}: only scalar fields can be changed in a "
                         f"tracks file ({name} is taken from the base track)")
    allowed = SCALAR_FIELDS[name]
    if isinstance(value, bool) or not (
            isinstance(value, allowed) or (float in allowed and isinstance(value, int))):
        names = " or ".join("null" if t is NoneType else t.__name__ for t in allowed)
        raise ValueError(f"{where}: changes.{name} must be {names}, got {value!r}")
    return float(value) if float in allowed and isinstance(value, int) else value


def _spec_parts(spec: object, where: str) -> tuple[str, str, dict[str, object], dict[str, str]]:
    """(id, base, checked changes, sources) of one spec; ValueError naming the key."""
    if not isinstance(spec, dict):
        raise ValueError(f"{where}: a spec must be a JSON object, got {spec!r}")
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; a spec has "
                         f"{', '.join(SPEC_KEYS)}")
    for key in ("id", "base"):
        if not isinstance(spec.get(key), str) or not spec[key]:
            raise ValueError(f"{where}: {key} must be a non-empty string, got "
                             f"{spec.get(key)!r}")
    where = f"{where} (id {spec['id']!r})"
    changes, sources = spec.get("changes", {}), spec.get("sources", {})
    for key, value in (("changes", changes), ("sources", sources)):
        if not isinstance(value, dict):
            raise ValueError(f"{where}: {key} must be a JSON object, got {value!r}")
    checked = {k: _check_change(where, k, val) for k, val in changes.items()}
    for k, text in sources.items():
        if k not in FIELDS or not isinstance(text, str) or not text.strip():
            raise ValueError(f"{where}: sources.{k} must name a Track field and be text")
    return spec["id"], spec["base"], checked, sources


def _spec_track(spec: object, where: str, source_name: str,
                pending: Mapping[str, Track]) -> Track:
    """The Track one spec describes; ``pending``: tracks defined earlier in the same file
    (by normalised id), which a base may name before they are registered."""
    tid, base_id, checked, sources = _spec_parts(spec, where)
    where = f"{where} (id {tid!r})"
    try:
        base = pending.get(_normalised(base_id)) or get_track(base_id)
    except ValueError as e:
        raise ValueError(f"{where}: base: {e}") from None
    merged = dict(base.sources)
    for k, value in checked.items():
        merged[k] = (f"custom track {tid!r} ({source_name}): set to {value!r}, changed from "
                     f"track {base.id!r}")
    merged.update(sources)
    try:
        track = track_with(base, id=tid, sources=merged, **checked)
        if _normalised(tid) in pending:
            raise ValueError(f"id {tid!r} is defined twice in this file")
        _check_new(track)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    return track


def load_tracks_file(path: str | os.PathLike[str]) -> tuple[Track, ...]:
    """Register every track a JSON tracks file specifies (format: module docstring).

    All or nothing: every spec is checked before any is registered. Returns the tracks in
    file order. Loading a file again is a no-op.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"tracks file {p}: cannot read a JSON list of specs: {e}") from None
    if not isinstance(data, list):
        raise ValueError(f"tracks file {p}: must hold a JSON list of specs, got "
                         f"{type(data).__name__}")
    pending: dict[str, Track] = {}
    for i, spec in enumerate(data):
        track = _spec_track(spec, f"tracks file {p}, spec {i}", p.name, pending)
        pending[_normalised(track.id)] = track
    out = tuple(register_track(t) for t in pending.values())
    for t in out:
        TRACKS._origin.setdefault(t.id, p.resolve())
    TRACKS._loaded.add(p.resolve())
    return out


def track_spec(track: str | Track, base: str | Track | None = None) -> dict[str, Any]:
    """``track`` as a tracks-file spec relative to ``base`` (default: the built-in track
    with the same hardware and model, else the first built-in): its id and the scalar
    fields that differ, excluding derived ones. Raises ``ValueError`` when a structured
    field differs, since a tracks file cannot express that."""
    t = get_track(track)
    if base is None:
        same = [b for b in BUILTIN_TRACKS
                if (b.hardware_id, b.model_id) == (t.hardware_id, t.model_id)]
        base = (same or list(BUILTIN_TRACKS))[0]
    b = get_track(base)
    for name in FIELDS:
        if name not in SCALAR_FIELDS and name != "sources" and getattr(t, name) != getattr(
                b, name):
            raise ValueError(f"{name} differs from track {b.id!r}: a tracks file can only "
                             "change scalar fields")
    changes = {n: getattr(t, n) for n in SCALAR_FIELDS
               if n != "id" and n not in DERIVED_FIELDS and getattr(t, n) != getattr(b, n)}
    rederived = track_with(b, **changes)
    changes.update({n: getattr(t, n) for n in DERIVED_FIELDS
                    if getattr(t, n) != getattr(rederived, n)})
    sources = {n: s for n, s in t.sources.items() if b.sources.get(n) != s}
    return {"id": t.id, "base": b.id, "changes": changes, "sources": sources}
