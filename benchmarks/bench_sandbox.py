"""Benchmark: what the bubblewrap box costs a kernel start.

Run: .venv/bin/python benchmarks/bench_sandbox.py [runs]

Starts ``python -c "import ipykernel"`` (what a kernel start imports first) ``runs`` times
(default 20) directly, and as many times through ``python -m labkit.course.sandbox``
(bwrap, seccomp, a uid of its own, a cgroup when root), interleaved, in this process.
Prints the median and p90 wall time of each and the ratio boxed / direct.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from labkit.course import cgroups
from labkit.course.sandbox import Policy, default_hide, default_keep, fresh_uid

CODE = "import ipykernel"


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with tempfile.TemporaryDirectory(prefix="labkit-bench-sandbox-") as tmp:
        work, ipc = Path(tmp, "work"), Path(tmp, "ipc")
        work.mkdir()
        ipc.mkdir()
        uid = fresh_uid() if os.geteuid() == 0 else 65534
        cage = (cgroups.make_cage(f"labkit-bench-{uid}", memory_bytes=3 << 30, processes=256)
                if os.geteuid() == 0 else None)
        policy = Policy(workdir=str(work), ipc_dir=str(ipc), hide=default_hide(),
                        keep=default_keep(), uid=uid, cgroups=cage.folders if cage else ())
        path = policy.save(Path(tmp, "policy.json"))
        direct_argv = [sys.executable, "-c", CODE]
        boxed_argv = [sys.executable, "-m", "labkit.course.sandbox", str(path), "--",
                      *direct_argv]
        direct, boxed = [], []
        try:
            for _ in range(runs):
                direct.append(_time(direct_argv))
                boxed.append(_time(boxed_argv))
        finally:
            if cage is not None:
                cgroups.remove(cage)

    def row(name: str, xs: list[float]) -> str:
        q = statistics.quantiles(xs, n=10)
        return f"{name:8s} median {statistics.median(xs) * 1e3:7.1f} ms  p90 {q[-1] * 1e3:7.1f} ms"

    print(row("direct", direct))
    print(row("boxed", boxed))
    b, d = statistics.median(boxed), statistics.median(direct)
    print(f"ratio boxed/direct (medians): {b / d:.2f}  extra {1e3 * (b - d):.1f} ms")


if __name__ == "__main__":
    main()
