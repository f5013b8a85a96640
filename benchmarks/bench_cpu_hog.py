"""Benchmark: does a submission that forks busy children slow its classmates' grading?

Run: .venv/bin/python benchmarks/bench_cpu_hog.py [honest] [workers]

Grades ``honest`` (default 4) honest ``full`` submissions of Lab 1's cloud_fleet
assignment with ``labkit course grade``, three times in the same process: alone, with one
more honest ``full`` submission (what one more job costs by itself), then with the
``cpu_hog`` hostile submission (a right Part A that then forks 120 children spinning
forever under ``setsid``) beside them. Prints the wall times, the ratio with the hog to
alone (the goal: at most 1.5x, the kernel's CPU quota holding the hog to its own share;
the hog is one more job, so with 2 workers 5 jobs take 3 rounds where 4 took 2) and to
one more honest job, the honest jobs' mean seconds in each run, whether the honest
scores are the same in every run, the hog's own score, findings and seconds, and how
busy the machine was during each run (from ``/proc/stat``: other people's work counts).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from labkit.course import demo
from labkit.course.fixtures.box import box_attacks
from labkit.course.fixtures.hostile import write_hostile
from labkit.course.grade import GradeOptions, grade

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "lab1_cloud_fleet"


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine since boot."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def run(base: Path, honest: int, extra: str, options: GradeOptions) -> dict:
    """Grade ``honest`` full submissions and ``extra`` ("cpu_hog", "full" or "")."""
    course = base / (extra or "alone")
    db_url = demo.new_course(ROOT, course, [ASSIGNMENT])
    for n in range(honest):
        demo.write_honest("full", course, ASSIGNMENT,
                          course / "submitted" / f"s{n:02d}_full" / ASSIGNMENT)
    if extra == "cpu_hog":
        (spec,) = [s for s in box_attacks("lab1") if s.name == "cpu_hog"]
        write_hostile(spec, course, ASSIGNMENT, course / "submitted" / "cpu_hog" / ASSIGNMENT)
    elif extra:
        demo.write_honest(extra, course, ASSIGNMENT, course / "submitted" / "extra" / ASSIGNMENT)
    busy0, total0 = cpu_ticks()
    t0 = time.perf_counter()
    report = grade(course, [ASSIGNMENT], db_url=db_url, options=options)
    wall = time.perf_counter() - t0
    busy1, total1 = cpu_ticks()
    outcomes = {o.student: o for o in report.outcomes}
    mine = [s for s in outcomes if s not in ("cpu_hog", "extra")]
    honest_seconds = [outcomes[s].seconds for s in mine]
    return {"wall": wall, "busy": (busy1 - busy0) / max(1, total1 - total0),
            "honest": {s: (outcomes[s].status, outcomes[s].score, outcomes[s].max_score,
                           outcomes[s].flagged) for s in mine},
            "job": sum(honest_seconds) / max(1, len(honest_seconds)),
            "hog": outcomes.get("cpu_hog")}


def main() -> None:
    honest = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else (os.cpu_count() or 1)
    options = GradeOptions(workers=workers, progress=False)
    print(f"{honest} honest `full` submissions of {ASSIGNMENT}, {workers} worker(s), "
          f"{os.cpu_count()} cores, kernel CPU quota {options.cpus:g} core(s)")
    with tempfile.TemporaryDirectory(prefix="bench-cpu-hog-") as tmp:
        runs = {}
        for label, extra in (("alone", ""), ("with one more full", "full"),
                             ("with cpu_hog", "cpu_hog")):
            row = runs[label] = run(Path(tmp), honest, extra, options)
            print(f"{label:18s}: {row['wall']:6.1f} s  machine busy {row['busy']:.0%}  "
                  f"honest job {row['job']:.1f} s on average")
    alone, control, beside = runs.values()
    ratio = beside["wall"] / alone["wall"]
    same = alone["honest"] == beside["honest"] == control["honest"]
    print(f"ratio {ratio:.2f}x (goal <= 1.5x: {'met' if ratio <= 1.5 else 'MISSED'}); "
          f"against one more honest job instead: {beside['wall'] / control['wall']:.2f}x; "
          f"honest scores equal: {same}")
    for student, row in sorted(beside["honest"].items()):
        print(f"    {student}: {row[0]} {row[1]}/{row[2]}{' flagged' if row[3] else ''}")
    hog = beside["hog"]
    if hog is not None:
        print(f"    cpu_hog: {hog.status} {hog.score}/{hog.max_score}"
              f"{' flagged' if hog.flagged else ''}; findings {list(hog.findings)}; "
              f"its own job {hog.seconds:.1f} s")
    if not same:
        raise SystemExit("the honest scores changed beside the hog")


if __name__ == "__main__":
    main()
