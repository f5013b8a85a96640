"""The four course tracks: one product, one device, one model, one stakeholder each.

A track fixes the hardware and model ids (resolved in :mod:`labkit.registries.hardware` and
:mod:`labkit.registries.models`), the workload (demand, request shape, SLO), the money or energy unit
and every default a lab part starts from. Figures are stored in base units -- bytes
(decimal: 1 GB = 1e9 bytes, never MB/1024), seconds, requests/s -- and each one carries
its source or derivation in ``sources``.

``cost_per_event`` is *derived*, not typed in:

* rented devices (USD): devices x price / 3600 x replica-seconds one request occupies,
  i.e. its whole prefill (compute-bound, not shared) plus ``(output - 1)`` decode steps of
  a ``batch_size`` batch divided by ``batch_size`` (the step is shared);
* owned devices (mWh, Wh): power x the request's busy time (one at a time), converted with
  1 mWh = 3.6 J and 1 Wh = 3,600 J.

For transformers ``state_bytes_per_request`` is the KV cache a session holds at
``context_tokens`` (kv heads x d_head, GQA); for CNNs it is the sensor window or camera
frame plus the peak live activations it needs while it is processed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from labkit.core.lookup import lookup
from labkit.core.units import SECONDS_PER_HOUR
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.phases import request_phases
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model

COST_UNITS = ("USD", "mWh", "Wh")
J_PER_MWH = 3.6          # 1 mWh = 1e-3 W x 3600 s
J_PER_WH = 3600.0        # 1 Wh = 1 W x 3600 s
J_PER_UNIT: Mapping[str, float] = MappingProxyType({"mWh": J_PER_MWH, "Wh": J_PER_WH})
PARTS = ("A", "B", "C", "D")


@dataclass(frozen=True)
class Stakeholder:
    """Who asks the question in the lab, and what they ask."""

    name: str
    role: str
    message: str


@dataclass(frozen=True)
class Narrative:
    """Text the notebooks show: an intro, one hook per part (A-D) and the takeaway."""

    intro: str
    hooks: Mapping[str, str]
    takeaway: str


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

    @property
    def is_transformer(self) -> bool:
        return get_model(self.model_id).is_transformer

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
    def joules_per_cost_unit(self) -> float | None:
        """J in one ``cost_unit`` (3.6 for mWh, 3,600 for Wh); None for USD."""
        return J_PER_UNIT.get(self.cost_unit)


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
    ph = request_phases(hardware_id, model_id, prompt_tokens=prompt_tokens,
                        output_tokens=output_tokens, weight_bits=weight_bits, kv_bits=kv_bits,
                        tp=devices, batch=batch, window_bytes=window_bytes, mode=mode)
    busy_s = ph.prefill_s + ph.decode_s / batch
    if cost_unit == "USD":
        if price_per_device_hour is None:
            raise ValueError("price_per_device_hour must be known for a USD track")
        return devices * price_per_device_hour / SECONDS_PER_HOUR * busy_s
    if ph.energy_j is None:
        raise ValueError(f"hardware {hardware_id!r} publishes no power; energy unknown")
    return ph.energy_j / J_PER_UNIT[cost_unit]


_DERIVED_FIELDS = ("context_tokens", "state_bytes_per_request", "cost_per_event")


def _track(**kw: object) -> Track:
    """Build a Track, deriving context, KV state and cost per event unless given."""
    m = get_model(str(kw["model_id"]))
    if m.is_transformer:
        if kw.get("context_tokens") is None:
            kw["context_tokens"] = int(kw["prompt_tokens"]) + int(kw["output_tokens"])  # type: ignore[arg-type]
        if kw.get("state_bytes_per_request") is None:
            kw["state_bytes_per_request"] = (kv_bytes_per_token(m, int(kw["kv_bits"]))  # type: ignore[arg-type]
                                             * float(kw["context_tokens"]))  # type: ignore[arg-type]
    else:
        kw["context_tokens"] = None
    if kw.get("cost_per_event") is not None:
        kw["quality_loss_pct"] = MappingProxyType(dict(kw["quality_loss_pct"]))  # type: ignore[arg-type]
        kw["sources"] = MappingProxyType(dict(kw["sources"]))  # type: ignore[arg-type]
        return Track(**kw)  # type: ignore[arg-type]
    price = kw["price_per_device_hour"]
    kw["cost_per_event"] = derive_cost_per_event(
        str(kw["hardware_id"]), m.id, str(kw["cost_unit"]),
        prompt_tokens=kw.get("prompt_tokens"), output_tokens=kw.get("output_tokens"),  # type: ignore[arg-type]
        weight_bits=int(kw["weight_bits"]), kv_bits=int(kw["kv_bits"]),  # type: ignore[arg-type]
        devices=int(kw["devices_per_replica"]),  # type: ignore[arg-type]
        batch=int(kw["batch_size"]) if kw["cost_unit"] == "USD" else 1,  # type: ignore[arg-type]
        price_per_device_hour=price, window_bytes=float(kw["window_bytes"]),  # type: ignore[arg-type]
    )
    kw["quality_loss_pct"] = MappingProxyType(dict(kw["quality_loss_pct"]))  # type: ignore[arg-type]
    kw["sources"] = MappingProxyType(dict(kw["sources"]))  # type: ignore[arg-type]
    return Track(**kw)  # type: ignore[arg-type]


# -- one-time setup energy of the owned-device tracks --------------------------------------
WIFI_DOWNLOAD_W = 2.0            # estimate: Wi-Fi radio + SoC while downloading, W
WIFI_BYTES_PER_S = 12.5e6        # 100 Mbit/s link = 12.5e6 bytes/s
COMPILE_S, COMPILE_W = 60.0, 4.0  # estimate: on-device model compilation, s and W
PERSONALISATION_FORWARD_PASSES = 20 * 50 * 3  # 20 epochs x 50 windows x (fwd + bwd = 3 fwd)


def phone_setup_mwh(model_id: str = "llama-3.2-3b", weight_bits: int = 4) -> float:
    """Download + compile energy of an on-device LM, mWh.

    (weight_bytes / link rate x download power + compile time x compile power) / 3.6 J.
    """
    from labkit.physics.kvcache import weight_bytes

    download_s = weight_bytes(model_id, weight_bits, include_lm_head=True) / WIFI_BYTES_PER_S
    return (download_s * WIFI_DOWNLOAD_W + COMPILE_S * COMPILE_W) / J_PER_MWH


def ring_setup_mwh(hardware_id: str = "cortex-m4-ring", model_id: str = "ds-cnn-kws",
                   weight_bits: int = 8) -> float:
    """On-device personalisation energy, mWh: forward-pass equivalents x energy per pass."""
    ph = request_phases(hardware_id, model_id, weight_bits=weight_bits)
    assert ph.energy_j is not None
    return PERSONALISATION_FORWARD_PASSES * ph.energy_j / J_PER_MWH


def _narrative(intro: str, a: str, b: str, c: str, d: str, takeaway: str) -> Narrative:
    return Narrative(intro, MappingProxyType(dict(zip(PARTS, (a, b, c, d), strict=True))),
                     takeaway)


_DERIVED_COST = ("derived: devices x price_per_device_hour / 3600 x (prefill_s + "
                 "(output_tokens - 1) x decode step(batch_size) / batch_size), achievable "
                 "roofline (labkit.physics.phases.request_phases)")
_DERIVED_ENERGY = ("derived: power_w x busy time of one request served alone (prefill/input "
                   "pass + decode/decision), achievable roofline, / J per {unit}")
_KV_STATE = ("derived: kv_bytes_per_token(model, kv_bits) x context_tokens -- layers x 2 x "
             "kv_heads x d_head x bytes (GQA kv heads, not query heads)")
_CTX = "derived: prompt_tokens + output_tokens (the KV a session holds when it finishes)"

# Audio window of the ring: 1 s at 16 kHz, 16-bit PCM = 16,000 samples x 2 bytes.
_RING_WINDOW_BYTES = 16_000 * 2
# Camera frame of the robotaxi: 640 x 640 RGB at 8 bits per channel.
_FRAME_BYTES = 640 * 640 * 3

TRACKS: Mapping[str, Track] = MappingProxyType({t.id: t for t in (
    _track(
        id="cloud_fleet", label="Cloud Fleet: 70B assistant on H100s",
        hardware_id="h100-sxm", model_id="llama-3.1-70b",
        stakeholder=Stakeholder(
            "Dana Okafor", "Head of inference platform",
            "Finance wants one number per request, and product wants streaming to feel "
            "instant. Tell me what a request really costs on our H100s, how many "
            "conversations fit on a replica, and which scheduler holds p99 time per token "
            "under 50 ms without growing the fleet."),
        primary_metric="USD per request at the p99 TPOT SLO",
        guardrail_metrics=("p99 TPOT <= 50 ms", "p99 TTFT <= 1 s", "KV fits beside weights",
                           "quality loss <= 1 point", "fleet cost <= budget per day"),
        cost_unit="USD", setup_cost=250_000.0, daily_budget=18_000.0,
        demand_rate_per_s=100.0, min_demand_rate_per_s=100.0,
        active_hours_per_day=24.0, horizon_days=365,
        slo_kind="tpot", slo_s=0.050, slo_quantile=0.99, ttft_slo_s=1.0,
        prompt_tokens=3584, output_tokens=512, output_tokens_cv=1.0,
        sensor_window=None, window_bytes=0.0,
        devices_per_replica=4, max_replicas=None, price_per_device_hour=2.99,
        weight_bits=16, kv_bits=16,
        quality_loss_pct={32: 0.0, 16: 0.0, 8: 0.3, 4: 1.5}, max_quality_loss_pct=1.0,
        min_kv_bits=8, memory_reserve_fraction=0.10,
        batch_size=64, default_policy="continuous", batch_timeout_s=0.050,
        scheduler_overhead_s=1.0e-3, arrival_process="poisson", arrival_streams=1,
        max_utilisation=0.8,
        narrative=_narrative(
            "A chat assistant built on Llama 3.1 70B serves about 100 requests a second, "
            "around the clock, from rented H100s billed by the hour.",
            "A request is two jobs: a compute-bound prompt pass that sets time to first "
            "token, and hundreds of memory-bound decode steps. Which one is the bill?",
            "The weights load. But every live conversation keeps its own KV cache beside "
            "them. How many conversations does a 4-GPU replica actually hold?",
            "Answer lengths vary wildly. Does padding to the longest answer, a timeout "
            "window or per-step admission give the most tokens per GPU inside the SLO?",
            "Pick precision, GPUs per replica and a scheduler that pass memory, latency, "
            "quality and the daily budget together -- and name what binds.",
            "Serving cost is a recurring bill that overtakes the one-time budget in weeks; "
            "KV memory and the scheduler, not FLOP/s, decide how big that bill is."),
        sources={
            "setup_cost": "assumption (stakeholder's one-time budget): supervised fine-tuning "
                          "compute is small -- 6 x 70.6e9 params x 5e9 tokens / (989.4e12 "
                          "FLOP/s x 40% MFU) = 5.4e6 GPU-s = 1,490 GPU-h = USD 4.5k at USD "
                          "2.99/h; data labelling, red-teaming and evaluation make up the rest",
            "cost_per_event": _DERIVED_COST,
            "daily_budget": "assumption: finance caps the serving fleet at USD 18,000 per day "
                            "(about 250 H100s at USD 2.99/h)",
            "min_demand_rate_per_s": "every chat request must be served by the fleet",
            "demand_rate_per_s": "assumption: 8.64 million requests per day for a mid-size "
                                 "assistant product (100 requests/s average)",
            "active_hours_per_day": "served around the clock",
            "horizon_days": "one budget year",
            "slo_s": "assumption: p99 time per output token of 50 ms (20 tokens/s), faster "
                     "than reading speed with streaming",
            "slo_quantile": "p99, the usual serving SLO quantile",
            "ttft_slo_s": "assumption: p99 time to first token of 1 s for a chat product",
            "prompt_tokens": "assumption: system prompt + retrieved context + history, "
                             "3,584 tokens",
            "output_tokens": "assumption: mean answer of 512 tokens",
            "output_tokens_cv": "assumption: answer lengths spread with coefficient of "
                                "variation 1 (lognormal; chat answers range from one line "
                                "to pages)",
            "context_tokens": _CTX,
            "state_bytes_per_request": _KV_STATE,
            "window_bytes": "not a sensor workload: no window",
            "devices_per_replica": "tensor parallelism over 4 of the 8 NVLink-connected GPUs "
                                   "of an HGX H100 node: FP16 weights (141 GB) need at least "
                                   "2 GPUs, 4 leave room for KV",
            "max_replicas": "rented: the fleet grows with demand",
            "price_per_device_hour": "registry: hardware h100-sxm price_usd_per_hour (USD "
                                     "2.99, representative on-demand list price, 2025)",
            "weight_bits": "FP16/BF16 weights as released",
            "kv_bits": "FP16 KV cache (the serving default)",
            "quality_loss_pct": "estimates consistent with published evaluations of Llama-"
                                "class 70B models: FP8/INT8 weights within ~0.3 points, 4-bit "
                                "weight-only (GPTQ/AWQ) 1-2 points on harder benchmarks",
            "max_quality_loss_pct": "assumption: the product contract allows 1 point",
            "min_kv_bits": "assumption: FP8 KV is validated; 4-bit KV degrades long context",
            "memory_reserve_fraction": "vLLM's default gpu_memory_utilization = 0.9 keeps "
                                       "10% for activations, CUDA graphs and the runtime",
            "batch_size": "assumption: 64 sequence slots per replica (max_num_seqs class "
                          "setting); must fit the KV capacity",
            "batch_timeout_s": "assumption: dynamic batching max queue delay of 50 ms",
            "scheduler_overhead_s": "estimate: per-step CPU scheduling, block-table updates "
                                    "and sampling in vLLM-class servers, about 1 ms",
            "arrival_streams": "independent users: Poisson arrivals",
            "max_utilisation": "assumption: provision replicas to run at most 80% busy so "
                               "queues stay short",
        },
    ),
    _track(
        id="iphone", label="iPhone: 3B assistant on the A17 Pro",
        hardware_id="a17-pro", model_id="llama-3.2-3b",
        stakeholder=Stakeholder(
            "Mei Tanaka", "On-device ML lead",
            "Users notice two things: a reply that crawls, and a battery that drains. Our "
            "3B model must stream at 20 tokens a second and spend no more than 5% of the "
            "battery a day. Which precision and schedule get us there?"),
        primary_metric="mWh per request at 20 tokens/s",
        guardrail_metrics=("p99 TPOT <= 50 ms", "p99 TTFT <= 1 s", "fits in app memory",
                           "quality loss <= 3 points", "energy <= 5% of battery per day"),
        cost_unit="mWh", setup_cost=phone_setup_mwh(), daily_budget=633.5,
        demand_rate_per_s=30 / 86_400, min_demand_rate_per_s=30 / 86_400,
        active_hours_per_day=24.0, horizon_days=365,
        slo_kind="tpot", slo_s=0.050, slo_quantile=0.99, ttft_slo_s=1.0,
        prompt_tokens=1024, output_tokens=256, output_tokens_cv=0.8,
        sensor_window=None, window_bytes=0.0,
        devices_per_replica=1, max_replicas=1, price_per_device_hour=None,
        weight_bits=4, kv_bits=16,
        quality_loss_pct={32: 0.0, 16: 0.0, 8: 0.5, 4: 2.5}, max_quality_loss_pct=3.0,
        min_kv_bits=8, memory_reserve_fraction=0.0,
        batch_size=1, default_policy="none", batch_timeout_s=0.100,
        scheduler_overhead_s=1.0e-3, arrival_process="poisson", arrival_streams=1,
        max_utilisation=0.8,
        narrative=_narrative(
            "A writing assistant runs Llama 3.2 3B on the phone itself: private, offline, "
            "and paid for in battery rather than dollars.",
            "On a phone the decode loop streams every weight through 51 GB/s of LPDDR5 "
            "for each token. How long is the prompt pass next to that loop?",
            "iOS leaves an app about 4 GB. At 16 bits the weights alone do not fit; at 4 "
            "bits, how many cached conversations do?",
            "One user, a few requests an hour: is there anything to batch at all?",
            "Choose precision and schedule so replies stream at 20 tokens/s inside the "
            "battery budget without crossing the quality floor.",
            "On a phone precision is the lever: 4-bit weights are what make the model fit, "
            "stream fast enough and stay inside the battery budget."),
        sources={
            "setup_cost": "derived (phone_setup_mwh): Wi-Fi download of the 4-bit weights "
                          "(1.606 GB at 12.5e6 bytes/s = 128.5 s at about 2 W = 71.4 mWh) "
                          "plus on-device model compilation (about 60 s at 4 W = 66.7 mWh); "
                          "download and compile powers are estimates",
            "cost_per_event": _DERIVED_ENERGY.format(unit="mWh (3.6 J)"),
            "daily_budget": "derived: 5% of an iPhone 15 Pro battery per day; 3,274 mAh x "
                            "3.87 V = 12,670 mWh (Apple regulatory filing capacity, nominal "
                            "voltage) x 5% = 633.5 mWh",
            "min_demand_rate_per_s": "every on-device request is served on the phone",
            "demand_rate_per_s": "assumption: 30 requests per user per day, spread over 24 h",
            "active_hours_per_day": "rate already averaged over the day",
            "horizon_days": "one year of ownership",
            "slo_s": "assumption: 20 tokens/s streaming (50 ms per token)",
            "slo_quantile": "p99, the usual latency SLO quantile",
            "ttft_slo_s": "assumption: first token within 1 s",
            "prompt_tokens": "assumption: an email or page to rewrite, 1,024 tokens",
            "output_tokens": "assumption: 256-token rewrite",
            "output_tokens_cv": "assumption: lognormal spread, coefficient of variation 0.8",
            "context_tokens": _CTX,
            "state_bytes_per_request": _KV_STATE,
            "window_bytes": "not a sensor workload: no window",
            "devices_per_replica": "one phone serves its own user",
            "max_replicas": "the user owns one phone: no scaling out",
            "price_per_device_hour": "owned by the user: energy, not rent",
            "weight_bits": "4-bit weights, as shipped on-device models use (Apple Foundation "
                           "Models 2024: mixed 2/4-bit palettisation)",
            "kv_bits": "FP16 KV cache",
            "quality_loss_pct": "estimates: 4-bit weight-only quantisation of a 3B model "
                                "loses 2-3 points without recovery adapters; 8-bit about 0.5",
            "max_quality_loss_pct": "assumption: 3 points accepted for an on-device writing "
                                    "aid",
            "min_kv_bits": "assumption: FP8 KV is the lowest validated",
            "memory_reserve_fraction": "none beyond the registry's usable 4 GB (already "
                                       "half of RAM)",
            "batch_size": "one user: one sequence at a time",
            "batch_timeout_s": "assumption: 100 ms, longer would be felt",
            "scheduler_overhead_s": "estimate: 1 ms per step of app-side scheduling",
            "arrival_streams": "one user: Poisson arrivals",
            "max_utilisation": "not binding for one user",
        },
    ),
    _track(
        id="oura_ring", label="Smart ring: always-on spotter on a Cortex-M4",
        hardware_id="cortex-m4-ring", model_id="ds-cnn-kws",
        stakeholder=Stakeholder(
            "Jonas Berg", "Wearable firmware lead",
            "The ring has to last four days on a charge, and the spotter is only one of its "
            "jobs. It gets 8 mWh a day and 192 KiB of RAM. Does it fit, and how often can "
            "it afford to listen?"),
        primary_metric="mWh per day within the battery budget",
        guardrail_metrics=("p99 detection latency <= 200 ms", "weights fit in flash, "
                           "windows in SRAM", "accuracy loss <= 1 point",
                           "energy <= 8 mWh per day"),
        cost_unit="mWh", setup_cost=ring_setup_mwh(), daily_budget=8.0,
        demand_rate_per_s=1.0, min_demand_rate_per_s=0.25,
        active_hours_per_day=24.0, horizon_days=365,
        slo_kind="deadline", slo_s=0.200, slo_quantile=0.99, ttft_slo_s=None,
        prompt_tokens=None, output_tokens=None, output_tokens_cv=0.0,
        sensor_window="1 s of 16 kHz 16-bit microphone audio (32,000 bytes) -> 49x10 "
                      "MFCC features; a new window every second",
        window_bytes=float(_RING_WINDOW_BYTES),
        state_bytes_per_request=float(_RING_WINDOW_BYTES) + 16e3,
        devices_per_replica=1, max_replicas=1, price_per_device_hour=None,
        weight_bits=8, kv_bits=8,
        quality_loss_pct={32: 0.0, 16: 0.0, 8: 0.4, 4: 3.0}, max_quality_loss_pct=1.0,
        min_kv_bits=8, memory_reserve_fraction=0.0,
        batch_size=4, default_policy="none", batch_timeout_s=0.020,
        scheduler_overhead_s=0.5e-3, arrival_process="periodic", arrival_streams=1,
        max_utilisation=0.8,
        narrative=_narrative(
            "A smart ring listens for a spoken wake word with a 38.6k-parameter DS-CNN on a "
            "64 MHz Cortex-M4, powered by a battery smaller than a fingernail.",
            "There is no decode loop here: each window is one input pass. How long does it "
            "take at 256 million INT8 operations a second, and what does it cost?",
            "Weights live in 1 MiB of flash, windows and activations in 192 KiB of SRAM. "
            "How many windows can be in flight?",
            "Windows arrive on a fixed clock. Batching them waits for the next window -- "
            "what does that do to a 200 ms deadline?",
            "Find a listening schedule and precision that keep the deadline, the accuracy "
            "floor and the 8 mWh/day budget all at once.",
            "On a ring the binding guardrail is energy per day: inference never stops, so "
            "its recurring cost overtakes any one-time setup within the first hour."),
        sources={
            "setup_cost": "derived (ring_setup_mwh): on-device personalisation, 20 "
                          "epochs over 50 enrolment windows at 3x the forward cost (forward "
                          "+ backward) = 3,000 forward passes x 70.6 ms x 10 mW = 0.59 mWh "
                          "(estimate)",
            "cost_per_event": _DERIVED_ENERGY.format(unit="mWh (3.6 J)"),
            "daily_budget": "derived: about 77 mWh battery (20 mAh x 3.85 V, estimate for a "
                            "ring-sized Li-ion cell) over a 4-day life = 19 mWh/day, of "
                            "which the spotter may take 8 mWh (assumption)",
            "min_demand_rate_per_s": ("product assumption: a wake word said twice is caught "
                                      "when one window in four is processed (duty cycling)"),
            "demand_rate_per_s": "one 1 s window per second, listening continuously",
            "output_tokens_cv": "single-step workload: every inference is one pass",
            "active_hours_per_day": "always listening, 24 h a day",
            "horizon_days": "one year of operation",
            "slo_s": "assumption: a wake word must be acknowledged within 200 ms of the "
                     "window closing",
            "slo_quantile": "p99, the usual latency SLO quantile",
            "window_bytes": "derived: 16,000 samples x 2 bytes = 32,000 bytes (decimal, "
                            "exact)",
            "state_bytes_per_request": "derived: audio window 32,000 bytes + peak live INT8 "
                                       "activations 16,000 bytes (model registry "
                                       "activation_bytes_int8)",
            "devices_per_replica": "one microcontroller in the ring",
            "max_replicas": "one ring: no scaling out",
            "price_per_device_hour": "owned by the wearer",
            "weight_bits": "INT8 weights (CMSIS-NN kernels)",
            "kv_bits": "not a transformer: no KV cache (kept for a uniform interface)",
            "quality_loss_pct": "Hello Edge (Zhang et al. 2017): 8-bit DS-CNN within about "
                                "0.4 points of FP32; 4-bit about 3 points (estimate)",
            "max_quality_loss_pct": "assumption: 1 point of wake-word accuracy",
            "min_kv_bits": "not applicable (no KV)",
            "memory_reserve_fraction": "already kept out of the registry's usable SRAM",
            "batch_size": "SRAM holds 4 windows with their activations",
            "batch_timeout_s": "assumption: 20 ms",
            "scheduler_overhead_s": "estimate: 0.5 ms of RTOS work per scheduled pass",
            "arrival_streams": "one periodic window clock",
            "max_utilisation": "assumption: 80% busy at most",
        },
    ),
    _track(
        id="robotaxi", label="Robotaxi: multi-camera perception on DRIVE Orin",
        hardware_id="drive-orin", model_id="yolov8n",
        stakeholder=Stakeholder(
            "Ana Ruiz", "Perception safety lead",
            "Eight cameras, thirty frames a second, and a hard 20 ms deadline per frame "
            "that no scheduler is allowed to miss. I will not sign off on a precision we "
            "have not validated. Show me the plan that passes and what it costs in energy."),
        primary_metric="worst-case latency per frame within the 20 ms deadline",
        guardrail_metrics=("max latency <= 20 ms (hard deadline)", "fits in SoC memory",
                           "mAP loss <= 1 point", "perception energy <= 300 Wh per day"),
        cost_unit="Wh", setup_cost=60_000.0, daily_budget=300.0,
        demand_rate_per_s=240.0, min_demand_rate_per_s=240.0,
        active_hours_per_day=20.0, horizon_days=365,
        slo_kind="deadline", slo_s=0.020, slo_quantile=1.0, ttft_slo_s=None,
        prompt_tokens=None, output_tokens=None, output_tokens_cv=0.0,
        sensor_window="one 640x640 RGB camera frame (1,228,800 bytes) from each of 8 "
                      "unsynchronised cameras at 30 fps",
        window_bytes=float(_FRAME_BYTES),
        state_bytes_per_request=float(_FRAME_BYTES) + 6.6e6,
        devices_per_replica=1, max_replicas=2, price_per_device_hour=None,
        weight_bits=8, kv_bits=8,
        quality_loss_pct={32: 0.0, 16: 0.0, 8: 0.6, 4: 5.0}, max_quality_loss_pct=1.0,
        min_kv_bits=8, memory_reserve_fraction=0.0,
        batch_size=8, default_policy="dynamic", batch_timeout_s=0.003,
        scheduler_overhead_s=0.2e-3, arrival_process="periodic", arrival_streams=8,
        max_utilisation=0.8,
        narrative=_narrative(
            "A robotaxi runs YOLOv8-n on every frame of eight cameras on an NVIDIA DRIVE "
            "Orin, about 17 million detections per day of driving.",
            "Each frame is one input pass. Is Orin compute-bound or memory-bound on it, and "
            "how much of a 20 ms deadline does it use?",
            "Frames and activations sit in 24 GB of LPDDR5 beside a 3.2M-parameter model: "
            "is memory ever the wall here?",
            "Cameras are not synchronised. Waiting to fill a batch of eight frames costs up "
            "to a whole frame period -- which policies can never miss the deadline?",
            "Pick precision and schedule that never miss a frame, stay above the validated "
            "accuracy floor and inside the energy budget.",
            "For perception the deadline and the validated precision bind, not memory or "
            "cost -- and the one-time safety validation outweighs a year of inference "
            "energy."),
        sources={
            "setup_cost": "assumption: safety validation of a release replays 1,000 h of "
                          "recorded drives hardware-in-the-loop on a vehicle-grade Orin at "
                          "60 W = 60,000 Wh",
            "cost_per_event": _DERIVED_ENERGY.format(unit="Wh (3,600 J)"),
            "daily_budget": "derived: perception may use 25% of the Orin's energy over an "
                            "active day, 0.25 x 60 W x 20 h = 300 Wh",
            "min_demand_rate_per_s": "safety: every camera frame must be processed",
            "demand_rate_per_s": "derived: 8 cameras x 30 frames/s = 240 inferences/s",
            "output_tokens_cv": "single-step workload: every inference is one pass",
            "active_hours_per_day": "assumption: a robotaxi drives 20 h a day",
            "horizon_days": "one year of operation",
            "slo_s": "assumption: detection gets 20 ms of a 100 ms sense-plan-act loop "
                     "(a frame period at 30 fps is 33.3 ms)",
            "slo_quantile": "hard deadline: the maximum, not a percentile",
            "window_bytes": "derived: 640 x 640 pixels x 3 bytes = 1,228,800 bytes (decimal)",
            "state_bytes_per_request": "derived: frame 1,228,800 bytes + peak live INT8 "
                                       "activations 6.6e6 bytes (model registry estimate)",
            "devices_per_replica": "one Orin SoC per perception stack",
            "max_replicas": "DRIVE boards pair two SoCs",
            "price_per_device_hour": "owned by the fleet operator; energy, not rent",
            "weight_bits": "INT8 TensorRT engine",
            "kv_bits": "not a transformer: no KV cache (kept for a uniform interface)",
            "quality_loss_pct": "estimates: INT8 post-training quantisation of YOLOv8 loses "
                                "under 1 mAP point; 4-bit weights several points",
            "max_quality_loss_pct": "assumption: the safety case allows 1 mAP point",
            "min_kv_bits": "not applicable (no KV)",
            "memory_reserve_fraction": "already kept out of the registry's usable 24 GB",
            "batch_size": "one frame from each of 8 cameras",
            "batch_timeout_s": "assumption: 3 ms max queue delay",
            "scheduler_overhead_s": "estimate: 0.2 ms of per-pass scheduling",
            "arrival_streams": "8 unsynchronised periodic cameras",
            "max_utilisation": "assumption: 80% busy at most",
        },
    ),
)})


def get_track(track: str | Track) -> Track:
    """Look up a track by id (or pass any :class:`Track`, e.g. from :func:`custom_track`)."""
    if isinstance(track, Track):
        return track
    return lookup("track", TRACKS, track)


def custom_track(base: str | Track, **changes: object) -> Track:
    """A copy of a track with some fields changed and the derived fields re-derived.

    ``context_tokens``, ``state_bytes_per_request`` (transformers) and ``cost_per_event``
    are recomputed from the new figures unless they are among ``changes``. Every function
    that takes a track id also takes the result, e.g.
    ``serving_plan(custom_track("cloud_fleet", prompt_tokens=1024))``.
    """
    tr = get_track(base)
    known = set(Track.__dataclass_fields__)
    for name in changes:
        if name not in known:
            raise ValueError(f"{name} is not a Track field; known: {', '.join(sorted(known))}")
    kw: dict[str, object] = {f: getattr(tr, f) for f in known}
    for name in _DERIVED_FIELDS:
        if name not in changes:
            kw[name] = None
    kw.update(changes)
    return _track(**kw)
