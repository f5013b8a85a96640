"""Batching under variance: four scheduling policies simulated over the same requests.

Every policy serves the same simulated stream (fixed numpy seed): arrivals (Poisson, or
several periodic sensor streams, all at once first, then each at its own random phase) and
output lengths (lognormal with a given mean and coefficient of variation, or an explicit
array). Time per step comes from the roofline as a function of how many sequences share
the step (``step_s_by_batch``), and prefill time from :mod:`labkit.physics.phases` as a
function of how many prompts share a prefill (``prefill_s_by_batch``), so nothing here is
a fudge factor:

* ``none``       -- one request at a time, FCFS (single-server queue, Lindley recursion).
* ``static``     -- wait until ``B`` requests are queued, prefill them together, then decode
  all of them until the *longest* one finishes (shorter ones are padding); the next batch
  waits for that. Padding waste = 1 - useful token-steps / (batch x longest).
* ``dynamic``    -- like static, but a batch also closes ``timeout_s`` after its oldest
  request arrived (Triton-style max queue delay), so it never waits for a full batch.
* ``continuous`` -- iteration-level scheduling: a finished sequence frees its slot at the
  next step and a queued request takes it. Every step pays ``scheduler_overhead_s``, and
  each new prompt's prefill stalls the decode steps of everyone else, stretching time per
  token by 1 / (1 - arrival_rate x prefill_s); prompts queue for the replica's one prefill
  at a time, so TTFT = the wait for a slot and for the prefills ahead + its own prefill.
  Occupancy follows Little's law. Single-step
  workloads (CNN frames) have no slots to refill, so continuous = dynamic with a zero
  timeout plus the per-step scheduler overhead.

Two simplifications keep a call near a millisecond: a prefill's stall on the decoding
sequences is the mean 1 / (1 - rho_p) stretch of every step (not the stall of the steps it
lands in), and the last partial batch of the simulated stream is flushed at the last
arrival instead of waiting for requests that never come.

Latencies: TTFT = first output after arrival; TPOT = (end-to-end - TTFT) / (tokens - 1);
end-to-end latency. The SLO is met when the 99th percentile of the governed metric (TPOT,
or end-to-end latency for deadline tracks) and of TTFT (when a TTFT SLO is given) are within
their limits. Each policy simulates 1,000 requests; compare_policies (all four) takes about
2 ms, fast enough for sliders.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from labkit.core import validation as v
from labkit.physics.phases import cnn_inference_time, decision_time, prefill_time
from labkit.physics.roofline import Derating, decode_roofline
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model, get_model

POLICIES = ("none", "static", "dynamic", "continuous")
POLICY_LABELS = MappingProxyType({
    "none": "no batching (one at a time)",
    "static": "static batching (full batches, pad to longest)",
    "dynamic": "dynamic batching (timeout window)",
    "continuous": "continuous batching (iteration-level)",
})
FRAME_POLICY_LABELS = MappingProxyType({
    "none": "no batching (one at a time)",
    "static": "static batching (wait for a full batch)",
    "dynamic": "dynamic batching (timeout window)",
    "continuous": "greedy batching (whatever is queued, every pass)",
})
"""The same policies on single-step workloads (frames, windows): nothing to pad, no slot to
refill mid-output, so 'continuous' is a batch of whatever is queued at each pass."""


def policy_labels(single_step: bool) -> MappingProxyType[str, str]:
    """The policies' names for a workload: token streams or single-step inputs."""
    return FRAME_POLICY_LABELS if single_step else POLICY_LABELS
SLO_METRICS = ("tpot", "latency")
ARRIVALS = ("poisson", "periodic")
DEFAULT_REQUESTS = 1000
_QUANTILES = (0.5, 0.95, 0.99)
_MAX_PREFILL_SHARE = 0.99


# -- the simulated workload -----------------------------------------------------------------

def sample_lengths(mean_tokens: object, cv: object = 0.0, n: int = DEFAULT_REQUESTS,
                   seed: int = 0) -> np.ndarray:
    """Output lengths in tokens, lognormal with the given mean and coefficient of variation.

    sigma^2 = ln(1 + cv^2), mu = ln(mean) - sigma^2 / 2; the draw is rescaled so its sample
    mean equals ``mean`` (every seed offers the same load), then rounded to whole tokens, at
    least 1. ``cv = 0`` gives every request ``mean``.
    """
    mean = float(v.positive("mean_tokens", mean_tokens))
    c = float(v.non_negative("cv", cv))
    count = v.positive_int("n", n)
    seed_ = v.positive_int("seed", seed, minimum=0)
    if c == 0.0:
        return np.full(count, max(1, round(mean)), dtype=np.int64)
    sigma2 = math.log1p(c * c)
    rng = np.random.default_rng(seed_)
    raw = rng.lognormal(math.log(mean) - sigma2 / 2.0, math.sqrt(sigma2), count)
    raw *= mean / raw.mean()  # pin the sample mean so every seed serves the same load
    return _whole_tokens(raw, round(mean * count))


def _whole_tokens(raw: np.ndarray, total: int) -> np.ndarray:
    """``raw`` lengths as whole tokens (at least 1) summing to ``total`` where it can:
    floors, then one more token to the largest remainders (largest-remainder rounding), so
    the rounded sample keeps the mean the closed forms use."""
    out = np.maximum(1, np.floor(raw)).astype(np.int64)
    short = int(total - out.sum())
    if short > 0:
        out[np.argsort(-(raw - np.floor(raw)), kind="stable")[:short]] += 1
    while short < 0:   # one token off the longest, never below 1 (heavy tails need rounds)
        longer = np.flatnonzero(out > 1)
        if longer.size == 0:
            break
        take = longer[np.argsort(-out[longer], kind="stable")][:-short]
        out[take] -= 1
        short += take.size
    return np.asarray(out, dtype=np.int64)


def arrival_times(rate_per_s: object, n: int = DEFAULT_REQUESTS, process: str = "poisson",
                  streams: int = 1, seed: int = 0) -> np.ndarray:
    """Sorted arrival times, s, of ``n`` requests at ``rate_per_s`` on average.

    ``poisson``: exponential gaps (independent users). ``periodic``: ``streams`` sensors
    (cameras, a ring's window clock) each firing every ``streams / rate`` s, merged --
    unsynchronised cameras, not a single clock. Their clocks drift, so over time they pass
    through every alignment, the worst being all at once: the first period is that
    critical instant (every stream fires at t = 0; Liu & Layland 1973, the release at which
    a periodic task's response time is longest), and each stream then keeps its own random
    phase (a gap of one period or more after the first firing).
    """
    rate = float(v.positive("rate_per_s", rate_per_s))
    count = v.positive_int("n", n)
    proc = v.choice("process", process, ARRIVALS)
    s = v.positive_int("streams", streams)
    rng = np.random.default_rng(v.positive_int("seed", seed, minimum=0) + 1)
    if proc == "poisson":
        return np.cumsum(rng.exponential(1.0 / rate, count))
    period = s / rate
    per_stream = -(-count // s)
    phases = rng.uniform(0.0, period, s) if s > 1 else np.zeros(1)  # one clock: no phase
    times = phases[:, None] + period * np.arange(per_stream)[None, :]
    times[:, 0] = 0.0   # the critical instant: every stream at once
    return np.sort(times.ravel())[:count]


# -- results --------------------------------------------------------------------------------

@dataclass(frozen=True)
class PolicyResult:
    """One policy on the simulated stream. Times in s, throughput in tokens (or frames)/s.

    capacity_*: saturated throughput of one replica under this policy (full batches).
    throughput_tokens_per_s: what the simulation delivered at the offered load (never above
        the capacity: a higher measured rate raises the capacity to it).
    utilisation: offered load / capacity (>= 1 means the queue grows without bound).
    busy_share: share of the replica's time spent running passes at the offered load, with
        the batches the simulation actually formed (offered load / the throughput of
        batches of ``mean_batch``, at most 1): what an owned device's energy is paid on
        (a half-empty batch costs nearly what a full one does).
    padding_waste: fraction of batch slot-steps spent on padding, in [0, 1).
    p95_s / p99_s: the SLO-governed metric (``slo_metric``); tpot_* are None for
    single-step workloads. slo_value_s: the governed metric at ``slo_quantile`` (1.0 = the
    maximum, for hard deadlines). slo_ratio = the worst of slo_value_s / slo_s and TTFT at
    the same quantile / ttft_slo_s (<= 1 means the SLO holds).
    """

    policy: str
    label: str
    batch_size: int
    mean_batch: float
    padding_waste: float
    capacity_tokens_per_s: float
    capacity_requests_per_s: float
    throughput_tokens_per_s: float
    utilisation: float
    busy_share: float
    stable: bool
    ttft_p50_s: float
    ttft_p95_s: float
    ttft_p99_s: float
    tpot_p95_s: float | None
    tpot_p99_s: float | None
    latency_p50_s: float
    latency_p95_s: float
    latency_p99_s: float
    slo_metric: str
    p95_s: float
    p99_s: float
    slo_quantile: float
    slo_value_s: float
    slo_s: float
    ttft_slo_s: float | None
    slo_ratio: float
    slo_met: bool

    def as_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class PolicyComparison:
    """All four policies on one workload, and the winner under the SLO.

    winner: among policies meeting the SLO, the one with the highest capacity -- unless a
    simpler one (none < static < dynamic < continuous) is within ``simplicity_margin`` of
    it. When no policy meets the SLO (``any_meets_slo`` False): the stable policy with the
    lowest ``slo_ratio``, or, if every policy is overloaded, the one with most capacity.
    """

    results: Mapping[str, PolicyResult]
    winner: str
    any_meets_slo: bool
    reason: str
    mean_tokens: float
    cv_tokens: float
    arrival_rate_per_s: float

    def as_dict(self) -> dict[str, object]:
        return {
            "winner": self.winner, "any_meets_slo": self.any_meets_slo, "reason": self.reason,
            "mean_tokens": self.mean_tokens, "cv_tokens": self.cv_tokens,
            "arrival_rate_per_s": self.arrival_rate_per_s,
            "policies": {k: r.as_dict() for k, r in self.results.items()},
        }


# -- input checks ---------------------------------------------------------------------------

def _table(name: str, values: object) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(v.positive(name, values), dtype=float))
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array indexed by batch size - 1")
    return arr


@dataclass(frozen=True)
class _Workload:
    arrivals: np.ndarray
    lengths: np.ndarray
    lengths_list: list[int]
    arrivals_list: list[float]
    step: np.ndarray
    prefill: np.ndarray
    rate: float
    slo_s: float
    ttft_slo_s: float | None
    slo_metric: str
    slo_quantile: float
    timeout_s: float
    scheduler_overhead_s: float
    single_step: bool


def _workload(step_s_by_batch: object, prefill_s_by_batch: object, arrival_rate_per_s: object,
              slo_s: object, slo_metric: str, slo_quantile: object, ttft_slo_s: object,
              mean_tokens: object,
              cv: object, lengths: object, timeout_s: object, scheduler_overhead_s: object,
              arrival: str, streams: int, n_requests: int, seed: int,
              arrival_times_s: object = None) -> _Workload:
    step = _table("step_s_by_batch", step_s_by_batch)
    prefill = _table("prefill_s_by_batch", prefill_s_by_batch)
    if prefill.size != step.size:
        raise ValueError("prefill_s_by_batch must have one entry per batch size, like "
                         f"step_s_by_batch ({step.size}); got {prefill.size}")
    rate = float(v.positive("arrival_rate_per_s", arrival_rate_per_s))
    slo = float(v.positive("slo_s", slo_s))
    metric = v.choice("slo_metric", slo_metric, SLO_METRICS)
    quantile = float(v.fraction("slo_quantile", slo_quantile, allow_zero=False))
    ttft_slo = None if ttft_slo_s is None else float(v.positive("ttft_slo_s", ttft_slo_s))
    n = v.positive_int("n_requests", n_requests)
    if lengths is not None:
        if mean_tokens is not None:
            raise ValueError("lengths and mean_tokens are exclusive: give one of them")
        lens = np.atleast_1d(v.positive_ints("lengths", lengths))
        n = lens.size
    else:
        if mean_tokens is None:
            raise ValueError("mean_tokens must be given when lengths is not")
        lens = sample_lengths(mean_tokens, 0.0 if cv is None else cv, n, seed)
    if arrival_times_s is None:
        arrivals = arrival_times(rate, n, arrival, streams, seed)
    else:
        arrivals = np.atleast_1d(np.asarray(v.non_negative("arrival_times_s", arrival_times_s),
                                            dtype=float))
        if arrivals.shape != lens.shape or np.any(np.diff(arrivals) < 0):
            raise ValueError("arrival_times_s must be sorted and give one time per request "
                             f"({lens.size}); got shape {arrivals.shape}")
    budget = slo if ttft_slo is None else min(slo, ttft_slo)
    timeout = 0.1 * budget if timeout_s is None else float(v.non_negative("timeout_s",
                                                                          timeout_s))
    overhead = float(v.non_negative("scheduler_overhead_s", scheduler_overhead_s))
    return _Workload(arrivals, lens, lens.tolist(), arrivals.tolist(), step, prefill, rate,
                     slo, ttft_slo, metric, quantile, timeout, overhead,
                     bool(np.all(lens == 1)))


# -- the four schedulers --------------------------------------------------------------------

def _serve_batches(w: _Workload, batch: int, timeout: float, extra_per_batch: float,
                   ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Request batching (static/dynamic): return per-request TTFT, e2e, waste, mean batch."""
    a, lens, n = w.arrivals_list, w.lengths_list, len(w.arrivals_list)
    step = w.step.tolist()
    prefill = [p + extra_per_batch for p in w.prefill.tolist()]
    starts: list[float] = []
    sizes: list[int] = []
    add_start, add_size, right = starts.append, sizes.append, bisect.bisect_right
    last = a[n - 1]
    free = 0.0
    i = 0
    slot_steps = 0
    while i < n:  # plain-Python loop: a few hundred ns per batch
        hi = i + batch
        close = a[i] + timeout
        fill_t = a[hi - 1] if hi <= n else last
        if fill_t < close:
            close = fill_t
        start = free if free > close else close
        if hi > n:
            hi = n
        j = right(a, start, i + 1, hi)
        b = j - i
        longest = lens[i] if b == 1 else max(lens[i:j])
        slot_steps += b * longest
        add_start(start)
        add_size(b)
        free = start + prefill[b - 1] + (longest - 1) * step[b - 1]
        i = j
    size_arr = np.asarray(sizes)
    start_r = np.repeat(np.asarray(starts), size_arr)
    idx = size_arr - 1
    pre_r = np.repeat(w.prefill[idx] + extra_per_batch, size_arr)
    step_r = np.repeat(w.step[idx], size_arr)
    ttft = start_r + pre_r - w.arrivals
    e2e = ttft + (w.lengths - 1) * step_r
    waste = 1.0 - float(w.lengths.sum()) / slot_steps
    return ttft, e2e, max(0.0, waste), float(size_arr.mean())


def _serve_none(w: _Workload) -> tuple[np.ndarray, np.ndarray]:
    """FCFS single server: c_i = S_i + max_{j<=i}(a_j - S_{j-1}) (Lindley, vectorised)."""
    service = w.prefill[0] + (w.lengths - 1) * w.step[0]
    cum = np.cumsum(service)
    done = cum + np.maximum.accumulate(w.arrivals - (cum - service))
    start = done - service
    ttft = start + w.prefill[0] - w.arrivals
    return ttft, done - w.arrivals


def _continuous_tau(w: _Workload, batch: int) -> tuple[float, float, bool]:
    """Time per token under continuous batching and the mean occupancy (Little's law).

    tau(b) = step(b) + scheduler overhead; prefills stall decode: tau_eff = tau / (1 - rho_p)
    with rho_p = rate x prefill(1); occupancy b = rate x E[tokens - 1] x tau_eff(b), <= B.
    """
    rho_p = float(w.rate * w.prefill[0])
    stable = rho_p < 1.0
    stretch = 1.0 / (1.0 - min(rho_p, _MAX_PREFILL_SHARE))
    decode_tokens = float(np.mean(w.lengths - 1))
    grid = np.arange(1, batch + 1, dtype=float)
    steps = w.step[:batch]

    def tau(b: float) -> float:
        return (float(np.interp(b, grid, steps)) + w.scheduler_overhead_s) * stretch

    occ = 1.0
    for _ in range(60):
        nxt = min(float(batch), max(1.0, w.rate * decode_tokens * tau(occ)))
        if abs(nxt - occ) < 1e-6:
            break
        occ = nxt
    return tau(occ), occ, bool(stable)


def _serve_continuous(w: _Workload, batch: int) -> tuple[np.ndarray, np.ndarray, float, bool]:
    tau_eff, occ, stable = _continuous_tau(w, batch)
    pre = float(w.prefill[0])
    service = (pre + (w.lengths - 1) * tau_eff).tolist()
    slots = [0.0] * batch
    starts = [0.0] * len(service)
    prefill_free = 0.0   # one replica runs one prefill at a time: prompts queue behind it
    for k, (arr, s) in enumerate(zip(w.arrivals_list, service, strict=True)):
        begin = max(arr, slots[0], prefill_free)
        starts[k] = begin
        prefill_free = begin + pre
        heapq.heapreplace(slots, begin + s)
    start = np.asarray(starts)
    ttft = start + pre - w.arrivals
    e2e = ttft + (w.lengths - 1) * tau_eff
    return ttft, e2e, occ, stable


def _capacity(w: _Workload, policy: str, batch: int) -> float:
    """Saturated requests/s of one replica under ``policy`` with ``batch`` slots."""
    mean_decode = float(np.mean(w.lengths - 1))
    if policy == "none":
        return float(1.0 / (w.prefill[0] + mean_decode * w.step[0]))
    if policy == "continuous" and not w.single_step:
        tau_b = w.step[batch - 1] + w.scheduler_overhead_s
        return float(1.0 / (w.prefill[0] + mean_decode * tau_b / batch))
    extra = w.scheduler_overhead_s if policy == "continuous" else 0.0
    groups = w.lengths.size // batch
    if groups:
        longest = w.lengths[: groups * batch].reshape(groups, batch).max(axis=1).mean()
    else:
        longest = float(w.lengths.max())
    return float(batch / (extra + w.prefill[batch - 1] + (longest - 1) * w.step[batch - 1]))


def _busy_share(w: _Workload, policy: str, batch: int, mean_batch: float,
                capacity_req: float) -> float:
    """Share of the time a replica runs passes at the offered load: rate x the time per
    request of batches of ``mean_batch`` (linear between the two whole batches around it;
    a full batch at the measured capacity), at most 1."""
    b = min(float(batch), max(1.0, float(mean_batch)))
    lo, hi = math.floor(b), math.ceil(b)

    def per_request_s(k: int) -> float:
        return 1.0 / (capacity_req if k == batch else float(_capacity(w, policy, k)))

    f = b - lo
    return float(min(1.0, w.rate * ((1 - f) * per_request_s(lo) + f * per_request_s(hi))))


def _quantiles(x: np.ndarray, extra: float) -> tuple[float, float, float, float]:
    q = np.quantile(x, (*_QUANTILES, extra))
    return float(q[0]), float(q[1]), float(q[2]), float(q[3])


def _simulate(w: _Workload, policy: str) -> PolicyResult:
    batch = int(w.step.size)
    waste, stable = 0.0, True
    if policy == "none":
        ttft, e2e = _serve_none(w)
        mean_batch, used_batch = 1.0, 1
    elif policy == "continuous" and not w.single_step:
        ttft, e2e, mean_batch, stable = _serve_continuous(w, batch)
        used_batch = batch
    else:
        timeout = {"static": math.inf, "dynamic": w.timeout_s, "continuous": 0.0}[policy]
        extra = w.scheduler_overhead_s if policy == "continuous" else 0.0
        ttft, e2e, waste, mean_batch = _serve_batches(w, batch, timeout, extra)
        used_batch = batch
    mean_len = float(np.mean(w.lengths))
    span = float(np.max(w.arrivals + e2e) - w.arrivals[0])
    delivered = (float(w.lengths.sum()) / span if span > 0
                 else float(_capacity(w, policy, used_batch)) * mean_len)
    # The closed form groups requests in arrival order; a simulation that kept up with
    # more has measured a higher saturated rate: a replica's capacity is never below
    # what it delivered.
    capacity_req = max(float(_capacity(w, policy, used_batch)), delivered / mean_len)
    utilisation = w.rate / capacity_req
    stable = bool(stable and utilisation < 1.0)
    busy_share = _busy_share(w, policy, used_batch, mean_batch, capacity_req)

    q = w.slo_quantile
    t50, t95, t99, tq = _quantiles(ttft, q)
    l50, l95, l99, lq = _quantiles(e2e, q)
    multi = w.lengths > 1
    tpot95 = tpot99 = None
    p95, p99, value = l95, l99, lq
    if np.any(multi):
        tpot = (e2e[multi] - ttft[multi]) / (w.lengths[multi] - 1)
        _, tpot95, tpot99, tpotq = _quantiles(tpot, q)
        if w.slo_metric == "tpot":
            p95, p99, value = tpot95, tpot99, tpotq
    ratio = value / w.slo_s
    if w.ttft_slo_s is not None:
        ratio = max(ratio, tq / w.ttft_slo_s)
    return PolicyResult(
        policy=policy, label=policy_labels(w.single_step)[policy], batch_size=used_batch,
        mean_batch=mean_batch, padding_waste=waste,
        capacity_tokens_per_s=capacity_req * mean_len, capacity_requests_per_s=capacity_req,
        throughput_tokens_per_s=delivered, utilisation=utilisation, busy_share=busy_share,
        stable=stable,
        ttft_p50_s=t50, ttft_p95_s=t95, ttft_p99_s=t99, tpot_p95_s=tpot95, tpot_p99_s=tpot99,
        latency_p50_s=l50, latency_p95_s=l95, latency_p99_s=l99, slo_metric=w.slo_metric,
        p95_s=p95, p99_s=p99, slo_quantile=q, slo_value_s=value, slo_s=w.slo_s,
        ttft_slo_s=w.ttft_slo_s, slo_ratio=ratio,
        slo_met=bool(ratio <= 1.0 and stable),
    )


# -- public API -----------------------------------------------------------------------------

def simulate_policy(policy: str, step_s_by_batch: object, prefill_s_by_batch: object, *,
                    arrival_rate_per_s: object, slo_s: object, slo_metric: str = "tpot",
                    slo_quantile: object = 0.99, ttft_slo_s: object = None,
                    mean_tokens: object = None, cv: object = None,
                    lengths: object = None, timeout_s: object = None,
                    scheduler_overhead_s: object = 0.0, arrival: str = "poisson",
                    streams: int = 1, n_requests: int = DEFAULT_REQUESTS,
                    seed: int = 0, arrival_times_s: object = None) -> PolicyResult:
    """Simulate one policy. ``step_s_by_batch[b-1]`` is a decode step with ``b`` sequences, s;
    ``prefill_s_by_batch[b-1]`` a prefill (CNN: input pass) of ``b`` requests, s; their
    length is the batch size ``B``. ``timeout_s`` defaults to 10% of the tightest latency
    budget. ``arrival_times_s`` replaces the simulated arrivals with explicit sorted times
    (``arrival_rate_per_s`` still sets continuous batching's occupancy and utilisation).
    See the module docstring for each policy's physics.
    """
    pol = v.choice("policy", policy, POLICIES)
    w = _workload(step_s_by_batch, prefill_s_by_batch, arrival_rate_per_s, slo_s, slo_metric,
                  slo_quantile, ttft_slo_s, mean_tokens, cv, lengths, timeout_s,
                  scheduler_overhead_s, arrival, streams, n_requests, seed, arrival_times_s)
    return _simulate(w, pol)


def _pick_winner(results: Mapping[str, PolicyResult], margin: float) -> tuple[str, bool, str]:
    passing = [results[p] for p in POLICIES if results[p].slo_met]
    if not passing:
        stable = [results[p] for p in POLICIES if results[p].stable]
        if stable:
            best = min(stable, key=lambda r: r.slo_ratio)
            return best.policy, False, (
                f"no policy meets the SLO; {best.policy} comes closest (its latency at the "
                f"SLO quantile is {best.slo_ratio:.2f}x the limit)")
        best = max(results.values(), key=lambda r: r.capacity_requests_per_s)
        return best.policy, False, (
            f"every policy is overloaded at this arrival rate; {best.policy} has the most "
            f"capacity ({best.capacity_requests_per_s:.3g} requests/s per replica)")
    top = max(passing, key=lambda r: r.capacity_requests_per_s)
    for r in passing:  # simplest first
        if r.capacity_requests_per_s >= (1.0 - margin) * top.capacity_requests_per_s:
            failed = [p for p in POLICIES if not results[p].slo_met]
            why = f"; {', '.join(failed)} miss the SLO" if failed else ""
            extra = (f" (within {margin:.0%} of {top.policy}'s capacity, and simpler)"
                     if r is not top else "")
            return r.policy, True, (
                f"{r.policy} meets the SLO with the most capacity "
                f"({r.capacity_requests_per_s:,.3g} requests/s per replica){extra}{why}")
    return top.policy, True, "highest capacity"  # pragma: no cover - loop always returns


def compare_policies(step_s_by_batch: object, prefill_s_by_batch: object, *,
                     arrival_rate_per_s: object, slo_s: object, slo_metric: str = "tpot",
                     slo_quantile: object = 0.99, ttft_slo_s: object = None,
                     mean_tokens: object = None, cv: object = None,
                     lengths: object = None, timeout_s: object = None,
                     scheduler_overhead_s: object = 0.0, arrival: str = "poisson",
                     streams: int = 1, n_requests: int = DEFAULT_REQUESTS, seed: int = 0,
                     simplicity_margin: object = 0.05,
                     arrival_times_s: object = None) -> PolicyComparison:
    """All four policies on the same simulated requests, plus the winner under the SLO."""
    w = _workload(step_s_by_batch, prefill_s_by_batch, arrival_rate_per_s, slo_s, slo_metric,
                  slo_quantile, ttft_slo_s, mean_tokens, cv, lengths, timeout_s,
                  scheduler_overhead_s, arrival, streams, n_requests, seed, arrival_times_s)
    margin = float(v.fraction("simplicity_margin", simplicity_margin))
    results = MappingProxyType({p: _simulate(w, p) for p in POLICIES})
    winner, ok, reason = _pick_winner(results, margin)
    mean = float(np.mean(w.lengths))
    cv_out = float(np.std(w.lengths) / mean)
    return PolicyComparison(results, winner, ok, reason, mean, cv_out, w.rate)


# -- step tables from the roofline ----------------------------------------------------------

def step_tables(hardware: str | Hardware, model: str | Model, batch_size: int, *,
                prompt_tokens: object = None, output_tokens: object = None,
                weight_bits: int = 16, kv_bits: int = 16, tp: int = 1,
                window_bytes: object = 0.0, mode: str | Derating = "achievable",
                precision: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(step_s_by_batch, prefill_s_by_batch) for b = 1..batch_size, from the roofline.

    Transformer: decode step of b sequences at the mean context P + output/2
    (:func:`labkit.physics.roofline.decode_roofline`); prefill of b prompts = weight read and
    overhead once + b x (projection + attention compute + KV write).
    CNN: every request is a single input pass, ``cnn_inference_time(batch=b)`` plus b
    decision passes; there are no decode steps (the step table repeats it, unused).
    """
    bmax = v.positive_int("batch_size", batch_size)
    b = np.arange(1, bmax + 1, dtype=float)
    m = get_model(model)
    if m.is_transformer:
        p = float(v.positive("prompt_tokens", prompt_tokens))
        n = v.positive_int("output_tokens", output_tokens)
        dec = decode_roofline(hardware, m, batch=b, context_tokens=p + n / 2.0,
                              weight_bits=weight_bits, kv_bits=kv_bits, tp=tp, mode=mode,
                              precision=precision)
        pre = prefill_time(hardware, m, p, weight_bits, kv_bits, tp, mode, precision)
        per = pre.compute_s + pre.attention_s + pre.kv_write_s
        prefill = pre.weight_s + pre.overhead_s + b * per
        return np.asarray(dec.step_s, dtype=float), prefill
    cnn = cnn_inference_time(hardware, m, weight_bits, b, mode, precision)
    prefill = np.asarray(cnn.latency_s, dtype=float) + b * decision_time(hardware, window_bytes,
                                                                         mode)
    return prefill.copy(), prefill
