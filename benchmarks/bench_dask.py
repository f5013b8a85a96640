"""Benchmark: ``labkit course grade`` on a local 2-worker Dask cluster vs the local pool.

Run: .venv/bin/python benchmarks/bench_dask.py [students]

Builds the course of ``bench_grading.py`` (``students`` students, default 12, each
submitting the four Lab 1 assignments: 48 submissions) and grades a fresh copy three ways:

* the local pool, 2 ``worker --serve`` processes (``--workers 2``);
* a ``distributed.LocalCluster`` of 2 single-thread workers with the persistent worker
  (:class:`labkit.course.dask_pool.GraderPlugin`: a warm server per Dask worker);
* the same cluster shape with one fresh interpreter per job (the path before the plugin,
  ``dask_pool.grade_in_fresh_process``), which pays nbgrader's ~2 s import every job.

Each Dask run gets a new cluster (started outside the timing), so every run starts cold.
Every run must give the same per-cell scores. Prints seconds per submission, the ratios,
and how many server processes the persistent run used.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import distributed

from bench_grading import ASSIGNMENTS, cell_scores, copy_course, make_course
from labkit.course import dask_pool
from labkit.course.grade import GradeOptions, grade


def _timed(root: Path, db_url: str, options: GradeOptions) -> float:
    t0 = time.perf_counter()
    report = grade(root, ASSIGNMENTS, db_url=db_url, options=options)
    elapsed = time.perf_counter() - t0
    assert not report.errors, report.summary()
    return elapsed


def _on_cluster(root: Path, db_url: str, run: Callable[..., None]) -> tuple[float, int]:
    """Seconds to grade on a fresh 2-worker cluster, and the server processes it used."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            mock.patch.object(dask_pool, "run", run):
        elapsed = _timed(root, db_url, GradeOptions(scheduler=cluster.scheduler_address,
                                                    progress=False))
        with distributed.Client(cluster) as client:
            pids = {s["pid"] for jobs in client.run(dask_pool.served).values() for s in jobs}
    return elapsed, len(pids)


def main() -> None:
    students = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    n = students * len(ASSIGNMENTS)
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as tmp:
        base = Path(tmp)
        course, _ = make_course(base, students)
        print(f"{n} submissions ({students} students x {len(ASSIGNMENTS)} Lab 1 assignments), "
              f"{os.cpu_count()} cores")

        root, db_url = copy_course(course, base / "local")
        t_local = _timed(root, db_url, GradeOptions(workers=2, progress=False))
        reference = cell_scores(db_url)
        assert len({(s, a) for s, a, _ in reference}) == n, "every submission graded"
        print(f"local pool, 2 workers         : {t_local:7.1f} s  {t_local / n:5.2f} "
              "s/submission")

        root, db_url = copy_course(course, base / "persistent")
        t_warm, servers = _on_cluster(root, db_url, dask_pool.run)
        same_warm = cell_scores(db_url) == reference
        print(f"dask, persistent worker       : {t_warm:7.1f} s  {t_warm / n:5.2f} "
              f"s/submission  {servers} server processes  same grades: {same_warm}")

        root, db_url = copy_course(course, base / "fresh")
        t_fresh, _ = _on_cluster(root, db_url, functools.partial(dask_pool.run,
                                                                 persistent=False))
        same_fresh = cell_scores(db_url) == reference
        print(f"dask, a fresh process per job : {t_fresh:7.1f} s  {t_fresh / n:5.2f} "
              f"s/submission  same grades: {same_fresh}")
        print(f"ratios: persistent / local pool {t_warm / t_local:4.2f}x time, "
              f"fresh per job / persistent {t_fresh / t_warm:4.2f}x time")
        if not (same_warm and same_fresh):
            raise SystemExit("grades differ between the local pool and Dask")


if __name__ == "__main__":
    main()
