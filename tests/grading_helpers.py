"""Shared by the grading tests: a fresh course holding fixture submissions, the gradebook's
scores, and the check of a graded fixture set against its ``expected.json``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from nbgrader.api import Gradebook

from course_helpers import ROOT, TRACKS
from labkit.course import demo
from labkit.course.fixtures.faults import make_specials

FIXTURES = ROOT / "autograder" / "fixtures" / "lab1"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
LAB1 = [f"lab1_{t}" for t in TRACKS]
FIXTURES2 = ROOT / "autograder" / "fixtures" / "lab2"
EXPECTED2 = json.loads((FIXTURES2 / "expected.json").read_text())
LAB2 = sorted({key.split("/")[1] for key in EXPECTED2})


def fixture_course(tmp: Path, assignments: list[str], students: list[str] | None = None,
                   fixtures: Path = FIXTURES) -> str:
    """A fresh course with ``assignments`` generated and fixture submissions collected,
    their special files (FIFOs, sparse files, odd names: ``specials.json``) made again."""
    db_url = demo.new_course(ROOT, tmp, assignments)
    for folder in sorted((fixtures / "submitted").iterdir()):
        if students is not None and folder.name not in students:
            continue
        for assignment in assignments:
            if (folder / assignment).is_dir():
                shutil.copytree(folder / assignment, tmp / "submitted" / folder.name / assignment,
                                symlinks=True)
    make_specials(fixtures, tmp)
    return db_url


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


