"""Benchmark: vectorised ``parallelism.search`` against the pure-Python ``search_loop``.

Run as ``python benchmarks/bench_parallelism.py`` (not a pytest test). For each case it
checks both give the same answer, then prints the median wall time of each over several
repeats (``time.perf_counter``) and the speed-up. ``search`` memoises the degree grid and
per-TP constants (a sweep reuses them), so it is timed twice: warm (the steady state of
repeated calls) and cold (caches cleared before every call). Goals: search <= 50 ms and
>= 20x the loop, warm; the cold speed-up is printed alongside.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import fields

from labkit.physics.parallelism import (
    ParallelConfig,
    ParallelismSearch,
    clear_caches,
    search,
    search_loop,
)

CASES = [
    ("h100-sxm", "deepseek-v3", 8192, 1),
    ("h100-sxm", "deepseek-v3", 8192, 64),
    ("h100-sxm", "deepseek-v3", 32768, 8),
    ("h100-sxm", "deepseek-v3", 131072, 1),
    ("h100-sxm", "deepseek-v3", 131072, 64),
    ("h100-sxm", "llama-3.1-405b", 8192, 1),
    ("h100-sxm", "llama-3.1-405b", 8192, 64),
    ("h100-sxm", "llama-3.1-405b", 32768, 8),
    ("h100-sxm", "llama-3.1-405b", 131072, 1),
    ("h100-sxm", "llama-3.1-405b", 131072, 64),
]
GOAL_MS = 50.0
GOAL_SPEEDUP = 20.0


def _same_config(a: ParallelConfig, b: ParallelConfig) -> bool:
    for f in fields(ParallelConfig):
        x, y = getattr(a, f.name), getattr(b, f.name)
        same = math.isclose(x, y, rel_tol=1e-12) if isinstance(x, float) else x == y
        if not same:
            return False
    return True


def same_answer(a: ParallelismSearch, b: ParallelismSearch) -> bool:
    """Chosen config, frontier and counts agree (floats to 1e-12 relative)."""
    return (_same_config(a.chosen, b.chosen) and len(a.frontier) == len(b.frontier)
            and all(_same_config(x, y) for x, y in zip(a.frontier, b.frontier, strict=True))
            and (a.feasible_count, a.candidate_count) == (b.feasible_count, b.candidate_count))


def median_s(fn: Callable[[], object], repeats: int,
             before: Callable[[], object] | None = None) -> float:
    """Median seconds of ``fn`` over ``repeats`` calls; ``before`` runs untimed first."""
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=25, help="timed repeats of search")
    p.add_argument("--loop-repeats", type=int, default=5, help="timed repeats of search_loop")
    args = p.parse_args(argv)

    print(f"{'model':<15} {'context':>7} {'batch':>5} {'configs':>7} "
          f"{'chosen (tp,cp,pp,dp,ep)':>24} {'ms/token':>8} {'warm ms':>8} {'cold ms':>8} "
          f"{'loop ms':>8} {'warm x':>7} {'cold x':>7}")
    misses = []
    for hw, model, ctx, batch in CASES:
        fast = search(hw, model, ctx, batch)
        slow = search_loop(hw, model, ctx, batch)
        if not same_answer(fast, slow):
            print(f"MISMATCH for {hw} {model} {ctx} {batch}", file=sys.stderr)
            return 1
        case = (hw, model, ctx, batch)
        t_warm = median_s(lambda a=case: search(*a), args.repeats)
        t_cold = median_s(lambda a=case: search(*a), args.repeats, before=clear_caches)
        t_loop = median_s(lambda a=case: search_loop(*a), args.loop_repeats)
        if t_warm * 1e3 > GOAL_MS or t_loop / t_warm < GOAL_SPEEDUP:
            misses.append(f"{model} at {ctx} tokens, batch {batch}")
        c = fast.chosen
        print(f"{model:<15} {ctx:>7} {batch:>5} {fast.candidate_count:>7} "
              f"{c.degrees!s:>24} {c.per_token_latency_s * 1e3:>8.2f} {t_warm * 1e3:>8.2f} "
              f"{t_cold * 1e3:>8.2f} {t_loop * 1e3:>8.1f} {t_loop / t_warm:>6.1f}x "
              f"{t_loop / t_cold:>6.1f}x")
    goal = f"search <= {GOAL_MS:g} ms and >= {GOAL_SPEEDUP:g}x the loop (warm)"
    print(f"all on {CASES[0][0]}; answers identical in every case; {goal}: "
          + ("met in every case" if not misses else "missed for " + "; ".join(misses)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
