"""A track's capacity, serving plans and release guardrails.

* :func:`track_capacity` -- :func:`labkit.physics.memory.state_capacity` at the track's
  defaults.
* :func:`serving_plan` -- replicas and devices a track needs for its demand under one
  precision / scheduler / replica shape, and the daily cost (USD for rented devices, energy
  for owned ones) next to the track's default plan.
* :func:`release_guardrails` -- memory, SLO, quality and cost checks, each with its measured
  value and limit; ``binding`` names the first that fails.
* :func:`lever_fixes` -- for each failing check, one change of one setting that makes it
  pass, found by re-running the check itself (a recovery hint that is never a guess).
* :func:`fleet_reconciliation` -- the paper's decode-only fleet sizing next to
  :func:`serving_plan` for the same demand (prefill, utilisation cap, replica shape).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypedDict

from labkit.core import validation as v
from labkit.core.format import counted as counted  # re-exported: its old home
from labkit.core.format import fmt, fmt_num, fmt_pct, format_bytes
from labkit.core.units import SECONDS_PER_HOUR
from labkit.physics.batching import (
    DEFAULT_REQUESTS,
    POLICIES,
    PolicyComparison,
    PolicyResult,
    compare_policies,
    simulate_policy,
)
from labkit.physics.capacity import Sizing
from labkit.physics.memory import StateCapacity, state_capacity
from labkit.physics.roofline import Derating
from labkit.plans.workload import (
    PolicyInputs,
    front_end_label,
    front_end_s,
    track_inputs,
)
from labkit.tracks import Track, get_track

GUARDRAILS = ("memory", "slo", "quality", "cost")


# -- capacity ------------------------------------------------------------------------------

def track_capacity(track: str | Track, *, context_tokens: object = None,
                   weight_bits: int | None = None, kv_bits: int | None = None,
                   devices_per_replica: int | None = None,
                   reserve_fraction: object = None) -> StateCapacity:
    """:func:`state_capacity` with every default taken from the track."""
    tr = get_track(track)
    return state_capacity(
        tr.hardware_id, tr.model_id,
        context_tokens=tr.context_tokens if context_tokens is None else context_tokens,
        weight_bits=tr.weight_bits if weight_bits is None else weight_bits,
        kv_bits=tr.kv_bits if kv_bits is None else kv_bits,
        devices_per_replica=(tr.devices_per_replica if devices_per_replica is None
                             else devices_per_replica),
        reserve_fraction=(tr.memory_reserve_fraction if reserve_fraction is None
                          else reserve_fraction),
        state_bytes_per_request=None if tr.is_transformer else tr.state_bytes_per_request,
    )


def state_reason(tr: Track, cap: StateCapacity) -> str:
    """Why ``cap`` holds what it holds, in the track's words (a language model's is the
    physics' own sentence, about sessions)."""
    if tr.is_transformer:
        return cap.reason
    per, free = format_bytes(cap.bytes_per_session), format_bytes(cap.free_bytes)
    if cap.weight_bytes > cap.weight_limit_bytes:
        return (f"OOM: weights ({format_bytes(cap.weight_bytes)}) exceed "
                f"{cap.weight_location} ({format_bytes(cap.weight_limit_bytes)}) on "
                f"{counted(cap.devices, 'device')}")
    if cap.oom:
        return f"OOM: weights fit, but one {tr.state_noun} ({per}) exceeds the {free} left"
    where = ("in SRAM, weights in flash" if cap.weight_location == "flash"
             else "beside the weights")
    return (f"{counted(cap.max_sessions, tr.state_noun, tr.state_nouns)} of {per} fit in "
            f"{free} {where} ({format_bytes(cap.weight_bytes)})")


# -- serving plan --------------------------------------------------------------------------

@dataclass(frozen=True)
class ServingPlan:
    """Replicas, devices and daily cost of serving a track's demand one way.

    daily_cost / baseline_daily_cost / cost_per_event are in ``cost_unit`` (per day, per
    request); None when the plan is infeasible (OOM). Rented devices cost
    devices x price x active hours; owned devices cost their busy energy,
    devices x power x utilisation x active seconds. ``policy_result`` is the simulated
    scheduler at the per-replica arrival rate (None when OOM).
    """

    track_id: str
    policy: str
    weight_bits: int
    kv_bits: int
    devices_per_replica: int
    batch_size: int
    context_tokens: float | None
    demand_rate_per_s: float
    cost_unit: str
    feasible: bool
    reason: str
    capacity: StateCapacity
    replica_capacity_requests_per_s: float
    replicas: int
    total_devices: int
    exceeds_max_replicas: bool
    replica_arrival_rate_per_s: float
    utilisation: float
    policy_result: PolicyResult | None
    daily_cost: float | None
    cost_per_event: float | None
    baseline_daily_cost: float | None
    cost_ratio_vs_baseline: float | None

    def as_dict(self) -> dict[str, object]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__
               if k not in ("capacity", "policy_result")}
        out["capacity"] = self.capacity.as_dict()
        out["policy_result"] = None if self.policy_result is None else self.policy_result.as_dict()
        return out


class _PlanCommon(TypedDict):
    """The :class:`ServingPlan` fields that do not depend on whether the plan fits."""

    track_id: str
    policy: str
    weight_bits: int
    kv_bits: int
    devices_per_replica: int
    context_tokens: float | None
    demand_rate_per_s: float
    cost_unit: str
    capacity: StateCapacity
    baseline_daily_cost: float | None


def _daily_cost(tr: Track, devices: int, busy_share: float) -> float:
    """USD: devices x price/h x active hours. Energy: devices x W x busy s / J per unit,
    busy s = ``busy_share`` of the active seconds (the simulated passes at the offered
    load, :attr:`PolicyResult.busy_share`; each input's front end included:
    :func:`track_inputs`)."""
    if tr.cost_unit == "USD":
        if tr.price_per_device_hour is None:
            raise ValueError(f"price_per_device_hour: track {tr.id} rents its devices (USD) "
                             "but gives no price")
        return devices * float(tr.price_per_device_hour) * tr.active_hours_per_day
    power, per_unit = tr.power_w, tr.joules_per_cost_unit
    if power is None or per_unit is None:
        raise ValueError(f"power_w: track {tr.id} pays in {tr.cost_unit} but its hardware "
                         f"{tr.hardware_id} has no power figure")
    busy_s = min(1.0, busy_share) * tr.active_hours_per_day * SECONDS_PER_HOUR
    return devices * float(power) * busy_s / float(per_unit)


def serving_plan(track: str | Track, *, demand_rate_per_s: object = None,
                 weight_bits: int | None = None, kv_bits: int | None = None,
                 policy: str | None = None, devices_per_replica: int | None = None,
                 batch_size: int | None = None, context_tokens: object = None,
                 output_tokens_cv: object = None, max_utilisation: object = None,
                 mode: str | Derating = "achievable", n_requests: int = 1000,
                 seed: int = 0, with_baseline: bool = True) -> ServingPlan:
    """Size a plan: replicas = ceil(demand / (max_utilisation x replica capacity)).

    Replica capacity (requests/s) is the policy's saturated throughput with
    min(batch_size, max_sessions) slots -- the KV/state capacity caps the batch. Owned
    devices cannot scale past ``track.max_replicas``: the excess load stays on them and the
    simulated scheduler shows the consequence. The baseline is the track's default plan at
    the same demand (skipped, and None, with ``with_baseline=False``).
    """
    tr = get_track(track)
    demand = float(v.positive("demand_rate_per_s", tr.demand_rate_per_s
                              if demand_rate_per_s is None else demand_rate_per_s))
    wb = v.precision_bits("weight_bits", tr.weight_bits if weight_bits is None else weight_bits)
    kb = v.precision_bits("kv_bits", tr.kv_bits if kv_bits is None else kv_bits)
    pol = v.choice("policy", tr.default_policy if policy is None else policy, POLICIES)
    dev = v.positive_int("devices_per_replica", tr.devices_per_replica
                         if devices_per_replica is None else devices_per_replica)
    bsz = v.positive_int("batch_size", tr.batch_size if batch_size is None else batch_size)
    umax = float(v.fraction("max_utilisation", tr.max_utilisation
                            if max_utilisation is None else max_utilisation, allow_zero=False))
    cap = track_capacity(tr, context_tokens=context_tokens, weight_bits=wb, kv_bits=kb,
                         devices_per_replica=dev)
    baseline = None
    if with_baseline:
        base = serving_plan(tr, demand_rate_per_s=demand, mode=mode, n_requests=n_requests,
                            seed=seed, with_baseline=False)
        baseline = base.daily_cost
    common = _PlanCommon(track_id=tr.id, policy=pol, weight_bits=wb, kv_bits=kb,
                         devices_per_replica=dev, context_tokens=cap.context_tokens,
                         demand_rate_per_s=demand, cost_unit=tr.cost_unit, capacity=cap,
                         baseline_daily_cost=baseline)
    if cap.oom:
        return ServingPlan(
            **common, batch_size=0, feasible=False, reason=state_reason(tr, cap),
            replica_capacity_requests_per_s=0.0, replicas=0, total_devices=0,
            exceeds_max_replicas=False, replica_arrival_rate_per_s=0.0, utilisation=0.0,
            policy_result=None, daily_cost=None, cost_per_event=None,
            cost_ratio_vs_baseline=None)
    slots = min(bsz, cap.max_sessions)
    kw = track_inputs(tr, batch_size=slots, weight_bits=wb, kv_bits=kb,
                      devices_per_replica=dev, mode=mode)
    if output_tokens_cv is not None and tr.is_transformer:
        kw["cv"] = float(v.non_negative("output_tokens_cv", output_tokens_cv))
    return _sized_plan(tr, common, kw, slots, umax, n_requests, seed)


def _sized_plan(tr: Track, common: _PlanCommon, kw: PolicyInputs, slots: int, umax: float,
                n_requests: int, seed: int) -> ServingPlan:
    """A feasible plan: probe one replica's capacity, size the replicas under the
    utilisation cap (and the owner's device count), simulate one replica, cost the day."""
    pol, dev, demand = common["policy"], common["devices_per_replica"], \
        common["demand_rate_per_s"]
    baseline = common["baseline_daily_cost"]
    probe = simulate_policy(pol, arrival_rate_per_s=demand, n_requests=n_requests, seed=seed,
                            **kw)
    per_replica = probe.capacity_requests_per_s
    replicas = max(1, math.ceil(demand / (umax * per_replica) - 1e-12))
    exceeds = tr.max_replicas is not None and replicas > tr.max_replicas
    if tr.max_replicas is not None and exceeds:
        replicas = int(tr.max_replicas)
    rate = demand / replicas
    result = simulate_policy(pol, arrival_rate_per_s=rate, n_requests=n_requests, seed=seed,
                             **kw)
    utilisation = rate / per_replica
    # owned devices pay for the passes they run, with the batches the load actually forms
    daily = _daily_cost(tr, replicas * dev, result.busy_share)
    events = demand * tr.active_hours_per_day * SECONDS_PER_HOUR
    ratio = None if not baseline else daily / baseline
    each = ("one at a time" if pol == "none" else
            f"{counted(slots, 'batch slot', 'batch slots')} each")
    reason = (f"{counted(replicas, tr.replica_noun, tr.replica_nouns)} of "
              f"{counted(dev, 'device', 'devices')}, {each}, at load {fmt_pct(utilisation)} "
              f"of the full-batch capacity (busy {fmt_pct(result.busy_share)} of the time)")
    if exceeds:
        reason += (f"; demand needs more than the {counted(int(tr.max_replicas or 0), 'device')} "
                   "available")
    return ServingPlan(
        **common, batch_size=slots, feasible=True, reason=reason,
        replica_capacity_requests_per_s=per_replica, replicas=replicas,
        total_devices=replicas * dev, exceeds_max_replicas=exceeds,
        replica_arrival_rate_per_s=rate, utilisation=utilisation, policy_result=result,
        daily_cost=daily, cost_per_event=daily / events, cost_ratio_vs_baseline=ratio,
    )


# -- release guardrails --------------------------------------------------------------------

def track_policies(track: str | Track, *, batch_size: int | None = None, cv: object = None,
                   mean_tokens: object = None, lengths: object = None,
                   arrival_rate_per_s: object = None, slo_s: object = None,
                   weight_bits: int | None = None, kv_bits: int | None = None,
                   devices_per_replica: int | None = None, timeout_s: object = None,
                   scheduler_overhead_s: object = None, mode: str | Derating = "achievable",
                   n_requests: int = DEFAULT_REQUESTS, seed: int = 0) -> PolicyComparison:
    """:func:`compare_policies` on one replica of a track, every default from the track.

    ``arrival_rate_per_s`` defaults to the per-replica rate of the track's serving plan
    (:func:`labkit.plans.serving.serving_plan`, default policy, same precision and replica shape):
    demand / replicas. That sizing costs a few simulations; a slider loop should build
    :func:`track_inputs` once and call :func:`compare_policies` with an explicit rate.
    """
    kw = track_inputs(track, batch_size=batch_size, weight_bits=weight_bits, kv_bits=kv_bits,
                      devices_per_replica=devices_per_replica, mean_tokens=mean_tokens,
                      mode=mode)
    if arrival_rate_per_s is None:
        arrival_rate_per_s = serving_plan(
            track, weight_bits=weight_bits, kv_bits=kv_bits,
            devices_per_replica=devices_per_replica, batch_size=batch_size, mode=mode,
            with_baseline=False).replica_arrival_rate_per_s
    if lengths is not None:
        kw["mean_tokens"], kw["cv"] = None, None
    elif cv is not None:
        kw["cv"] = float(v.non_negative("cv", cv))
    if slo_s is not None:
        kw["slo_s"] = float(v.positive("slo_s", slo_s))
    if timeout_s is not None:
        kw["timeout_s"] = float(v.non_negative("timeout_s", timeout_s))
    if scheduler_overhead_s is not None:
        kw["scheduler_overhead_s"] = float(v.non_negative("scheduler_overhead_s",
                                                          scheduler_overhead_s))
    return compare_policies(arrival_rate_per_s=arrival_rate_per_s, lengths=lengths,
                            n_requests=n_requests, seed=seed, **kw)


@dataclass(frozen=True)
class GuardrailCheck:
    """One release check: ``value`` measured against ``limit`` (None when not evaluable)."""

    name: str
    passed: bool
    value: float | None
    limit: float
    unit: str
    detail: str


@dataclass(frozen=True)
class GuardrailReport:
    """All four checks in order (memory, slo, quality, cost); ``binding`` = first failure."""

    checks: tuple[GuardrailCheck, ...]
    passed: bool
    binding: str | None
    reason: str
    plan: ServingPlan

    def check(self, name: str) -> GuardrailCheck:
        return {c.name: c for c in self.checks}[v.choice("name", name, GUARDRAILS)]

    def as_dict(self) -> dict[str, object]:
        return {"passed": self.passed, "binding": self.binding, "reason": self.reason,
                "checks": [asdict(c) for c in self.checks], "plan": self.plan.as_dict()}


def quality_loss(track: str | Track, weight_bits: int) -> float:
    """Estimated quality loss (% points) of the track's model at ``weight_bits``."""
    tr = get_track(track)
    bits = v.precision_bits("weight_bits", weight_bits)
    return float(tr.quality_loss_pct[bits])


def quality_verdict(tr: Track, weight_bits: int,
                    kv_bits: int | None) -> tuple[bool, float, str]:
    """(passes, estimated loss in points, detail): the loss at ``weight_bits`` within the
    track's limit and the KV at or above its floor (transformers; ``kv_bits`` None: no KV).
    The one quality check of Lab 1's guardrails and Lab 2's design check."""
    loss = quality_loss(tr, weight_bits)
    kv_ok = kv_bits is None or not tr.is_transformer or kv_bits >= tr.min_kv_bits
    detail = (f"{weight_bits}-bit weights: est. {loss:g} points lost vs "
              f"{tr.max_quality_loss_pct:g} allowed (floor {tr.min_weight_bits} bits)")
    if not kv_ok:
        detail += f"; {kv_bits}-bit KV is below the {tr.min_kv_bits}-bit floor"
    return loss <= tr.max_quality_loss_pct and kv_ok, loss, detail


def _quality_check(tr: Track, p: ServingPlan) -> GuardrailCheck:
    """Estimated loss at the weight precision within the limit; KV at its floor."""
    ok, loss, detail = quality_verdict(tr, p.weight_bits, p.kv_bits)
    return GuardrailCheck("quality", ok, loss, tr.max_quality_loss_pct, "% points", detail)


def _cost_check(tr: Track, p: ServingPlan) -> GuardrailCheck:
    """The plan's daily cost (its basis: :func:`daily_basis`) within the daily budget."""
    if p.daily_cost is None:
        return GuardrailCheck("cost", False, None, tr.daily_budget, f"{tr.cost_unit}/day",
                              "not evaluated: infeasible plan")
    return GuardrailCheck(
        "cost", p.daily_cost <= tr.daily_budget, p.daily_cost, tr.daily_budget,
        f"{tr.cost_unit}/day",
        f"{fmt_num(p.daily_cost)} {tr.cost_unit}/day ({daily_basis(tr, p)}) vs budget "
        f"{fmt_num(tr.daily_budget)} {tr.cost_unit}")


def release_guardrails(track: str | Track, plan: ServingPlan | None = None,
                       **plan_kwargs: Any) -> GuardrailReport:
    """Check a plan (or ``serving_plan(track, **plan_kwargs)``) against the track's limits.

    memory: weights + one session fit (value = bytes needed in the binding memory);
    slo: the simulated governed latency at the track's quantile (and TTFT) within the SLO;
    quality: estimated loss at the weight precision within the limit, KV at or above
    ``min_kv_bits`` (transformers); cost: daily cost within ``daily_budget``.
    """
    tr = get_track(track)
    p = plan if plan is not None else serving_plan(tr, **plan_kwargs)
    cap = p.capacity
    needed = cap.bytes_per_session + (cap.weight_bytes if cap.weight_location == "memory"
                                      else 0.0)
    mem_detail = state_reason(tr, cap)
    if cap.weight_location == "flash":
        mem_detail += (f"; weights {cap.weight_bytes:,.0f} B in flash of "
                       f"{cap.weight_limit_bytes:,.0f} B")
    checks = [GuardrailCheck("memory", not cap.oom, needed, cap.memory_bytes, "bytes",
                             mem_detail)]

    r = p.policy_result
    q_name = "max" if tr.slo_quantile >= 1.0 else f"p{tr.slo_quantile * 100:g}"
    metric = "TPOT" if tr.slo_kind == "tpot" else "latency"
    if r is None:
        checks.append(GuardrailCheck("slo", False, None, tr.slo_s, "s",
                                     "not evaluated: the plan does not fit in memory"))
    else:
        detail = f"{q_name} {metric} {fmt(r.slo_value_s * 1e3)} ms vs {fmt(tr.slo_s * 1e3)} ms"
        if tr.ttft_slo_s is not None:
            detail += f"; p99 TTFT {fmt(r.ttft_p99_s)} s vs {fmt(tr.ttft_slo_s)} s"
        if not r.stable:
            detail += f"; the {tr.replica_noun} is overloaded (queue grows)"
        checks.append(GuardrailCheck("slo", r.slo_met, r.slo_value_s, tr.slo_s, "s", detail))

    checks += [_quality_check(tr, p), _cost_check(tr, p)]

    failed = [c for c in checks if not c.passed]
    binding = failed[0].name if failed else None
    if binding is None:
        reason = "all guardrails pass: " + p.reason
    else:
        reason = f"{binding} binds: {failed[0].detail}"
    return GuardrailReport(tuple(checks), not failed, binding, reason, p)


# -- recovery hints ------------------------------------------------------------------------

@dataclass(frozen=True)
class LeverFix:
    """Setting changes that make the check ``name`` pass: one change, two when no single
    change does (``changes`` empty: none found); ``still_failing`` lists the checks that
    fail after them."""

    name: str
    changes: tuple[tuple[str, object], ...]
    still_failing: tuple[str, ...]

    @property
    def found(self) -> bool:
        return bool(self.changes)


_Trial = tuple[int, int, tuple[tuple[str, object], ...], tuple[str, ...]]


def _single_trials(config: Mapping[str, object], candidates: Mapping[str, Sequence[object]],
                   failed: Callable[[Mapping[str, object]], Sequence[str]],
                   skip: str | None = None) -> list[_Trial]:
    """Every one-key change of ``config``: (failures after, move size, change, failures)."""
    trials: list[_Trial] = []
    for key, values in candidates.items():
        if key not in config:
            raise ValueError(f"candidates: {key!r} is not a key of the config")
        if key == skip:
            continue
        vals = list(values)
        here = vals.index(config[key]) if config[key] in vals else 0
        for i, value in enumerate(vals):
            if value == config[key]:
                continue
            after = tuple(failed({**config, key: value}))
            trials.append((len(after), abs(i - here), ((key, value),), after))
    trials.sort(key=lambda t: (t[0], t[1]))
    return trials


def lever_fixes(config: Mapping[str, object], candidates: Mapping[str, Sequence[object]],
                failed: Callable[[Mapping[str, object]], Sequence[str]],
                pair_bases: int = 4) -> dict[str, LeverFix]:
    """For each check failing at ``config``, the change of one key (to one of its
    ``candidates``) that makes it pass: the one leaving the fewest failures, then the
    smallest move along the candidate list. ``failed(config)`` names the failing checks.
    A check no single change passes gets a pair: the best ``pair_bases`` single changes,
    each followed by the best second change of another key that passes it."""
    now = tuple(failed(config))
    trials = _single_trials(config, candidates, failed)
    out: dict[str, LeverFix] = {}
    for name in now:
        fix = next((t for t in trials if name not in t[3]), None)
        if fix is None:
            pairs: list[_Trial] = []
            for base in trials[:pair_bases]:
                key, value = base[2][0]
                second = _single_trials({**config, key: value}, candidates, failed, skip=key)
                pairs += [(t[0], base[1] + t[1], base[2] + t[2], t[3]) for t in second
                          if name not in t[3]]
            fix = min(pairs, key=lambda t: (t[0], t[1]), default=None)
        out[name] = (LeverFix(name, (), now) if fix is None
                     else LeverFix(name, fix[2], fix[3]))
    return out


# -- one fleet, two sizings ----------------------------------------------------------------

@dataclass(frozen=True)
class FleetReconciliation:
    """The paper's decode-only sizing of a demand next to :func:`serving_plan`'s.

    ``decode_only_devices``: the three-axis sizing (:class:`Sizing`), every replica 100%
    busy decoding. ``same_shape``: :func:`serving_plan` with the same devices and sequences
    per replica, which adds each request's prefill (``prefill_s``, s, on that replica:
    ``prefill_share`` of a saturated replica's time) and the utilisation cap
    ``max_utilisation``. ``release``: :func:`serving_plan` at the track's own replica shape
    (its devices per replica and batch slots), the plan a release review sizes.
    """

    demand_rate_per_s: float
    decode_only_devices: int
    decode_only_slots: int
    same_shape: ServingPlan
    release: ServingPlan
    prefill_s: float
    prefill_share: float
    max_utilisation: float


def fleet_reconciliation(track: str | Track, sizing: Sizing, *, demand_rate_per_s: object,
                         weight_bits: int, kv_bits: int, context_tokens: object = None,
                         slots: int | None = None,
                         release: ServingPlan | None = None) -> FleetReconciliation:
    """Size ``demand_rate_per_s`` (requests/s) both ways, from a feasible ``sizing``;
    ``slots`` (default: the sizing's sequences per replica) caps the same-shape plan's
    batch (a replica whose own step, communication included, holds fewer); ``release``:
    the release shape's plan at the same demand and precisions, where already computed.

    prefill_share = mu x p(1): a saturated replica serves mu requests/s and stalls p(1)
    seconds on each prefill (continuous batching's capacity 1 / (p(1) + L (tau + o) / B)).
    """
    tr = get_track(track)
    if not sizing.feasible:
        raise ValueError(f"sizing: infeasible ({sizing.reason}); nothing to reconcile")
    same = serving_plan(tr, demand_rate_per_s=demand_rate_per_s, weight_bits=weight_bits,
                        kv_bits=kv_bits, devices_per_replica=sizing.devices_per_replica,
                        batch_size=(sizing.users_per_replica if slots is None else
                                    min(sizing.users_per_replica,
                                        v.positive_int("slots", slots))),
                        context_tokens=context_tokens, with_baseline=False)
    if release is None:
        release = serving_plan(tr, demand_rate_per_s=demand_rate_per_s,
                               weight_bits=weight_bits, kv_bits=kv_bits,
                               context_tokens=context_tokens, with_baseline=False)
    prefill = 0.0
    if same.feasible:
        kw = track_inputs(tr, batch_size=1, weight_bits=weight_bits, kv_bits=kv_bits,
                          devices_per_replica=sizing.devices_per_replica)
        prefill = float(kw["prefill_s_by_batch"][0])
    return FleetReconciliation(
        demand_rate_per_s=same.demand_rate_per_s, decode_only_devices=sizing.total_devices,
        decode_only_slots=sizing.users_per_replica, same_shape=same, release=release,
        prefill_s=prefill, prefill_share=same.replica_capacity_requests_per_s * prefill,
        max_utilisation=tr.max_utilisation)


# -- routing to a cheaper tier -------------------------------------------------------------

@dataclass(frozen=True)
class RoutedRelease:
    """A release that routes ``routed_share`` of its requests to a cheaper ``tier`` plan.

    ``report`` checks both pools together: memory and SLO pass only if both pass, quality
    is the traffic-weighted loss (% points), cost is the sum of both pools (cost unit/day).
    ``replicas``, ``total_devices`` and ``daily_cost`` add both pools (None: infeasible).
    """

    report: GuardrailReport
    main: ServingPlan
    tier: ServingPlan | None
    routed_share: float
    replicas: int
    total_devices: int
    daily_cost: float | None


def _both(name: str, main: GuardrailCheck, tier: GuardrailCheck) -> GuardrailCheck:
    """One check of two pools: the worse value/limit ratio, passing only if both pass."""
    def ratio(c: GuardrailCheck) -> float:
        return math.inf if c.value is None or not c.limit else c.value / c.limit
    worst = tier if ratio(tier) > ratio(main) else main
    detail = main.detail if tier.passed else f"{main.detail}; routed tier: {tier.detail}"
    return GuardrailCheck(name, main.passed and tier.passed, worst.value, worst.limit,
                          worst.unit, detail)


def routed_release(track: str | Track, main: ServingPlan, tier: ServingPlan | None,
                   routed_share: float) -> RoutedRelease:
    """Combine ``main`` (serving 1 - r of the requests) and ``tier`` (serving r).

    quality loss = (1 - r) loss(main bits) + r loss(tier bits), % points; cost/day =
    main + tier. ``tier`` None (or r = 0): :func:`release_guardrails` of ``main`` alone.
    """
    tr = get_track(track)
    r = float(v.fraction("routed_share", routed_share))
    base = release_guardrails(tr, plan=main)
    if tier is None or r == 0.0:
        return RoutedRelease(base, main, None, 0.0, main.replicas, main.total_devices,
                             main.daily_cost)
    other = release_guardrails(tr, plan=tier)
    mem = _both("memory", base.check("memory"), other.check("memory"))
    slo = _both("slo", base.check("slo"), other.check("slo"))
    q0 = base.check("quality")
    loss = (1 - r) * quality_loss(tr, main.weight_bits) + r * quality_loss(tr, tier.weight_bits)
    kv_ok = not tr.is_transformer or min(main.kv_bits, tier.kv_bits) >= tr.min_kv_bits
    quality = GuardrailCheck(
        "quality", loss <= tr.max_quality_loss_pct and kv_ok, loss, q0.limit, q0.unit,
        f"{1 - r:.0%} at {main.weight_bits}-bit, {r:.0%} at {tier.weight_bits}-bit weights: "
        f"est. {fmt(loss)} points lost on average vs {tr.max_quality_loss_pct:g} allowed"
        + ("" if kv_ok else f"; KV below the {tr.min_kv_bits}-bit floor"))
    daily = (None if main.daily_cost is None or tier.daily_cost is None
             else main.daily_cost + tier.daily_cost)
    cost = (GuardrailCheck("cost", False, None, tr.daily_budget, f"{tr.cost_unit}/day",
                           "not evaluated: infeasible plan") if daily is None else
            GuardrailCheck("cost", daily <= tr.daily_budget, daily, tr.daily_budget,
                           f"{tr.cost_unit}/day",
                           f"{fmt_num(daily)} {tr.cost_unit}/day (main "
                           f"{fmt_num(main.daily_cost)} + "
                           f"routed tier {fmt_num(tier.daily_cost)}) vs budget "
                           f"{fmt_num(tr.daily_budget)} {tr.cost_unit}"))
    checks = (mem, slo, quality, cost)
    failed = [c for c in checks if not c.passed]
    binding = failed[0].name if failed else None
    reason = (f"{binding} binds: {failed[0].detail}" if failed else
              f"all guardrails pass: {main.reason}; routed tier: {tier.reason}")
    report = GuardrailReport(checks, not failed, binding, reason, main)
    return RoutedRelease(report, main, tier, r, main.replicas + tier.replicas,
                         main.total_devices + tier.total_devices, daily)


# -- what a release review shows ------------------------------------------------------------

def guardrail_ratios(track: str | Track, report: GuardrailReport,
                     tier: GuardrailReport | None = None) -> tuple[float, ...]:
    """Each check's value / limit, in :data:`GUARDRAILS` order, uncapped (above 1 fails;
    ``math.inf`` where the check is not evaluable). A language model's quality ratio is
    also at least min_kv_bits / kv_bits of either pool; the SLO ratio is the worse pool's
    simulated tail over the SLO (inf when a pool is overloaded)."""
    tr = get_track(track)
    plans = [report.plan] + ([] if tier is None else [tier.plan])
    results = [p.policy_result for p in plans if p.policy_result is not None]
    out = []
    for chk in report.checks:
        if chk.value is None or not chk.limit:
            out.append(math.inf)
            continue
        ratio = chk.value / chk.limit
        if chk.name == "quality" and tr.is_transformer:
            ratio = max(ratio, *(tr.min_kv_bits / p.kv_bits for p in plans))
        if chk.name == "slo" and results:
            ratio = (max(r.slo_ratio for r in results) if all(r.stable for r in results)
                     else math.inf)
        out.append(float(ratio))
    return tuple(out)


def daily_basis(track: str | Track, plan: ServingPlan) -> str:
    """How a plan's daily cost is counted, said on screen: rented devices are
    **provisioned** (whole replicas at the utilisation cap, rounded up, paid every active
    hour); owned devices pay the **busy** energy of the plan's batch and scheduler, with
    each input's front end where there is one."""
    tr = get_track(track)
    if tr.cost_unit == "USD":
        return (f"provisioned: {counted(plan.replicas, tr.replica_noun, tr.replica_nouns)} "
                f"x {counted(plan.devices_per_replica, 'device')} for "
                f"{tr.active_hours_per_day:g} h/day, "
                f"sized at up to {tr.max_utilisation:.0%} busy")
    fe = front_end_s(tr) > 0
    how = ("one at a time" if plan.policy == "none" or plan.batch_size <= 1 else
           f"batched up to {plan.batch_size} per pass ({plan.policy})")
    return f"busy energy, {how}" + (f", {front_end_label(tr)} included" if fe else "")
