"""Benchmark: ``labkit course grade`` vs serial ``nbgrader autograde``, same submissions.

Run: .venv/bin/python benchmarks/bench_grading.py [students] [workers ...]

Builds one Lab 1 course (four tracks) and ``students`` students (default 12) who each
submit all four assignments (full, blank and partial in turn): 48 submissions by default.
The baseline is stock ``nbgrader autograde <assignment>`` for each assignment, one after
another, on a copy of the course; then ``labkit course grade`` with each worker count
(default: the number of cores) on fresh copies. Every run must give the same per-cell
scores as the baseline. Prints seconds per submission, the speed-up over the baseline,
and where labkit's time goes per submission (prepare, kernel start, execution, nbgrader's
grade writes to the job's snapshot database, the rest of nbgrader -- sanitising, copying,
writing the notebook -- and the merge into the course gradebook). Each run also prints how
busy the whole machine was (``/proc/stat``: other people's work counts too) and the CPU
seconds it spent per submission: on ``cores`` cores no run can take less than
``cpu / cores`` seconds per submission, whatever the worker count.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nbgrader.api import Gradebook

from labkit.course import demo
from labkit.course.grade import GradeOptions, grade

ROOT = Path(__file__).resolve().parents[1]
TRACKS = ("cloud_fleet", "iphone", "oura_ring", "robotaxi")
ASSIGNMENTS = [f"lab1_{t}" for t in TRACKS]


def cell_scores(db_url: str) -> dict[tuple[str, str, str], float | None]:
    with Gradebook(db_url, "labkit") as gb:
        return {(s.student.id, a.name, g.name): g.auto_score
                for a in gb.assignments for s in a.submissions
                for nb in s.notebooks for g in nb.grades if g.cell.cell_type == "code"}


def make_course(base: Path, students: int) -> tuple[Path, str]:
    course = base / "course"
    db_url = demo.new_course(ROOT, course, ASSIGNMENTS)
    kinds = demo.HONEST
    for assignment in ASSIGNMENTS:
        for n in range(students):
            kind = kinds[n % len(kinds)]
            demo.write_honest(kind, course, assignment,
                              course / "submitted" / f"s{n:03d}_{kind}" / assignment)
    return course, db_url


def copy_course(course: Path, dest: Path) -> tuple[Path, str]:
    shutil.copytree(course, dest)
    return dest, f"sqlite:///{dest / 'gradebook.db'}"


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of every core so far (``/proc/stat``; zeros without it)."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return 0.0, 0.0
    hz = os.sysconf("SC_CLK_TCK")
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks) - idle) / hz, sum(ticks) / hz


def load_line(before: tuple[float, float], after: tuple[float, float], n: int) -> str:
    """How busy the machine was between two :func:`machine_cpu` readings, and the busy CPU
    seconds per submission."""
    busy, total = after[0] - before[0], after[1] - before[1]
    if total <= 0:
        return "machine load unknown"
    return f"machine {busy / total:.0%} busy, {busy / n:.2f} CPU-s/submission"


def serial_nbgrader(course: Path, db_url: str) -> float:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
           f"{os.environ.get('PATH', '')}", "PYTHONWARNINGS": "ignore"}
    exe = str(Path(sys.executable).parent / "nbgrader")
    t0 = time.perf_counter()
    for assignment in ASSIGNMENTS:
        subprocess.run([exe, "autograde", assignment, f"--CourseDirectory.root={course}",
                        f"--CourseDirectory.db_url={db_url}"], cwd=course, env=env,
                       check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    students = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    worker_counts = [int(w) for w in sys.argv[2:]] or [os.cpu_count() or 1]
    n = students * len(ASSIGNMENTS)
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        base = Path(tmp)
        course, _ = make_course(base, students)
        print(f"{n} submissions ({students} students x {len(ASSIGNMENTS)} Lab 1 assignments), "
              f"{os.cpu_count()} cores")

        serial_root, serial_db = copy_course(course, base / "serial")
        c0 = machine_cpu()
        t_serial = serial_nbgrader(serial_root, serial_db)
        serial_load = load_line(c0, machine_cpu(), n)
        reference = cell_scores(serial_db)
        assert len({(s, a) for s, a, _ in reference}) == n, "baseline graded every submission"
        print(f"serial nbgrader autograde : {t_serial:7.1f} s  {t_serial / n:5.2f} s/submission"
              f"  ({serial_load})")

        for workers in worker_counts:
            root, db_url = copy_course(course, base / f"labkit-{workers}")
            t0, c0 = time.perf_counter(), machine_cpu()
            report = grade(root, ASSIGNMENTS, db_url=db_url,
                           options=GradeOptions(workers=workers, progress=False))
            elapsed, load = time.perf_counter() - t0, load_line(c0, machine_cpu(), n)
            assert not report.errors, report.summary()
            same = cell_scores(db_url) == reference
            print(f"labkit course grade -w {workers} : {elapsed:7.1f} s  {elapsed / n:5.2f} "
                  f"s/submission  speed-up {t_serial / elapsed:4.2f}x  same grades: {same}  "
                  f"({load})")
            done = [o for o in report.outcomes if o.status == "graded"]
            keys = ("prepare", "kernel_start", "execute", "judge", "database", "nbgrader_other",
                    "merge")
            parts = {k: sum(o.timings.get(k, 0.0) for o in done) / len(done) for k in keys}
            busy = sum(parts.values())
            print("    per submission (worker time): " + ", ".join(
                f"{k.replace('_', ' ')} {v:.2f} s ({v / busy:.0%})" for k, v in parts.items())
                  + f"; total {busy:.2f} s on {workers} worker(s)")
            if not same:
                raise SystemExit("grades differ from serial nbgrader autograde")


if __name__ == "__main__":
    main()
