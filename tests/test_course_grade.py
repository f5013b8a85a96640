"""``labkit course grade`` end to end: real nbgrader, real SQLite gradebooks, real kernels
in the sandbox, the committed fixture set under ``autograder/fixtures``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from course_helpers import BIN, ROOT, TRACKS, kernel_env, run_nbgrader
from labkit.course import demo
from labkit.course.grade import GradeError, GradeOptions, _lock, grade, read_journal

FIXTURES = ROOT / "autograder" / "fixtures" / "lab1"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
LAB1 = [f"lab1_{t}" for t in TRACKS]
FIXTURES2 = ROOT / "autograder" / "fixtures" / "lab2"
EXPECTED2 = json.loads((FIXTURES2 / "expected.json").read_text())
LAB2 = sorted({key.split("/")[1] for key in EXPECTED2})


def _course(tmp: Path, assignments: list[str], students: list[str] | None = None,
            fixtures: Path = FIXTURES) -> str:
    """A fresh course with ``assignments`` generated and fixture submissions collected."""
    db_url = demo.new_course(ROOT, tmp, assignments)
    for folder in sorted((fixtures / "submitted").iterdir()):
        if students is not None and folder.name not in students:
            continue
        for assignment in assignments:
            if (folder / assignment).is_dir():
                shutil.copytree(folder / assignment, tmp / "submitted" / folder.name / assignment,
                                symlinks=True)
    return db_url


def _gradebook_scores(db_url: str) -> dict[str, dict]:
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


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every committed fixture submission graded in parallel (the expensive part: ~1 min)."""
    tmp = tmp_path_factory.mktemp("fixture-course")
    db_url = _course(tmp, LAB1)
    report = grade(tmp, LAB1, db_url=db_url,
                   options=GradeOptions(workers=2, cell_timeout=10, progress=False))
    return tmp, db_url, report


@pytest.fixture(scope="module")
def graded2(tmp_path_factory):
    """The Lab 2 fixtures (attacks on the verdict, on one track) graded in parallel."""
    tmp = tmp_path_factory.mktemp("fixture-course-lab2")
    db_url = _course(tmp, LAB2, fixtures=FIXTURES2)
    report = grade(tmp, LAB2, db_url=db_url,
                   options=GradeOptions(workers=2, cell_timeout=10, progress=False))
    return tmp, db_url, report


def test_every_fixture_gets_its_expected_score_reason_and_flag(graded):
    _check_expected(*graded, EXPECTED)


def test_every_lab2_fixture_gets_its_expected_score_reason_and_flag(graded2):
    _check_expected(*graded2, EXPECTED2)


def _check_expected(root: Path, db_url: str, report, expected: dict) -> None:
    assert not report.errors, report.summary()
    outcomes = {f"{o.student}/{o.assignment}": o for o in report.outcomes}
    assert set(outcomes) == set(expected)
    in_gradebook = _gradebook_scores(db_url)
    assert set(in_gradebook) == set(expected)
    for key, want in expected.items():
        got, gb = outcomes[key], in_gradebook[key]
        assert got.status == "graded", key
        assert (got.score, got.max_score) == (want["score"], want["max"]), key
        assert (gb["score"], gb["max"]) == (want["score"], want["max"]), key
        assert set(want["findings"]) <= set(got.findings), (key, got.findings)
        assert gb["flagged"] == got.flagged == want["flagged"], key
        notes = json.loads((root / "autograded" / key / "labkit_grading.json").read_text())
        assert {f["code"] for f in notes["findings"]} == set(got.findings)
    honest = [k for k in expected if k.split("/")[0] in demo.HONEST]
    assert all(not outcomes[k].findings for k in honest), "honest work must raise nothing"


def _autograded(root: Path, student: str) -> str:
    path = root / "autograded" / student / "lab1_cloud_fleet" / "inference_economy.ipynb"
    return path.read_text()


def test_hostile_submissions_are_contained(graded):
    root, _, _ = graded
    flood = root / "autograded" / "output_flood" / "lab1_cloud_fleet" / "inference_economy.ipynb"
    assert flood.stat().st_size < 2_000_000
    assert "output truncated by the grader" in flood.read_text()
    # nothing written outside the submission reached this machine
    for place in (Path("/tmp/labkit-pwned"), Path.home() / "labkit-pwned",
                  Path("/etc/labkit-pwned")):
        assert not place.exists(), place
    assert not list(root.rglob("labkit-pwned"))
    assert "hidden tests found: none" in _autograded(root, "read_hidden")
    net = _autograded(root, "network")
    assert "network: blocked" in net and "loopback: blocked" in net
    assert "sitecustomize ran" not in _autograded(root, "shadow_module")
    assert not (root / "autograded" / "shadow_module" / "lab1_cloud_fleet" / "labkit").exists()
    died = _autograded(root, "kernel_death")
    assert "the kernel died while this cell ran" in died
    assert "did not finish or answer an interrupt" in _autograded(root, "uninterruptible_loop")
    shown = root / "autograded" / "display_flood" / "lab1_cloud_fleet" / "inference_economy.ipynb"
    assert shown.stat().st_size < 6_000_000  # 200 x 50 x 1 MB of updates would be 10 GB


def test_planted_links_are_neither_followed_nor_kept(graded):
    root, db_url, _ = graded
    folder = root / "autograded" / "planted_links" / "lab1_cloud_fleet"
    assert "planted" in (folder / "inference_economy.ipynb").read_text()
    left = [p for p in folder.iterdir() if p.is_symlink() or not (p.is_file() or p.is_dir())]
    assert not left and not list(folder.glob("link*")), left
    # what the links pointed at kept its mode and content (nbgrader chmods what it finds)
    gradebook = Path(db_url.removeprefix("sqlite:///"))
    assert gradebook.stat().st_mode & 0o777 != 0o444
    for nb in (root / "source").rglob("*.ipynb"):
        assert nb.stat().st_mode & 0o200, nb  # still writable by its owner
    honest = root / "autograded" / "full" / "lab1_cloud_fleet" / "inference_economy.ipynb"
    assert "planted" not in honest.read_text()


def test_parallel_grades_equal_serial_nbgrader_autograde(graded, tmp_path):
    """The honest set graded by stock, serial ``nbgrader autograde`` gives the same cells."""
    _, db_url, _ = graded
    serial_db = _course(tmp_path, LAB1, students=list(demo.HONEST))
    env = kernel_env(tmp_path)
    for assignment in LAB1:
        run_nbgrader(tmp_path, "autograde", assignment, env=env,
                     db=Path(serial_db.removeprefix("sqlite:///")))
    serial, parallel = _gradebook_scores(serial_db), _gradebook_scores(db_url)
    assert len(serial) == 3 * len(LAB1)
    for key, want in serial.items():
        assert parallel[key]["cells"] == want["cells"], key


def _labkit(*args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.Popen([str(BIN / "labkit"), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, **kw)


def test_sigkill_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path):
    assignments = ["lab1_cloud_fleet", "lab1_iphone"]
    db_url = _course(tmp_path, assignments, students=list(demo.HONEST))
    args = ("course", "grade", "lab1", "--track", "cloud_fleet", "--track", "iphone",
            "--root", str(tmp_path), "--workers", "1")
    proc = _labkit(*args)
    deadline = time.time() + 120
    while len(read_journal(tmp_path)) < 2 and time.time() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = read_journal(tmp_path)
    assert 2 <= len(first) < 6, "the kill should land mid-run"

    rerun = _labkit(*args)
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert f"{len(first)} already graded" in out
    journal = read_journal(tmp_path)
    lines = (tmp_path / ".labkit" / "grade_journal.jsonl").read_text().splitlines()
    assert len(journal) == 6 and len(lines) == 6, "each submission journaled exactly once"
    with Gradebook(db_url, "labkit") as gb:
        rows = [(s.student.id, a.name) for a in gb.assignments for s in a.submissions]
        assert len(rows) == len(set(rows)) == 6
        for student, assignment in rows:
            sub = gb.find_submission(assignment, student)
            auto = [g for nb in sub.notebooks for g in nb.grades if g.cell.cell_type == "code"]
            assert all(g.auto_score is not None for g in auto)
            score = sum(g.auto_score for g in auto)
            assert score == EXPECTED[f"{student}/{assignment}"]["score"]

    # a changed submission is regraded; the rest are skipped
    nb = tmp_path / "submitted" / "blank" / "lab1_iphone" / "inference_economy.ipynb"
    shutil.copy(tmp_path / "submitted" / "full" / "lab1_iphone" / "inference_economy.ipynb", nb)
    report = grade(tmp_path, assignments, db_url=db_url,
                   options=GradeOptions(workers=1, progress=False))
    statuses = {(o.student, o.assignment): o.status for o in report.outcomes}
    assert statuses.pop(("blank", "lab1_iphone")) == "graded"
    assert set(statuses.values()) == {"skipped"}


def test_a_submission_past_its_time_limit_fails_alone(tmp_path):
    db_url = _course(tmp_path, ["lab1_cloud_fleet"], students=["full", "infinite_loop"])
    start = time.perf_counter()
    report = grade(tmp_path, ["lab1_cloud_fleet"], db_url=db_url,
                   options=GradeOptions(workers=2, cell_timeout=120, job_timeout=30,
                                        progress=False))
    assert time.perf_counter() - start < 90
    outcome = {o.student: o for o in report.outcomes}
    assert outcome["full"].status == "graded" and outcome["full"].score == 17
    assert outcome["infinite_loop"].status == "error"
    assert "30 s limit" in outcome["infinite_loop"].error
    with Gradebook(db_url, "labkit") as gb:
        assert [s.student.id for s in gb.find_assignment("lab1_cloud_fleet").submissions] == [
            "full"]


def test_dask_cluster_grades_like_the_local_pool(tmp_path):
    import distributed  # a dev dependency: the test fails, never skips, without it

    students = ["full", "partial", "kernel_death", "corrupt_json"]
    db_url = _course(tmp_path, ["lab1_cloud_fleet"], students=students)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        report = grade(tmp_path, ["lab1_cloud_fleet"], db_url=db_url,
                       options=GradeOptions(scheduler=cluster.scheduler_address,
                                            cell_timeout=10, progress=False))
    assert not report.errors, report.summary()
    scores = _gradebook_scores(db_url)
    for student in students:
        key = f"{student}/lab1_cloud_fleet"
        assert scores[key]["score"] == EXPECTED[key]["score"], key
    nb = nbformat.read(tmp_path / "autograded" / "full" / "lab1_cloud_fleet" /
                       "inference_economy.ipynb", as_version=4)
    assert any(c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_bad_requests_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="workers"):
        GradeOptions(workers=-1)
    with pytest.raises(ValueError, match="cell_timeout"):
        GradeOptions(cell_timeout=0)
    with pytest.raises(GradeError, match="no gradebook"):
        grade(tmp_path, ["lab1_cloud_fleet"])
    db_url = demo.new_course(ROOT, tmp_path, ["lab1_cloud_fleet"])
    with pytest.raises(GradeError, match="lab9_mars"):
        grade(tmp_path, ["lab9_mars"], db_url=db_url)
    held = _lock(tmp_path)  # a second grader on the same course is refused
    try:
        with pytest.raises(GradeError, match="another `labkit course grade` is running"):
            grade(tmp_path, ["lab1_cloud_fleet"], db_url=db_url)
    finally:
        held.close()
    proc = subprocess.run([str(BIN / "labkit"), "course", "grade", "lab9", "--root",
                           str(ROOT)], capture_output=True, text=True, env={
                               **os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert proc.returncode == 2 and "lab9" in proc.stderr
