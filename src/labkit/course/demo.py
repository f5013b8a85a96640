"""The demo course and the fixture sets: a fresh course with every lab released, honest
submissions for every track (:mod:`labkit.course.fixtures.honest`) and hostile ones
(:mod:`labkit.course.fixtures.hostile`) as each lab's :class:`FixturePlan` says, graded,
fed back and exported by :func:`run_pipeline` (``labkit course demo``).

This module reads the **source** notebooks (solutions): instructor side only.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.course.fixtures.faults import take_specials
from labkit.course.fixtures.honest import HONEST, expected_honest, grade_cells, write_honest
from labkit.course.fixtures.hostile import expected, hostile_set, write_hostile

__all__ = ["FIXTURE_PLANS", "HONEST", "FixturePlan", "write_fixture_set", "write_honest"]


@dataclass(frozen=True)
class FixturePlan:
    """Which fixtures a lab gets: honest ones for ``honest_tracks`` (None: every track),
    the hostile set (or only the ``hostile`` names) on ``hostile_track``."""

    hostile_track: str = "cloud_fleet"
    honest_tracks: tuple[str, ...] | None = None
    hostile: tuple[str, ...] | None = None


# Lab 1 gets everything; Lab 2 the attacks on the verdict, the kernel's folder and the box,
# on one track, to keep the suite's grading short.
FIXTURE_PLANS = {
    "lab1": FixturePlan(),
    "lab2": FixturePlan("iphone", ("iphone",), (
        "code_swap", "input_transformer", "post_run_hook", "displayhook_result",
        "float_subclass", "forged_widgets", "module_alias", "planted_links",
        "display_flood", "patch_grader", "edited_test", "daemon", "disk_fill",
        "fork_fan_out", "html_output")),
}


def write_fixture_set(root: Path, dest: Path, lab_id: str = "lab1",
                      plan: FixturePlan | None = None) -> dict[str, dict[str, Any]]:
    """Write honest submissions and hostile ones for ``lab_id`` as its plan says.

    Layout is nbgrader's ``submitted/<student>/<assignment>/``; ``expected.json`` maps
    ``<student>/<assignment>`` to the expected score, max, findings and reason;
    ``specials.json`` lists what git cannot hold (made again by
    :func:`labkit.course.fixtures.faults.make_specials`).
    """
    plan = plan or FIXTURE_PLANS.get(lab_id, FixturePlan())
    if dest.exists():
        shutil.rmtree(dest)
    expectations: dict[str, dict[str, Any]] = {}
    tracks = sorted(p.name.split("_", 1)[1] for p in (root / "release").glob(f"{lab_id}_*"))
    for track in tracks if plan.honest_tracks is None else plan.honest_tracks:
        assignment = f"{lab_id}_{track}"
        points = grade_cells(root, assignment)
        for kind in HONEST:
            write_honest(kind, root, assignment, dest / "submitted" / kind / assignment)
            expectations[f"{kind}/{assignment}"] = {
                "score": expected_honest(kind, points), "max": sum(points.values()),
                "findings": [], "flagged": False, "reason": f"honest {kind} submission"}
    assignment = f"{lab_id}_{plan.hostile_track}"
    points = grade_cells(root, assignment)
    for spec in hostile_set(lab_id):
        if plan.hostile is not None and spec.name not in plan.hostile:
            continue
        write_hostile(spec, root, assignment, dest / "submitted" / spec.name / assignment)
        expectations[f"{spec.name}/{assignment}"] = {
            "score": expected(spec, points), "max": sum(points.values()),
            "findings": list(spec.findings), "flagged": spec.flagged, "reason": spec.reason}
    (dest / "expected.json").write_text(json.dumps(expectations, indent=1, sort_keys=True) + "\n")
    take_specials(dest)  # FIFOs, odd names, sparse files: into specials.json, out of git
    return expectations


def new_course(repo: Path, dest: Path, assignments: list[str]) -> str:
    """A course folder at ``dest`` with ``assignments`` generated into its own gradebook.

    Copies the nbgrader configuration and the source notebooks from the course
    repository ``repo`` and runs the real ``nbgrader generate_assignment``. Returns the
    gradebook URL.
    """
    from labkit.course.build import generate_assignments, new_course_root

    new_course_root(repo, dest)
    db_url = f"sqlite:///{dest / 'gradebook.db'}"
    for name in assignments:
        shutil.copytree(repo / "source" / name, dest / "source" / name, dirs_exist_ok=True)
    generate_assignments(dest, assignments, db_url)
    return db_url


def lab_assignments(root: Path, lab: str, tracks: list[str] | None = None) -> list[str]:
    """Assignment names for ``lab`` (``lab1``) or one assignment (``lab1_iphone``)."""
    names = sorted(p.name for p in (root / "source").glob("*_*") if p.is_dir())
    chosen = [lab] if lab in names else [n for n in names if n.split("_", 1)[0] == lab]
    if tracks:
        chosen = [n for n in chosen if n.split("_", 1)[1] in tracks]
    if not chosen:
        raise ValueError(f"lab: no assignment matches {lab!r}"
                         f"{' with tracks ' + ', '.join(tracks) if tracks else ''} under "
                         f"{root / 'source'} (have: {', '.join(names) or 'none'}); "
                         "`labkit course build --labs LAB --tracks TRACK` makes one")
    return chosen


def run_pipeline(repo: Path, dest: Path, labs: list[str], workers: int = 0,
                 log: Callable[[str], None] = print) -> int:
    """The main job: release, demo submissions, grade, feedback, export. Returns 0 if clean.

    Builds a fresh course in ``dest`` from the course repository ``repo``: generates every
    assignment of ``labs`` into a new SQLite gradebook, writes a full, a blank and a
    partial submission per track, grades them in parallel in the sandbox, writes
    per-student feedback, the CSV export and the instructor summary.
    """
    from labkit.course.feedback import write_feedback
    from labkit.course.grade import GradeOptions, grade
    from labkit.course.report import export, gradebook_status

    if dest.exists():
        shutil.rmtree(dest)
    assignments = [a for lab in labs for a in lab_assignments(repo, lab)]
    log(f"1/5 release: nbgrader generate_assignment for {len(assignments)} assignments "
        f"into {dest}")
    db_url = new_course(repo, dest, assignments)
    log("2/5 demo submissions: full, blank and partial per track")
    for name in assignments:
        for kind in HONEST:
            write_honest(kind, dest, name, dest / "submitted" / f"demo_{kind}" / name)
    from labkit.course.sandbox import probe

    isolated, why = probe()
    if not isolated:  # the demo's own submissions are trusted; students' never are
        log(f"note: student kernels cannot be sandboxed on this machine ({why}); the demo "
            "grades its own trusted submissions without the sandbox. `labkit course grade` "
            "refuses to do that with real submissions unless given --no-isolation.")
    log("3/5 grade (parallel" + (", sandboxed)" if isolated else ")"))
    report = grade(dest, assignments, db_url=db_url,
                   options=GradeOptions(workers=workers, isolate=isolated), log=log)
    log(report.summary(gradebook_status(dest, db_url, "labkit", assignments)))
    log("4/5 feedback")
    html = write_feedback(dest, db_url, assignments)
    log("5/5 export")
    out = export(dest, db_url, dest / "exports", assignments)
    log("")
    log(f"course folder     {dest}")
    log(f"gradebook         {db_url}")
    log(f"feedback          {len(html)} HTML files under {dest / 'feedback'}")
    log(f"grade CSVs        {', '.join(str(p) for p in out.csv_paths)}")
    log(f"class summary     {out.summary_html}  (open in a browser)")
    return 1 if report.errors else 0
