"""Cloud Fleet: a 70B chat assistant on rented H100s, paid in USD per request.

Lab 1 asks what a request costs and how many conversations a replica holds; Lab 2 how the
model is split over GPUs. Every figure carries its source in ``sources``.
"""

from __future__ import annotations

from labkit.tracks.base import (
    CONTEXT_SOURCE,
    DERIVED_COST_SOURCE,
    KV_STATE_SOURCE,
    Stakeholder,
    make_track,
    narrative,
)

CLOUD_FLEET = make_track(
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
    demand_rate_per_s=75.0, min_demand_rate_per_s=75.0,
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
    narrative=narrative(
        "A chat assistant built on Llama 3.1 70B serves about 75 requests a second, around the "
        "clock, from rented H100s billed by the hour.",
        {
            "A": "A request is two jobs: a compute-bound prompt pass that sets time to first "
                 "token, and hundreds of memory-bound decode steps. Which one takes the time?",
            "B": "The weights load. But every live conversation keeps its own KV cache beside "
                 "them. How many conversations does a 4-GPU replica actually hold?",
            "C": "Answer lengths vary wildly. Does padding to the longest answer, a timeout "
                 "window or per-step admission give the most tokens per GPU inside the SLO?",
            "D": "Pick precision, GPUs per replica and a scheduler that pass memory, latency, "
                 "quality and the daily budget together -- and name what binds.",
        },
        "Serving cost is a recurring bill that overtakes the one-time budget in weeks; KV memory "
        "and the scheduler, not FLOP/s, decide how big that bill is."),
    sources={
        "setup_cost": "assumption (stakeholder's one-time budget): supervised fine-tuning "
                      "compute is small -- 6 x 70.6e9 params x 5e9 tokens / (989.4e12 "
                      "FLOP/s x 40% MFU) = 5.4e6 GPU-s = 1,490 GPU-h = USD 4.5k at USD "
                      "2.99/h; data labelling, red-teaming and evaluation make up the rest",
        "cost_per_event": DERIVED_COST_SOURCE,
        "daily_budget": "assumption: finance caps the serving fleet at USD 18,000 per day "
                        "(about 250 H100s at USD 2.99/h)",
        "min_demand_rate_per_s": "every chat request must be served by the fleet",
        "demand_rate_per_s": "assumption: 6.48 million requests per day for a mid-size "
                             "assistant product (75 requests/s average)",
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
        "context_tokens": CONTEXT_SOURCE,
        "state_bytes_per_request": KV_STATE_SOURCE,
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
)
