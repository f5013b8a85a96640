"""Lab 2 Part A's computation: one model of a decode step (or a CNN pass) and every
quantity its views quote, as frozen results.

Units are in the field names (``*_s`` seconds, ``*_bytes`` bytes); B* (sequences) and L*
(tokens) carry the roofline ``mode`` they were computed in (``peak`` | ``achievable``).
"Per token" is the step over the batch; "step" is the whole step of B sequences.

* :func:`balance` -- B* and L* in one mode (:class:`Balance`).
* :func:`decode_view` -- one operating point (:class:`DecodeView`): the step's terms in
  both modes, shares, knee, doubling saving, memory, the serving batch 2B*, the batching
  gain capped at the largest batch that fits, the regime row chosen by the computed terms
  and the math peek's equations (:class:`Equation`, result = the printed terms' sum etc.;
  ``kv_bpt`` is the one KV bytes per token the L* peek prints, never one derived back
  from a rounded AI).
* :func:`max_batch_in_memory` -- the largest batch memory holds after the serving
  reserve (:func:`fit_basis` names the basis a view counts it on).
* the charts' sweeps and the paper's worked example: :mod:`labkit.plans.roofline_sweeps`.
* :func:`cnn_view` -- one CNN pass on the classic roofline (:class:`CnnView`), its roofs
  and the intensity sweep; :func:`precision_floor` -- why a narrower width is no faster.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import cast

import numpy as np

from labkit.core.format import fmt_count, fmt_pct
from labkit.core.units import bits_to_bytes
from labkit.physics.derating import Derating
from labkit.physics.phases import CnnRoofline as CnnRoofline
from labkit.physics.phases import cnn_inference_time
from labkit.physics.roofline import EXTREME_CONTEXT as EXTREME_CONTEXT
from labkit.physics.roofline import MODES as MODES
from labkit.physics.roofline import PAPER_BATCHES as PAPER_BATCHES
from labkit.physics.roofline import PAPER_HARDWARE as PAPER_HARDWARE
from labkit.physics.roofline import PAPER_MAX_CONTEXT as PAPER_MAX_CONTEXT
from labkit.physics.roofline import PAPER_MODEL as PAPER_MODEL
from labkit.physics.roofline import DecodeRoofline as DecodeRoofline
from labkit.physics.roofline import DeratingTerm as DeratingTerm
from labkit.physics.roofline import MemoryBudget as MemoryBudget
from labkit.physics.roofline import (
    balance_context,
    critical_batch,
    decode_roofline,
    derating_contributions,
    doubling_saving,
    knee_batch,
    memory_budget,
    serving_batch,
)
from labkit.plans.cnn_roofline import CnnView as CnnView
from labkit.plans.cnn_roofline import PrecisionFloor as PrecisionFloor
from labkit.plans.cnn_roofline import cnn_intensity as cnn_intensity
from labkit.plans.cnn_roofline import cnn_roofs as cnn_roofs
from labkit.plans.cnn_roofline import cnn_view as cnn_view
from labkit.plans.cnn_roofline import precision_floor as precision_floor
from labkit.plans.equations import Equation as Equation
from labkit.plans.equations import equation as equation
from labkit.plans.moves import Move, single_moves
from labkit.plans.stacks import NO_STACK, StackChoice, roof, stack_choice
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model

STALL = 0.10  # batching has stalled where doubling the batch saves less than this per token
PAPER_SHORT_CONTEXT = 8192  # the paper's short-context point (section 5.1), tokens
GAIN_FROM_BATCH = 1  # the batching gain is per-token time at this batch over a larger one


# -- B* and L* -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Balance:
    """B* (``b_star``, sequences) and L* (``l_star``, tokens) in roofline ``mode``."""

    mode: str
    b_star: float
    l_star: float
    weight_bits: int
    kv_bits: int

    @property
    def b_label(self) -> str:  # the name every view prints beside the value
        return f"B* ({self.mode})"

    @property
    def l_label(self) -> str:
        return f"L* ({self.mode})"


def balance(hw: Hardware, model: Model, weight_bits: int, kv_bits: int,
            mode: str, stack: str = NO_STACK) -> Balance:
    """B* and L* of ``model`` on ``hw`` in ``mode`` on ``stack`` (the physics' critical
    batch and balance context)."""
    d = roof(mode, hw, "decode", stack)
    return Balance(mode, critical_batch(hw, model, weight_bits, mode=d),
                   balance_context(hw, model, kv_bits, mode=d), weight_bits, kv_bits)


# -- one operating point -------------------------------------------------------------------

FIT_BASIS = ("the largest batch the slider offers that fits all usable memory (no serving "
             "reserve)")
"""How Part A's memory fit is counted when it keeps no reserve (weights + KV + activations
in every usable byte); :func:`fit_basis` names the reserve when there is one."""


def fit_basis(reserve_fraction: float) -> str:
    """The memory fit's basis in words: all usable memory, or what is left after the
    serving reserve Lab 1 keeps (``reserve_fraction``, a fraction)."""
    if reserve_fraction <= 0:
        return FIT_BASIS
    return ("the largest batch the slider offers that fits usable memory after the "
            f"{fmt_pct(reserve_fraction, sig=2)} serving reserve Lab 1 keeps")


def max_batch_in_memory(hw: Hardware, m: Model, ctx: int, wb: int, kb: int, tp: int,
                        reserve_fraction: float = 0.0) -> int:
    """B_max = floor((usable x (1 - reserve) - weights) / (KV + transient of one
    sequence)), sequences per device (0 when not even the weights fit): the largest
    whole batch :func:`~labkit.physics.roofline.memory_budget` holds at ``ctx`` tokens."""
    one = memory_budget(hw, m, ctx, 1, wb, kb, tp, reserve_fraction)
    per_seq = float(one.kv_bytes) + float(one.transient_bytes)
    free = float(one.capacity_bytes) - float(one.weights_bytes)
    return max(0, int(free // per_seq))


@dataclass(frozen=True)
class StepTerm:
    """One term of a decode step: its label and seconds per step (whole batch)."""
    label: str
    step_s: float


@dataclass(frozen=True)
class BatchingGain:
    """Per-token time at B = 1 over that at ``batch_to`` (x), at one context: the largest
    batch option that fits memory there (None: none fits, ``gain`` NaN); ``capped``: it is
    below ``batch_max`` (the control's largest) because memory caps it; ``analytic``:
    memory not modelled (the paper's single PE, which holds no batch of the model)."""

    context_tokens: int
    batch_to: int | None
    batch_max: int
    gain: float
    capped: bool
    analytic: bool
    reserve_fraction: float = 0.0

    @property
    def label(self) -> str:
        """What the gain is measured between, and why it stops there."""
        if self.batch_to is None:
            return f"not even B = {fmt_count(GAIN_FROM_BATCH)} fits memory"
        span = f"B = {fmt_count(GAIN_FROM_BATCH)} → {fmt_count(self.batch_to)}"
        if self.analytic:
            return f"{span} (analytic: memory not modelled, as §5.1)"
        return f"{span}, {fit_basis(self.reserve_fraction)}" if self.capped else span


@dataclass(frozen=True)
class ServingPoint:
    """The paper's serving batch 2B* (sequences, in ``mode``) and the step at B*, 2B*, 4B*
    at one context: per-token and step s, whether each fits memory, the per-token floor
    compute + KV (s), and the largest batch option that fits with its per-token s."""

    mode: str
    serving_batch: float
    per_token_s: tuple[float, ...]
    step_s: tuple[float, ...]
    fits: tuple[bool, bool, bool]
    floor_per_token_s: float
    largest_fit: int | None
    largest_fit_per_token_s: float | None


@dataclass(frozen=True)
class RegimeRow:
    """One of the paper's deployment regimes (section 5.2) as a predicate on the step's
    per-token terms (in units of compute): ``condition`` in words, the paper's batch
    advice, the levers this track has for it (``levers``: controls or options present),
    and whether the computed point is in it (``here``)."""

    key: str
    condition: str
    paper_batch: str
    levers: tuple[str, ...]
    here: bool


@dataclass(frozen=True)
class DecodeView:
    """One decode operating point and every number Part A quotes about it.

    Settings: device ``hw`` (``paper``: the paper's single PE), ``model``, ``mode``,
    ``batch`` (sequences), ``context_tokens``, precisions, ``tp`` devices per replica.
    ``here``: the step in both modes. ``balance``: B*, L* in ``mode``. ``weight_share``,
    ``kv_share``, ``overhead_share``: per-token weight, KV and overhead (with TP comm)
    time in units of one token's compute, so per token = compute x (w + 1 + k + o).
    ``knee_batch``: compute equals all memory time (None past L*). ``doubling_saving``:
    1 - t(2B)/t(B) per token (fraction; the ``per_token_2b`` equation prints t(2B) in the
    same units, TP comm grown with the batch). ``doubling_block``: why 2B is not a setting
    the saving may be quoted at ("" it is; "memory": it does not fit usable memory after
    the reserve, ``doubled_used_bytes``; "slider": past the largest batch offered) --
    ``doubled_comm_step_s``: the TP comm of one step at 2B, s --
    feasibility first, a saving is quoted only where 2B is one. ``compute_bound``: the
    compute term is the largest of the step (the only meaning of "compute-efficient").
    ``most_fit``: the most sequences of this context that fit memory, any whole number
    (the slider offers fewer batches; None when none fits or memory is not modelled).
    ``stack``: the software stack achievable runs, its fitted term and band
    (:class:`~labkit.plans.stacks.StackChoice`)."""

    hw: Hardware
    model: Model
    paper: bool
    mode: str
    batch: int
    context_tokens: int
    weight_bits: int
    kv_bits: int
    tp: int
    here: Mapping[str, DecodeRoofline]
    balance: Balance
    knee_batch: float | None
    doubling_saving: float
    memory: MemoryBudget
    serving: ServingPoint
    gain: BatchingGain
    regime_rows: tuple[RegimeRow, ...]
    derating_terms: tuple[DeratingTerm, ...]
    equations: Mapping[str, Equation]
    doubling_block: str = ""
    doubled_used_bytes: float = 0.0
    doubled_comm_step_s: float = 0.0
    most_fit: int | None = None
    batching: bool = True
    stack: StackChoice | None = None

    @property
    def band_step_s(self) -> tuple[float, float] | None:
        """(fastest, slowest) step real systems on the stack take where achievable says
        ``here["achievable"].step_s``, s (None: no band for the device's class)."""
        if self.stack is None or self.stack.band is None:
            return None
        a = float(self.here["achievable"].step_s)
        return a * self.stack.band.low, a * self.stack.band.high

    @property
    def doubled_batch(self) -> int:  # the batch doubling would reach, sequences
        return 2 * self.batch

    @property
    def doubling_fits(self) -> bool:  # 2B is a setting a saving may be quoted at
        return not self.doubling_block

    @property
    def point(self) -> DecodeRoofline:  # the step in the chosen mode
        return self.here[self.mode]

    @property
    def step_s(self) -> float:  # one step of ``batch`` sequences, s
        return float(self.point.step_s)

    @property
    def per_token_s(self) -> float:  # per generated token = step / batch, s
        return float(self.point.per_token_s)

    @property
    def step_terms(self) -> tuple[StepTerm, ...]:
        """The step's terms, overhead and TP comm only where non-zero (they add to
        :attr:`step_s`)."""
        return _step_terms(self.point)

    @property
    def weight_share(self) -> float:
        return float(self.point.weight_s) / float(self.point.compute_s)

    @property
    def kv_share(self) -> float:
        return float(self.point.kv_s) / float(self.point.compute_s)

    @property
    def overhead_share(self) -> float:
        p = self.point
        return (float(p.overhead_s) + float(p.comm_s)) / float(p.compute_s)

    @property
    def kv_share_of_step(self) -> float:
        return float(self.point.kv_step_s) / self.step_s

    @property
    def weight_share_of_step(self) -> float:
        return float(self.point.weight_step_s) / self.step_s

    @property
    def achievable_over_peak(self) -> float:  # achievable step over peak step (>= 1)
        return float(self.here["achievable"].step_s) / float(self.here["peak"].step_s)

    @property
    def stalled(self) -> bool:  # doubling the batch saves less than STALL per token
        return self.doubling_saving < STALL

    @property
    def over_memory(self) -> bool:  # the point does not fit memory (the paper's PE too)
        return bool(self.memory.over_budget)

    @property
    def compute_bound(self) -> bool:
        return str(self.point.regime) == "compute-bound"

    @property
    def overlapped(self) -> bool:  # compute per step outlasts weights + KV traffic
        p = self.point
        return float(p.compute_step_s) >= float(p.weight_step_s) + float(p.kv_step_s)

    @property
    def regime_key(self) -> str:  # the regime row the computed terms put the point in
        return next(r.key for r in self.regime_rows if r.here)


def _regime_rows(w: float, k: float, v: DecodeLevers) -> tuple[RegimeRow, ...]:
    """The four regime rows, the point's chosen by its per-token weight (w) and KV (k)
    shares, with the levers this track has at this point."""
    key = ("extreme" if k >= EXTREME_CONTEXT else "long" if k >= 1.0
           else "weights" if w > 1.0 else "serve")
    x = fmt_count(EXTREME_CONTEXT)
    rows = (
        ("weights", "weight fetch per token > compute, KV read < compute (B < B*, S < L*)",
         "raise B toward 2B*", v.weights),
        ("serve", "weight fetch ≤ compute, KV read < compute (B ≥ B*, S < L*)", "B ≈ 2B*",
         v.serve),
        ("long", f"compute ≤ KV read < {x} x compute (L* ≤ S < {x} L*)",
         "smaller B, more CP", v.long),
        ("extreme", f"KV read ≥ {x} x compute (S ≥ {x} L*)",
         "dedicated pool, few sequences", v.extreme),
    )
    return tuple(RegimeRow(k_, cond, pb, tuple(lv), k_ == key) for k_, cond, pb, lv in rows)


def paper_regime_rows(batch: float, context_tokens: float, b_star: float,
                      l_star: float) -> tuple[RegimeRow, ...]:
    """The regime rows at (B, S) read the paper's way: weight share B*/B, KV share S/L*
    (exact for a dense model at peak), no track levers."""
    none = DecodeLevers((), (), (), ())
    return _regime_rows(b_star / batch, context_tokens / l_star, none)


@dataclass(frozen=True)
class DecodeLevers:
    """The levers each regime row may name here, each checked to be available."""

    weights: tuple[str, ...]
    serve: tuple[str, ...]
    long: tuple[str, ...]
    extreme: tuple[str, ...]


def _levers(batch: int, fits_larger: bool, serving_fits: bool, lower_kv: bool,
            stalled: bool, oom: bool, axes: Sequence[str], batching: bool = True
            ) -> DecodeLevers:
    """Levers by row, the paper's §5.2 advice kept only where this track can act on it:
    controls on screen whose move is possible here, and later parts' options (``axes``:
    the track's design keys) the track has."""
    cp = ("context parallelism (CP, Part C)",) if "cp" in axes else ()
    dp = ("more replicas (DP, Part C)",) if "dp" in axes else ()
    ctx = ("a shorter context (Context, Part D)",) if "context_tokens" in axes else ()
    kv = ("a lower KV-cache precision (KV-cache precision)",) if lower_kv else ()
    # a device serving one user at a time has no batch to grow: not a lever there
    up = ("a larger batch (Batch)",) if batching and fits_larger and not stalled else ()
    near = ("B near 2B* (Batch)",) if batching and serving_fits else ()
    down = ("a smaller batch (Batch)",) if batching and batch > 1 and (stalled or oom) else ()
    return DecodeLevers(weights=up, serve=near + dp, long=kv + up + down + cp + ctx,
                        extreme=kv + down + cp + ctx)


def _largest_fit(hw: Hardware, m: Model, ctx: int, wb: int, kb: int, tp: int,
                 options: Sequence[int], analytic: bool, reserve: float) -> int | None:
    """The largest batch option that fits memory at ``ctx`` (the largest option when
    ``analytic``: memory not modelled); None when not even the smallest fits."""
    if analytic:
        return max(options)
    over = np.asarray(memory_budget(hw, m, ctx, np.asarray(options, float), wb, kb, tp,
                                    reserve).over_budget, dtype=bool)
    ok = [b for b, f in zip(options, over, strict=True) if not f]
    return max(ok) if ok else None


def _most_fit(hw: Hardware, m: Model, ctx: int, wb: int, kb: int, tp: int, analytic: bool,
              reserve: float, top: int = 1 << 16) -> int | None:
    """The most sequences of ``ctx`` tokens that fit usable memory after the reserve, any
    whole number up to ``top`` (None: none fits, or ``analytic``: memory not modelled).
    Memory grows with the batch, so the fitting batches are 1..n."""
    if analytic:
        return None
    batches = np.arange(1, top + 1, dtype=float)
    over = np.asarray(memory_budget(hw, m, ctx, batches, wb, kb, tp, reserve).over_budget,
                      dtype=bool)
    n = int(np.argmax(over)) if over.any() else top
    return n or None


def _gain(hw: Hardware, m: Model, ctx: int, wb: int, kb: int, tp: int, mode: Derating,
          top: int, to: int | None, analytic: bool, reserve: float) -> BatchingGain:
    """Per-token gain from B = 1 to ``to``, the largest batch option that fits."""
    if to is None:
        return BatchingGain(ctx, None, top, float("nan"), True, analytic, reserve)
    r = decode_roofline(hw, m, np.asarray([GAIN_FROM_BATCH, to], dtype=float), ctx, wb, kb,
                        tp=tp, mode=mode)
    t = np.asarray(r.per_token_s)
    return BatchingGain(ctx, to, top, float(t[0] / t[1]), to < top, analytic, reserve)


def _serving(hw: Hardware, m: Model, ctx: int, wb: int, kb: int, tp: int, mode: Derating,
             big: int | None, analytic: bool, floor: float, reserve: float) -> ServingPoint:
    sb = serving_batch(hw, m, wb, mode=mode)
    bs = np.asarray([sb / 2, sb, 2 * sb])
    r = decode_roofline(hw, m, bs, ctx, wb, kb, tp=tp, mode=mode)
    fits = (np.ones(3, bool) if analytic else
            ~np.asarray(memory_budget(hw, m, ctx, bs, wb, kb, tp, reserve).over_budget,
                        dtype=bool))
    big_t = (None if big is None else
             float(decode_roofline(hw, m, big, ctx, wb, kb, tp=tp, mode=mode).per_token_s))
    return ServingPoint(mode.name, sb, tuple(float(x) for x in np.asarray(r.per_token_s)),
                        tuple(float(x) for x in np.asarray(r.step_s)),
                        (bool(fits[0]), bool(fits[1]), bool(fits[2])), floor, big, big_t)


def _equations(hw: Hardware, m: Model, d: Derating, wb: int, kb: int, bal: Balance,
               v_terms: Sequence[StepTerm], one: DecodeRoofline,
               shares: tuple[float, float, float], ctx: int,
               doubled: tuple[float, float, float, float]) -> dict[str, Equation]:
    """The math peek's equations, each result computed from the terms it prints
    (``doubled``: the per-token weight, compute, KV and overhead + TP comm terms at 2B, in
    units of one token's compute at B)."""
    ai = hw.flops() * d.flop_efficiency / (hw.memory_bandwidth * d.bandwidth_efficiency)
    q = d.weight_bandwidth_efficiency(wb) / d.bandwidth_efficiency
    b_terms = [ai, bits_to_bytes(wb), 0.5, m.moe_sparsity if m.is_moe else 1.0, 1.0 / q]
    w, k, o = shares
    # KV bytes per token: elements per token x bytes each, as kv_bytes_per_token defines it
    kv_bpt = equation("kv_bpt", [float(m.kv_elements_per_token), bits_to_bytes(kb)],
                      "product", "B")
    eqs = {
        "ai": equation("AI", [hw.flops() * d.flop_efficiency,
                              hw.memory_bandwidth * d.bandwidth_efficiency], "quotient",
                       "FLOP/byte"),
        "b_star": equation("B*", b_terms, "product", "sequences"),
        "kv_bpt": kv_bpt,
        "l_star": equation("L*", [2.0 * m.block_params_active, ai * kv_bpt.result],
                           "quotient", "tokens"),
        "step": equation("step", [t.step_s * 1e3 for t in v_terms], "sum", "ms"),
        "per_token": equation("per token / compute", [w, 1.0, k] + ([o] if o > 0 else []),
                              "sum"),
        "per_token_2b": equation("per token at 2B / compute",
                                 list(doubled[:3]) + ([doubled[3]] if o > 0 else []), "sum"),
        "stall_batch": equation("4B*/(1 + S/L*)",
                                [4.0 * bal.b_star, 1.0 + ctx / bal.l_star], "quotient"),
        "serving": equation("2B*", [2.0, bal.b_star], "product", "sequences"),
    }
    gap = float(one.compute_step_s) - float(one.kv_step_s)
    if gap > 0:
        eqs["knee"] = equation("knee", [float(one.weight_step_s) * 1e3,
                                        float(one.compute_step_s) * 1e3,
                                        float(one.kv_step_s) * 1e3], "ratio", "sequences")
    return eqs


def _one_sequence(hw: Hardware, m: Model, ctx: int, wb: int, kb: int, tp: int,
                  mode: Derating) -> DecodeRoofline:
    """A one-sequence step without fixed overheads, LM head or comm: the knee's terms."""
    d = replace(mode, step_overhead_s=0.0, include_lm_head=False,
                layer_overhead_s=0.0, moe_layer_overhead_s=0.0, tp_allreduce=False)
    return decode_roofline(hw, m, 1, ctx, wb, kb, tp=tp, mode=d)


def decode_view(hw: Hardware, model: Model, *, batch: int, context_tokens: int,
                weight_bits: int, kv_bits: int, tp: int, mode: str, paper: bool = False,
                batch_options: Sequence[int] = (1,), kv_options: Sequence[int] = (),
                axes: Sequence[str] = (), reserve_fraction: float = 0.0,
                batching: bool = True, stack: str = NO_STACK) -> DecodeView:
    """Every number Part A shows at one point (see :class:`DecodeView`). ``paper``: the
    paper's single PE (memory not modelled: it holds no batch of the model);
    ``batch_options`` / ``kv_options``: the controls' values; ``axes``: the track's
    design keys (which later-part levers a regime row may name); ``reserve_fraction``:
    the memory the serving software keeps back (the track's, as Lab 1 counts it);
    ``batching``: the deployment can batch users (False: one user, so no batch lever);
    ``stack``: the software stack achievable runs (:mod:`labkit.plans.stacks`)."""
    b, ctx, wb, kb = int(batch), int(context_tokens), int(weight_bits), int(kv_bits)
    ds = {md: roof(md, hw, "decode", stack) for md in MODES}
    d = ds[mode]
    here = {md: decode_roofline(hw, model, b, ctx, wb, kb, tp=tp, mode=ds[md]) for md in MODES}
    bal = balance(hw, model, wb, kb, mode, stack)
    res = float(reserve_fraction)
    mem = memory_budget(hw, model, ctx, b, wb, kb, tp, res)
    pt = here[mode]
    saving = float(doubling_saving(hw, model, b, ctx, wb, kb, tp, d))
    c = float(pt.compute_s)
    shares = (float(pt.weight_s) / c, float(pt.kv_s) / c,
              (float(pt.overhead_s) + float(pt.comm_s)) / c)
    big = _largest_fit(hw, model, ctx, wb, kb, tp, batch_options, paper, res)
    gain = _gain(hw, model, ctx, wb, kb, tp, d, max(batch_options), big, paper, res)
    two = decode_roofline(hw, model, 2 * b, ctx, wb, kb, tp=tp, mode=d)
    doubled = (float(two.weight_s) / c, float(two.compute_s) / c, float(two.kv_s) / c,
               (float(two.overhead_s) + float(two.comm_s)) / c)
    mem2 = memory_budget(hw, model, ctx, 2 * b, wb, kb, tp, res)
    block = ("slider" if 2 * b > max(batch_options) else
             "memory" if bool(mem2.over_budget) and not paper else "")
    oom = bool(mem.over_budget) and not paper
    fits_larger = gain.batch_to is not None and gain.batch_to > b
    serving = _serving(hw, model, ctx, wb, kb, tp, d, big, paper,
                       float(pt.compute_s) + float(pt.kv_s), res)
    levers = _levers(b, fits_larger, serving.fits[1], any(k < kb for k in kv_options),
                     saving < STALL, oom, axes, batching)
    one = _one_sequence(hw, model, ctx, wb, kb, tp, d)
    terms = _step_terms(pt)
    return DecodeView(
        hw, model, paper, mode, b, ctx, wb, kb, tp, here, bal,
        knee_batch(hw, model, ctx, wb, kb, mode=d, tp=tp), saving, mem, serving, gain,
        _regime_rows(shares[0], shares[1], levers),
        derating_contributions(hw, model, b, ctx, wb, kb, tp, mode=ds["achievable"]),
        _equations(hw, model, d, wb, kb, bal, terms, one, shares, ctx, doubled),
        block, float(mem2.used_bytes), float(two.comm_step_s),
        _most_fit(hw, model, ctx, wb, kb, tp, paper, res), batching,
        stack_choice(hw, "decode", stack))


def _step_terms(p: DecodeRoofline) -> tuple[StepTerm, ...]:
    terms = [StepTerm("weight fetch", float(p.weight_step_s)),
             StepTerm("compute", float(p.compute_step_s)),
             StepTerm("KV read", float(p.kv_step_s)),
             StepTerm("overhead", float(p.overhead_step_s)),
             StepTerm("TP comm", float(p.comm_step_s))]
    return tuple(terms[:3]) + tuple(t for t in terms[3:] if t.step_s > 0)


def _fails(hw: Hardware, m: Model, p: Mapping[str, int], tp: int, mode: Derating,
           slo_s: float | None, reserve: float = 0.0) -> set[str]:
    """The checks a point fails: ``oom`` (memory) and ``slo`` (step over a TPOT SLO)."""
    b, ctx, wb, kb = p["batch"], p["context"], p["weight_bits"], p["kv_bits"]
    over = bool(memory_budget(hw, m, ctx, b, wb, kb, tp, reserve).over_budget)
    out = {"oom"} if over else set()
    if slo_s is not None and float(decode_roofline(hw, m, b, ctx, wb, kb, tp=tp,
                                                   mode=mode).step_s) > slo_s:
        out.add("slo")
    return out


def single_fixes(point: Mapping[str, int], options: Mapping[str, Sequence[int]],
                 fails: Callable[[Mapping[str, int]], set[str]]) -> dict[str, tuple[Move, ...]]:
    """For each check ``fails(point)`` names, every control of ``options`` that, moved
    alone to its nearest option that passes, fixes it (:func:`labkit.plans.moves.single_moves`,
    re-running the check)."""
    def passes(check: str) -> Callable[[Mapping[str, object]], bool]:
        return lambda p: check not in fails(cast(Mapping[str, int], p))
    return {check: single_moves(point, options, passes(check))
            for check in sorted(fails(point))}


def decode_fixes(hw: Hardware, m: Model, point: Mapping[str, int], tp: int, mode: str,
                 slo_s: float | None, options: Mapping[str, Sequence[int]],
                 reserve_fraction: float = 0.0,
                 stack: str = NO_STACK) -> dict[str, tuple[Move, ...]]:
    """:func:`single_fixes` of a decode point (``batch``, ``context``, ``weight_bits``,
    ``kv_bits``) for its memory (``oom``, after ``reserve_fraction``) and TPOT SLO
    (``slo``, on ``stack``) checks."""
    d = roof(mode, hw, "decode", stack)
    return single_fixes(point, options,
                        lambda p: _fails(hw, m, p, tp, d, slo_s, reserve_fraction))


def cnn_fixes(hw: Hardware, m: Model, point: Mapping[str, int], mode: str, deadline_s: float,
              options: Mapping[str, Sequence[int]],
              stack: str = NO_STACK) -> dict[str, tuple[Move, ...]]:
    """:func:`single_fixes` of a CNN pass (``weight_bits``, ``batch``) for its deadline
    and for its being memory-bound (``memory_bound``), on ``stack``."""
    d = roof(mode, hw, "cnn", stack)

    def fails(p: Mapping[str, int]) -> set[str]:
        r = cnn_inference_time(hw, m, p["weight_bits"], p["batch"], d)
        return ({"deadline"} if float(r.latency_s) > deadline_s else set()) | (
            {"memory_bound"} if str(r.regime) == "memory-bound" else set())
    return single_fixes(point, options, fails)
