"""Lab 2 Part C of a fleet: one computation per quantity, frozen results with units (Part
B's sizing is :mod:`.capacity`, re-exported here: :class:`FleetSizing`, :func:`size_fleet`).

Part C (parallelism) reads :class:`LayoutEval` from :class:`FleetLayouts`: one TP x CP x PP
x DP (x EP) layout of a symptom's workload, its decode step (``step_s``; per generated
token = ``step_s / B``), the PP and DP stop rules with the step's terms
(:class:`StepTerms`), its prefill and what a colocated prefill does to TPOT
(:class:`LayoutPrefill`; TPOT is the mean time per output token after the first, a single
prefill-stalled step is an *inter-token gap*), the routed-expert share and the next layout
along the symptom's axis (only when it is a layout :func:`not_candidate_reason` accepts).

Recovery hints are :class:`Move` objects found by :func:`single_moves`: a control on
screen and a value of it that, moved alone, makes the failing check pass.

Physics result types the views read are re-exported here (:class:`ParallelConfig`,
:class:`StopCriteria`, :class:`ExpertShare`, :class:`Sizing`, ...).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from labkit.core.format import fmt_time
from labkit.physics.capacity import SLO_TARGETS, Sizing, SloTarget
from labkit.physics.parallelism import (
    PP_BUBBLE_STOP,
    ConfigTable,
    ExpertShare,
    ParallelConfig,
    ParallelismSearch,
    StopCriteria,
    expert_share,
    micro_batches,
    pipeline_bubble,
    search,
    stop_criteria,
)
from labkit.physics.roofline import balance_context, critical_batch, decode_roofline
from labkit.plans.moves import Move, single_moves
from labkit.plans.scenarios.common import (
    BATCH_SLO_TPOT_S,
    DESIGN_MAX_DEVICES,
    DESIGN_MODE,
    fleet_users,
    memory_basis,
    serving_device,
    slo_class,
    slo_tpot,
)
from labkit.plans.scenarios.tiers import TierRow, layout_ttft, tier_for_context, tier_rows
from labkit.plans.workload import (
    saturated_prefill_share,
    stalled_tpot_s,
)
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model, get_model
from labkit.scenarios.fleet.plan.capacity import (
    MAX_REPLICA_DEVICES,
    FleetSizing,
    fleet_hook,
    layout_label,
    size_fleet,
)
from labkit.scenarios.fleet.plan.scenario import (
    AXES,
    fleet_models,
    fleet_table,
    not_candidate_reason,
)
from labkit.tracks import Track

__all__ = [
    "AXES", "BATCH_SLO_TPOT_S", "DESIGN_MAX_DEVICES", "DESIGN_MODE", "MAX_REPLICA_DEVICES",
    "PP_BUBBLE_STOP", "SLO_TARGETS", "BStar", "ConfigTable", "ExpertShare", "FleetLayouts",
    "FleetSizing", "LayoutEval", "LayoutPrefill", "Move", "ParallelConfig",
    "ParallelismSearch", "Preset", "Sizing", "SloTarget", "StepTerms", "StopCriteria",
    "StopSweep", "TierRow", "fleet_hook", "fleet_models", "fleet_users", "layout_label",
    "memory_basis",
    "single_moves", "size_fleet", "slo_class", "slo_tpot", "tier_for_context",
]

# -- Part C: one layout of a symptom's workload ----------------------------------------------

@dataclass(frozen=True)
class Preset:
    """A workload that shows one symptom: ``batch`` sequences of ``context`` tokens within
    the TPOT budget ``slo`` (s), and the axis the paper adds first for it (``first``:
    how the paper names that move)."""

    label: str
    batch: int
    context: int
    slo: float
    axis: str
    first: str


@dataclass(frozen=True)
class BStar:
    """The critical batch B* (sequences) of a model on a device, in roofline ``mode``."""

    value: float
    mode: str


@dataclass(frozen=True)
class StepTerms:
    """One replica's decode step split by the decode roofline (TP ``tp``, the KV read
    split over ``cp`` ranks), s: weights, compute, KV read, overhead + TP communication
    (``overhead_s``; its parts ``fixed_s``, the fixed overhead, and ``comm_s``, the TP
    all-reduce, as Part A's math peek prints them).
    ``largest``: the term that binds; ``l_star``: the balance context L* (tokens, mode
    ``mode``); ``knee_batch``: B*/(1 - S/L*), the batch at which compute reaches weights +
    KV (inf when S >= L*: the KV read grows as fast as the compute)."""

    weight_s: float
    compute_s: float
    kv_s: float
    overhead_s: float
    largest: str
    l_star: float
    knee_batch: float
    mode: str
    fixed_s: float = 0.0
    comm_s: float = 0.0


@dataclass(frozen=True)
class LayoutPrefill:
    """A layout's prefill and what it does to decode when they share a replica.

    ``ttft_s``: prefill of ``prompt_tokens`` on the layout's TP x CP (s);
    ``step_s``: the decode step (s); ``output_tokens``: L. TPOT (mean time per output token
    after the first, per request) decode-only is ``step_s``. Colocated with every slot full,
    the B slots are each refilled about once during a request's L - 1 tokens and each
    refill's prefill stalls the step: ``tpot_colocated_s`` = step + B ttft / (L - 1); the
    worst inter-token gap (one stalled step) is ``worst_gap_s`` = step + ttft.
    """

    prompt_tokens: int
    ttft_s: float
    ttft_slo_s: float | None
    tpot_slo_s: float
    step_s: float
    output_tokens: int
    batch_per_replica: int

    @property
    def ttft_missed(self) -> bool:
        return self.ttft_slo_s is not None and self.ttft_s > self.ttft_slo_s

    @property
    def stalls_per_request(self) -> int:
        """Prefills that stall a request's decode, about one per slot of the full batch."""
        return max(0, self.batch_per_replica)

    @property
    def worst_gap_s(self) -> float:
        return self.step_s + self.ttft_s

    @property
    def tpot_colocated_s(self) -> float:
        """TPOT with every slot full and each slot's prefill on the same replica
        (:func:`labkit.plans.workload.stalled_tpot_s` at the saturated prefill share)."""
        share = saturated_prefill_share(self.batch_per_replica, self.step_s, self.ttft_s,
                                        self.output_tokens)
        return float(stalled_tpot_s(self.step_s, share))

    @property
    def tpot_disaggregated_s(self) -> float:
        return self.step_s

    @property
    def colocated_missed(self) -> bool:
        return self.tpot_colocated_s > self.tpot_slo_s

    @property
    def disaggregate(self) -> bool:
        """Colocated prefills push the mean TPOT over budget; decode alone meets it."""
        return self.colocated_missed and self.tpot_disaggregated_s <= self.tpot_slo_s


@dataclass(frozen=True)
class LayoutEval:
    """One layout of symptom ``key``'s workload on ``model``.

    ``config`` None: not a layout (``reason`` says why). ``next_degrees``: the symptom's
    axis doubled; ``next_config`` None when that is not a layout (``next_reason``).
    ``step_s``: the decode step (s; every sequence gains one token per step, so it is each
    sequence's decode-only TPOT); ``per_token_s`` = step / B (per generated token).
    """

    key: str
    model: Model
    preset: Preset
    degrees: tuple[int, ...]
    next_degrees: tuple[int, ...]
    config: ParallelConfig | None
    reason: str
    next_config: ParallelConfig | None
    next_reason: str
    stop: StopCriteria | None
    terms: StepTerms | None
    share: ExpertShare
    prefill: LayoutPrefill | None
    b_star: BStar

    @property
    def devices(self) -> int:
        return self.degrees[0] * self.degrees[1] * self.degrees[2] * self.degrees[3]

    @property
    def step_s(self) -> float | None:
        return None if self.config is None else self.config.per_token_latency_s

    @property
    def per_token_s(self) -> float | None:
        c = self.config
        return None if c is None else c.per_token_latency_s / max(1, c.batch_per_replica)

    @property
    def meets_slo(self) -> bool | None:
        return None if self.config is None else self.config.per_token_latency_s <= self.preset.slo

    @property
    def comm_dominates(self) -> bool:
        c = self.config
        return c is not None and c.comm_s > c.roofline_s

    @property
    def crosses_scaleout(self) -> bool:
        c = self.config
        return c is not None and "scaleout" in (c.tp_link, c.cp_link, c.pp_link, c.ep_link)

    @property
    def past_kv_heads(self) -> bool:
        return (not self.model.uses_mla) and self.degrees[0] > self.model.kv_heads


@dataclass(frozen=True)
class StopSweep:
    """The symptom's axis swept over its degrees, the others fixed: only layouts that
    exist (finite values). ``degrees``/``step_ms``: the decode step, ms; ``comm_degrees``/
    ``comm_ms``: its communication where positive (log axis); ``rule_degree``: first degree
    at which the paper's stop rule fires (None: none); ``domain_degree``: the degree at
    which the group leaves the fast domain (None: off the sweep); ``kv_heads``: the TP
    degree past the KV heads (None: not a TP sweep or MLA)."""

    axis: str
    degrees: tuple[float, ...]
    step_ms: tuple[float, ...]
    comm_degrees: tuple[float, ...]
    comm_ms: tuple[float, ...]
    rule_degree: int | None
    domain_degree: float | None
    kv_heads: float | None
    max_degree: float


class FleetLayouts:
    """Part C's computations for one fleet track (tables, searches and B* cached)."""

    def __init__(self, track: Track) -> None:
        self.track = track
        self.hw: Hardware = serving_device(track)
        self.memory_basis = memory_basis(track)
        self.models: dict[str, Model] = {mid: get_model(mid) for mid in fleet_models(track)}
        self.wb, self.kb = int(track.weight_bits), int(track.kv_bits or 16)
        self._presets: dict[str, dict[str, Preset]] = {}
        self._tables: dict[tuple[str, str], tuple[ConfigTable, dict[tuple[int, ...], int]]] = {}
        self._searches: dict[tuple[str, str], ParallelismSearch | None] = {}
        self._b_star: dict[str, BStar] = {}
        self._evals: dict[tuple[str, str, tuple[int, ...]], LayoutEval] = {}

    # -- workloads, tables, searches --------------------------------------------------------
    def presets_for(self, m: Model) -> dict[str, Preset]:
        """The symptom workloads for model ``m`` (contexts capped at its limit; cached)."""
        if m.id not in self._presets:
            self._presets[m.id] = self._make_presets(m)
        return self._presets[m.id]

    def _make_presets(self, m: Model) -> dict[str, Preset]:
        tr = self.track
        ctx0, b0, long_ctx = int(tr.context_tokens or 0), int(tr.batch_size), m.max_context
        voice = SLO_TARGETS["voice"].tpot_s
        tight = float(voice[0]) if voice is not None else tr.slo_s / 2
        rows = [("weights", "Weight memory doesn't fit (the track's own workload)", b0, ctx0,
                 tr.slo_s, "tp", "TP within a fast domain"),
                ("long_kv", "KV of ONE long sequence", 1, long_ctx, tr.slo_s, "cp", "CP"),
                ("many_kv", "KV for MANY sequences", 4 * b0, ctx0, tr.slo_s, "dp",
                 "DP replicas"),
                ("tpot", f"Single-request TPOT ({fmt_time(tight)})", 1, ctx0, tight, "tp",
                 "TP inside the fast domain"),
                ("throughput", "Aggregate throughput", 16 * b0, ctx0, tr.slo_s, "dp",
                 "outer DP"),
                ("nodes", "Model spans multiple nodes", b0, 8 * ctx0, tr.slo_s, "pp",
                 "TP inside a node, PP across nodes")]
        if any(x.is_moe for x in self.models.values()):
            rows.append(("moe", "MoE expert weight memory", b0, ctx0, tr.slo_s, "ep", "EP"))
        return {k: Preset(label, b, min(c, long_ctx), slo, axis, first)
                for k, label, b, c, slo, axis, first in rows}

    def table_for(self, model_id: str, key: str
                  ) -> tuple[ConfigTable, dict[tuple[int, ...], int]]:
        """Every layout of symptom ``key``'s workload with ``model_id`` (cached)."""
        if (model_id, key) not in self._tables:
            p = self.presets_for(self.models[model_id])[key]
            self._tables[(model_id, key)] = fleet_table(self.track, self.wb, self.kb,
                                                        p.context, p.batch, model_id)
        return self._tables[(model_id, key)]

    def search_for(self, model_id: str, key: str) -> ParallelismSearch | None:
        """labkit's fewest-device layout of that workload (None: nothing fits; cached)."""
        if (model_id, key) not in self._searches:
            p = self.presets_for(self.models[model_id])[key]
            try:
                sr: ParallelismSearch | None = search(
                    self.hw, model_id, p.context, p.batch, self.wb, self.kb,
                    max_devices=DESIGN_MAX_DEVICES, latency_slo_s=p.slo, mode=DESIGN_MODE)
            except ValueError:
                sr = None
            self._searches[(model_id, key)] = sr
        return self._searches[(model_id, key)]

    def b_star(self, model_id: str) -> BStar:
        """Critical batch B* at the track's weight precision, design (achievable) mode."""
        if model_id not in self._b_star:
            self._b_star[model_id] = BStar(float(critical_batch(
                self.hw, model_id, self.wb, mode=DESIGN_MODE)), DESIGN_MODE)
        return self._b_star[model_id]

    # -- one layout -------------------------------------------------------------------------
    def _terms(self, m: Model, cfg: ParallelConfig, context: int) -> StepTerms:
        r = decode_roofline(self.hw, m, cfg.batch_per_replica, context, self.wb, self.kb,
                            tp=cfg.tp, mode=DESIGN_MODE)
        w, c = float(r.weight_step_s), float(r.compute_step_s)
        k, o = float(r.kv_step_s) / cfg.cp, float(r.overhead_step_s) + float(r.comm_step_s)
        names = ("weights", "compute", "kv", "overhead")
        largest = names[int(np.argmax([w, c, k, o]))]
        l_star = float(balance_context(self.hw, m, self.kb, mode=DESIGN_MODE))
        b = self.b_star(m.id).value
        knee = b / (1 - context / l_star) if context < l_star else math.inf
        return StepTerms(w, c, k, o, largest, l_star, knee, DESIGN_MODE,
                         float(r.overhead_step_s), float(r.comm_step_s))

    def evaluate(self, model_id: str, key: str, degrees: Sequence[int]) -> LayoutEval:
        """Your layout ``degrees`` (tp, cp, pp, dp, ep) of symptom ``key`` on ``model_id``
        (cached)."""
        ck = (model_id, key, tuple(int(d) for d in degrees))
        if ck not in self._evals:
            self._evals[ck] = self._evaluate(model_id, key, ck[2])
        return self._evals[ck]

    def _evaluate(self, model_id: str, key: str, degrees: tuple[int, ...]) -> LayoutEval:
        tr, m = self.track, self.models[model_id]
        p = self.presets_for(m)[key]
        table, index = self.table_for(m.id, key)
        deg = tuple(int(d) for d in degrees)
        nxt = list(deg)
        nxt[AXES.index(p.axis)] *= 2
        row, row2 = index.get(deg), index.get(tuple(nxt))
        cfg = None if row is None else table.config(row)
        cfg2 = None if row2 is None else table.config(row2)
        why = "" if cfg is not None else not_candidate_reason(tr, deg, p.batch, p.context, m.id)
        why2 = "" if cfg2 is not None else not_candidate_reason(tr, tuple(nxt), p.batch,
                                                                  p.context, m.id)
        pre = None
        if cfg is not None:
            prompt = max(1, p.context - int(tr.output_tokens or 0))
            ttft = layout_ttft(self.hw, m, prompt, self.wb, self.kb, deg[0], deg[1])
            pre = LayoutPrefill(prompt, ttft, tr.ttft_slo_s, p.slo, cfg.per_token_latency_s,
                                int(tr.output_tokens or 1), cfg.batch_per_replica)
        return LayoutEval(
            key=key, model=m, preset=p, degrees=deg, next_degrees=tuple(nxt), config=cfg,
            reason=why, next_config=cfg2, next_reason=why2,
            stop=None if cfg is None else stop_criteria(cfg, self.b_star(m.id).value),
            terms=None if cfg is None else self._terms(m, cfg, p.context),
            share=expert_share(m, deg[0], deg[2], deg[4], self.wb), prefill=pre,
            b_star=self.b_star(m.id))

    def tiers(self, lay: LayoutEval) -> tuple[TierRow, ...]:
        """The paper's tiers with this model, and your layout's row when it is one."""
        yours = None if lay.config is None else (
            lay.degrees, lay.preset.context, lay.preset.batch)
        return tier_rows(self.track, lay.model, self.wb, self.kb, yours)  # type: ignore[arg-type]

    # -- the stop sweep ---------------------------------------------------------------------
    def _sweep_rows(self, lay: LayoutEval, opts: Sequence[int]) -> list[int | None]:
        _, index = self.table_for(lay.model.id, lay.key)
        ai = AXES.index(lay.preset.axis)
        rows = []
        for dgr in opts:
            trial = list(lay.degrees)
            trial[ai] = dgr
            rows.append(index.get(tuple(trial)))
        return rows

    def stop_rule_degree(self, lay: LayoutEval, opts: Sequence[int]) -> int | None:
        """The first degree of the symptom's axis at which the paper's stop rule fires
        (PP: bubble > :data:`PP_BUBBLE_STOP`; DP: replica batch below B*), the other degrees
        yours; None when the axis has no such rule or it never fires on the sweep."""
        axis = lay.preset.axis
        if axis not in ("pp", "dp"):
            return None
        t, _ = self.table_for(lay.model.id, lay.key)
        b_star = self.b_star(lay.model.id).value
        for dgr, r in zip(opts, self._sweep_rows(lay, opts), strict=True):
            if r is None or dgr == 1:
                continue
            if axis == "dp":
                fires = bool(t.batch_per_replica[r] < b_star)
            else:
                stage = (t.roofline_s[r] + t.tp_allreduce_s[r] + t.cp_ring_s[r]
                         + t.ep_alltoall_s[r]) / t.pp[r]
                micro = micro_batches(t.batch_per_replica[r], t.microbatch[r])
                fires = bool(pipeline_bubble(t.pp[r], micro, stage, t.per_token_latency_s[r])
                             > PP_BUBBLE_STOP)
            if fires:
                return int(dgr)
        return None

    def sweep(self, lay: LayoutEval, opts: Sequence[int]) -> StopSweep:
        """:class:`StopSweep` of the symptom's axis over ``opts`` (its degrees on screen)."""
        t, _ = self.table_for(lay.model.id, lay.key)
        axis, deg = lay.preset.axis, lay.degrees
        xs, ys, cx, cy = [], [], [], []
        for dgr, r in zip(opts, self._sweep_rows(lay, opts), strict=True):
            if r is None:
                continue
            xs.append(float(dgr))
            ys.append(float(t.per_token_latency_s[r]) * 1e3)
            comm = float(t.tp_allreduce_s[r] + t.cp_ring_s[r] + t.pp_handoff_s[r]
                         + t.ep_alltoall_s[r]) * 1e3
            if comm > 0:
                cx.append(float(dgr))
                cy.append(comm)
        span_before = {"tp": 1, "cp": deg[0], "pp": deg[0] * deg[1] * deg[3],
                       "dp": deg[0] * deg[1], "ep": 1}[axis]
        dom = self.hw.domain_size / max(1, span_before)
        top = float(max(2, opts[-1]))
        return StopSweep(
            axis=axis, degrees=tuple(xs), step_ms=tuple(ys), comm_degrees=tuple(cx),
            comm_ms=tuple(cy), rule_degree=self.stop_rule_degree(lay, opts),
            domain_degree=float(dom) if 1 <= dom <= opts[-1] else None,
            kv_heads=(float(lay.model.kv_heads or 1)
                      if axis == "tp" and not lay.model.uses_mla else None),
            max_degree=top)
