"""Parallel deployments of one transformer: TP x CP x PP x DP x EP, enumerated and chosen.

Every candidate is a set of power-of-two degrees. The conventions, stated once:

* **Devices.** ``devices = tp * cp * pp * dp``. Expert parallelism adds no devices: inside
  each pipeline stage the ``ep``-way expert group is formed from the ``tp * cp * dp``
  devices that already hold that stage, so ``ep`` must divide both ``tp * cp * dp`` and
  ``experts_total`` (``ep = 1`` for dense models). Rank order, innermost first, is
  tp, cp, dp, pp: a TP group spans ``tp`` consecutive devices, a CP group ``tp * cp``, an
  EP group ``ep``.
* **Weights (per device, elements).** Attention and dense FFN split ``tp`` ways, K/V
  projections replicated once ``tp`` exceeds the KV heads (exactly as
  :func:`labkit.physics.roofline.step_weight_params`). Routed experts are shared by
  ``g = max(tp, ep)`` devices: ``ep`` ranks each own ``experts_total / ep`` experts, each
  split over ``tp / ep`` expert-TP ranks when ``ep < tp``. Shared experts and the router
  split ``tp`` ways. Every stage holds ``ceil(layers / pp)`` layers. The **first** stage
  holds the first layers (an MoE model's leading dense layers) and the input embedding
  table; the **last** stage holds the last layers and the LM head; with ``pp = 1`` the one
  stage holds both tables, as in :func:`labkit.physics.roofline.memory_budget` (one shared table
  when ``model.tied_embeddings``). With ``pp > 1`` a tied table is needed on both end
  stages, so each holds a copy. Both tables are ``hidden x vocab`` split ``tp`` ways.
* **Binding device.** Whichever of the first and last stage uses more memory (their KV
  is equal; only the last stage holds the fp32 logits). Any middle stage holds a mix of
  the layer kinds at the two ends and no table, so it never uses more. The memory fields
  of a config describe that binding device.
* **Batch.** ``batch`` sequences in total; each DP replica serves
  ``batch_per_replica = ceil(batch / dp)``, split into pipeline micro-batches of
  ``microbatch = ceil(batch_per_replica / pp)`` sequences.
* **KV (per device, bytes).** ``batch_per_replica x ceil(context / cp) x kv_bytes_per_token
  x kv_fraction_per_device(tp) x layers_per_stage / layers``. MLA's latent is replicated
  on every TP rank (fraction 1).
* **Context parallelism (decode).** Each CP rank holds a ``1/cp`` slice of every
  sequence's KV and a full copy of its stage's weights (at the given ``tp``). For a new
  token every rank attends over its slice, then the ranks ring-all-reduce the partial
  attention outputs with their softmax statistics (running max and sum, fp32): per layer
  ``2 (cp - 1)/cp x q_heads/tp x (v_dim x 2 B + 2 x 4 B)`` bytes per device. KV blocks
  are never moved: at decode, one query against the whole context makes moving the KV
  the far larger message. CP therefore splits KV memory and KV-read time, not weights.
* **Communication volume, per generated token of one sequence, per device, bytes.** TP
  ring all-reduce twice per layer: ``2 x layers_per_stage x hidden x 2 B x 2 (tp - 1)/tp``.
  PP hand-off: ``hidden x 2 B`` across each stage boundary. EP all-to-all (dispatch and
  combine) per MoE layer: ``2 x moe_layers x hidden x 2 B x experts_active x (ep-1)/ep``.
* **Communication time (alpha-beta).** Each axis is charged on the link it crosses:
  the fast domain (``interconnect_bandwidth``, ``interconnect_latency_s``) when the
  group's span fits inside ``domain_size``, else the scale-out network
  (``scaleout_bandwidth``, ``scaleout_latency_s``). A collective costs
  ``messages x latency + bytes / bandwidth``; one micro-batch step sends each message
  once for all its ``microbatch`` tokens, so the latency is paid per step, the bytes per
  token. Messages per stage step: TP ``2 x layers_per_stage x 2 (tp - 1)`` (two ring
  all-reduces per layer, ``2 (tp - 1)`` ring steps each); CP
  ``layers_per_stage x 2 (cp - 1)`` (one ring all-reduce per layer); EP
  ``2 x moe_layers x (ep - 1)`` (dispatch and combine, ``ep - 1`` messages each); PP one
  message per stage boundary, on the fast link while consecutive stages share a domain
  and on the scale-out link for the boundaries that leave it. A deployment whose traffic
  would cross a link of zero bandwidth (a phone has no peers) is not a candidate at all.
* **Time.** One stage step of a micro-batch is the roofline of the last stage's device
  share: weight fetch + compute + KV read (+ overhead in ``achievable`` mode), added as
  in :mod:`labkit.physics.roofline`, plus the stage's TP/CP/EP communication time. An MoE step
  reads only the experts touched by the distinct tokens its expert group serves
  (:func:`labkit.physics.roofline.expected_experts_touched`), ``1/g`` of them per device; a
  group reaching past ``tp * cp`` devices serves several DP replicas' tokens. A
  sequence's next token waits for all ``pp`` stages in turn and the ``pp - 1`` hand-offs:
  ``per_token_latency_s = pp x (stage + its comm) + hand-offs``. The replica's
  micro-batches (up to ``pp`` of them) are in flight at once, one per stage, so every
  sequence gains one token per ``per_token_latency_s`` and
  ``throughput = batch / per_token_latency_s`` tokens/s for the whole deployment (all
  stages busy once ``batch_per_replica >= pp``).
* **Not modelled.** Hierarchical or tree all-reduce (a TP or CP group that spans domains
  runs one flat ring, every step paying the scale-out latency, so wide TP is charged
  more than NCCL's two-level algorithms would cost); concurrent all-to-all messages (EP
  messages are charged one after another); compute/communication overlap; prefill; link
  contention between groups sharing a NIC; and stage imbalance in time: every stage is
  timed as the last one, although an MoE model's first stage, holding dense layers, can
  be slower when experts are spread over many devices.

:func:`enumerate_configs` and :func:`search` are vectorised with numpy;
:func:`search_loop` is the per-configuration pure-Python reference they are tested
against. :func:`search` skips building the full :class:`ConfigTable` and turns only the
chosen and frontier rows into :class:`ParallelConfig` objects; the degree grid and the
per-``tp`` constants of a model are cached, since a sweep reuses them.

Modules: :mod:`.formulas` (validated inputs and the arithmetic both paths share),
:mod:`.criteria` (the paper's PP-bubble and DP critical-batch stop rules, expert memory
per device, a layout's TTFT, :func:`config_at` for one layout),
:mod:`.results` (:class:`ParallelConfig`, :class:`ConfigTable`), :mod:`.vectorised`
(:func:`enumerate_configs`) and :mod:`.search` (:func:`search`, :func:`search_loop`); every
public name is importable from here.
"""

from labkit.physics.parallelism.criteria import (
    PP_BUBBLE_STOP,
    ExpertShare,
    StopCriteria,
    config_at,
    context_parallel_ttft,
    expert_share,
    micro_batches,
    pipeline_bubble,
    stop_criteria,
)
from labkit.physics.parallelism.formulas import (
    ACT_BYTES,
    CP_BLOCK_TOKENS,
    DEFAULT_MAX_DEVICES,
    LINKS,
    LOGIT_BYTES,
    STAT_BYTES,
    attention_params_per_device,
    cp_ring_bytes,
    cp_ring_messages,
    ep_alltoall_bytes,
    ep_alltoall_messages,
    layers_per_stage,
    pp_handoff_bytes,
    tp_allreduce_bytes,
    tp_allreduce_messages,
)
from labkit.physics.parallelism.results import ConfigTable, ParallelConfig
from labkit.physics.parallelism.search import ParallelismSearch, search, search_loop
from labkit.physics.parallelism.vectorised import clear_caches, enumerate_configs

__all__ = [
    "ACT_BYTES",
    "CP_BLOCK_TOKENS",
    "DEFAULT_MAX_DEVICES",
    "LINKS",
    "LOGIT_BYTES",
    "PP_BUBBLE_STOP",
    "STAT_BYTES",
    "ConfigTable",
    "ExpertShare",
    "ParallelConfig",
    "ParallelismSearch",
    "StopCriteria",
    "attention_params_per_device",
    "clear_caches",
    "config_at",
    "context_parallel_ttft",
    "cp_ring_bytes",
    "cp_ring_messages",
    "enumerate_configs",
    "ep_alltoall_bytes",
    "ep_alltoall_messages",
    "expert_share",
    "layers_per_stage",
    "micro_batches",
    "pipeline_bubble",
    "pp_handoff_bytes",
    "search",
    "search_loop",
    "stop_criteria",
    "tp_allreduce_bytes",
    "tp_allreduce_messages",
]
