"""Benchmark: ``compare_policies`` (Lab 1 Part C's simulation) per track.

Run: .venv/bin/python benchmarks/bench_batching.py [repeats]

Simulates the four batching policies at each track's default replica load ``repeats``
times (default 30) after a warm-up and prints the median and p90 in ms: the kernel's share
of one Part C refresh (the goal: well under the 20 ms control-to-chart budget).
"""

from __future__ import annotations

import statistics
import sys
import time

from labkit.physics.batching import compare_policies
from labkit.plans.serving import serving_plan
from labkit.plans.workload import track_inputs
from labkit.tracks import TRACKS


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    for tid in TRACKS:
        kw = track_inputs(tid)
        rate = serving_plan(tid).replica_arrival_rate_per_s
        compare_policies(arrival_rate_per_s=rate, **kw)  # warm-up
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            compare_policies(arrival_rate_per_s=rate, **kw)
            times.append(time.perf_counter() - t0)
        p90 = statistics.quantiles(times, n=10)[-1]
        print(f"{tid:12s} median {statistics.median(times) * 1e3:6.2f} ms  p90 {p90 * 1e3:6.2f} ms")


if __name__ == "__main__":
    main()
