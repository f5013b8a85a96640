"""When to stop adding an axis, expert memory, and one layout's time to first token.

The paper's add/stop rules (section 5.3) as predicates over one
:class:`~labkit.physics.parallelism.results.ParallelConfig`:

* **PP** stops paying once the pipeline *bubble* -- the share of a token cycle a stage
  sits idle -- exceeds :data:`PP_BUBBLE_STOP` (10 %).
* **DP** stops paying once a replica's batch falls below the critical batch ``B*``
  (:func:`labkit.physics.roofline.critical_batch`): below it each replica is weight-bound,
  so another replica re-reads all the weights for fewer tokens each.

:func:`config_at` evaluates one layout (the reference loop of :mod:`.search`, so the
numbers are those of :func:`~labkit.physics.parallelism.enumerate_configs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from labkit.core import validation as v
from labkit.core.units import bits_to_bytes
from labkit.physics.parallelism.formulas import layers_per_stage, read_inputs
from labkit.physics.parallelism.results import ParallelConfig
from labkit.physics.parallelism.search import _loop_config  # the reference loop
from labkit.physics.phases import PrefillTime
from labkit.physics.roofline import Derating
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model, get_model, require_transformer

PP_BUBBLE_STOP = 0.10  # paper section 5.3: stop adding PP when the bubble exceeds ~10 %


def config_at(hardware: str | Hardware, model: str | Model, context_tokens: int, batch: int,
              weight_bits: int, kv_bits: int, degrees: tuple[int, int, int, int, int], *,
              mode: str | Derating = "peak") -> ParallelConfig | None:
    """One (tp, cp, pp, dp, ep) deployment, as :func:`search_loop` computes it; None when
    it needs a link of zero bandwidth. Degrees must be positive integers (``ep`` dividing
    ``tp * cp * dp`` and the experts); raises ValueError naming the input otherwise."""
    tp, cp, pp, dp, ep = (v.positive_int(n, d) for n, d in
                          zip(("tp", "cp", "pp", "dp", "ep"), degrees, strict=True))
    x = read_inputs(hardware, model, context_tokens, batch, weight_bits, kv_bits, None, mode)
    experts = x.m.experts_total if x.m.is_moe else 1
    if (tp * cp * dp) % ep or experts % ep:
        raise ValueError(f"ep must divide tp*cp*dp = {tp * cp * dp} and the {experts} "
                         f"experts, got {ep}")
    return _loop_config(x, tp, cp, pp, dp, ep)


def micro_batches(batch_per_replica: Any, microbatch: Any) -> Any:
    """Micro-batches a replica keeps in flight: ``ceil(batch_per_replica / microbatch)``
    (at most ``pp``: one per stage)."""
    return -(-np.asarray(batch_per_replica) // np.asarray(microbatch))


def pipeline_bubble(pp: Any, micro: Any, stage_s: Any, token_s: Any) -> Any:
    """Share of a token cycle one pipeline stage is idle, 0-1.

    In one cycle (``token_s``: a sequence's next token passes all ``pp`` stages and the
    hand-offs) each stage runs one step of ``stage_s`` seconds for each of the ``micro``
    micro-batches in flight, so it is busy ``micro x stage_s`` and idle
    ``1 - micro x stage_s / token_s``: fewer micro-batches than stages and the hand-off
    time both open the bubble. 0 when ``pp = 1``.
    """
    busy = np.asarray(micro, dtype=float) * np.asarray(stage_s, dtype=float)
    bubble = 1.0 - busy / np.asarray(token_s, dtype=float)
    return np.where(np.asarray(pp) > 1, np.clip(bubble, 0.0, 1.0), 0.0)


@dataclass(frozen=True)
class StopCriteria:
    """The PP and DP stop rules at one layout.

    ``micro_batches``: in flight per replica; ``stage_s``: one stage step with its TP/CP/EP
    communication, s; ``bubble``: idle share of a stage (:func:`pipeline_bubble`);
    ``pp_stop``: ``pp > 1`` and bubble > :data:`PP_BUBBLE_STOP`. ``b_star``: critical batch,
    sequences; ``below_b_star``: a replica serves fewer sequences than ``b_star``;
    ``dp_stop``: ``dp > 1`` and below it.
    """

    pp: int
    micro_batches: int
    stage_s: float
    handoff_s: float
    token_s: float
    bubble: float
    pp_stop: bool
    dp: int
    batch_per_replica: int
    b_star: float
    below_b_star: bool
    dp_stop: bool


def stop_criteria(config: ParallelConfig, b_star: float) -> StopCriteria:
    """:class:`StopCriteria` of ``config`` with critical batch ``b_star`` (sequences)."""
    b = float(v.positive("b_star", b_star))
    c = config
    stage = (c.roofline_s + c.tp_allreduce_s + c.cp_ring_s + c.ep_alltoall_s) / c.pp
    micro = int(micro_batches(c.batch_per_replica, c.microbatch))
    bubble = float(pipeline_bubble(c.pp, micro, stage, c.per_token_latency_s))
    below = c.batch_per_replica < b
    return StopCriteria(
        pp=c.pp, micro_batches=micro, stage_s=stage, handoff_s=c.pp_handoff_s,
        token_s=c.per_token_latency_s, bubble=bubble,
        pp_stop=bool(c.pp > 1 and bubble > PP_BUBBLE_STOP), dp=c.dp,
        batch_per_replica=c.batch_per_replica, b_star=b, below_b_star=bool(below),
        dp_stop=bool(c.dp > 1 and below))


@dataclass(frozen=True)
class ExpertShare:
    """Routed experts on one device of the last pipeline stage.

    ``experts_per_device``: of each MoE layer's ``experts_total`` (``experts_total / ep``,
    each split ``tp / ep`` ways when ``ep < tp``); ``moe_layers``: MoE layers on the stage;
    ``bytes``: those experts' weights, bytes.
    """

    experts_total: int
    experts_per_device: float
    moe_layers: int
    bytes: float


def expert_share(model: str | Model, tp: int, pp: int, ep: int,
                 weight_bits: int = 16) -> ExpertShare:
    """Routed-expert weights one device holds: ``moe_layers x experts_total x expert_params
    / max(tp, ep) x bytes per weight`` (the convention of :mod:`labkit.physics.parallelism`:
    ``max(tp, ep)`` devices share each layer's experts). Dense models hold none."""
    m = require_transformer(get_model(model))
    t, p, e = (v.positive_int(n, d) for n, d in (("tp", tp), ("pp", pp), ("ep", ep)))
    wb = bits_to_bytes(v.precision_bits("weight_bits", weight_bits))
    if not m.is_moe:
        return ExpertShare(0, 0.0, 0, 0.0)
    ls = int(layers_per_stage(m.layers, p))
    dense_in = min(ls, max(0, m.dense_layers - (m.layers - ls)))
    moe = ls - dense_in
    g = max(t, e)
    return ExpertShare(m.experts_total, m.experts_total / g, moe,
                       moe * m.experts_total * m.expert_params / g * wb)


def context_parallel_ttft(prefill: PrefillTime, cp: int) -> float:
    """Time to first token of a prompt whose prefill (``prefill``, on ``tp`` devices) is
    also split over ``cp`` context-parallel ranks, s.

    Each rank computes the projections and its share of the (load-balanced) causal
    attention for ``1/cp`` of the prompt and writes that share's KV; every rank still reads
    its whole weight shard: ``(compute + attention + KV write) / cp + weights + overhead``.
    The ring exchange of K/V blocks is taken as hidden behind the attention compute (the
    paper's "overlappable"); it is not charged.
    """
    c = v.positive_int("cp", cp)
    p = prefill
    return ((p.compute_s + p.attention_s + p.kv_write_s) / c + p.weight_s + p.overhead_s)
