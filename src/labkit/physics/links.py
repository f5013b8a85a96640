"""The link a collective crosses and the TP all-reduce it carries (alpha-beta model).

Shared by :mod:`labkit.physics.parallelism` (the deployment search) and the achievable
decode roofline (:mod:`labkit.physics.roofline`), so both charge tensor parallelism on the
same link with the same formula. Conventions: :mod:`labkit.physics.parallelism`.
"""

from __future__ import annotations

from typing import Any

from labkit.registries.hardware import Hardware

ACT_BYTES = 2.0  # bytes per activation element on the wire and in scratch (bf16)
LINK_NONE, LINK_FAST, LINK_SCALEOUT = 0, 1, 2


def link_of(span: int, hw: Hardware) -> tuple[float, float, int]:
    """(bandwidth B/s, per-message latency s, link code) of a group spanning ``span``
    consecutive devices: the fast domain when ``span <= domain_size``, else the
    scale-out network."""
    if span <= hw.domain_size:
        return float(hw.interconnect_bandwidth), float(hw.interconnect_latency_s), LINK_FAST
    return float(hw.scaleout_bandwidth), float(hw.scaleout_latency_s), LINK_SCALEOUT


def tp_allreduce_bytes(hidden: Any, layers: Any, tp: Any) -> Any:
    """Ring all-reduce bytes one device sends per token: 2 per layer (after attention and
    after the FFN) of ``hidden x 2 B``, each costing ``2 (tp - 1)/tp`` of the message."""
    return layers * (2 * 2 * hidden * ACT_BYTES) * (tp - 1) / tp


def tp_allreduce_messages(layers: Any, tp: Any) -> Any:
    """Ring steps of TP all-reduces per stage step: 2 per layer, ``2 (tp - 1)`` steps each."""
    return 4 * layers * (tp - 1)
