"""Handheld: a transformer on a device the user owns (not rented), e.g. the iPhone.

A design is a precision pair and the longest conversation (``context_tokens``) the app
serves, checked against memory, TPOT, TTFT, quality and the battery budget. labkit's
reference: the target context at every precision pair; the least energy per day wins.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from labkit.core import validation as v
from labkit.core.format import fmt, fmt_count, fmt_energy, fmt_time, format_bytes
from labkit.core.grids import context_options
from labkit.physics import edge
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.memory import resident_weight_bytes
from labkit.physics.phases import prefill_time, request_phases
from labkit.physics.roofline import decode_roofline
from labkit.plans.scenarios.base import (
    Config,
    Constraint,
    Evaluation,
    Metrics,
    ReferenceDesign,
    Scenario,
)
from labkit.plans.scenarios.common import (
    DESIGN_MODE,
    active_seconds,
    allowed_precisions,
    constraint,
    context_bucket,
    context_tokens,
    quality_check,
)
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track


def _output_tokens(tr: Track) -> int:
    if tr.output_tokens is None:
        raise ValueError(f"track {tr.id!r} has no output_tokens")
    return int(tr.output_tokens)


def handheld_metrics(tr: Track, weight_bits: int, kv_bits: int,
                     context_tokens: int) -> dict[str, float]:
    """One on-device request whose conversation reaches ``context_tokens``.

    prompt = context - output tokens (at least 1); TTFT = prefill of the prompt; TPOT =
    the request's mean time per output token after the first, (e2e - TTFT) / (L - 1): one
    decode step (batch 1) at the mean context prompt + L/2 (the glossary's definition);
    ``last_step_s``: the slowest inter-token gap, the step at the full context; energy =
    power x (prefill + decode) from :func:`labkit.physics.phases.request_phases`; memory =
    resident weights + KV of the context. Achievable roofline.
    """
    hw = get_hardware(tr.hardware_id)
    m = get_model(tr.model_id)
    out = _output_tokens(tr)
    prompt = max(1, context_tokens - out)
    ph = request_phases(hw, m, prompt_tokens=prompt, output_tokens=out,
                        weight_bits=weight_bits, kv_bits=kv_bits, mode=DESIGN_MODE)
    last = float(decode_roofline(hw, m, 1, context_tokens, weight_bits, kv_bits,
                                 mode=DESIGN_MODE).step_s)
    w = resident_weight_bytes(m, weight_bits)
    kv = context_tokens * kv_bytes_per_token(m, kv_bits)
    per_day = tr.demand_rate_per_s * active_seconds(tr)
    energy = float(ph.energy_j or 0.0)
    return {"prompt_tokens": float(prompt), "ttft_s": ph.ttft_s,
            "tpot_s": float(ph.tpot_s or 0.0), "last_step_s": last,
            "request_s": ph.latency_s, "energy_j": energy, "weights_bytes": w,
            "kv_bytes": kv, "memory_bytes": w + kv,
            "usable_bytes": hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction),
            "requests_per_day": per_day,
            "daily_mwh": energy * per_day / edge.J_PER_MWH}


def handheld_curves(tr: Track, weight_bits: int, kv_bits: int,
                    contexts: object) -> dict[str, np.ndarray]:
    """:func:`handheld_metrics` over an array of contexts (the same formulas, vectorised:
    one prefill per prompt length, two roofline calls), for the live charts."""
    hw = get_hardware(tr.hardware_id)
    m = get_model(tr.model_id)
    ctx = np.asarray(contexts, dtype=float)
    out = _output_tokens(tr)
    prompts = np.maximum(1.0, ctx - out)
    prefill = np.asarray([prefill_time(hw, m, float(p), weight_bits, kv_bits, 1,
                                       DESIGN_MODE).total_s for p in prompts])
    mean = decode_roofline(hw, m, 1, prompts + out / 2.0, weight_bits, kv_bits,
                           mode=DESIGN_MODE)
    full = decode_roofline(hw, m, 1, ctx, weight_bits, kv_bits, mode=DESIGN_MODE)
    busy = prefill + (out - 1) * np.asarray(mean.step_s)
    energy = float(hw.power_w or 0.0) * busy
    mem = resident_weight_bytes(m, weight_bits) + ctx * kv_bytes_per_token(m, kv_bits)
    return {"memory_bytes": mem, "tpot_s": np.asarray(mean.step_s, dtype=float),
            "last_step_s": np.asarray(full.step_s, dtype=float),
            "ttft_s": prefill, "energy_j": energy}


def _constraints(tr: Track, weight_bits: int, kv_bits: int, ctx: int,
                 mt: Mapping[str, float]) -> list[Constraint]:
    target = context_tokens(tr)
    return [
        Constraint.compare("context", float(ctx), float(target), "tokens",
                           f"serves conversations of {ctx:,} tokens; the product needs "
                           f"{target:,}", sense="min", requirement=True),
        Constraint.compare("memory", mt["memory_bytes"], mt["usable_bytes"], "bytes",
                           f"{format_bytes(mt['weights_bytes'])} weights + "
                           f"{format_bytes(mt['kv_bytes'])} KV vs "
                           f"{format_bytes(mt['usable_bytes'])} the app may use"),
        Constraint.compare("tpot", mt["tpot_s"], tr.slo_s, "s",
                           f"TPOT (mean per reply token) at {ctx:,} tokens "
                           f"{fmt_time(mt['tpot_s'])} vs {fmt_time(tr.slo_s)}"),
        constraint("ttft", mt["ttft_s"] <= float(tr.ttft_slo_s or math.inf), mt["ttft_s"],
                   tr.ttft_slo_s, "s", f"prefill of {int(mt['prompt_tokens']):,} prompt "
                   f"tokens {fmt(mt['ttft_s'])} s vs {tr.ttft_slo_s} s"),
        quality_check(tr, weight_bits, kv_bits),
        Constraint.compare("energy", mt["daily_mwh"], tr.daily_budget, "mWh/day",
                           f"{fmt_count(mt['requests_per_day'])} requests/day x "
                           f"{fmt_energy(mt['energy_j'])} = {fmt_count(mt['daily_mwh'])} "
                           f"mWh/day vs {tr.budget_text}"),
    ]


def max_context(tr: Track) -> int | None:
    """Longest context option (powers of two and the target) any allowed design serves."""
    m = get_model(tr.model_id)
    opts = context_options(m.max_context, context_tokens(tr), 256)
    best = None
    for wb, kb in allowed_precisions(tr):
        if kb is None:
            continue
        for ctx in opts:
            if ctx <= int(tr.output_tokens or 0):
                continue
            mt = handheld_metrics(tr, wb, kb, ctx)
            if all(c.passed for c in _constraints(tr, wb, kb, ctx, mt) if c.name != "context"):
                best = ctx if best is None else max(best, ctx)
    return best


class Handheld(Scenario):
    """One user's device: the longest conversation within every budget, least energy."""

    id = "handheld"
    order = 20
    label = "handheld"
    design_keys = ("weight_bits", "kv_bits", "context_tokens")

    def applies_to(self, track: Track) -> bool:
        return track.is_transformer and track.cost_unit != "USD"

    def defaults(self, track: Track) -> Config:
        return {"weight_bits": track.weight_bits, "kv_bits": track.kv_bits,
                "context_tokens": context_tokens(track)}

    def validate(self, track: Track, raw: Mapping[str, object]) -> Config:
        cfg: Config = {"weight_bits": v.precision_bits("weight_bits", raw["weight_bits"]),
                       "kv_bits": v.precision_bits("kv_bits", raw["kv_bits"])}
        ctx = v.positive_int("context_tokens", raw["context_tokens"], minimum=2)
        m = get_model(track.model_id)
        if ctx > m.max_context:
            raise ValueError(f"context_tokens must be <= the model's max_context "
                             f"{m.max_context}, got {ctx}")
        cfg["context_tokens"] = ctx
        return cfg

    def evaluate(self, track: Track, config: Config) -> Evaluation:
        wb, kb, ctx = (int(config[k]) for k in self.design_keys)
        mt = handheld_metrics(track, wb, kb, ctx)
        return Evaluation.of(_constraints(track, wb, kb, ctx, mt),
                             {**mt, "daily_cost": mt["daily_mwh"]}, 1)

    def grid(self, track: Track) -> list[list[Config]]:
        """The target context at every allowed weight and KV precision (one group)."""
        allowed = allowed_precisions(track)
        bits = sorted({wb for wb, _ in allowed})
        kvs = sorted({kb for _, kb in allowed if kb is not None})
        return [[{"weight_bits": wb, "kv_bits": kb, "context_tokens": context_tokens(track)}
                 for wb in bits for kb in kvs]]

    def extras(self, track: Track) -> Metrics:
        return {"max_context": max_context(track)}

    def answer(self, reference: ReferenceDesign | None) -> str:
        mc = None if reference is None else reference.extras.get("max_context")
        return context_bucket(mc if isinstance(mc, int | float) else None)


SCENARIO = Handheld()
