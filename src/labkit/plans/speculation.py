"""Lab 1 Part C where one user leaves nothing to batch with: the track's model checks
guesses of its own next tokens (:attr:`labkit.tracks.Track.speculation`).

One definition of each figure the part shows, from :mod:`labkit.physics.speculative`:

* the decode step and the check pass at the mean context a reply is decoded at (prompt +
  half the output, the context Part C's batching tables use), on one device;
* the acceptance of each of :data:`REQUESTS` simulated requests (a seeded Beta draw), and
  the one at the SLO's tail: its ``1 - slo_quantile`` quantile (the request whose TPOT is
  the p99 one, since a request's TPOT falls as its acceptance rises);
* TPOT (time per output token after the first, the track's SLO metric): a request's is
  the pass over the tokens a pass emits on average at its acceptance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit.core import validation as v
from labkit.physics.batching import DEFAULT_REQUESTS
from labkit.physics.roofline import Derating
from labkit.physics.speculative import (
    VerifyPass,
    acceptance_sample,
    expected_tokens,
    time_per_token,
    verify_pass,
)
from labkit.plans.workload import session_capacity
from labkit.tracks import Speculation, Track, get_track

REQUESTS = DEFAULT_REQUESTS
"""Simulated requests whose acceptance sets the mean and the tail (Part C's stream size)."""


def speculation_of(track: Track) -> Speculation:
    """The track's :class:`Speculation`; a ``ValueError`` naming ``track`` where it has none."""
    if not track.speculates or track.speculation is None:
        raise ValueError(f"track {track.id!r} has no speculation: its model does not check "
                         "guesses of its own tokens")
    return track.speculation


def decode_context(track: Track) -> float:
    """Mean context while a reply is decoded, tokens: prompt + half the output."""
    return float(track.prompt_tokens or 0) + float(track.output_tokens or 0) / 2.0


def weight_options(track: str | Track) -> tuple[int, ...]:
    """Weight precisions Part C offers, most accurate first: within the quality floor and
    holding the weights and one session in memory."""
    tr = get_track(track)
    bits = sorted((b for b, loss in tr.quality_loss_pct.items()
                   if loss <= tr.max_quality_loss_pct), reverse=True)
    return tuple(b for b in bits if not session_capacity(tr, weight_bits=b).oom)


def probe_tokens(track: Track) -> int:
    """Half the most guesses a pass may check: the setting Part C's prediction and its
    exercise ask about."""
    return speculation_of(track).max_tokens // 2


@dataclass(frozen=True)
class SpeculationPoint:
    """Part C at one setting. Times in s; acceptances are per-token probabilities.

    ``step``: one plain decode step (no guesses); ``check``: the pass checking ``k``
    guesses. ``acceptance_tail``: the acceptance at the SLO's tail across requests;
    ``tokens_tail``: the tokens a pass emits on average there; ``tpot_tail_s``: that
    request's TPOT (the SLO's figure); ``tpot_mean_s``: the average request's TPOT.
    """

    k: int
    weight_bits: int
    kv_bits: int
    acceptance_mean: float
    acceptance_sd: float
    slo_quantile: float
    slo_s: float
    context_tokens: float
    step: VerifyPass
    check: VerifyPass
    acceptance_tail: float
    tokens_tail: float
    tpot_tail_s: float
    tpot_mean_s: float

    @property
    def met(self) -> bool:
        """Whether the request at the SLO's tail streams within the SLO."""
        return self.tpot_tail_s <= self.slo_s

    @property
    def tail_speedup(self) -> float:
        """Plain step over the tail request's TPOT (above 1: the guesses pay)."""
        return self.step.pass_s / self.tpot_tail_s

    @property
    def mean_speedup(self) -> float:
        """Plain step over the average request's TPOT."""
        return self.step.pass_s / self.tpot_mean_s


def speculation_point(track: str | Track, *, k: int, weight_bits: int | None = None,
                      kv_bits: int | None = None, acceptance_mean: object = None,
                      acceptance_sd: object = None, mode: str | Derating = "achievable",
                      seed: int = 0) -> SpeculationPoint:
    """The track's model checking ``k`` guesses a pass (k = 0: plain decoding), with the
    track's precisions and acceptance unless given."""
    tr = get_track(track)
    spec = speculation_of(tr)
    kk = v.positive_int("k", k, minimum=0)
    if kk > spec.max_tokens:
        raise ValueError(f"k must be at most the track's {spec.max_tokens} guesses a pass; "
                         f"got {kk}")
    wb = v.precision_bits("weight_bits", tr.weight_bits if weight_bits is None else weight_bits)
    kb = v.precision_bits("kv_bits", tr.kv_bits if kv_bits is None else kv_bits)
    mean = float(v.fraction("acceptance_mean", spec.acceptance_mean if acceptance_mean is None
                            else acceptance_mean, allow_zero=False, allow_one=False))
    sd = float(v.non_negative("acceptance_sd", spec.acceptance_sd if acceptance_sd is None
                              else acceptance_sd))
    alphas = acceptance_sample(mean, sd, REQUESTS, seed)
    ctx = decode_context(tr)

    def one(n: int) -> VerifyPass:
        return verify_pass(tr.hardware_id, tr.model_id, n, context_tokens=ctx,
                           weight_bits=wb, kv_bits=kb, mode=mode)

    step, check = one(0), one(kk)
    tail = float(np.quantile(alphas, 1.0 - tr.slo_quantile))
    per_request = np.asarray(time_per_token(check.pass_s, kk, alphas), dtype=float)
    return SpeculationPoint(
        k=kk, weight_bits=wb, kv_bits=kb, acceptance_mean=mean, acceptance_sd=sd,
        slo_quantile=tr.slo_quantile, slo_s=tr.slo_s, context_tokens=ctx, step=step,
        check=check, acceptance_tail=tail, tokens_tail=float(expected_tokens(tail, kk)),
        tpot_tail_s=float(time_per_token(check.pass_s, kk, tail)),
        tpot_mean_s=float(per_request.mean()))


def start_bits(track: str | Track) -> int:
    """Part C's starting weights: the most accurate it offers (:func:`weight_options`) where
    the track's plan is less accurate and decoding without guesses misses the SLO there;
    else the track's own."""
    tr = get_track(track)
    best = weight_options(tr)[0]
    if best == tr.weight_bits or speculation_point(tr, k=0, weight_bits=best).met:
        return tr.weight_bits
    return best


def speculation_curve(track: str | Track, *, weight_bits: int | None = None,
                      acceptance_mean: object = None, acceptance_sd: object = None,
                      mode: str | Derating = "achievable") -> tuple[SpeculationPoint, ...]:
    """:func:`speculation_point` at every number of guesses from 0 to the track's most."""
    tr = get_track(track)
    return tuple(speculation_point(tr, k=k, weight_bits=weight_bits,
                                   acceptance_mean=acceptance_mean,
                                   acceptance_sd=acceptance_sd, mode=mode)
                 for k in range(speculation_of(tr).max_tokens + 1))


def acceptance_shares(track: str | Track, *, acceptance_mean: object = None,
                      acceptance_sd: object = None, bins: int = 20,
                      seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(bin centres, share of requests in each bin): the acceptance of the same simulated
    requests :func:`speculation_point` reads, over ``bins`` equal bins of [0, 1]."""
    tr = get_track(track)
    spec = speculation_of(tr)
    mean = spec.acceptance_mean if acceptance_mean is None else acceptance_mean
    sd = spec.acceptance_sd if acceptance_sd is None else acceptance_sd
    alphas = acceptance_sample(mean, sd, REQUESTS, seed)
    edges = np.linspace(0.0, 1.0, v.positive_int("bins", bins) + 1)
    counts, _ = np.histogram(alphas, edges)
    return (edges[:-1] + edges[1:]) / 2.0, counts / float(alphas.size)
