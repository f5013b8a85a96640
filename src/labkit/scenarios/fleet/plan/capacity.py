"""Lab 2 Part B of a fleet: the paper's three-axis, decode-only sizing
(:func:`labkit.physics.capacity.size_deployment`) and, step by step, what a fleet that serves
the demand adds to it -- each request's prefill and the utilisation cap -- with
:func:`labkit.plans.serving.fleet_reconciliation` (the function Lab 1's release review sizes
with), on Lab 1's replica (TP over its devices) holding the sequences its own step keeps
within the budget, as Part D counts a replica (:func:`.serving.replica_slots`).
``fleet_devices`` is the one fleet size the card, the callouts and the hand-off show;
``fleet_includes_prefill`` says whether it could include prefill and the cap (else it is the
decode-only count, labelled so)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from labkit.core.units import bits_to_bytes
from labkit.physics.capacity import Sizing
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.plans.scenarios.common import (
    DESIGN_MODE,
    fleet_users,
    memory_basis,
    serving_device,
    slo_tpot,
)
from labkit.plans.serving import ServingPlan, fleet_reconciliation, serving_plan
from labkit.plans.workload import session_capacity, track_phases
from labkit.registries.models import get_model
from labkit.scenarios.fleet.plan.scenario import AXES, fleet_sizing, per_replica_limits
from labkit.scenarios.fleet.plan.serving import replica_slots
from labkit.tracks import Track

MAX_REPLICA_DEVICES = 64
"""Largest replica the three-axis sizing tries (devices, powers of two)."""
REPLICA_SIZES = tuple(2 ** k for k in range(int(math.log2(MAX_REPLICA_DEVICES)) + 1))


def layout_label(degrees: Sequence[int]) -> str:
    """'TP4', 'TP2 x PP2', 'TP8 x DP4', '1 device' for (tp, cp, pp, dp, ep)."""
    parts = [f"{a.upper()}{d}" for a, d in zip(AXES, degrees, strict=True) if d > 1]
    return " x ".join(parts) if parts else "1 device"


# -- Part B: the fleet, sized step by step ----------------------------------------------------

@dataclass(frozen=True)
class FleetSizing:
    """One demand sized for Part B, every step a field.

    Decode only (the paper's three axes, every replica 100% busy decoding): ``sizing``
    (:class:`Sizing`: weights floor, KV headroom, replicas x devices per replica),
    ``slo_axis_devices`` (replicas the TPOT budget alone needs x devices per replica).
    Served (:func:`labkit.plans.serving.fleet_reconciliation`, on the replica size --
    ``served_devices_per_replica`` -- that needs the fewest devices once served;
    ``same_shape_devices``: what the sizing's own replica size needs, None if it cannot):
    ``prefill_s`` (s per request on one replica), ``prefill_share`` (of a saturated
    replica's time), ``max_utilisation`` (the cap, 0-1), ``served_devices`` (None: that
    replica shape does not fit once memory keeps its reserve), ``served_slots`` (sequences
    per served replica: the fewest of the sizing's, ``served_memory_slots`` -- what its
    memory holds beside the embeddings and the reserve -- and ``served_step_slots`` -- the
    most whose step, communication included, keeps the TPOT budget, as Lab 2 Part D counts
    a replica: :func:`labkit.scenarios.fleet.plan.serving.replica_slots`), ``served_layout``
    (that replica's layout: Lab 1's, TP over its devices, e.g. 'TP8') and ``served_step_s``
    (its step with those sequences, s; a step over the budget even at one sequence leaves
    ``served_devices`` None). ``release_*``: Lab 1's
    release shape (track's devices per replica and batch slots) at the same demand.
    Memory: ``usable_bytes_per_device`` after the track's serving reserve (every count here,
    decode only and served, on it; ``memory_basis`` says so in words).
    Costs are per day, USD: ``provisioned_cost_per_day`` = fleet devices rented all day;
    ``busy_cost_per_day`` = the device-time actually used (100% utilisation basis).
    """

    users: int
    context_tokens: int
    slo_class: str
    tpot_slo_s: float
    weight_bits: int
    kv_bits: int
    demand_rate_per_s: float
    sizing: Sizing
    slo_axis_devices: int
    kv_limit_by_size: tuple[int, ...]
    slo_limit_by_size: tuple[int, ...]
    prefill_s: float | None
    prefill_share: float | None
    max_utilisation: float
    memory_reserve_fraction: float
    kv_heads: int
    served_devices: int | None
    served_replicas: int | None
    served_slots: int | None
    served_memory_slots: int | None
    served_step_slots: int | None
    served_layout: str | None
    served_step_s: float | None
    served_devices_per_replica: int | None
    same_shape_devices: int | None
    served_utilisation: float | None
    served_capacity_per_s: float | None
    release_feasible: bool
    release_devices: int | None
    release_replicas: int | None
    release_devices_per_replica: int | None
    release_slots: int | None
    release_cost_per_day: float | None
    price_per_device_hour: float
    active_hours_per_day: float
    daily_budget: float
    weight_bytes: float
    kv_bytes_per_token: float
    usable_bytes_per_device: float
    memory_basis: str = ""
    lab1_sessions: int | None = None
    """Lab 1's count of the same replica's sequences (its release review: the whole model's
    weights and each device's KV heads), None when the sizing finds no replica."""

    @property
    def feasible(self) -> bool:
        """The three axes find a replica of at most :data:`MAX_REPLICA_DEVICES` devices."""
        return bool(self.sizing.feasible)

    @property
    def decode_only_devices(self) -> int:
        """The paper's count: decode only, every replica 100% busy (devices)."""
        return int(self.sizing.total_devices)

    @property
    def kv_replicated(self) -> bool:
        """The fleet's replica has more devices than the model has KV heads: the served plan
        replicates each head (the decode-only sizing splits KV evenly over the devices)."""
        return self.feasible and self.fleet_devices_per_replica > self.kv_heads > 0

    @property
    def fleet_devices_per_replica(self) -> int:
        """Devices per replica of the fleet shown: the served size, else the sizing's."""
        served = self.served_devices_per_replica
        return int(self.sizing.devices_per_replica if served is None
                   or self.served_devices is None else served)

    @property
    def served_sizing_slots(self) -> int:
        """Sequences per replica the three axes allow at the served replica size."""
        j = REPLICA_SIZES.index(self.fleet_devices_per_replica) if self.feasible else 0
        return min(self.kv_limit_by_size[j], self.slo_limit_by_size[j], self.users)

    @property
    def fleet_includes_prefill(self) -> bool:
        """``fleet_devices`` includes prefill and the utilisation cap."""
        return self.served_devices is not None

    @property
    def fleet_devices(self) -> int:
        """The fleet size shown everywhere: served (decode + prefill, replicas at most
        ``max_utilisation`` busy) when computable, else the decode-only count."""
        return self.decode_only_devices if self.served_devices is None else self.served_devices

    @property
    def fleet_replicas(self) -> int:
        return int(self.sizing.replicas if self.served_replicas is None
                   else self.served_replicas)

    @property
    def provisioned_cost_per_day(self) -> float:
        """USD/day: ``fleet_devices`` x price x active hours (devices rented)."""
        return self.fleet_devices * self.price_per_device_hour * self.active_hours_per_day

    @property
    def busy_cost_per_day(self) -> float:
        """USD/day of device-time actually used (100% utilisation basis): served replicas x
        their utilisation, or the decode-only devices (each 100% busy)."""
        busy = (self.decode_only_devices if self.served_devices is None
                else self.served_devices * float(self.served_utilisation or 0.0))
        return busy * self.price_per_device_hour * self.active_hours_per_day

    @property
    def over_budget(self) -> bool:
        """The provisioned fleet costs more per day than the track's budget."""
        return self.feasible and self.provisioned_cost_per_day > self.daily_budget

    @property
    def replica_index(self) -> int:
        """Index of the sized replica's size in :data:`REPLICA_SIZES`."""
        return REPLICA_SIZES.index(int(self.sizing.devices_per_replica)) if self.feasible else 0

    def as_dict(self) -> dict[str, object]:
        """JSON-ready results (the Sizing's fields, then every step and cost)."""
        return {
            **self.sizing.as_dict(), "users": self.users,
            "context_tokens": self.context_tokens, "slo_class": self.slo_class,
            "tpot_s": self.tpot_slo_s, "weight_bits": self.weight_bits,
            "kv_bits": self.kv_bits, "demand_rate_per_s": self.demand_rate_per_s,
            "decode_only_devices": self.decode_only_devices,
            "slo_axis_devices": self.slo_axis_devices,
            "fleet_devices": self.fleet_devices,
            "fleet_includes_prefill": self.fleet_includes_prefill,
            "served_devices": self.served_devices, "served_replicas": self.served_replicas,
            "served_slots": self.served_slots, "prefill_s": self.prefill_s,
            "served_memory_slots": self.served_memory_slots,
            "served_step_slots": self.served_step_slots,
            "served_layout": self.served_layout, "served_step_s": self.served_step_s,
            "served_devices_per_replica": self.served_devices_per_replica,
            "same_shape_devices": self.same_shape_devices,
            "served_sizing_slots": self.served_sizing_slots if self.feasible else None,
            "prefill_share": self.prefill_share, "max_utilisation": self.max_utilisation,
            "release_devices": self.release_devices,
            "release_replicas": self.release_replicas,
            "release_devices_per_replica": self.release_devices_per_replica,
            "release_slots": self.release_slots,
            "provisioned_cost_per_day": self.provisioned_cost_per_day,
            "busy_cost_per_day": self.busy_cost_per_day, "daily_budget": self.daily_budget,
            "over_budget": self.over_budget,
            "kv_limit_by_size": list(self.kv_limit_by_size),
            "slo_limit_by_size": list(self.slo_limit_by_size),
            "replica_sizes": list(REPLICA_SIZES),
            "replica_index": self.replica_index if self.feasible else None,
            "lab1_sessions": self.lab1_sessions,
        }


def _served_on(tr: Track, sz: Sizing, demand: float, wb: int, kb: int, ctx: int,
               tpot: float, release: ServingPlan) -> dict[str, object]:
    """The served fleet (prefill and the utilisation cap) on ``sz``'s replica shape, beside
    ``release``, Lab 1's release plan at the same demand and precisions."""
    shape = (sz.devices_per_replica, 1, 1, 1)   # Lab 1's replica: TP over its devices
    step_slots, step_s = replica_slots(tr, wb, kb, shape, context=ctx, tpot_slo_s=tpot)
    laid = math.isfinite(step_s)   # not a layout (NaN): the sizing's own count stands
    rec = fleet_reconciliation(tr, sz, demand_rate_per_s=demand, weight_bits=wb, kv_bits=kb,
                               context_tokens=ctx, slots=step_slots if laid else None,
                               release=release)
    same, rel = rec.same_shape, rec.release
    tp, cp, pp, ep = shape
    out: dict[str, object] = dict(
        release_feasible=bool(rel.feasible), served_layout=layout_label((tp, cp, pp, 1, ep)),
        served_step_s=step_s if laid else None, served_devices_per_replica=tp)
    if rel.feasible:
        out.update(release_devices=rel.total_devices, release_replicas=rel.replicas,
                   release_devices_per_replica=rel.devices_per_replica,
                   release_slots=rel.batch_size, release_cost_per_day=rel.daily_cost)
    if same.feasible and not step_s > tpot:
        out.update(prefill_s=rec.prefill_s, prefill_share=rec.prefill_share,
                   served_devices=same.total_devices, served_replicas=same.replicas,
                   served_slots=same.batch_size, served_utilisation=same.utilisation,
                   served_memory_slots=min(sz.users_per_replica,
                                           int(same.capacity.max_sessions)),
                   served_step_slots=min(sz.users_per_replica,
                                         step_slots if laid else sz.users_per_replica),
                   served_capacity_per_s=same.replica_capacity_requests_per_s)
    return out


def _at_size(sz: Sizing, i: int, b_kv: Sequence[int], b_slo: Sequence[int]) -> Sizing | None:
    """The decode-only sizing with its replicas at ``REPLICA_SIZES[i]`` (None: none fits)."""
    per = min(int(b_kv[i]), int(b_slo[i]), sz.users)
    if per < 1:
        return None
    reps = -(-sz.users // per)
    return replace(sz, devices_per_replica=REPLICA_SIZES[i], users_per_replica=per,
                   batch_at_slo=int(b_slo[i]), replicas=reps,
                   total_devices=REPLICA_SIZES[i] * reps)


def _served(tr: Track, sz: Sizing, demand: float, wb: int, kb: int, ctx: int, tpot: float,
            b_kv: Sequence[int], b_slo: Sequence[int]) -> dict[str, object]:
    """The served fleet on the replica size that needs the fewest devices once prefill,
    the cap and each step's communication count (ties: the decode-only sizing's size,
    then fewer devices per replica); ``same_shape_devices``: what the decode-only sizing's
    own replica size needs."""
    empty: dict[str, object] = dict(
        prefill_s=None, prefill_share=None, served_devices=None, served_replicas=None,
        served_slots=None, served_utilisation=None, served_capacity_per_s=None,
        served_memory_slots=None, served_step_slots=None, served_layout=None,
        served_step_s=None, served_devices_per_replica=None, same_shape_devices=None,
        release_feasible=False, release_devices=None, release_replicas=None,
        release_devices_per_replica=None, release_slots=None, release_cost_per_day=None)
    if not sz.feasible:
        return empty
    release = serving_plan(tr, demand_rate_per_s=demand, weight_bits=wb, kv_bits=kb,
                           context_tokens=ctx, with_baseline=False)   # one for every size
    own = dict(empty, **_served_on(tr, sz, demand, wb, kb, ctx, tpot, release))
    best = own
    for i in range(len(REPLICA_SIZES)):
        alt = _at_size(sz, i, b_kv, b_slo)
        if alt is None or alt.devices_per_replica == sz.devices_per_replica:
            continue
        out = dict(empty, **_served_on(tr, alt, demand, wb, kb, ctx, tpot, release))
        if out["served_devices"] is not None and (
                best["served_devices"] is None
                or int(out["served_devices"]) < int(best["served_devices"])):  # type: ignore[call-overload]
            best = out
    return dict(best, same_shape_devices=own["served_devices"])


def size_fleet(track: Track, users: int, context_tokens: int, slo: str, weight_bits: int,
               kv_bits: int) -> FleetSizing:
    """Part B's sizing of ``users`` live sequences at ``context_tokens`` within SLO class
    ``slo``'s TPOT budget. Demand (requests/s) scales the track's with the users
    (Little's law at a fixed request time, exact at the default users)."""
    tr = track
    hw, m = serving_device(tr), get_model(tr.model_id)
    u, ctx, wb, kb = int(users), int(context_tokens), int(weight_bits), int(kv_bits)
    tpot = slo_tpot(str(slo))
    sz = fleet_sizing(hw, m, u, ctx, tpot, wb, kb, max_devices_per_replica=MAX_REPLICA_DEVICES)
    b_kv, b_slo = per_replica_limits(hw, m, ctx, tpot, wb, kb,
                                     np.asarray(REPLICA_SIZES, dtype=np.int64))
    slo_axis = (math.ceil(u / max(1, sz.batch_at_slo)) * sz.devices_per_replica
                if sz.feasible else 0)
    demand = tr.demand_rate_per_s * u / fleet_users(tr)
    return FleetSizing(
        users=u, context_tokens=ctx, slo_class=str(slo), tpot_slo_s=tpot, weight_bits=wb,
        kv_bits=kb, demand_rate_per_s=demand, sizing=sz, slo_axis_devices=int(slo_axis),
        kv_limit_by_size=tuple(int(x) for x in b_kv),
        slo_limit_by_size=tuple(int(x) for x in b_slo),
        max_utilisation=float(tr.max_utilisation),
        memory_reserve_fraction=float(tr.memory_reserve_fraction),
        kv_heads=0 if m.uses_mla else int(m.kv_heads or 0),
        price_per_device_hour=float(tr.price_per_device_hour or 0.0),
        active_hours_per_day=float(tr.active_hours_per_day),
        daily_budget=float(tr.daily_budget),
        weight_bytes=float(m.block_params_total * bits_to_bytes(wb)),
        kv_bytes_per_token=float(kv_bytes_per_token(m, kb)),
        usable_bytes_per_device=float(hw.usable_memory_bytes), memory_basis=memory_basis(tr),
        lab1_sessions=(int(session_capacity(tr, weight_bits=wb, kv_bits=kb,
                                            context_tokens=ctx,
                                            devices_per_replica=sz.devices_per_replica
                                            ).max_sessions) if sz.feasible else None),
        **_served(tr, sz, demand, wb, kb, ctx, tpot, b_kv, b_slo))  # type: ignore[arg-type]


def fleet_hook(track: Track) -> tuple[int, float, float, int]:
    """(users, requests/s, seconds per request, context tokens) of the track's default
    demand (Little's law: users = requests/s x seconds per request)."""
    ph = track_phases(track, mode=DESIGN_MODE)
    return (fleet_users(track), float(track.demand_rate_per_s), float(ph.latency_s),
            int(track.context_tokens or 0))


