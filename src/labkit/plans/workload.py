"""A track's workload handed to the physics: its phases and its batching inputs.

The physics (:mod:`labkit.physics.phases`, :mod:`labkit.physics.batching`) takes hardware,
model and numbers; these functions fill those numbers from a :class:`~labkit.tracks.Track`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from labkit.core import validation as v
from labkit.physics.batching import (
    POLICIES,
    POLICY_LABELS,
    PolicyComparison,
    PolicyResult,
    compare_policies,
    policy_labels,
    step_tables,
)
from labkit.physics.kvcache import weight_bytes
from labkit.physics.memory import StateCapacity, state_capacity
from labkit.physics.phases import (
    RequestPhases,
    cnn_compute_precision,
    cnn_inference_time,
    front_end_ops_per_s,
    request_phases,
)
from labkit.physics.roofline import Derating
from labkit.registries.edge import edge_profile
from labkit.registries.models import get_model
from labkit.tracks import Track, get_track

__all__ = [
    "POLICIES",
    "POLICY_LABELS",
    "SIMPLICITY_MARGIN",
    "BatchingBench",
    "PolicyComparison",
    "PolicyInputs",
    "PolicyResult",
    "RequestPhases",
    "SessionPoint",
    "StateCapacity",
    "activation_bytes",
    "compute_datapath",
    "delivered_per_s",
    "front_end_energy_j",
    "front_end_label",
    "front_end_s",
    "pass_table_s",
    "policy_label",
    "session_capacity",
    "session_point",
    "tpot_s",
    "track_inputs",
    "track_phases",
]

SIMPLICITY_MARGIN = 0.05
"""A policy within this share of the top capacity counts as "as good" (the simpler wins)."""


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


def front_end_s(track: str | Track, mode: str | Derating = "achievable") -> float:
    """Seconds the device spends on one input's signal front end (e.g. MFCC features of an
    audio window) before the model runs: front-end operations / the device's front-end
    rate (:func:`labkit.physics.phases.front_end_ops_per_s`); 0 where the device computes
    none (no edge profile, or no front-end operations)."""
    tr = get_track(track)
    prof = edge_profile(tr.hardware_id)
    if prof is None or not prof.front_end_ops or tr.is_transformer:
        return 0.0
    return float(prof.front_end_ops) / front_end_ops_per_s(tr.hardware_id, mode)


def front_end_energy_j(track: str | Track) -> float:
    """Energy of one input's front end on the device, J: devices x power x :func:`front_end_s`
    (0 without a front end or a power figure)."""
    tr = get_track(track)
    return tr.devices_per_replica * float(tr.power_w or 0.0) * front_end_s(tr)


def front_end_label(track: str | Track) -> str:
    """What the front end is called on screen: ``MFCC front end`` (from the track's sensor
    description), else ``signal front end``."""
    tr = get_track(track)
    return "MFCC front end" if "MFCC" in (tr.sensor_window or "") else "signal front end"


def tpot_s(e2e_s: float, ttft_s: float, output_tokens: int) -> float:
    """TPOT, the one definition: mean time per output token after the first of one
    request, (end-to-end - TTFT) / (L - 1), seconds. A single gap between two streamed
    tokens is not TPOT (call it an inter-token gap or stall)."""
    n = int(output_tokens)
    if n < 2:
        raise ValueError(f"output_tokens: TPOT needs at least 2 tokens, got {n}")
    return (float(e2e_s) - float(ttft_s)) / (n - 1)


def stalled_tpot_s(step_s: Any, prefill_share: Any) -> Any:
    """TPOT of a request whose replica also prefills other requests, s: decode steps run
    only the ``prefill_share`` of the time prefills leave, so each of its tokens waits
    step / (1 - share) on average; infinite when prefills fill the replica (share >= 1).
    Works on arrays (numpy broadcasting)."""
    share = np.asarray(prefill_share, dtype=float)
    step = np.asarray(step_s, dtype=float)
    with np.errstate(divide="ignore"):
        out = np.where(share < 1.0, step / np.maximum(1.0 - share, 1e-300), np.inf)
    return float(out) if out.ndim == 0 else out


def saturated_prefill_share(batch: int, step_s: float, prefill_s: float,
                            output_tokens: int) -> float:
    """The share of a replica's time spent prefilling when its ``batch`` slots are always
    full: each step gives every slot a token, so requests finish at
    r = B (1 - s) / (step (L - 1)) and prefill takes s = r x prefill, hence
    s = x / (1 + x) with x = B prefill / (step (L - 1)). With :func:`stalled_tpot_s` the
    request's TPOT is then step + B x prefill / (L - 1)."""
    x = int(batch) * float(prefill_s) / (float(step_s) * max(1, int(output_tokens) - 1))
    return x / (1.0 + x)


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
    devices; a CNN's pass of b inputs also carries their b front ends (:func:`front_end_s`),
    so the simulated latency, capacity and busy energy count them. SLO, timeout, scheduler
    overhead and arrival process from the track.
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
    fe = front_end_s(tr, mode)
    if fe > 0:   # each input's front end runs on the device before its model pass
        prefill = np.asarray(prefill, dtype=float) + fe * np.arange(1, len(prefill) + 1)
    return {
        "step_s_by_batch": step, "prefill_s_by_batch": prefill,
        "slo_s": tr.slo_s, "slo_metric": "tpot" if tr.slo_kind == "tpot" else "latency",
        "slo_quantile": tr.slo_quantile, "ttft_slo_s": tr.ttft_slo_s,
        "mean_tokens": out_tokens if tr.is_transformer else 1,
        "cv": tr.output_tokens_cv if tr.is_transformer else 0.0,
        "timeout_s": tr.batch_timeout_s, "scheduler_overhead_s": tr.scheduler_overhead_s,
        "arrival": tr.arrival_process, "streams": tr.arrival_streams,
    }


def pass_table_s(track: str | Track, largest: int,
                 mode: str | Derating = "achievable") -> np.ndarray:
    """Seconds the pass of a static batch of b = 1..``largest`` inputs occupies one replica:
    the prefill of b prompts (a language model) or the CNN pass of b inputs with their b
    signal front ends (:func:`front_end_s`). The one per-batch time: Lab 1 Part C's widget
    (:class:`BatchingBench`, its p(B)) and Lab 1's notebook exercises both read it."""
    return np.asarray(track_inputs(track, batch_size=int(largest), mode=mode)
                      ["prefill_s_by_batch"], dtype=float)


def delivered_per_s(r: PolicyResult) -> float:
    """What a policy delivers at the offered load, output units (tokens, frames, windows)
    per s: the offered load (utilisation x capacity) while its queue stays bounded, its
    saturated capacity once it does not. The simulated stream's own rate (its output over
    a finite span that includes the last requests' drain) is a sample that falls short of
    the offered load; it is not shown as the delivered throughput."""
    if not r.stable:
        return float(r.capacity_tokens_per_s)
    return float(min(1.0, r.utilisation) * r.capacity_tokens_per_s)


# -- Lab 1 Part B: live state beside the weights -------------------------------------------

def activation_bytes(track: str | Track, weight_bits: int) -> float:
    """Peak live activations of one CNN inference at ``weight_bits``, bytes: the pass's
    traffic minus its weights (kept at the compute precision, whatever the weights)."""
    tr = get_track(track)
    m = get_model(tr.model_id)
    return (float(cnn_inference_time(tr.hardware_id, m, weight_bits, 1).bytes_moved)
            - weight_bytes(m, weight_bits))


def compute_datapath(track: str | Track, weight_bits: int) -> str:
    """The arithmetic a CNN track runs at ``weight_bits`` (``INT8``, ``FP32``)."""
    return cnn_compute_precision(get_track(track).hardware_id, weight_bits).upper()


def session_capacity(track: str | Track, *, weight_bits: int, kv_bits: int | None = None,
                     context_tokens: object = None, windows: int = 1,
                     devices_per_replica: int | None = None) -> StateCapacity:
    """Sessions (KV caches) or CNN inputs in flight that fit beside the weights of one
    replica. A CNN's state per inference = ``windows`` x window bytes + its activations."""
    tr = get_track(track)
    dev = tr.devices_per_replica if devices_per_replica is None else int(devices_per_replica)
    kb = tr.kv_bits if kv_bits is None else int(kv_bits)
    state = None
    if not tr.is_transformer:
        state = int(windows) * tr.window_bytes + activation_bytes(tr, weight_bits)
    return state_capacity(
        tr.hardware_id, tr.model_id,
        context_tokens=tr.context_tokens if context_tokens is None else context_tokens,
        weight_bits=weight_bits, kv_bits=kb, devices_per_replica=dev,
        reserve_fraction=tr.memory_reserve_fraction, state_bytes_per_request=state)


@dataclass(frozen=True)
class SessionPoint:
    """Lab 1 Part B at one setting: ``capacity`` (sessions / inputs in flight that fit) and
    the terms of the state per session, bytes: a language model's KV bytes per token of
    context on this replica (``per_token_bytes``, after tensor-parallel sharing) x
    ``context_tokens``; a CNN's ``windows`` x ``window_bytes`` + ``activation_bytes`` (at
    the ``datapath`` compute precision). Under a hard deadline (:attr:`Track.hard_deadline`)
    ``clear_s`` is the time the replica takes to clear the batch its scheduler keeps, split
    evenly over its devices (``per_device`` inputs each, in one pass: Lab 1's pass table,
    :func:`pass_table_s`); the last input in flight is done then. Inputs reach a second
    device at no cost here (Lab 2 Part C times that link: about 0.1 ms a camera frame on the
    robotaxi's board). None otherwise."""

    capacity: StateCapacity
    per_token_bytes: float | None
    context_tokens: float | None
    windows: int | None
    window_bytes: float
    activation_bytes: float | None
    datapath: str | None
    clear_s: float | None = None
    per_device: int | None = None

    def failed(self, slots: int, slo_s: float) -> tuple[str, ...]:
        """Lab 1 Part B's checks that fail here: ``memory`` (weights + one state fit),
        ``batch`` (the scheduler's ``slots`` fit) and, under a hard deadline, ``deadline``
        (they are cleared within ``slo_s``)."""
        cap = self.capacity
        late = self.clear_s is not None and self.clear_s > slo_s
        return (("memory",) if cap.oom else ()) + (
            ("batch",) if cap.max_sessions < slots else ()) + (
            ("deadline",) if late and not cap.oom else ())


def session_point(track: str | Track, *, weight_bits: int, kv_bits: int | None = None,
                  context_tokens: object = None, windows: int = 1,
                  devices_per_replica: int | None = None) -> SessionPoint:
    """:func:`session_capacity` with the terms of its state per session."""
    tr = get_track(track)
    cap = session_capacity(tr, weight_bits=weight_bits, kv_bits=kv_bits,
                           context_tokens=context_tokens, windows=windows,
                           devices_per_replica=devices_per_replica)
    if tr.is_transformer:
        ctx = float(cap.context_tokens or 0.0)
        return SessionPoint(cap, cap.bytes_per_session / ctx if ctx else None, ctx, None,
                            tr.window_bytes, None, None)
    clear_s = per_device = None
    if tr.hard_deadline:
        per_device = -(-int(tr.batch_size) // cap.devices)
        clear_s = float(track_inputs(tr, batch_size=per_device, weight_bits=weight_bits)
                        ["prefill_s_by_batch"][-1])
    return SessionPoint(cap, None, None, int(windows), tr.window_bytes,
                        activation_bytes(tr, weight_bits), compute_datapath(tr, weight_bits),
                        clear_s, per_device)


# -- Lab 1 Part C: four policies on one replica --------------------------------------------

class BatchingBench:
    """One replica of a track with step and prefill tables up to ``max_batch``: compare the
    four policies (:func:`compare_policies`) at any batch <= max_batch, output-length CV
    and arrival rate (requests/s) without rebuilding the tables. ``step_s(b)`` is the decode
    step at batch b (a language model) and ``prefill_s(b)`` the prefill or CNN pass, s."""

    def __init__(self, track: str | Track, max_batch: int) -> None:
        self.track = get_track(track)
        kw = track_inputs(self.track, batch_size=max_batch)
        self.max_batch = int(max_batch)
        self._step = np.asarray(kw["step_s_by_batch"], dtype=float)
        self._prefill = np.asarray(kw["prefill_s_by_batch"], dtype=float)  # pass_table_s
        self._inputs: dict[str, Any] = {k: val for k, val in kw.items()
                                        if k not in ("step_s_by_batch", "prefill_s_by_batch")}

    def step_s(self, batch: int) -> float:
        return float(self._step[int(batch) - 1])

    def prefill_s(self, batch: int) -> float:
        return float(self._prefill[int(batch) - 1])

    def compare(self, batch: int, cv: float | None, rate: float) -> PolicyComparison:
        kw: dict[str, Any] = dict(self._inputs)
        if self.track.is_transformer and cv is not None:
            kw["cv"] = float(cv)
        b = int(batch)
        return compare_policies(step_s_by_batch=self._step[:b],
                                prefill_s_by_batch=self._prefill[:b],
                                arrival_rate_per_s=float(rate),
                                simplicity_margin=SIMPLICITY_MARGIN, **kw)


def policy_label(track: str | Track, policy: str) -> str:
    """A batching policy in the track's words (a token stream's 'continuous batching
    (iteration-level)' is a frame track's 'greedy batching'): one name per screen."""
    return policy_labels(not get_track(track).is_transformer)[policy]
