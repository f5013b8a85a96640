"""The fleet scenario serving its demand: each request's prefill on the design's own
replicas, the time to first token, the per-request mean TPOT with prefill stalls
(:func:`labkit.plans.workload.stalled_tpot_s`) and the utilisation cap; and the search for
the fewest design that passes them all. :class:`~.fleet.Fleet` adds these constraints to its
decode-only ones (:meth:`~.fleet.Fleet.serving_constraints`)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from labkit.core.format import counted, fmt, fmt_count, fmt_pct, fmt_time
from labkit.physics.parallelism import config_at
from labkit.plans.scenarios.base import Config, Constraint, MetricValue
from labkit.plans.scenarios.common import (
    DESIGN_MODE,
    allowed_precisions,
    constraint,
    context_tokens,
    serving_device,
)
from labkit.plans.scenarios.tiers import layout_ttft
from labkit.plans.serving import track_capacity
from labkit.plans.workload import stalled_tpot_s
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.scenarios.fleet.plan.table import AXES, fleet_table, per_replica_limits
from labkit.tracks import Track, get_track


@dataclass(frozen=True)
class FleetServing:
    """A fleet design serving its track's demand with each request's prefill on the same
    replicas (continuous batching), against the TTFT SLO and the utilisation cap.

    The design's ``replicas`` (DP) of ``devices_per_replica`` = TP x CP x PP devices share
    the track's concurrent users: ``sequences_per_replica`` each, decoded in a step of
    ``step_s`` (TP/CP/PP communication included), s.

    * ``slots_per_replica``: the most sequences a replica holds (KV memory and the TPOT
      budget, as Part B's three axes count them), their step at the full context
      ``slots_step_s``, s (within the TPOT budget); its capacity is measured there, with
      the step at a request's mean context ``capacity_context`` (prompt + half the output,
      tokens): ``capacity_step_s``, s -- the basis Lab 1 and Part B size served fleets on,
      so one replica shape has one capacity on every screen.
    * ``scheduler_s``: the scheduler's overhead per step, s.
    * ``prefill_s``: one prompt of ``prompt_tokens`` prefilled on the replica's TP x CP
      devices, s; the time to first token at a free slot (``ttft_s``).
    * ``replica_rate_per_s``: requests/s each replica receives (demand / replicas).
    * ``capacity_per_s``: requests/s a replica serves with every slot busy,
      1 / (prefill + (L - 1) (capacity step + scheduler) / slots), L = ``output_tokens``.
    * ``utilisation``: replica_rate / capacity, against ``max_utilisation`` (the cap).
    * ``prefill_share``: replica_rate x prefill, the share of a replica's time prefilling.
    * ``tpot_s``: TPOT, the mean time per output token after the first of a request,
      (step + scheduler) / (1 - prefill_share): other requests' prefills stall its decode
      steps (None when prefills alone fill the replica).
    * ``provisioned_replicas``: replicas of this shape the demand needs at the cap,
      ceil(demand / (cap x capacity)); ``provisioned_devices`` = that x devices per replica.
    * ``fits``: the replica holds its sequences' KV in memory.
    """

    demand_rate_per_s: float
    replicas: int
    devices_per_replica: int
    sequences_per_replica: int
    slots_per_replica: int
    prompt_tokens: int
    output_tokens: int
    step_s: float
    slots_step_s: float
    scheduler_s: float
    prefill_s: float
    ttft_slo_s: float | None
    tpot_slo_s: float
    replica_rate_per_s: float
    capacity_per_s: float
    utilisation: float
    max_utilisation: float
    prefill_share: float
    tpot_s: float | None
    provisioned_replicas: int
    provisioned_devices: int
    fits: bool = True
    capacity_step_s: float = math.nan
    capacity_context: int = 0

    @property
    def ttft_s(self) -> float:
        """Time to first token at a free slot: the prefill (no queueing), s."""
        return self.prefill_s

    @property
    def devices(self) -> int:
        """The design's devices: replicas x devices per replica."""
        return self.replicas * self.devices_per_replica


def _serving_terms(tr: Track, step_s: np.ndarray, slots: np.ndarray,
                   slots_step_s: np.ndarray, prefill_s: np.ndarray,
                   replicas: np.ndarray) -> dict[str, np.ndarray]:
    """:class:`FleetServing`'s arithmetic over arrays (one definition for a design and for
    the reference search)."""
    lam, decode = float(tr.demand_rate_per_s), max(0, int(tr.output_tokens or 1) - 1)
    o = float(tr.scheduler_overhead_s)
    per_req = (np.asarray(prefill_s, dtype=float)
               + decode * (np.asarray(slots_step_s, dtype=float) + o) / np.maximum(slots, 1))
    capacity = 1.0 / per_req
    rate = lam / np.asarray(replicas, dtype=float)
    share = rate * prefill_s
    tpot = stalled_tpot_s(np.asarray(step_s, dtype=float) + o, share)
    need = np.maximum(1, np.ceil(lam / (tr.max_utilisation * capacity) - 1e-9))
    return {"capacity": capacity, "rate": rate, "utilisation": rate / capacity,
            "share": share, "tpot": tpot, "need": need}


def _prefill(tr: Track, weight_bits: int, kv_bits: int, tp: int, cp: int) -> float:
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    return float(layout_ttft(hw, m, int(tr.prompt_tokens or 1), weight_bits, kv_bits, tp, cp))


@functools.lru_cache(maxsize=4096)
def _replica_step(hardware: str, model: str, context: int, batch: int, wb: int, kb: int,
                  shape: tuple[int, int, int, int]) -> float:
    """One replica (tp, cp, pp, ep) decoding ``batch`` sequences: its step, s (NaN when it
    is not a layout), by :func:`labkit.physics.parallelism.config_at`."""
    tp, cp, pp, ep = shape
    try:
        c = config_at(hardware, model, context, batch, wb, kb, (tp, cp, pp, 1, ep),
                      mode=DESIGN_MODE)
    except ValueError:
        return math.nan
    return math.nan if c is None else float(c.per_token_latency_s)


def replica_slots(track: str | Track, weight_bits: int, kv_bits: int,
                  shape: tuple[int, int, int, int], *, context: int | None = None,
                  tpot_slo_s: float | None = None) -> tuple[int, float]:
    """(slots, step s): the most sequences one replica (tp, cp, pp, ep) holds -- its
    KV-memory limit and its TPOT-budget limit as Part B's three axes count them
    (:func:`per_replica_limits`), within the sessions its memory keeps beside the track's
    reserve (:func:`labkit.plans.serving.track_capacity`, as :func:`serving_plan` caps its
    slots), lowered until the layout's own step, communication included, is within the
    budget -- and its step with every slot busy (at least one slot; NaN step when the
    shape is not a layout). ``context`` (tokens) and ``tpot_slo_s`` (s) default to the
    track's."""
    tr = get_track(track)
    ctx = context_tokens(tr) if context is None else int(context)
    slo = tr.slo_s if tpot_slo_s is None else float(tpot_slo_s)
    tp, cp, pp, _ = shape
    hi = _slot_cap(tr, weight_bits, kv_bits, tp * cp * pp, ctx, slo)
    return _slots_within(tr, weight_bits, kv_bits, shape, ctx, slo, hi)


def _slot_cap(tr: Track, weight_bits: int, kv_bits: int, devices: int, context: int,
              slo: float) -> int:
    """The sequences a replica of ``devices`` devices may hold before its own step is
    checked (:func:`replica_slots`): its KV and TPOT-budget limits and the sessions its
    memory keeps (at least 1). It depends on the device count only, not on the layout."""
    hw, m = serving_device(tr), get_model(tr.model_id)
    b_kv, b_slo = per_replica_limits(hw, m, context, slo, weight_bits, kv_bits,
                                     np.asarray([devices]))
    held = track_capacity(tr, context_tokens=context, weight_bits=weight_bits,
                          kv_bits=kv_bits, devices_per_replica=devices).max_sessions
    return max(1, int(min(b_kv[0], b_slo[0], held)))


def _slots_within(tr: Track, weight_bits: int, kv_bits: int, shape: tuple[int, int, int, int],
                  context: int, slo: float, hi: int) -> tuple[int, float]:
    """:func:`replica_slots` from the cap ``hi`` (:func:`_slot_cap`): lowered until the
    layout's own step is within ``slo``."""
    hw, m = serving_device(tr), get_model(tr.model_id)

    def step(b: int) -> float:
        return _replica_step(hw.id, m.id, context, b, weight_bits, kv_bits, shape)

    s_hi = step(hi)
    if s_hi <= slo:
        return hi, s_hi
    s_1 = step(1)
    if hi == 1 or not s_1 < slo:   # not a layout (NaN), or one sequence misses the budget
        return 1, s_1
    # the step is affine in the batch: start from the interpolated batch, then walk down
    b = max(1, min(hi, 1 + int((slo - s_1) * (hi - 1) / (s_hi - s_1))))
    while b > 1 and step(b) > slo:
        b -= max(1, b // 64)
    return b, step(b)


def capacity_context(tr: Track) -> int:
    """A request's mean context over its decode, prompt + half the output (tokens): the
    context Lab 1's step tables decode at (:func:`labkit.physics.batching.step_tables`)."""
    return max(1, round(int(tr.prompt_tokens or 1) + int(tr.output_tokens or 1) / 2.0))


def capacity_step(track: str | Track, weight_bits: int, kv_bits: int,
                  shape: tuple[int, int, int, int], slots: int) -> float:
    """One replica (tp, cp, pp, ep) decoding ``slots`` sequences at the mean context
    (:func:`capacity_context`), communication included, s: the step a replica's capacity
    is measured with (NaN when the shape is not a layout)."""
    tr = get_track(track)
    return _replica_step(tr.hardware_id, tr.model_id, capacity_context(tr), max(1, int(slots)),
                         weight_bits, kv_bits, shape)


def fleet_serving(tr: Track, cfg: Config) -> FleetServing | None:
    """How a normalised fleet design serves its track's demand (:class:`FleetServing`);
    None when the design's degrees are not a layout (:func:`fleet_table` has no such row)."""
    wb, kb = int(cfg["weight_bits"]), int(cfg["kv_bits"])
    deg = tuple(int(cfg[k]) for k in AXES)
    table, index = fleet_table(tr, wb, kb)
    row = index.get(deg)
    if row is None:
        return None
    tp, cp, pp, dp, ep = deg
    seqs, step = int(table.batch_per_replica[row]), float(table.per_token_latency_s[row])
    slots, slot_step = replica_slots(tr, wb, kb, (tp, cp, pp, ep))
    if not math.isfinite(slot_step):
        slots, slot_step = seqs, step
    cap_step = capacity_step(tr, wb, kb, (tp, cp, pp, ep), slots)
    if not math.isfinite(cap_step):
        cap_step = slot_step
    pre = _prefill(tr, wb, kb, tp, cp)
    t = _serving_terms(tr, np.asarray([step]), np.asarray([slots]), np.asarray([cap_step]),
                       np.asarray([pre]), np.asarray([dp]))
    tpot, need = float(t["tpot"][0]), int(t["need"][0])
    return FleetServing(
        demand_rate_per_s=float(tr.demand_rate_per_s), replicas=dp,
        devices_per_replica=tp * cp * pp, sequences_per_replica=seqs, slots_per_replica=slots,
        prompt_tokens=int(tr.prompt_tokens or 1), output_tokens=int(tr.output_tokens or 1),
        step_s=step, slots_step_s=slot_step, scheduler_s=float(tr.scheduler_overhead_s),
        prefill_s=pre, ttft_slo_s=tr.ttft_slo_s, tpot_slo_s=tr.slo_s,
        replica_rate_per_s=float(t["rate"][0]), capacity_per_s=float(t["capacity"][0]),
        utilisation=float(t["utilisation"][0]), max_utilisation=float(tr.max_utilisation),
        prefill_share=float(t["share"][0]), tpot_s=tpot if math.isfinite(tpot) else None,
        provisioned_replicas=need, provisioned_devices=need * tp * cp * pp,
        fits=bool(table.fits[row]), capacity_step_s=cap_step,
        capacity_context=capacity_context(tr))


def fleet_serving_constraints(tr: Track, config: Config
                              ) -> tuple[list[Constraint], dict[str, MetricValue]]:
    """TPOT (the per-request mean, prefill stalls included: it replaces the decode-only
    step check), TTFT and the utilisation cap of a normalised fleet design, and their
    metrics."""
    fs = fleet_serving(tr, config)
    if fs is None:
        why = "not evaluated: no such layout"
        out = [constraint("tpot", False, None, tr.slo_s, "s", why)]
        if tr.ttft_slo_s is not None:
            out.append(constraint("ttft", False, None, tr.ttft_slo_s, "s", why))
        out.append(constraint("utilisation", False, None, tr.max_utilisation, "", why))
        return out, {}
    out = [_tpot_constraint(fs)]
    if fs.ttft_slo_s is not None and fs.utilisation >= 1:
        out.append(constraint(   # an overloaded replica's queue grows: no TTFT is bounded
            "ttft", False, None, fs.ttft_slo_s, "s",
            f"unbounded: each replica is {fmt_pct(fs.utilisation)} busy, so requests queue "
            f"without end before their {fmt_time(fs.ttft_s)} prefill"))
    elif fs.ttft_slo_s is not None:
        out.append(Constraint.compare(
            "ttft", fs.ttft_s, fs.ttft_slo_s, "s",
            f"prefill of one {fmt_count(fs.prompt_tokens)}-token prompt on the replica "
            f"(no queueing, the replica under the cap): {fmt_time(fs.ttft_s)} vs "
            f"{fmt_time(fs.ttft_slo_s)}"))
    out.append(Constraint.compare(
        "utilisation", fs.utilisation, fs.max_utilisation, "",
        f"each of {counted(fs.replicas, 'replica')} gets "
        f"{fmt_count(fs.replica_rate_per_s)} requests/s and serves at most "
        f"{fmt_count(fs.capacity_per_s)}/s with all {fmt_count(fs.slots_per_replica)} slots "
        f"busy ({fmt_time(fs.capacity_step_s + fs.scheduler_s)} per step at "
        f"{fmt_count(fs.slots_per_replica)} sequences of a request's mean "
        f"{fmt_count(fs.capacity_context)}-token context, scheduler included, "
        f"{fmt_time(fs.prefill_s)} prefill per request): {fmt_pct(fs.utilisation)} busy vs "
        f"the {fmt_pct(fs.max_utilisation)}"
        " cap" + (f"; the demand needs "
                  f"{counted(fs.provisioned_replicas, 'such replica', 'such replicas')}, "
                  f"{fmt_count(fs.provisioned_devices)} devices" if fs.fits else
                  " (and the replica cannot hold its sequences: see memory)")))
    metrics: dict[str, MetricValue] = {
        "step_s": fs.step_s, "prefill_s": fs.prefill_s, "ttft_s": fs.ttft_s,
        "tpot_s": fs.tpot_s, "utilisation": fs.utilisation,
        "prefill_share": fs.prefill_share, "replica_capacity_per_s": fs.capacity_per_s,
        "provisioned_devices": float(fs.provisioned_devices)}
    return out, metrics


def _tpot_constraint(fs: FleetServing) -> Constraint:
    tau = fs.step_s + fs.scheduler_s
    detail = (f"mean time per output token: step {fmt_time(fs.step_s)} (the design's "
              f"{fmt_count(fs.sequences_per_replica)} sequences per replica) + scheduler "
              f"{fmt_time(fs.scheduler_s)}")
    if fs.tpot_s is None:
        return constraint("tpot", False, None, fs.tpot_slo_s, "s",
                          detail + f", but prefills fill {fmt_pct(fs.prefill_share)} of a "
                          "replica's time: decode never runs")
    if fs.prefill_share > 0:
        detail += (f", stretched by prefills ({fmt_pct(fs.prefill_share)} of the replica's "
                   f"time): {fmt_time(tau)} / (1 - {fmt(fs.prefill_share)})")
    return Constraint.compare("tpot", fs.tpot_s, fs.tpot_slo_s, "s",
                              detail + f" = {fmt_time(fs.tpot_s)} vs "
                              f"{fmt_time(fs.tpot_slo_s)}")


def served_search(tr: Track, *, within_budget: bool = True) -> Config | None:
    """The config of the fewest-devices fleet design that passes every constraint, prefill,
    TTFT and the utilisation cap included: every layout of :func:`fleet_table` at every
    precision pair that keeps quality; ties: the lower TPOT, then the higher precision.
    ``within_budget=False``: the same search without the daily budget (what the budget
    would have to pay for; its evaluation may fail ``cost`` only)."""
    best: tuple[tuple[float, ...], Config] | None = None
    price = float(tr.price_per_device_hour or 0.0) * tr.active_hours_per_day
    ctx = context_tokens(tr)
    for wb, kb in allowed_precisions(tr):
        if kb is None:
            continue
        t, _ = fleet_table(tr, wb, kb)
        shapes = list(zip(t.tp.tolist(), t.cp.tolist(), t.pp.tolist(), t.ep.tolist(),
                          strict=True))
        # a prefill depends on (tp, cp) and a replica's slot cap on its device count only:
        # each is computed once per value, not once per row or layout
        ttft = {tc: _prefill(tr, wb, kb, *tc) for tc in {(a, b) for a, b, _, _ in shapes}}
        pre = np.asarray([ttft[(a, b)] for a, b, _, _ in shapes])
        caps = {n: _slot_cap(tr, wb, kb, n, ctx, tr.slo_s)
                for n in {a * b * c for a, b, c, _ in shapes}}
        of = {sh: _slots_within(tr, wb, kb, sh, ctx, tr.slo_s, caps[sh[0] * sh[1] * sh[2]])
              for sh in set(shapes)}
        cap = {sh: capacity_step(tr, wb, kb, sh, of[sh][0]) for sh in of}
        slots = np.asarray([of[sh][0] for sh in shapes])
        slot_steps = np.asarray([of[sh][1] for sh in shapes])
        cap_steps = np.asarray([cap[sh] for sh in shapes])
        missing = ~np.isfinite(slot_steps)
        slots = np.where(missing, t.batch_per_replica, slots)
        slot_steps = np.where(missing, t.per_token_latency_s, slot_steps)
        slot_steps = np.where(np.isfinite(cap_steps) & ~missing, cap_steps, slot_steps)
        terms = _serving_terms(tr, t.per_token_latency_s, slots, slot_steps, pre, t.dp)
        ok = (t.fits & (terms["tpot"] <= tr.slo_s) & (terms["utilisation"] <= tr.max_utilisation)
              & ((t.devices * price <= tr.daily_budget) | (not within_budget)))
        if tr.ttft_slo_s is not None:
            ok &= pre <= tr.ttft_slo_s
        for i in np.flatnonzero(ok):
            key = (float(t.devices[i]), float(terms["tpot"][i]), -wb, -kb)
            if best is None or key < best[0]:
                cfg: Config = {"weight_bits": wb, "kv_bits": kb,
                               **{k: int(getattr(t, k)[i]) for k in AXES}}
                best = (key, cfg)
    return None if best is None else best[1]


