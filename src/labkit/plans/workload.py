"""A track's workload handed to the physics: its phases and its batching inputs.

The physics (:mod:`labkit.physics.phases`, :mod:`labkit.physics.batching`) takes hardware,
model and numbers; these functions fill those numbers from a :class:`~labkit.tracks.Track`.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from labkit.core import validation as v
from labkit.physics.batching import (
    step_tables,
)
from labkit.physics.phases import RequestPhases, request_phases
from labkit.physics.roofline import Derating
from labkit.tracks import Track, get_track


class PolicyInputs(TypedDict):
    """:func:`~labkit.physics.batching.compare_policies` / ``simulate_policy`` keywords for
    one replica of a track, everything but the arrival rate. Seconds, tokens, counts."""

    step_s_by_batch: np.ndarray
    prefill_s_by_batch: np.ndarray
    slo_s: float
    slo_metric: str
    slo_quantile: float
    ttft_slo_s: float | None
    mean_tokens: float | None
    cv: float | None
    timeout_s: float
    scheduler_overhead_s: float
    arrival: str
    streams: int


def track_phases(track: str | Track, *, prompt_tokens: object = None, output_tokens: object = None,
                 weight_bits: int | None = None, kv_bits: int | None = None,
                 devices_per_replica: int | None = None, batch: int | None = None,
                 mode: str | Derating = "achievable") -> RequestPhases:
    """:func:`request_phases` for a track id or :class:`labkit.tracks.Track`, with overrides.

    ``batch`` defaults to the track's operating batch for transformers (the batch its
    ``cost_per_event`` is derived at) and to 1 for CNNs.
    """

    tr = get_track(track)
    if batch is None:
        batch = tr.batch_size if tr.is_transformer else 1
    return request_phases(
        tr.hardware_id, tr.model_id,
        prompt_tokens=tr.prompt_tokens if prompt_tokens is None else prompt_tokens,
        output_tokens=tr.output_tokens if output_tokens is None else output_tokens,
        weight_bits=tr.weight_bits if weight_bits is None else weight_bits,
        kv_bits=tr.kv_bits if kv_bits is None else kv_bits,
        tp=tr.devices_per_replica if devices_per_replica is None else devices_per_replica,
        batch=batch, window_bytes=tr.window_bytes, mode=mode,
    )


def track_inputs(track: str | Track, *, batch_size: int | None = None,
                 weight_bits: int | None = None, kv_bits: int | None = None,
                 devices_per_replica: int | None = None, mean_tokens: object = None,
                 mode: str | Derating = "achievable") -> PolicyInputs:
    """Keyword arguments of :func:`compare_policies` for one replica of a track (no rate).

    Step and prefill tables come from :func:`step_tables` at the track's precision and
    devices; SLO, timeout, scheduler overhead and arrival process from the track.
    """

    tr = get_track(track)
    bsz = tr.batch_size if batch_size is None else batch_size
    out_tokens: int | None = None
    if tr.is_transformer:
        wanted = tr.output_tokens if mean_tokens is None else mean_tokens
        out_tokens = max(1, round(float(v.positive("mean_tokens", wanted))))
    step, prefill = step_tables(
        tr.hardware_id, tr.model_id, bsz, prompt_tokens=tr.prompt_tokens,
        output_tokens=out_tokens,
        weight_bits=tr.weight_bits if weight_bits is None else weight_bits,
        kv_bits=tr.kv_bits if kv_bits is None else kv_bits,
        tp=tr.devices_per_replica if devices_per_replica is None else devices_per_replica,
        window_bytes=tr.window_bytes, mode=mode)
    return {
        "step_s_by_batch": step, "prefill_s_by_batch": prefill,
        "slo_s": tr.slo_s, "slo_metric": "tpot" if tr.slo_kind == "tpot" else "latency",
        "slo_quantile": tr.slo_quantile, "ttft_slo_s": tr.ttft_slo_s,
        "mean_tokens": out_tokens if tr.is_transformer else 1,
        "cv": tr.output_tokens_cv if tr.is_transformer else 0.0,
        "timeout_s": tr.batch_timeout_s, "scheduler_overhead_s": tr.scheduler_overhead_s,
        "arrival": tr.arrival_process, "streams": tr.arrival_streams,
    }
