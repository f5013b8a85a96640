"""Shared by the grading tests: a fresh course holding fixture submissions, the gradebook's
scores, and the check of a graded fixture set against its ``expected.json``."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
from pathlib import Path

from nbgrader.api import Gradebook

from course_helpers import ROOT, TRACKS
from labkit.course import demo
from labkit.course.fixtures.faults import make_specials
from labkit.course.grade import GradeOptions, GradeReport, grade

FIXTURES = ROOT / "autograder" / "fixtures" / "lab1"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
LAB1 = [f"lab1_{t}" for t in TRACKS]
FIXTURES2 = ROOT / "autograder" / "fixtures" / "lab2"
EXPECTED2 = json.loads((FIXTURES2 / "expected.json").read_text())
LAB2 = sorted({key.split("/")[1] for key in EXPECTED2})


COURSES_ENV = "LABKIT_TEST_COURSES"
"""A folder shared by this test run's workers (tests/conftest.py sets it): the courses
:func:`new_course` built, one per list of assignments."""


def new_course(dest: Path, assignments: list[str]) -> str:
    """``demo.new_course(ROOT, dest, assignments)``: a fresh course at ``dest`` with
    ``assignments`` generated, nothing collected. The real ``nbgrader generate_assignment``
    (~8 s of CPU an assignment) runs once per list of assignments in a test run, by the
    first worker that needs it (a lock), into :data:`COURSES_ENV`; every caller gets its
    own copy (a generated course holds no path of its own). Returns the gradebook URL."""
    shared = os.environ.get(COURSES_ENV)
    if not shared:
        return demo.new_course(ROOT, dest, assignments)
    built = Path(shared) / "+".join(assignments)
    with open(f"{built}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # released when the file closes
        if not (built / ".complete").exists():
            shutil.rmtree(built, ignore_errors=True)   # a build cut short
            demo.new_course(ROOT, built, assignments)
            (built / ".complete").touch()
    shutil.copytree(built, dest, dirs_exist_ok=True, symlinks=True,
                    ignore=shutil.ignore_patterns(".complete"))
    return f"sqlite:///{dest / 'gradebook.db'}"


def fixture_course(tmp: Path, assignments: list[str], students: list[str] | None = None,
                   fixtures: Path = FIXTURES, generated: list[str] | None = None) -> str:
    """A fresh course with ``assignments`` generated (:func:`new_course`; ``generated``, a
    list that includes them, when given: a course another test already built) and fixture
    submissions of ``assignments`` collected, their special files (FIFOs, sparse files, odd
    names: ``specials.json``) made again."""
    assert generated is None or set(assignments) <= set(generated), (assignments, generated)
    db_url = new_course(tmp, generated or assignments)
    _collect(tmp, assignments, students, fixtures)
    make_specials(fixtures, tmp)
    return db_url


def _collect(tmp: Path, assignments: list[str], students: list[str] | None,
             fixtures: Path) -> None:
    for folder in sorted((fixtures / "submitted").iterdir()):
        if students is not None and folder.name not in students:
            continue
        for assignment in assignments:
            if (folder / assignment).is_dir():
                shutil.copytree(folder / assignment, tmp / "submitted" / folder.name / assignment,
                                symlinks=True)


CELL_TIMEOUT_S = 120
"""The cell timeout a fixture set is graded with: a cell of honest work takes about a second,
so no busy machine brings it near, and no exact score below rides on a race with it."""
LOOPS = ("infinite_loop", "uninterruptible_loop")
"""The fixtures whose point is a cell that never ends: the cell timeout is what grades them."""
LOOP_CELL_TIMEOUT_S = 10
"""Theirs: short, since each of their never-ending cells costs it whole."""


def grade_fixture_set(tmp: Path, assignments: list[str],
                      fixtures: Path = FIXTURES) -> tuple[str, GradeReport]:
    """A fresh course holding the fixture set, graded in two runs of the course (two
    workers): every submission but :data:`LOOPS` with :data:`CELL_TIMEOUT_S`, then the
    loops with :data:`LOOP_CELL_TIMEOUT_S` (the first run's grades kept, skipped). Returns
    the gradebook URL and one report of both runs' grades."""
    everyone = sorted(p.name for p in (fixtures / "submitted").iterdir())
    db_url = fixture_course(tmp, assignments, [s for s in everyone if s not in LOOPS],
                            fixtures)
    first = grade(tmp, assignments, db_url=db_url, options=GradeOptions(
        workers=2, cell_timeout=CELL_TIMEOUT_S, progress=False))
    loops = [s for s in everyone if s in LOOPS]
    if not loops:
        return db_url, first
    _collect(tmp, assignments, loops, fixtures)   # (no special files among them)
    second = grade(tmp, assignments, db_url=db_url, options=GradeOptions(
        workers=2, cell_timeout=LOOP_CELL_TIMEOUT_S, progress=False))
    again = [o for o in second.outcomes if o.student not in LOOPS]
    assert len(again) == len(first.outcomes), "the second run sees the first run's work"
    assert {o.status for o in again} == {"skipped"}, "graded once, by the first run"
    return db_url, dataclasses.replace(
        second, outcomes=first.outcomes + tuple(o for o in second.outcomes if o.student in LOOPS),
        wall_seconds=first.wall_seconds + second.wall_seconds)


def gradebook_scores(db_url: str) -> dict[str, dict]:
    """Per ``student/assignment``: autograded score, max, flagged, per-cell scores."""
    out = {}
    with Gradebook(db_url, "labkit") as gb:
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                cells = {g.name: g.auto_score for nb in sub.notebooks for g in nb.grades
                         if g.cell.cell_type == "code"}
                out[f"{sub.student.id}/{assignment.name}"] = {
                    "score": sum(v or 0.0 for v in cells.values()), "cells": cells,
                    "flagged": any(nb.flagged for nb in sub.notebooks),
                    "max": sum(g.max_score for nb in sub.notebooks for g in nb.grades
                               if g.cell.cell_type == "code")}
    return out


def check_expected(root: Path, db_url: str, report, expected: dict) -> None:
    assert not report.errors, report.summary()
    outcomes = {f"{o.student}/{o.assignment}": o for o in report.outcomes}
    assert set(outcomes) == set(expected)
    in_gradebook = gradebook_scores(db_url)
    assert set(in_gradebook) == set(expected)
    for key, want in expected.items():
        got, gb = outcomes[key], in_gradebook[key]
        assert got.status == "graded", key
        assert (got.score, got.max_score) == (want["score"], want["max"]), key
        assert (gb["score"], gb["max"]) == (want["score"], want["max"]), key
        assert set(want["findings"]) <= set(got.findings), (key, got.findings)
        notes = json.loads((root / "autograded" / key / "labkit_grading.json").read_text())
        assert gb["flagged"] == got.flagged == want["flagged"], (key, notes["findings"])
        assert {f["code"] for f in notes["findings"]} == set(got.findings)
    honest = [k for k in expected if k.split("/")[0] in demo.HONEST]
    assert all(not outcomes[k].findings for k in honest), "honest work must raise nothing"


