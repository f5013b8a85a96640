"""The :class:`Track` type and its builder: derived figures are derived, inputs are checked.

A track fixes the hardware and model ids (resolved in :mod:`labkit.registries.hardware` and
:mod:`labkit.registries.models`), the workload (demand, request shape, SLO), the money or
energy unit and every default a lab part starts from. Figures are stored in base units --
bytes (decimal: 1 GB = 1e9 bytes, never MB/1024), seconds, requests/s -- and each one
carries its source or derivation in ``sources``.

``cost_per_event`` is *derived*, not typed in:

* rented devices (USD): devices x price / 3600 x replica-seconds one request occupies,
  i.e. its whole prefill (compute-bound, not shared) plus ``(output - 1)`` decode steps of
  a ``batch_size`` batch divided by ``batch_size`` (the step is shared);
* owned devices (mWh, Wh): power x the request's busy time (one at a time), converted with
  1 mWh = 3.6 J and 1 Wh = 3,600 J.

For transformers ``state_bytes_per_request`` is the KV cache a session holds at
``context_tokens`` (kv heads x d_head, GQA); for CNNs it is the sensor window or camera
frame plus the peak live activations it needs while it is processed.

:func:`make_track` builds a track from its fields (deriving the three derived fields unless
given) and checks every input, naming the field in its ``ValueError``;
:func:`track_with` is a copy with some fields changed and the derived fields re-derived.
Resolving a track *id* is the registry's job (:mod:`labkit.tracks.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from labkit.core import validation as v
from labkit.core.format import fmt_count
from labkit.core.units import J_PER_MWH, J_PER_WH, SECONDS_PER_HOUR
from labkit.physics.batching import ARRIVALS, POLICIES
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.phases import request_phases
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model

COST_UNITS = ("USD", "mWh", "Wh")
SLO_KINDS = ("tpot", "deadline")
J_PER_UNIT: Mapping[str, float] = MappingProxyType({"mWh": J_PER_MWH, "Wh": J_PER_WH})

# Derivation notes several tracks share in their ``sources``.
DERIVED_COST_SOURCE = (
    "derived: devices x price_per_device_hour / 3600 x (prefill_s + (output_tokens - 1) x "
    "decode step(batch_size) / batch_size), achievable roofline "
    "(labkit.physics.phases.request_phases)")
DERIVED_ENERGY_SOURCE = (
    "derived: power_w x busy time of one request served alone (prefill/input pass + "
    "decode/decision), achievable roofline, / J per {unit}")
KV_STATE_SOURCE = (
    "derived: kv_bytes_per_token(model, kv_bits) x context_tokens -- layers x 2 x kv_heads "
    "x d_head x bytes (GQA kv heads, not query heads)")
CONTEXT_SOURCE = ("derived: prompt_tokens + output_tokens (the KV a session holds when it "
                  "finishes)")


@dataclass(frozen=True)
class Stakeholder:
    """Who asks the question in the lab, and what they ask."""

    name: str
    role: str
    message: str


@dataclass(frozen=True)
class Narrative:
    """Text the notebooks show: an intro, one hook per lab part (keyed "A"-"D") and the
    takeaway."""

    intro: str
    hooks: Mapping[str, str]
    takeaway: str


def narrative(intro: str, hooks: Mapping[str, str], takeaway: str) -> Narrative:
    """A :class:`Narrative` with a read-only copy of ``hooks`` (part letter -> prose)."""
    return Narrative(intro, MappingProxyType(dict(hooks)), takeaway)


@dataclass(frozen=True)
class Speculation:
    """How a track's model checks guesses of its own next tokens
    (:mod:`labkit.physics.speculative`): Lab 1 Part C's lever where one user leaves no
    other request to batch with.

    ``proposer`` names what guesses, in the words a screen uses ("prompt lookup");
    its guesses cost no model step. ``acceptance_mean`` and ``acceptance_sd`` describe the
    per-token acceptance across requests (a Beta distribution); ``max_tokens`` is the most
    guesses one pass may check.
    """

    proposer: str
    acceptance_mean: float
    acceptance_sd: float
    max_tokens: int

    def __post_init__(self) -> None:
        if not isinstance(self.proposer, str) or not self.proposer.strip():
            raise ValueError(f"speculation.proposer must be a non-empty string, got "
                             f"{self.proposer!r}")
        m = float(v.fraction("speculation.acceptance_mean", self.acceptance_mean,
                             allow_zero=False, allow_one=False))
        sd = float(v.non_negative("speculation.acceptance_sd", self.acceptance_sd))
        if sd * sd >= m * (1.0 - m):
            raise ValueError("speculation.acceptance_sd must be below sqrt(mean (1 - mean)) "
                             f"for a Beta distribution; got {sd!r}")
        v.positive_int("speculation.max_tokens", self.max_tokens)


@dataclass(frozen=True)
class Track:
    """One deployment scenario. Units are in the field names or listed here.

    cost_unit: "USD" (rented devices) or "mWh"/"Wh" (energy on owned devices).
    setup_cost / cost_per_event / daily_budget: in ``cost_unit`` (per request or inference;
    per day). min_demand_rate_per_s: the lowest rate a release may serve (duty cycling or
    routing the rest elsewhere); equal to the demand where every request must be served.
    demand_rate_per_s: requests (or inferences) per second while active, for the
    whole product; ``active_hours_per_day`` of that per day.
    slo_kind: "tpot" (slo_s = p99 time per output token, s) or "deadline" (slo_s = latency
    per inference, s, checked at quantile ``slo_quantile``; 1.0 = a hard deadline).
    state_bytes_per_request: bytes one live session (KV) or in-flight input holds.
    state_noun / state_nouns, replica_noun / replica_nouns: the words the widgets use for
    one (and several) live state holders and replicas ("session", "frame in flight";
    "replica", "SoC"). input_noun: what one inference handles, plural ("frames").
    weight_bits / kv_bits: default storage precisions. quality_loss_pct: estimated quality
    loss per weight precision (bits -> % points); precisions losing more than
    ``max_quality_loss_pct`` are below the floor ``min_weight_bits``.
    """

    id: str
    label: str
    hardware_id: str
    model_id: str
    stakeholder: Stakeholder
    primary_metric: str
    guardrail_metrics: tuple[str, ...]
    cost_unit: str
    setup_cost: float
    cost_per_event: float
    daily_budget: float
    demand_rate_per_s: float
    min_demand_rate_per_s: float
    active_hours_per_day: float
    horizon_days: int
    slo_kind: str
    slo_s: float
    slo_quantile: float
    ttft_slo_s: float | None
    prompt_tokens: int | None
    output_tokens: int | None
    output_tokens_cv: float
    context_tokens: int | None
    sensor_window: str | None
    window_bytes: float
    state_bytes_per_request: float
    devices_per_replica: int
    max_replicas: int | None
    price_per_device_hour: float | None
    weight_bits: int
    kv_bits: int
    quality_loss_pct: Mapping[int, float]
    max_quality_loss_pct: float
    min_kv_bits: int
    memory_reserve_fraction: float
    batch_size: int
    default_policy: str
    batch_timeout_s: float
    scheduler_overhead_s: float
    arrival_process: str
    arrival_streams: int
    max_utilisation: float
    narrative: Narrative
    sources: Mapping[str, str]
    # what one inference handles, plural, for units ("frames/s"); tokens for a transformer
    input_noun: str = "inferences"
    # the track's words for one live state holder (a session with its KV cache; a window or
    # frame in flight) and for one replica (a serving replica; the phone, ring or SoC)
    state_noun: str = "session"
    state_nouns: str = "sessions"
    replica_noun: str = "replica"
    replica_nouns: str = "replicas"
    # a model that checks its own guessed tokens (one user, nothing else to batch with)
    speculation: Speculation | None = None

    @property
    def event_nouns(self) -> tuple[str, str]:
        """(singular, plural) of one thing the track serves: ``request(s)`` for a language
        model, else its ``input_noun`` (``window(s)``, ``frame(s)``): the one word every
        screen, exercise and unit uses for it."""
        plural = "requests" if self.is_transformer else self.input_noun
        return (plural[:-1] if plural.endswith("s") else plural), plural

    @property
    def output_unit(self) -> str:
        """What throughput counts: ``tokens`` for a language model, else ``input_noun``."""
        return "tokens" if self.is_transformer else self.input_noun

    @property
    def can_add_replicas(self) -> bool:
        """Whether the deployment can scale out: no replica cap, or a cap above one."""
        return self.max_replicas is None or self.max_replicas > 1

    @property
    def is_transformer(self) -> bool:
        return get_model(self.model_id).is_transformer

    @property
    def hard_deadline(self) -> bool:
        """Whether every input must be done within ``slo_s`` (the maximum, not a percentile):
        then what is in flight is bounded by the time to clear it as well as by memory."""
        return self.slo_kind == "deadline" and self.slo_quantile >= 1.0

    @property
    def speculates(self) -> bool:
        """Whether the track's model checks guesses of its own next tokens (a language
        model with a :class:`Speculation`; a CNN emits no tokens to guess)."""
        return self.speculation is not None and self.is_transformer

    @property
    def min_weight_bits(self) -> int:
        """Lowest weight precision whose estimated quality loss is within the limit."""
        ok = [b for b, loss in self.quality_loss_pct.items() if loss <= self.max_quality_loss_pct]
        return min(ok)

    @property
    def events_per_day(self) -> float:
        """Requests (inferences) per day = demand_rate_per_s x active hours x 3600."""
        return self.demand_rate_per_s * self.active_hours_per_day * SECONDS_PER_HOUR

    @property
    def power_w(self) -> float | None:
        return get_hardware(self.hardware_id).power_w

    @property
    def budget_text(self) -> str:
        """The daily budget with its unit, as a student reads it: ``8 mWh``, ``15,500 USD``."""
        return f"{fmt_count(self.daily_budget)} {self.cost_unit}"

    @property
    def joules_per_cost_unit(self) -> float | None:
        """J in one ``cost_unit`` (3.6 for mWh, 3,600 for Wh); None for USD."""
        return J_PER_UNIT.get(self.cost_unit)


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Track))
DERIVED_FIELDS = ("context_tokens", "state_bytes_per_request", "cost_per_event")


# -- derivations ---------------------------------------------------------------------------

def derive_cost_per_event(hardware_id: str, model_id: str, cost_unit: str, *,
                          prompt_tokens: int | None, output_tokens: int | None,
                          weight_bits: int, kv_bits: int, devices: int, batch: int,
                          price_per_device_hour: float | None, window_bytes: float = 0.0,
                          mode: str = "achievable") -> float:
    """Cost of one request or inference in ``cost_unit`` from price or power x time.

    USD: devices x price_per_device_hour / 3600 x (prefill_s + decode_s / batch).
    mWh / Wh: devices x power_w x (prefill_s + decode_s / batch) / (J per unit).
    Times come from :func:`labkit.physics.phases.request_phases` (achievable roofline).
    """
    unit = v.choice("cost_unit", cost_unit, COST_UNITS)
    ph = request_phases(hardware_id, model_id, prompt_tokens=prompt_tokens,
                        output_tokens=output_tokens, weight_bits=weight_bits, kv_bits=kv_bits,
                        tp=devices, batch=batch, window_bytes=window_bytes, mode=mode)
    busy_s = ph.prefill_s + ph.decode_s / batch
    if unit == "USD":
        if price_per_device_hour is None:
            raise ValueError("price_per_device_hour must be known for a USD track")
        return devices * price_per_device_hour / SECONDS_PER_HOUR * busy_s
    if ph.energy_j is None:
        raise ValueError(f"hardware {hardware_id!r} publishes no power; energy unknown")
    return ph.energy_j / J_PER_UNIT[unit]


# -- checks --------------------------------------------------------------------------------

_POSITIVE = ("demand_rate_per_s", "min_demand_rate_per_s", "active_hours_per_day", "slo_s",
             "daily_budget")
_NON_NEGATIVE = ("setup_cost", "output_tokens_cv", "window_bytes", "max_quality_loss_pct",
                 "batch_timeout_s", "scheduler_overhead_s")
_COUNTS = ("horizon_days", "devices_per_replica", "batch_size", "arrival_streams")
_PRECISIONS = ("weight_bits", "kv_bits", "min_kv_bits")
_OPTIONAL = ("input_noun", "state_noun", "state_nouns", "replica_noun",
             "replica_nouns")  # fields with a default (words)
_OPTIONAL_DATA = ("speculation",)  # fields with a default (None)


def _check_inputs(kw: Mapping[str, Any]) -> None:
    """Check the given (not derived) fields; every error names its field."""
    missing = [f for f in FIELDS if f not in kw and f not in DERIVED_FIELDS
               and f not in _OPTIONAL and f not in _OPTIONAL_DATA]
    if missing:
        raise ValueError(f"track fields missing: {', '.join(missing)}")
    for name in ("id", "label", *(f for f in _OPTIONAL if f in kw)):
        if not isinstance(kw[name], str) or not kw[name].strip():
            raise ValueError(f"{name} must be a non-empty string, got {kw[name]!r}")
    for name, resolve in (("hardware_id", get_hardware), ("model_id", get_model)):
        try:
            resolve(kw[name])
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    v.choice("cost_unit", kw["cost_unit"], COST_UNITS)
    v.choice("slo_kind", kw["slo_kind"], SLO_KINDS)
    v.choice("default_policy", kw["default_policy"], POLICIES)
    v.choice("arrival_process", kw["arrival_process"], ARRIVALS)
    for name in _POSITIVE:
        v.positive(name, kw[name])
    for name in _NON_NEGATIVE:
        v.non_negative(name, kw[name])
    for name in _COUNTS:
        v.positive_int(name, kw[name])
    for name in _PRECISIONS:
        v.precision_bits(name, kw[name])
    if kw["active_hours_per_day"] > 24:
        raise ValueError(f"active_hours_per_day must be <= 24, got {kw['active_hours_per_day']}")
    v.fraction("slo_quantile", kw["slo_quantile"], allow_zero=False)
    v.fraction("memory_reserve_fraction", kw["memory_reserve_fraction"], allow_one=False)
    v.fraction("max_utilisation", kw["max_utilisation"], allow_zero=False)
    for name in ("ttft_slo_s", "price_per_device_hour"):
        if kw[name] is not None:
            v.positive(name, kw[name])
    if kw["max_replicas"] is not None:
        v.positive_int("max_replicas", kw["max_replicas"])
    if get_model(kw["model_id"]).is_transformer:
        v.positive_int("prompt_tokens", kw["prompt_tokens"])
        v.positive_int("output_tokens", kw["output_tokens"])
    spec = kw.get("speculation")
    if spec is not None and not isinstance(spec, Speculation):
        raise ValueError(f"speculation must be a Speculation or None, got {spec!r}")


def _derive(kw: dict[str, Any]) -> None:
    """Fill context_tokens, state_bytes_per_request and cost_per_event where None."""
    m = get_model(kw["model_id"])
    if m.is_transformer:
        if kw.get("context_tokens") is None:
            kw["context_tokens"] = int(kw["prompt_tokens"]) + int(kw["output_tokens"])
        if kw.get("state_bytes_per_request") is None:
            kw["state_bytes_per_request"] = (kv_bytes_per_token(m, int(kw["kv_bits"]))
                                             * float(kw["context_tokens"]))
    else:
        kw["context_tokens"] = None
    if kw.get("state_bytes_per_request") is None:
        raise ValueError("state_bytes_per_request must be given for a non-transformer track")
    if kw.get("cost_per_event") is None:
        usd = kw["cost_unit"] == "USD"
        kw["cost_per_event"] = derive_cost_per_event(
            kw["hardware_id"], m.id, kw["cost_unit"],
            prompt_tokens=kw.get("prompt_tokens"), output_tokens=kw.get("output_tokens"),
            weight_bits=int(kw["weight_bits"]), kv_bits=int(kw["kv_bits"]),
            devices=int(kw["devices_per_replica"]),
            batch=int(kw["batch_size"]) if usd else 1,
            price_per_device_hour=kw["price_per_device_hour"],
            window_bytes=float(kw["window_bytes"]))


def make_track(**kw: Any) -> Track:
    """Build a :class:`Track`, deriving context, KV state and cost per event unless given.

    Every input is checked first (a ``ValueError`` names the field); ``quality_loss_pct``,
    ``sources`` and the narrative's hooks are stored as read-only mappings.
    """
    _check_inputs(kw)
    kw = dict(kw)
    _derive(kw)
    kw["quality_loss_pct"] = MappingProxyType(dict(kw["quality_loss_pct"]))
    kw["sources"] = MappingProxyType(dict(kw["sources"]))
    kw["guardrail_metrics"] = tuple(kw["guardrail_metrics"])
    return Track(**kw)


def track_with(track: Track, **changes: Any) -> Track:
    """A copy of ``track`` with some fields changed and the derived fields re-derived.

    ``context_tokens``, ``state_bytes_per_request`` (transformers) and ``cost_per_event``
    are recomputed from the new figures unless they are among ``changes``.
    """
    unknown = sorted(set(changes) - set(FIELDS))
    if unknown:
        raise ValueError(f"{', '.join(unknown)} is not a Track field; known: "
                         f"{', '.join(sorted(FIELDS))}")
    kw: dict[str, Any] = {f: getattr(track, f) for f in FIELDS}
    # a CNN's state (window + activations) is given data, not derived: it is kept
    try:
        transformer = get_model(changes.get("model_id", track.model_id)).is_transformer
    except ValueError as e:
        raise ValueError(f"model_id: {e}") from None
    for name in DERIVED_FIELDS:
        if name not in changes and (transformer or name != "state_bytes_per_request"):
            kw[name] = None
    kw.update(changes)
    return make_track(**kw)
