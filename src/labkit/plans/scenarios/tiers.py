"""The paper's deployment tiers (section 5.2) on a fleet track's device, and its SLO classes.

One base model is served from several replica pools, routed by the request's context: TP
fixed at the KV heads inside a fast domain, CP growing with the context, the batch
shrinking to hold TPOT. :data:`TIERS` carries the paper's numbers; :func:`tier_rows`
evaluates each tier (and the student's own layout) with
:func:`labkit.physics.parallelism.config_at` for memory and TPOT and the prefill physics
(:func:`labkit.physics.phases.prefill_time`, split over CP ranks by
:func:`labkit.physics.parallelism.context_parallel_ttft`) for TTFT.
"""

from __future__ import annotations

from dataclasses import dataclass

from labkit.core import validation as v
from labkit.physics.capacity import SLO_TARGETS
from labkit.physics.parallelism import ParallelConfig, config_at, context_parallel_ttft
from labkit.physics.phases import prefill_time
from labkit.plans.scenarios.common import DESIGN_MODE, serving_device
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model, get_model
from labkit.tracks import Track

__all__ = ["TIERS", "Tier", "TierRow", "layout_ttft", "slo_met", "tier_for_context",
           "tier_rows", "tier_tp"]


@dataclass(frozen=True)
class Tier:
    """One replica pool of the paper's templates: ``cp`` x TP devices, contexts up to
    ``max_context`` tokens, ``batch`` sequences per replica."""

    name: str
    cp: int
    max_context: int
    batch: int


TIERS = (Tier("Small", 1, 32_768, 64), Tier("Medium", 4, 131_072, 32),
         Tier("Large", 32, 1_048_576, 4))
"""Paper section 5.2, sample deployment tiers (CP x TP = 1x8, 4x8, 32x8; max S_kv 32k, 128k,
1M; typical B 64, 32, 4)."""


@dataclass(frozen=True)
class TierRow:
    """One row of the tier table: a layout at a context and batch, as labkit prices it.

    ``config`` is None when the layout is not a candidate (``why`` says so); ``ttft_s``:
    prefill of ``prompt_tokens``; ``met``: the tightest SLO class (voice, chat, batch)
    whose TTFT and TPOT bounds hold ("" when it does not fit in memory);
    ``capped``: the tier's context was cut to the model's limit.
    """

    label: str
    tp: int
    cp: int
    devices: int
    context: int
    capped: bool
    batch: int
    prompt_tokens: int
    config: ParallelConfig | None
    ttft_s: float
    met: str
    why: str = ""

    @property
    def fits(self) -> bool:
        return self.config is not None and self.config.fits

    @property
    def tpot_s(self) -> float | None:
        return None if self.config is None else self.config.per_token_latency_s


def tier_tp(hw: Hardware, m: Model) -> int:
    """TP of every tier: the KV heads (GQA) or the fast domain (MLA), within the fast
    domain and the query heads -- the paper's "TP fixed to match h_kv" (8 on an HGX node)."""
    heads = hw.domain_size if m.uses_mla else m.kv_heads
    return max(1, min(heads, hw.domain_size, m.q_heads))


def slo_met(ttft_s: float, tpot_s: float) -> str:
    """The tightest SLO class whose TTFT and TPOT upper bounds both hold: ``voice``,
    ``chat``, else ``batch`` (priced on throughput, no latency bound)."""
    for name, t in SLO_TARGETS.items():
        if t.ttft_s is None or t.tpot_s is None:
            continue
        if ttft_s <= t.ttft_s[1] and tpot_s <= t.tpot_s[1]:
            return name
    return "batch"


def tier_for_context(context: int) -> Tier | None:
    """The smallest tier whose context reaches ``context`` tokens (None: beyond them all)."""
    ctx = v.positive_int("context", context)
    return next((t for t in TIERS if ctx <= t.max_context), None)


def layout_ttft(hw: Hardware, m: Model, prompt_tokens: int, weight_bits: int, kv_bits: int,
                tp: int, cp: int) -> float:
    """Prefill of ``prompt_tokens`` on ``tp`` TP x ``cp`` CP devices (design roofline), s."""
    pre = prefill_time(hw, m, prompt_tokens, weight_bits, kv_bits, tp, DESIGN_MODE)
    return context_parallel_ttft(pre, cp)


def _row(hw: Hardware, m: Model, label: str, deg: tuple[int, int, int, int, int],
         context: int, batch: int, prompt: int, wb: int, kb: int, capped: bool) -> TierRow:
    tp, cp, pp, dp, _ = deg
    why = ""
    try:
        cfg = config_at(hw, m, context, batch, wb, kb, deg, mode=DESIGN_MODE)
    except ValueError as e:
        cfg, why = None, str(e)
    if cfg is None and not why:
        why = "needs a link the hardware does not have"
    ttft = layout_ttft(hw, m, prompt, wb, kb, tp, cp)
    met = "" if cfg is None or not cfg.fits else slo_met(ttft, cfg.per_token_latency_s)
    return TierRow(label, tp, cp, tp * cp * pp * dp, context, capped, batch, prompt, cfg,
                   ttft, met, why)


def tier_rows(tr: Track, model: str | Model, weight_bits: int, kv_bits: int,
              yours: tuple[tuple[int, int, int, int, int], int, int] | None = None
              ) -> tuple[TierRow, ...]:
    """Each of :data:`TIERS` on the track's device (memory after its serving reserve,
    :func:`~labkit.plans.scenarios.common.serving_device`) with ``model`` (context capped at the
    model's), then -- when given -- ``yours``: (degrees, context, batch) labelled "yours".

    A row's prompt fills its context but for the track's output tokens.
    """
    hw, m = serving_device(tr), get_model(model)
    out_tokens = int(tr.output_tokens or 0)
    tp = tier_tp(hw, m)
    rows = []
    for t in TIERS:
        ctx = min(t.max_context, m.max_context)
        rows.append(_row(hw, m, t.name, (tp, t.cp, 1, 1, 1), ctx, t.batch,
                         max(1, ctx - out_tokens), weight_bits, kv_bits, ctx < t.max_context))
    if yours is not None:
        deg, ctx, b = yours
        rows.append(_row(hw, m, "yours", deg, ctx, b, max(1, ctx - out_tokens),
                         weight_bits, kv_bits, False))
    return tuple(rows)
