"""Lab 2 Part A (transformer): the part's results (the student's report and the tests'
view of the screen), read off one :class:`~labkit.plans.roofline.DecodeView`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from labkit.labs.accelerators.measured_points import MeasuredSummary
from labkit.plans.roofline import DecodeView
from labkit.plans.stacks import StackChoice


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def results(v: DecodeView, expected: str, measured: MeasuredSummary,
            paper_pair: tuple[float, float],
            gain_sweep: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
    """Every field the readout, callouts and prose quote, in JSON types. ``b_star`` and
    ``l_star`` are in ``mode`` (``balance_mode``); ``per_token_s`` is ``step_s`` / batch;
    ``batching_gain`` is B = 1 over ``batching_gain_batch`` (the largest batch that fits
    memory at this context; None when none does); ``gain_short`` / ``gain_long`` the same
    at the shortest and longest context of the gain chart (``gain_*_batch`` its batch)."""
    pt, bal, g, sp = v.point, v.balance, v.gain, v.serving
    gain, to = gain_sweep
    terms = sorted(v.derating_terms, key=lambda t: -t.added_step_s)
    return {
        "regime": str(pt.regime), "mode": v.mode, "batch": v.batch,
        "context_tokens": v.context_tokens, "weight_bits": v.weight_bits,
        "kv_bits": v.kv_bits, "tp": v.tp, "device": "paper" if v.paper else "track",
        "hardware": v.hw.name,
        "weight_step_s": float(pt.weight_step_s), "compute_step_s": float(pt.compute_step_s),
        "kv_step_s": float(pt.kv_step_s), "overhead_step_s": float(pt.overhead_step_s),
        "comm_step_s": float(pt.comm_step_s),
        "step_s": v.step_s, "per_token_s": v.per_token_s,
        "tokens_per_s": float(pt.tokens_per_s), "b_star": bal.b_star, "l_star": bal.l_star,
        "balance_mode": bal.mode, "knee_batch": v.knee_batch,
        "batching_gain": None if g.batch_to is None else g.gain,
        "batching_gain_batch": g.batch_to, "batching_gain_capped": g.capped,
        "batching_gain_span": g.label,
        "gain_short": _finite(float(gain[0])), "gain_short_batch": int(to[0]),
        "gain_long": _finite(float(gain[-1])), "gain_long_batch": int(to[-1]),
        "over_memory": v.over_memory, "doubling_saving": v.doubling_saving,
        "doubled_batch": v.doubled_batch, "doubling_block": v.doubling_block,
        "doubling_fits": v.doubling_fits,
        "stalled": v.stalled, "compute_bound": v.compute_bound,
        "used_bytes": float(v.memory.used_bytes),
        "capacity_bytes": float(v.memory.capacity_bytes),
        "achievable_over_peak": v.achievable_over_peak,
        "regime_rule": v.regime_key, "kv_share_of_step": v.kv_share_of_step,
        "serving_batch": sp.serving_batch, "serving_batch_fits": sp.fits[1],
        "per_token_at_serving_s": sp.per_token_s[1],
        "per_token_at_b_star_s": sp.per_token_s[0],
        "per_token_b1_s": paper_pair[0], "per_token_b256_s": paper_pair[1],
        "past_model_window": v.context_tokens > v.model.max_context, "expected": expected,
        **measured.as_results(),
        "largest_derating_terms": [[t.label, t.added_step_s] for t in terms[:2]],
        **stack_results(v.stack, v.band_step_s),
    }


def stack_results(c: StackChoice | None, band_s: tuple[float, float] | None
                  ) -> dict[str, Any]:
    """The stack achievable ran on, its term on the class line and the band here (s)."""
    return {"stack": None if c is None or not c.named else c.id,
            "stack_label": None if c is None or not c.named else c.label,
            "stack_scale": None if c is None else c.scale,
            "band_scope": None if c is None or c.band is None else c.band.scope,
            "band_s": None if band_s is None else list(band_s)}
