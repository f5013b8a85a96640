"""Result types: one deployment (:class:`ParallelConfig`) and the candidate table."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from labkit.physics.parallelism.formulas import LINKS


# -- results ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParallelConfig:
    """One deployment. Memory is per device (the binding device: whichever of the first
    and last pipeline stage uses more), bytes.

    ``*_bytes`` (communication): bytes one device sends per generated token of one
    sequence on that axis. ``*_link``: "interconnect", "scaleout" or "none".
    ``*_s``: seconds that axis adds to ``per_token_latency_s`` (per-message latency plus
    bytes over bandwidth); ``roofline_s`` is the weight + compute + KV (+ overhead) part,
    all ``pp`` stages. ``per_token_latency_s``: seconds between one sequence's tokens.
    ``throughput_tokens_per_s``: whole deployment.
    """

    tp: int
    cp: int
    pp: int
    dp: int
    ep: int
    devices: int
    batch_per_replica: int
    microbatch: int
    layers_per_stage: int
    weights_bytes: float
    kv_bytes: float
    transient_bytes: float
    used_bytes: float
    capacity_bytes: float
    fits: bool
    tp_allreduce_bytes: float
    cp_ring_bytes: float
    pp_handoff_bytes: float
    ep_alltoall_bytes: float
    tp_link: str
    cp_link: str
    pp_link: str
    ep_link: str
    tp_allreduce_s: float
    cp_ring_s: float
    pp_handoff_s: float
    ep_alltoall_s: float
    roofline_s: float
    per_token_latency_s: float
    throughput_tokens_per_s: float

    @property
    def degrees(self) -> tuple[int, int, int, int, int]:
        """(tp, cp, pp, dp, ep)."""
        return self.tp, self.cp, self.pp, self.dp, self.ep

    @property
    def comm_s(self) -> float:
        """Seconds of communication in one token's latency, all axes."""
        return self.tp_allreduce_s + self.cp_ring_s + self.ep_alltoall_s + self.pp_handoff_s

    def as_dict(self) -> dict[str, Any]:
        """Plain, JSON-serialisable fields."""
        return asdict(self)


INT_FIELDS = ("tp", "cp", "pp", "dp", "ep", "devices", "batch_per_replica", "microbatch",
               "layers_per_stage")
FLOAT_FIELDS = ("weights_bytes", "kv_bytes", "transient_bytes", "used_bytes",
                 "tp_allreduce_bytes", "cp_ring_bytes", "pp_handoff_bytes",
                 "ep_alltoall_bytes", "tp_allreduce_s", "cp_ring_s", "pp_handoff_s",
                 "ep_alltoall_s", "roofline_s", "per_token_latency_s",
                 "throughput_tokens_per_s")
LINK_FIELDS = ("tp_link", "cp_link", "pp_link", "ep_link")
NUMBER_FIELDS = (*INT_FIELDS, *FLOAT_FIELDS)


def config_rows(cols: Any, idx: Any, capacity_bytes: float) -> tuple[ParallelConfig, ...]:
    """Rows ``idx`` of column arrays (a dict, or a :class:`ConfigTable` read by attribute)
    as :class:`ParallelConfig` objects of plain Python values."""
    get = cols.__getitem__ if isinstance(cols, dict) else cols.__getattribute__
    idx = np.asarray(idx, dtype=np.int64).ravel()
    if idx.size <= 16:  # a search's frontier: read cells, skip per-column fancy indexing
        rows = idx.tolist()

        def column(f: str) -> list[Any]:
            a = get(f)
            return [a.item(i) for i in rows]  # plain int / float / bool
    else:
        def column(f: str) -> list[Any]:
            cells: list[Any] = get(f)[idx].tolist()
            return cells
    values = [column(f) for f in NUMBER_FIELDS]
    values += [[LINKS[c] for c in column(f)] for f in LINK_FIELDS]
    values.append([bool(b) for b in column("fits")])
    names = (*NUMBER_FIELDS, *LINK_FIELDS, "fits")
    return tuple(ParallelConfig(capacity_bytes=capacity_bytes,
                                **dict(zip(names, row, strict=True)))
                 for row in zip(*values, strict=True))


@dataclass(frozen=True, eq=False)
class ConfigTable:
    """Every realisable candidate as parallel, read-only numpy arrays (one entry each).

    Array fields carry the names and units of :class:`ParallelConfig`; link fields hold
    codes into :data:`LINKS`. ``config(i)`` returns row ``i`` as a :class:`ParallelConfig`.
    """

    hardware: str
    model: str
    context_tokens: int
    batch: int
    weight_bits: int
    kv_bits: int
    max_devices: int
    mode: str
    capacity_bytes: float
    tp: np.ndarray
    cp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    ep: np.ndarray
    devices: np.ndarray
    batch_per_replica: np.ndarray
    microbatch: np.ndarray
    layers_per_stage: np.ndarray
    weights_bytes: np.ndarray
    kv_bytes: np.ndarray
    transient_bytes: np.ndarray
    used_bytes: np.ndarray
    fits: np.ndarray
    tp_allreduce_bytes: np.ndarray
    cp_ring_bytes: np.ndarray
    pp_handoff_bytes: np.ndarray
    ep_alltoall_bytes: np.ndarray
    tp_link: np.ndarray
    cp_link: np.ndarray
    pp_link: np.ndarray
    ep_link: np.ndarray
    tp_allreduce_s: np.ndarray
    cp_ring_s: np.ndarray
    pp_handoff_s: np.ndarray
    ep_alltoall_s: np.ndarray
    roofline_s: np.ndarray
    per_token_latency_s: np.ndarray
    throughput_tokens_per_s: np.ndarray

    def __len__(self) -> int:
        return int(self.tp.size)

    def config(self, i: int) -> ParallelConfig:
        """Row ``i`` as a :class:`ParallelConfig` of plain Python values."""
        return self.configs([i])[0]

    def configs(self, indices: Any = None) -> tuple[ParallelConfig, ...]:
        """Rows at ``indices`` (default: all) as :class:`ParallelConfig` objects."""
        idx = np.arange(len(self)) if indices is None else indices
        return config_rows(self, idx, self.capacity_bytes)


