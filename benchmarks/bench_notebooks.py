"""Benchmark: papermill wall time of every source notebook vs an empty notebook, same run.

Run: .venv/bin/python benchmarks/bench_notebooks.py [repeats] [lab-folder ...]
The empty notebook measures kernel start-up and papermill's own overhead; the ratio shows
what the lab itself adds (goal: <= 1.5x, issue 26). A second baseline has as many ``pass``
cells as the lab, separating papermill's per-cell cost from the lab's own work. Each lab
runs twice: headless (``LABKIT_HEADLESS=1``, as the grading kernel, the smoke run and
``nbgrader validate`` do: no widget views, charts or callout HTML) and with every view
(``LABKIT_HEADLESS=0``, what a student's kernel builds). Runs use
``request_save_on_cell_execute=False`` as the smoke test does (one save at the end).
Median of ``repeats`` runs each (default 3); ``lab-folder`` names (``lab1_cloud_fleet``)
pick labs (default: all). Then, in this process, the time to import a lab and to build
each of its parts, headless and not (fresh interpreter each: nothing cached). Every figure
is printed with how busy the whole machine was meanwhile (``/proc/stat``: other people's
work counts) and the 1-minute load average.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import nbformat
import papermill

ROOT = Path(__file__).resolve().parents[1]
BUILD = """
import json, os, sys, tempfile, time
os.chdir(tempfile.mkdtemp())
t0 = time.perf_counter()
from labkit.labs.registry import LABS
lab = LABS[sys.argv[1]].lab(sys.argv[2], headless=sys.argv[3] == "1")
out = {"import": time.perf_counter() - t0}
for letter in "ABCD":
    t = time.perf_counter()
    part = lab.part(letter)
    out[letter] = time.perf_counter() - t
    t = time.perf_counter()
    repr(part.explore), repr(part.reveal)
    out[letter + "+model"] = out[letter] + time.perf_counter() - t
out["bqplot"] = "bqplot" in sys.modules
print(json.dumps(out))
"""


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine since boot ((0, 0) without /proc)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except OSError:
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def busy_share(fn: Callable[[], float]) -> tuple[float, float]:
    """(fn's result, the machine's busy share while it ran)."""
    b0, t0 = cpu_ticks()
    value = fn()
    b1, t1 = cpu_ticks()
    return value, (b1 - b0) / max(1, t1 - t0)


def run_once(path: Path, workdir: Path, save_each_cell: bool) -> float:
    t0 = time.perf_counter()
    papermill.execute_notebook(str(path), str(workdir / "out.ipynb"), cwd=str(workdir),
                               kernel_name="python3", progress_bar=False, log_output=False,
                               request_save_on_cell_execute=save_each_cell)
    return time.perf_counter() - t0


def median_time(path: Path, repeats: int, *, headless: bool = False,
                save_each_cell: bool = False) -> float:
    os.environ["LABKIT_HEADLESS"] = "1" if headless else "0"
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


def part_builds(lab_folder: str, repeats: int) -> None:
    """Import and part-build seconds in a fresh interpreter, headless and with views."""
    lab_id, _, track = lab_folder.partition("_")
    for headless in (True, False):
        rows = []
        for _ in range(repeats):
            out = subprocess.run([sys.executable, "-c", BUILD, lab_id, track,
                                  "1" if headless else "0"], capture_output=True, text=True,
                                 check=True)
            rows.append(json.loads(out.stdout))
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "bqplot"}
        parts = "  ".join(f"{p} {med[p]:.3f}/{med[p + '+model']:.3f}" for p in "ABCD")
        print(f"  {'headless' if headless else 'views   '}: import {med['import']:.3f} s; "
              f"build/with model per part (s): {parts}; bqplot imported: "
              f"{rows[0]['bqplot']}")


def main() -> None:
    args = sys.argv[1:]
    repeats = int(args.pop(0)) if args and args[0].isdigit() else 3
    labs = sorted((ROOT / "source").glob("*/*.ipynb"))
    if args:
        labs = [p for p in labs if p.parent.name in args]
    cells = max(len(nbformat.read(p, as_version=4).cells) for p in labs)
    print(f"load average (1 min) at start: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LABKIT_LEDGER"] = str(Path(tmp) / "ledger.json")
        base, busy = busy_share(lambda: median_time(empty_notebook(Path(tmp) / "one.ipynb", 1),
                                                    repeats))
        same, busy2 = busy_share(lambda: median_time(
            empty_notebook(Path(tmp) / "many.ipynb", cells), repeats))
        print(f"empty notebook (1 cell)     {base:6.2f} s (median of {repeats}; "
              f"machine {busy:.0%} busy)")
        print(f"empty notebook ({cells} cells)   {same:6.2f} s   {same / base:4.2f}x empty "
              f"(machine {busy2:.0%} busy)")
        for path in labs:
            bare, busy_bare = busy_share(lambda p=path: median_time(p, repeats, headless=True))
            full, busy_full = busy_share(lambda p=path: median_time(p, repeats))
            print(f"{path.parent.name:<27} headless {bare:6.2f} s = {bare / base:4.2f}x empty "
                  f"({bare / same:4.2f}x same-size); views {full:6.2f} s = "
                  f"{full / base:4.2f}x empty; headless/views {bare / full:4.2f} "
                  f"(machine {busy_bare:.0%} / {busy_full:.0%} busy, "
                  f"load {os.getloadavg()[0]:.2f})")
        for path in labs:
            print(f"{path.parent.name}: in-process import and part builds "
                  f"(median of {repeats}):")
            part_builds(path.parent.name, repeats)
        print(f"load average (1 min) at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
