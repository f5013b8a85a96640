"""``labkit course grade`` as an operation: killed and resumed, a submission past its time
limit, a Dask cluster, bad requests (the fixture sets are graded in
test_course_grade_fixtures.py and test_course_grade_lab2.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import nbformat
import pytest
from nbgrader.api import Gradebook

from course_helpers import BIN, ROOT
from grading_helpers import EXPECTED, fixture_course, gradebook_scores
from labkit.course import demo
from labkit.course.grade import GradeError, GradeOptions, _lock, grade, read_journal


def _labkit(*args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.Popen([str(BIN / "labkit"), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, **kw)


def test_sigkill_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path):
    assignments = ["lab1_cloud_fleet", "lab1_iphone"]
    db_url = fixture_course(tmp_path, assignments, students=list(demo.HONEST))
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
    db_url = fixture_course(tmp_path, ["lab1_cloud_fleet"], students=["full", "infinite_loop"])
    start = time.perf_counter()
    report = grade(tmp_path, ["lab1_cloud_fleet"], db_url=db_url,
                   options=GradeOptions(workers=2, cell_timeout=120, job_timeout=20,
                                        progress=False))
    assert time.perf_counter() - start < 80
    outcome = {o.student: o for o in report.outcomes}
    assert outcome["full"].status == "graded" and outcome["full"].score == 17
    assert outcome["infinite_loop"].status == "error"
    assert "20 s limit" in outcome["infinite_loop"].error
    with Gradebook(db_url, "labkit") as gb:
        assert [s.student.id for s in gb.find_assignment("lab1_cloud_fleet").submissions] == [
            "full"]


def test_dask_cluster_grades_like_the_local_pool(tmp_path):
    import distributed  # a dev dependency: the test fails, never skips, without it

    students = ["full", "partial", "kernel_death", "corrupt_json"]
    db_url = fixture_course(tmp_path, ["lab1_cloud_fleet"], students=students)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        report = grade(tmp_path, ["lab1_cloud_fleet"], db_url=db_url,
                       options=GradeOptions(scheduler=cluster.scheduler_address,
                                            cell_timeout=10, progress=False))
    assert not report.errors, report.summary()
    scores = gradebook_scores(db_url)
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
