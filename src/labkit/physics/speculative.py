"""Speculative decoding of one sequence: propose k tokens, check k + 1 positions in one pass.

A proposer guesses the sequence's next ``k`` tokens: a small draft model, or prompt lookup
(the continuation of the last generated n-gram where it occurs in the prompt: a string
match, no model). The target model then runs one pass over the k + 1 positions: the
token it already has and the k guesses. Each guess is accepted with probability
``alpha``, in order, until the first rejection; the pass emits the accepted guesses plus
one token of its own (the correction, or a bonus token when all k are accepted), so the
output is exactly the target's. Leviathan, Kalman & Matias, *Fast inference from
transformers via speculative decoding*, ICML 2023 (their eq. 1 and the walltime model of
their section 3.3).

The pass is costed on the same roofline as a decode step (:mod:`labkit.physics.roofline`,
its terms added): the weights stream once and the sequence's KV cache is read once for
all k + 1 positions; only the compute grows, 2 FLOP per weight per position. A device
whose decode is memory-bound checks k guesses for little more than one step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit.core import validation as v
from labkit.physics.roofline import Derating, decode_roofline
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model


def expected_tokens(alpha: object, k: object) -> float | np.ndarray:
    """Tokens one pass emits on average: E = (1 - alpha^(k+1)) / (1 - alpha), tokens.

    The i-th guess is kept with probability alpha^i (all before it kept too); the pass's own
    token always comes: E = sum_{i=0..k} alpha^i. alpha = 1 gives k + 1; k = 0 gives 1.
    """
    a = np.asarray(v.fraction("alpha", alpha), dtype=float)
    kk = np.asarray(v.positive_ints("k", k, minimum=0), dtype=float)
    a, kk = np.broadcast_arrays(a, kk)
    safe = np.where(a < 1.0, a, 0.5)
    out = np.where(a < 1.0, (1.0 - safe ** (kk + 1.0)) / (1.0 - safe), kk + 1.0)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class VerifyPass:
    """One pass of the target over ``positions`` positions of one sequence, s per term:
    weights and KV read once, compute for every position, the step's fixed overhead."""

    positions: int
    weight_s: float
    kv_s: float
    compute_s: float
    overhead_s: float

    @property
    def pass_s(self) -> float:
        """The pass: weight + KV + compute + overhead, s (added, as the roofline adds)."""
        return self.weight_s + self.kv_s + self.compute_s + self.overhead_s


def verify_pass(hardware: str | Hardware, model: str | Model, k: int, *,
                context_tokens: object, weight_bits: int = 16, kv_bits: int = 16,
                mode: str | Derating = "achievable",
                precision: str | None = None) -> VerifyPass:
    """The target's pass checking ``k`` guesses (k + 1 positions) at ``context_tokens``.

    From one decode step of one sequence (:func:`decode_roofline`, batch 1): weight fetch,
    KV read and overhead once; compute x (k + 1). k = 0 is that decode step exactly.
    """
    kk = v.positive_int("k", k, minimum=0)
    step = decode_roofline(hardware, model, 1, context_tokens, weight_bits, kv_bits,
                           tp=1, mode=mode, precision=precision)
    return VerifyPass(positions=kk + 1, weight_s=float(step.weight_step_s),
                      kv_s=float(step.kv_step_s),
                      compute_s=(kk + 1) * float(step.compute_step_s),
                      overhead_s=float(step.overhead_step_s))


def time_per_token(pass_s: object, k: object, alpha: object,
                   draft_step_s: object = 0.0) -> float | np.ndarray:
    """Time per output token, s: (k x draft step + pass) / E(alpha, k).

    One cycle proposes k guesses (a draft model's k steps; prompt lookup's string match is
    ``draft_step_s`` = 0) and checks them in one pass; it emits E tokens on average.
    """
    p = np.asarray(v.positive("pass_s", pass_s), dtype=float)
    d = np.asarray(v.non_negative("draft_step_s", draft_step_s), dtype=float)
    kk = np.asarray(v.positive_ints("k", k, minimum=0), dtype=float)
    out = (kk * d + p) / np.asarray(expected_tokens(alpha, k), dtype=float)
    return float(out) if np.ndim(out) == 0 else out


def acceptance_sample(mean: object, sd: object, n: int = 1000, seed: int = 0) -> np.ndarray:
    """Per-request acceptance rates: ``n`` draws of a Beta distribution with this mean and
    standard deviation (sd = 0: every request at ``mean``).

    A Beta(a, b) has mean a / (a + b) and variance mean (1 - mean) / (a + b + 1), so
    a + b = mean (1 - mean) / sd^2 - 1, which must be > 0: sd^2 < mean (1 - mean).
    """
    m = float(v.fraction("mean", mean, allow_zero=False, allow_one=False))
    s = float(v.non_negative("sd", sd))
    count = v.positive_int("n", n)
    rng = np.random.default_rng(v.positive_int("seed", seed, minimum=0))
    if s == 0.0:
        return np.full(count, m)
    total = m * (1.0 - m) / (s * s) - 1.0
    if total <= 0.0:
        raise ValueError(f"sd must be below sqrt(mean (1 - mean)) = {np.sqrt(m * (1 - m)):.3g} "
                         f"for a Beta distribution; got {s!r}")
    return np.asarray(rng.beta(m * total, (1.0 - m) * total, count), dtype=float)
