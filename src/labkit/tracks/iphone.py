"""iPhone: a 3B writing assistant on the A17 Pro, paid in battery (mWh per request).

The one-time setup energy (download + on-device compilation) is derived by
:func:`phone_setup_mwh` from the estimates below.
"""

from __future__ import annotations

from labkit.core.units import J_PER_MWH, SECONDS_PER_DAY
from labkit.physics.kvcache import weight_bytes
from labkit.tracks.base import (
    CONTEXT_SOURCE,
    DERIVED_ENERGY_SOURCE,
    KV_STATE_SOURCE,
    Speculation,
    Stakeholder,
    make_track,
    narrative,
)

# -- one-time setup energy -----------------------------------------------------------------
WIFI_DOWNLOAD_W = 2.0            # estimate: Wi-Fi radio + SoC while downloading, W
WIFI_BYTES_PER_S = 12.5e6        # 100 Mbit/s link = 12.5e6 bytes/s
COMPILE_S, COMPILE_W = 60.0, 4.0  # estimate: on-device model compilation, s and W


def phone_setup_mwh(model_id: str = "llama-3.2-3b", weight_bits: int = 4) -> float:
    """Download + compile energy of an on-device LM, mWh.

    (weight_bytes / link rate x download power + compile time x compile power) / 3.6 J.
    """
    download_s = weight_bytes(model_id, weight_bits, include_lm_head=True) / WIFI_BYTES_PER_S
    return (download_s * WIFI_DOWNLOAD_W + COMPILE_S * COMPILE_W) / J_PER_MWH


IPHONE = make_track(
    id="iphone", label="iPhone: 3B assistant on the A17 Pro",
    hardware_id="a17-pro", model_id="llama-3.2-3b",
    stakeholder=Stakeholder(
        "Mei Tanaka", "On-device ML lead",
        "Users notice two things: a reply that crawls, and a battery that drains. Our "
        "3B model must stream at 10 tokens a second and spend no more than 5% of the "
        "battery a day. Which precision and schedule get us there?"),
    primary_metric="mWh per request at 10 tokens/s",
    guardrail_metrics=("p99 TPOT <= 100 ms", "p99 TTFT <= 1 s", "fits in app memory",
                       "quality loss <= 3 points", "energy <= 5% of battery per day"),
    cost_unit="mWh", setup_cost=phone_setup_mwh(), daily_budget=633.5,
    demand_rate_per_s=15 / SECONDS_PER_DAY, min_demand_rate_per_s=15 / SECONDS_PER_DAY,
    active_hours_per_day=24.0, horizon_days=365,
    slo_kind="tpot", slo_s=0.100, slo_quantile=0.99, ttft_slo_s=1.0,
    prompt_tokens=1024, output_tokens=256, output_tokens_cv=0.8,
    sensor_window=None, window_bytes=0.0, replica_noun="phone", replica_nouns="phones",
    devices_per_replica=1, max_replicas=1, price_per_device_hour=None,
    weight_bits=4, kv_bits=16,
    quality_loss_pct={32: 0.0, 16: 0.0, 8: 0.5, 4: 2.5}, max_quality_loss_pct=3.0,
    min_kv_bits=8, memory_reserve_fraction=0.0,
    batch_size=1, default_policy="none", batch_timeout_s=0.100,
    scheduler_overhead_s=1.0e-3, arrival_process="poisson", arrival_streams=1,
    max_utilisation=0.8,
    speculation=Speculation(proposer="prompt lookup", acceptance_mean=0.6,
                            acceptance_sd=0.1, max_tokens=8),
    narrative=narrative(
        "A writing assistant runs Llama 3.2 3B on the phone itself: private, offline, and paid "
        "for in battery rather than dollars.",
        {
            "A": "On a phone the decode loop streams the transformer blocks' weights through "
                 "51 GB/s of LPDDR5 for each token. How long is the prompt pass next to that loop?",
            "B": "iOS leaves an app about 4 GB. At 16 bits the weights alone do not fit; at 4 "
                 "bits, how many cached conversations do?",
            "C": "One user, a few rewrites a day: no other request to batch with. But a "
                 "rewrite copies much of its email: can the phone batch its own next tokens?",
            "D": "Choose precision and schedule so replies stream at 10 tokens/s inside the "
                 "battery budget without crossing the quality floor.",
        },
        "On a phone precision is the lever: 4-bit weights are what make the model fit, stream "
        "fast enough and stay inside the battery budget."),
    sources={
        "setup_cost": "derived (phone_setup_mwh): Wi-Fi download of the 4-bit weights "
                      "(1.606 GB at 12.5e6 bytes/s = 128.5 s at about 2 W = 71.4 mWh) "
                      "plus on-device model compilation (about 60 s at 4 W = 66.7 mWh); "
                      "download and compile powers are estimates",
        "cost_per_event": DERIVED_ENERGY_SOURCE.format(unit="mWh (3.6 J)"),
        "daily_budget": "derived: 5% of an iPhone 15 Pro battery per day; 3,274 mAh x "
                        "3.87 V = 12,670 mWh (Apple regulatory filing capacity, nominal "
                        "voltage) x 5% = 633.5 mWh",
        "min_demand_rate_per_s": "every on-device request is served on the phone",
        "demand_rate_per_s": "assumption: 15 rewrites per user per day, spread over 24 h "
                             "(a heavy user of a writing aid)",
        "active_hours_per_day": "rate already averaged over the day",
        "horizon_days": "one year of ownership",
        "slo_s": "assumption: 10 tokens/s streaming (100 ms per token), about twice "
                 "silent-reading speed (Brysbaert 2019: about 238 words/min, about 5 "
                 "tokens/s); 20 tokens/s is "
                 "out of reach: measured 4-bit phone decode reaches 45-50% of memory "
                 "bandwidth (data/measurements.toml, phone class)",
        "slo_quantile": "p99, the usual latency SLO quantile",
        "ttft_slo_s": "assumption: first token within 1 s",
        "prompt_tokens": "assumption: an email or page to rewrite, 1,024 tokens",
        "output_tokens": "assumption: 256-token rewrite",
        "output_tokens_cv": "assumption: lognormal spread, coefficient of variation 0.8",
        "context_tokens": CONTEXT_SOURCE,
        "state_bytes_per_request": KV_STATE_SOURCE,
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
        "speculation": "prompt lookup (A. Saxena 2023, apoorvumang/prompt-lookup-decoding): "
                       "the guesses are what followed the last generated n-gram in the "
                       "prompt, a string match with no model step; it reports 2-4x on "
                       "input-grounded tasks with 10 guesses a pass, the E(alpha, 10) of "
                       "an acceptance alpha of 0.5-0.77. Assumptions: acceptance on "
                       "rewrites averages 0.6 and varies by 0.1 (SD) between requests (a "
                       "proofread copies most of the email, a change of tone little); at "
                       "most 8 guesses a pass",
    },
)
