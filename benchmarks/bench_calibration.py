"""Peak and achievable against the published measurements: the table, geomean and biases.

    .venv/bin/python benchmarks/bench_calibration.py          # table + summary
    .venv/bin/python benchmarks/bench_calibration.py --fit    # re-run the class fits

The ``--fit`` grids are how the fitted factors in :mod:`labkit.physics.derating` were set:
for each class, the grid point with the least mean |log error| over all of its cases (one
value per class; no case is left out or tuned on its own).
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from dataclasses import replace
from types import MappingProxyType

from labkit.physics import derating as dr
from labkit.physics.calibration import TOLERANCE, calibrate, predict
from labkit.registries.measurements import MEASUREMENTS


def table() -> None:
    t0 = time.perf_counter()
    cal = calibrate()
    took = time.perf_counter() - t0
    print(f"{'id':46s} {'class':10s} {'measured':>10s} {'peak':>10s} {'achievable':>10s} "
          f"{'ratio':>6s}")
    for r in cal.rows:
        flag = "" if r.within else f"  outside +-{TOLERANCE:.0%}"
        print(f"{r.id:46s} {r.device_class:10s} {r.measured_s * 1e3:9.3f}ms "
              f"{r.peak_s * 1e3:9.3f}ms {r.achievable_s * 1e3:9.3f}ms {r.ratio:6.2f}{flag}")
    print(f"\n{len(cal.rows)} cases; ratio = measured / achievable. geomean |error| "
          f"{cal.geomean_abs_error:.1%}; within +-{TOLERANCE:.0%}: {cal.within_share:.1%}")
    for c, b in cal.bias.items():
        print(f"  {c:10s} bias {b:+.1%} (achievable vs measured, geomean), "
              f"geomean |error| {cal.class_geomean_abs_error[c]:.1%}")
    print(f"calibrate(): {took * 1e3:.0f} ms")


def _score(cls: str, d: dr.Derating) -> float:
    ms = [m for m in MEASUREMENTS if dr.device_class_of(m.hardware).id == cls]
    return sum(abs(math.log(predict(m, d) / m.value)) for m in ms) / len(ms)


def fit() -> None:
    grids = {
        "datacenter": (dr.DATACENTER_DECODE, lambda bw, lo, mo: dict(
            bandwidth_efficiency=bw, layer_overhead_s=lo, moe_layer_overhead_s=mo),
            # bandwidth fixed: a sourced estimate, not a fit
            ([0.9], [50e-6, 60e-6, 70e-6, 80e-6, 90e-6], [0.0, 30e-6, 60e-6, 90e-6])),
        "automotive": (dr.EDGE_GPU_CNN, lambda e, e32, tail, lo: dict(
            flop_efficiency=e, fp32_flop_efficiency=e32, layer_tail_flop=tail,
            layer_overhead_s=lo),
            ([0.38, 0.4, 0.42, 0.44, 0.46, 0.48], [0.5, 0.55, 0.6],
             [80e6, 90e6, 100e6, 110e6, 120e6, 130e6], [3e-6, 4e-6, 5e-6, 6e-6, 7e-6])),
        "phone": (dr.PHONE_DECODE, lambda bw, q4: dict(
            bandwidth_efficiency=bw, bits_bandwidth=MappingProxyType({4: q4, 8: (1 + q4) / 2})),
            # the 4-bit share fixed: from the measurement
            ([0.55, 0.6, 0.65, 0.7, 0.75], [0.72])),
        "mcu": (dr.MCU_CNN, lambda cpm: dict(flop_efficiency=1 / (2 * cpm)),
                ([2.9, 3.1, 3.3, 3.5, 3.7, 3.9, 4.1],)),
    }
    for cls, (base, make, axes) in grids.items():
        best = min((_score(cls, replace(base, **make(*p))), p) for p in itertools.product(*axes))
        print(f"{cls:10s} best mean |log error| {best[0]:.3f} at {best[1]}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="re-run the per-class grid fits")
    (fit if ap.parse_args().fit else table)()
