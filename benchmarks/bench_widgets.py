"""Benchmark: kernel-side latency of every Lab 1 control callback, for every track and part.

For each track, part and control, sets ``control.value`` ``--changes`` times (default 200),
cycling through valid values so that every set is a real change, and times the set until it
returns -- the observer has then run the part's refresh steps that depend on that control
(:func:`labkit.labs.common.depends_on`: the figures' traits, read-outs, callouts and math
peek they own) and the reveal (the prediction is committed first, so the reveal is
rendered too). Widgets sync through ipywidgets' comm layer; outside a kernel that is a
no-op comm, so the time is the kernel-side work, not the browser's. ``--clock cpu`` times
this process's CPU time instead of the wall clock (steadier on a shared machine).

Run: .venv/bin/python benchmarks/bench_widgets.py [--changes N] [--clock cpu] [--check]
Prints p50/p95/max per control, the worst p95 per track and part, and the worst p95
overall against the 20 ms goal; ``--check`` exits 1 when the goal is missed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

from labkit.core.answers import AnswerStore
from labkit.labs.inference_economy import Lab
from labkit.labs.parts import PARTS
from labkit.tracks import TRACKS

GOAL_MS = 20.0
# wall: what a student waits for; cpu: this process's CPU time, steadier on a shared machine
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def cycle_values(ctl: object, n_stops: int = 9) -> list[object]:
    """Distinct valid values of a control, in an order whose consecutive items differ."""
    opts = getattr(ctl, "options", None)
    if opts:
        vals = [o[1] if isinstance(o, tuple) else o for o in opts]
    else:
        lo, hi = float(ctl.min), float(ctl.max)  # type: ignore[attr-defined]
        if type(ctl).__name__ == "FloatLogSlider":
            base = float(ctl.base)  # type: ignore[attr-defined]
            vals = list(base ** np.linspace(lo, hi, n_stops))
        elif isinstance(ctl.value, int):  # type: ignore[attr-defined]
            vals = sorted({round(float(x)) for x in np.linspace(lo, hi, n_stops)})
        else:
            vals = list(np.linspace(lo, hi, n_stops))
    if len(vals) < 2:
        raise ValueError(f"control {ctl!r} has fewer than two values")
    return vals + vals[-2:0:-1]  # ping-pong: a, b, c, b (then a again)


def bench_control(ctl: object, changes: int, clock: str = "wall") -> np.ndarray:
    timer = CLOCKS[clock]
    seq = cycle_values(ctl)
    start = seq.index(ctl.value) if ctl.value in seq else 0  # type: ignore[attr-defined]
    times = []
    i = start
    for _ in range(changes):
        i = (i + 1) % len(seq)
        v = seq[i]
        if v == ctl.value:  # type: ignore[attr-defined]
            i = (i + 1) % len(seq)
            v = seq[i]
        t0 = timer()
        ctl.value = v  # type: ignore[attr-defined]
        times.append(timer() - t0)
    return np.asarray(times) * 1e3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--changes", type=int, default=200)
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="time the wall clock (default) or this process's CPU time")
    ap.add_argument("--check", action="store_true", help="exit 1 if a p95 exceeds the goal")
    args = ap.parse_args(argv)
    os.chdir(tempfile.mkdtemp(prefix="labkit-bench-"))
    store = AnswerStore("answers.json")
    rows = []
    print(f"{'track':12s} {'part':4s} {'control':14s} {'p50 ms':>8s} {'p95 ms':>8s} "
          f"{'max ms':>8s}")
    for tid in TRACKS:
        lab = Lab(tid, store=store)
        for letter in PARTS:
            part = lab.part(letter)
            part.predict.commit(part.expected)
            for name, ctl in part.controls.items():
                default = ctl.value
                ms = bench_control(ctl, args.changes, args.clock)
                ctl.value = default
                p50, p95, mx = np.percentile(ms, 50), np.percentile(ms, 95), ms.max()
                rows.append((tid, letter, name, p50, p95, mx))
                print(f"{tid:12s} {letter:4s} {name:14s} {p50:8.2f} {p95:8.2f} {mx:8.2f}")
    print("\nworst p95 per track and part (ms):")
    print(f"{'track':12s} " + " ".join(f"{p:>8s}" for p in PARTS))
    for tid in TRACKS:
        cells = [max(r[4] for r in rows if r[0] == tid and r[1] == p) for p in PARTS]
        print(f"{tid:12s} " + " ".join(f"{c:8.2f}" for c in cells))
    worst = max(rows, key=lambda r: r[4])
    ok = worst[4] <= GOAL_MS
    print(f"\nworst p95 overall: {worst[4]:.2f} ms ({worst[0]} part {worst[1]} control "
          f"{worst[2]}) vs goal {GOAL_MS:g} ms: {'OK' if ok else 'MISSED'}")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
