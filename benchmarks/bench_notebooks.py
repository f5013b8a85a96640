"""Benchmark: papermill wall time of every source notebook vs an empty notebook, same run.

Run: .venv/bin/python benchmarks/bench_notebooks.py [repeats]
The empty notebook measures kernel start-up and papermill's own overhead; the ratio shows
what the lab itself adds (goal: <= 2x). A second baseline has as many ``pass`` cells as the
lab, separating papermill's per-cell cost from the lab's own work. Runs use
``request_save_on_cell_execute=False`` as the smoke test does (one save at the end); the
last column times a lab with papermill's default save after every cell, for comparison.
Median of ``repeats`` runs each (default 3).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import papermill

ROOT = Path(__file__).resolve().parents[1]


def run_once(path: Path, workdir: Path, save_each_cell: bool) -> float:
    t0 = time.perf_counter()
    papermill.execute_notebook(str(path), str(workdir / "out.ipynb"), cwd=str(workdir),
                               kernel_name="python3", progress_bar=False, log_output=False,
                               request_save_on_cell_execute=save_each_cell)
    return time.perf_counter() - t0


def median_time(path: Path, repeats: int, save_each_cell: bool = False) -> float:
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            times.append(run_once(path, Path(tmp), save_each_cell))
    return statistics.median(times)


def empty_notebook(path: Path, cells: int) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("pass") for _ in range(cells)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)
    return path


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    labs = sorted((ROOT / "source").glob("*/*.ipynb"))
    cells = max(len(nbformat.read(p, as_version=4).cells) for p in labs)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LABKIT_LEDGER"] = str(Path(tmp) / "ledger.json")
        base = median_time(empty_notebook(Path(tmp) / "one.ipynb", 1), repeats)
        same = median_time(empty_notebook(Path(tmp) / "many.ipynb", cells), repeats)
        print(f"empty notebook (1 cell)     {base:6.2f} s (median of {repeats})")
        print(f"empty notebook ({cells} cells)   {same:6.2f} s   {same / base:4.2f}x empty")
        for path in labs:
            t = median_time(path, repeats)
            saving = median_time(path, repeats, save_each_cell=True)
            print(f"{path.parent.name:<27} {t:6.2f} s   {t / base:4.2f}x empty, "
                  f"{t / same:4.2f}x same-size empty; saving every cell {saving:6.2f} s")


if __name__ == "__main__":
    main()
