"""The instructor workflow with the real nbgrader commands on a real SQLite gradebook:
generate -> release -> fetch -> (students work) -> submit -> collect -> autograde ->
generate_feedback -> export, in a temporary course and exchange."""

from __future__ import annotations

import csv
import shutil
import subprocess
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from course_helpers import (
    BIN,
    LABS,
    ROOT,
    answer_like_a_student,
    kernel_env,
    notebook_path,
    run_nbgrader,
)


def _student(cmd: str, assignment: str, home: Path, env: dict, exchange: Path,
             *extra: str) -> None:
    proc = subprocess.run([str(BIN / "nbgrader"), cmd, assignment, "--course=labkit",
                           f"--Exchange.root={exchange}", *extra], cwd=home, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# The workflow is the same for every track; these two cover both labs, a language model and
# a CNN (every track's notebooks are run, validated and graded by tests/test_notebooks.py,
# test_nbgrader_validate.py and the grading tests; the suite's time budget keeps it to two).
ROUND_TRIPS = [("lab1", "cloud_fleet"), ("lab2", "robotaxi")]
assert {lab for lab, _ in ROUND_TRIPS} == set(LABS)


@pytest.mark.parametrize(("lab_id", "track"), ROUND_TRIPS)
def test_round_trip_full_marks_blank_zero_feedback_and_export(lab_id, track, tmp_path):
    assignment = f"{lab_id}_{track}"
    env = kernel_env(tmp_path)
    root, exchange, db = tmp_path / "course", tmp_path / "exchange", tmp_path / "gradebook.db"
    root.mkdir()
    exchange.mkdir()
    shutil.copytree(ROOT / "course", root / "course")
    shutil.copy(ROOT / "nbgrader_config.py", root)
    shutil.copytree(ROOT / "source" / assignment, root / "source" / assignment)

    run_nbgrader(root, "generate_assignment", assignment, "--force", env=env, db=db)
    generated = root / "release" / assignment / LABS[lab_id].notebook
    assert generated.read_bytes() == notebook_path("release", lab_id, track).read_bytes()
    run_nbgrader(root, "release_assignment", assignment, f"--Exchange.root={exchange}",
                 env=env, db=db)

    for student in ("alice", "bob"):
        home = tmp_path / "home" / student
        home.mkdir(parents=True)
        _student("fetch_assignment", assignment, home, env, exchange)
        if student == "alice":
            answer_like_a_student(lab_id, track, home / assignment)
        _student("submit", assignment, home, env, exchange, f"--student={student}")

    run_nbgrader(root, "collect", assignment, f"--Exchange.root={exchange}", env=env, db=db)
    assert (root / "submitted" / "alice" / assignment / "labkit_answers.json").exists()
    run_nbgrader(root, "autograde", assignment, env=env, db=db)
    run_nbgrader(root, "generate_feedback", assignment, env=env, db=db)
    out_csv = tmp_path / "grades.csv"
    run_nbgrader(root, "export", f"--to={out_csv}", env=env, db=db)

    with Gradebook(f"sqlite:///{db}") as gb:
        scores = {}
        for student in ("alice", "bob"):
            sub = gb.find_submission(assignment, student)
            auto = [g for nb in sub.notebooks for g in nb.grades
                    if g.cell.cell_type == "code"]
            assert auto
            scores[student] = (sum(g.auto_score or 0 for g in auto),
                               sum(g.max_score for g in auto))
            needs_manual = [g.cell.name for nb in sub.notebooks for g in nb.grades
                            if g.cell.cell_type == "markdown"]
            assert needs_manual == [f"{lab_id}-memo"]
    alice, bob = scores["alice"], scores["bob"]
    assert alice[0] == alice[1] > 0, f"alice scored {alice}"
    assert bob[0] == 0, f"bob's blank notebook scored {bob}"

    for student in ("alice", "bob"):
        html = root / "feedback" / student / assignment / f"{LABS[lab_id].module}.html"
        assert html.exists() and "Part A" in html.read_text()
    rows = list(csv.DictReader(out_csv.open()))
    assert {r["student_id"] for r in rows if r["assignment"] == assignment} == {"alice", "bob"}
