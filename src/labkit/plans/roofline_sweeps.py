"""Lab 2 Part A's charts' sweeps (the step along a batch or context grid, the batching
gain along the context grid) and the paper's worked example (section 5.1), on the same
roads as :func:`labkit.plans.roofline.decode_view`: ``mode`` on ``stack``
(:func:`labkit.plans.stacks.roof`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from labkit.physics.roofline import (
    PAPER_BATCHES,
    PAPER_HARDWARE,
    PAPER_MAX_CONTEXT,
    PAPER_MODEL,
    DecodeRoofline,
    balance_context,
    critical_batch,
    decode_roofline,
    knee_batch,
    memory_budget,
)
from labkit.plans.roofline import GAIN_FROM_BATCH, PAPER_SHORT_CONTEXT, Balance, balance
from labkit.plans.stacks import NO_STACK, StackChoice, roof, stack_choice
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model

# -- the charts' sweeps --------------------------------------------------------------------

@dataclass(frozen=True)
class BatchSweep:
    """The step along a batch grid at one context in ``balance.mode`` and the other mode,
    with B*, L* and the knee batch (sequences, None past L*) in that mode."""

    step: DecodeRoofline
    other: DecodeRoofline
    balance: Balance
    knee_batch: float | None
    stack: StackChoice | None = None

    @property
    def achievable(self) -> DecodeRoofline:
        """The sweep at achievable (on the stack)."""
        return self.step if self.balance.mode == "achievable" else self.other

    def band_ms(self, view: str) -> np.ndarray | None:
        """(fastest, slowest) real systems on the stack along the grid: 2 x grid, ms per
        step (``view`` "step") or per token (step ÷ B); None without a band."""
        if self.stack is None or self.stack.band is None:
            return None
        a = self.achievable
        t = np.asarray(a.step_s if view == "step" else a.per_token_s, dtype=float) * 1e3
        return np.vstack([t * self.stack.band.low, t * self.stack.band.high])


def batch_sweep(hw: Hardware, m: Model, grid: np.ndarray, ctx: int, wb: int, kb: int,
                tp: int, mode: str, stack: str = NO_STACK) -> BatchSweep:
    """The step along the batch grid at ``ctx`` in ``mode`` and in the other mode
    (achievable on ``stack``)."""
    other = "achievable" if mode == "peak" else "peak"
    d, o = roof(mode, hw, "decode", stack), roof(other, hw, "decode", stack)
    return BatchSweep(decode_roofline(hw, m, grid, ctx, wb, kb, tp=tp, mode=d),
                      decode_roofline(hw, m, grid, ctx, wb, kb, tp=tp, mode=o),
                      balance(hw, m, wb, kb, mode, stack),
                      knee_batch(hw, m, ctx, wb, kb, mode=d, tp=tp),
                      stack_choice(hw, "decode", stack))


def context_sweep(hw: Hardware, m: Model, batch: int, grid: np.ndarray, wb: int, kb: int,
                  tp: int, mode: str, stack: str = NO_STACK) -> DecodeRoofline:
    """The step along the context grid at ``batch``."""
    return decode_roofline(hw, m, batch, grid, wb, kb, tp=tp,
                           mode=roof(mode, hw, "decode", stack))


def gain_sweep(hw: Hardware, m: Model, grid: np.ndarray, wb: int, kb: int, tp: int,
               mode: str, options: Sequence[int], analytic: bool,
               reserve_fraction: float = 0.0,
               stack: str = NO_STACK) -> tuple[np.ndarray, np.ndarray]:
    """(gain, batch) along the context grid: per-token time at B = 1 over that at the
    largest batch option that fits memory at each context (NaN / 0 where B = 1 does
    not fit; ``analytic``: memory not modelled, the largest option everywhere;
    ``reserve_fraction``: the memory kept back, as :func:`decode_view`)."""
    opts = np.asarray(sorted(options), dtype=float)
    d = roof(mode, hw, "decode", stack)
    if analytic:
        to = np.full(grid.size, opts[-1])
    else:
        mem = memory_budget(hw, m, grid[:, None], opts[None, :], wb, kb, tp=tp,
                            reserve_fraction=reserve_fraction)
        ok = ~np.asarray(mem.over_budget, dtype=bool)
        idx = np.where(ok.any(axis=1), ok.shape[1] - 1 - np.argmax(ok[:, ::-1], axis=1), -1)
        to = np.where(idx >= 0, opts[np.maximum(idx, 0)], 0.0)
    t1 = np.asarray(decode_roofline(hw, m, GAIN_FROM_BATCH, grid, wb, kb, tp=tp,
                                    mode=d).per_token_s)
    tn = np.asarray(decode_roofline(hw, m, np.maximum(to, 1.0), grid, wb, kb, tp=tp,
                                    mode=d).per_token_s)
    gain = np.where(to > 0, t1 / tn, np.nan)
    return gain, to


# -- the paper's worked example (section 5.1) -------------------------------------------------

@dataclass(frozen=True)
class PaperExample:
    """Section 5.1 on one of the paper's PEs, peak roofline, analytic (memory not
    modelled: one PE holds none of the model): B* (sequences), L* (tokens), and per-token
    time (step ÷ B, s) at ``batches`` for each of ``contexts`` (tokens)."""

    mode: str
    b_star: float
    l_star: float
    batches: tuple[int, int]
    contexts: tuple[int, int]
    per_token_s: Mapping[int, tuple[float, float]]

    def gain(self, context: int) -> float:
        """Per-token time at the first batch over that at the second (x)."""
        t = self.per_token_s[context]
        return t[0] / t[1]


def paper_pair(hw: Hardware, m: Model, ctx: int, wb: int, kb: int, tp: int,
               mode: str, stack: str = NO_STACK) -> tuple[float, float]:
    """Per-token time (step ÷ B, s) at the paper's two batches on ``hw`` at ``ctx``."""
    r = np.asarray(decode_roofline(hw, m, np.asarray(PAPER_BATCHES, dtype=float), ctx, wb, kb,
                                   tp=tp, mode=roof(mode, hw, "decode", stack)).per_token_s)
    return float(r[0]), float(r[1])


def paper_example() -> PaperExample:
    """The paper's PE and model at its short and long context, B = 1 and 256."""
    hw, m = PAPER_HARDWARE, PAPER_MODEL
    ctxs = (PAPER_SHORT_CONTEXT, PAPER_MAX_CONTEXT)
    t = {}
    for s in ctxs:
        r = np.asarray(decode_roofline(hw, m, np.asarray(PAPER_BATCHES, dtype=float),
                                       s).per_token_s)
        t[s] = (float(r[0]), float(r[1]))
    return PaperExample("peak", critical_batch(hw, m), balance_context(hw, m),
                        (int(PAPER_BATCHES[0]), int(PAPER_BATCHES[1])), ctxs, t)
