"""Benchmark: vectorised 256 x 64 (batch x context) roofline sweep vs a per-point loop,
and the cost of ``import labkit`` in a fresh interpreter.

Run: .venv/bin/python benchmarks/bench_roofline.py
Prints medians and ratios measured in this process; asserts both paths agree.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import numpy as np

from labkit.physics import roofline as rf
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model

HW, MODEL = "h100-sxm", "llama-3.1-70b"
BATCHES = np.arange(1, 257, dtype=float)
CONTEXTS = np.geomspace(128, 1_048_576, 64)


def loop_sweep() -> list[list[float]]:
    """Straightforward baseline: one Python evaluation of the additive roofline per point."""
    hw, m = get_hardware(HW), get_model(MODEL)
    flops, bw = hw.flops(), hw.memory_bandwidth
    kv_bpt = kv_bytes_per_token(m, 16)
    rows = []
    for b in BATCHES:
        row = []
        for s in CONTEXTS:
            weight = m.block_params_total * 2 / bw
            compute = 2 * m.block_params_active * b / flops
            kv = b * s * kv_bpt / bw
            row.append((weight + compute + kv) / b)
        rows.append(row)
    return rows


def vector_sweep() -> np.ndarray:
    return rf.decode_roofline(HW, MODEL, BATCHES[:, None], CONTEXTS[None, :]).per_token_s


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def import_seconds(stmt: str, repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", stmt], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    np.testing.assert_allclose(vector_sweep(), np.array(loop_sweep()), rtol=1e-12)
    vec = median_ms(vector_sweep, 50)
    loop = median_ms(loop_sweep, 5)
    print(f"roofline sweep {len(BATCHES)} x {len(CONTEXTS)} points")
    print(f"  vectorised  {vec:8.3f} ms")
    print(f"  python loop {loop:8.3f} ms")
    print(f"  speed-up    {loop / vec:8.1f} x")

    bare = import_seconds("pass")
    numpy_only = import_seconds("import numpy")
    pkg = import_seconds("import labkit")
    models = import_seconds("import labkit.physics.roofline, labkit.physics.capacity")
    print("import time (fresh interpreter, median of 7, minus bare start-up)")
    print(f"  interpreter start   {bare:6.3f} s")
    print(f"  import numpy        {numpy_only - bare:6.3f} s")
    print(f"  import labkit       {pkg - bare:6.3f} s   (goal <= 0.3 s)")
    print(f"  import roofline+capacity {models - bare:6.3f} s")


if __name__ == "__main__":
    main()
