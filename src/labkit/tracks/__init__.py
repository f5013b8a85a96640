"""The course tracks: one product, one device, one model, one stakeholder each.

* :mod:`labkit.tracks.base` -- the :class:`Track` type, its builder (derived figures are
  derived, inputs are checked) and :func:`derive_cost_per_event`;
* :mod:`labkit.tracks.cloud_fleet`, :mod:`~labkit.tracks.iphone`,
  :mod:`~labkit.tracks.oura_ring`, :mod:`~labkit.tracks.robotaxi` -- each track's data,
  narrative and sources, and its own setup-cost derivation;
* :mod:`labkit.tracks.registry` -- :data:`TRACKS`, :func:`get_track`,
  :func:`custom_track`, and adding tracks: :func:`register_track`,
  :func:`load_tracks_file` and the ``LABKIT_TRACKS`` environment variable (the JSON
  format is documented there).
"""

from labkit.tracks.base import (
    COST_UNITS,
    DERIVED_FIELDS,
    FIELDS,
    J_PER_UNIT,
    SLO_KINDS,
    Narrative,
    Speculation,
    Stakeholder,
    Track,
    derive_cost_per_event,
    make_track,
    narrative,
    track_with,
)
from labkit.tracks.iphone import phone_setup_mwh
from labkit.tracks.oura_ring import ring_setup_mwh
from labkit.tracks.registry import (
    BUILTIN_TRACKS,
    ENV_VAR,
    SCALAR_FIELDS,
    TRACKS,
    TrackRegistry,
    custom_track,
    get_track,
    load_tracks_file,
    register_track,
    track_spec,
    unregister_track,
)

__all__ = [
    "BUILTIN_TRACKS",
    "COST_UNITS",
    "DERIVED_FIELDS",
    "ENV_VAR",
    "FIELDS",
    "J_PER_UNIT",
    "SCALAR_FIELDS",
    "SLO_KINDS",
    "TRACKS",
    "Narrative",
    "Speculation",
    "Stakeholder",
    "Track",
    "TrackRegistry",
    "custom_track",
    "derive_cost_per_event",
    "get_track",
    "load_tracks_file",
    "make_track",
    "narrative",
    "phone_setup_mwh",
    "register_track",
    "ring_setup_mwh",
    "track_spec",
    "track_with",
    "unregister_track",
]
