"""``labkit course grade`` as an operation: killed and resumed, a submission past its time
limit, a Dask cluster, bad requests (the fixture sets are graded in
test_course_grade_fixtures.py and test_course_grade_lab2.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from course_helpers import BIN, ROOT
from grading_helpers import (
    CELL_TIMEOUT_S,
    EXPECTED,
    FIXTURES,
    fixture_course,
    gradebook_scores,
    new_course,
)
from labkit.course import demo
from labkit.course.grade import (
    PAUSE_ENV,
    GradeError,
    GradeOptions,
    _lock,
    grade,
    read_journal,
)

JOB_LIMIT = 20  # s: an honest job beside the limit's victim takes 1.5-5 s on 2 busy cores
SLEEPER_LIMIT = 3  # s: a run whose only job is the sleeper (its error is all it can earn)


def _labkit(*args: str, pause: Path | None = None, **kw) -> subprocess.Popen:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if pause is not None:   # the run holds after each journaled grade while it exists
        env[PAUSE_ENV] = str(pause)
    return subprocess.Popen([str(BIN / "labkit"), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, **kw)


def test_sigkill_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path):
    assignments = ["lab1_iphone"]  # three submissions: killed after the first
    # (its own course, not the run's Lab 1: test_course_grade_fixtures.py, on the other
    # worker, builds that at the same moment, and waiting for it would idle this worker)
    db_url = fixture_course(tmp_path, assignments, students=list(demo.HONEST))
    args = ("course", "grade", "lab1", "--track", "iphone",
            "--root", str(tmp_path), "--workers", "1")
    pause = tmp_path / "hold"
    pause.touch()
    proc = _labkit(*args, pause=pause)
    deadline = time.time() + 300
    while not read_journal(tmp_path) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)   # held after its first journaled grade
    proc.wait()
    first = read_journal(tmp_path)
    assert len(first) == 1, "the run holds after its first grade until it is killed"

    rerun = _labkit(*args)
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert f"{len(first)} already graded" in out
    journal = read_journal(tmp_path)
    lines = (tmp_path / ".labkit" / "grade_journal.jsonl").read_text().splitlines()
    assert len(journal) == 3 and len(lines) == 3, "each submission journaled exactly once"
    with Gradebook(db_url, "labkit") as gb:
        rows = [(s.student.id, a.name) for a in gb.assignments for s in a.submissions]
        assert len(rows) == len(set(rows)) == 3
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


def _sleeper(root: Path, assignment: str, student: str) -> None:
    """A submission whose Part A answer sleeps past any job limit, costing no CPU (a loop
    would burn the limit's seconds of the cores the rest of the suite runs on)."""
    from labkit.course.fixtures.hostile import write_hostile
    from labkit.course.fixtures.spec import Hostile, prefix

    spec = Hostile("sleeper", "Part A answer sleeps (no CPU) past the job limit", "full",
                   prefix("lab1-a-exercise", "import time\ntime.sleep(600)"))
    write_hostile(spec, root, assignment, root / "submitted" / student / assignment)


@pytest.fixture(scope="module")
def lab1_cloud_fleet_course(tmp_path_factory):
    """A course with lab1_cloud_fleet generated and nothing submitted, built once for the
    module (nbgrader generate_assignment costs seconds of CPU); each test grades a copy."""
    base = tmp_path_factory.mktemp("course")
    new_course(base, ["lab1_cloud_fleet"])
    return base


def _course_copy(base, dest, students: dict[str, str]) -> str:
    """A copy of ``base`` with fixture submissions, named as given (``name: fixture``)."""
    shutil.copytree(base, dest, dirs_exist_ok=True)
    _submit(dest, students)
    return f"sqlite:///{dest / 'gradebook.db'}"


def _submit(dest: Path, students: dict[str, str]) -> None:
    for name, fixture in students.items():
        shutil.copytree(FIXTURES / "submitted" / fixture / "lab1_cloud_fleet",
                        dest / "submitted" / name / "lab1_cloud_fleet", symlinks=True)


def test_dask_cluster_grades_like_the_local_pool(tmp_path, lab1_cloud_fleet_course):
    import distributed  # a dev dependency: the test fails, never skips, without it

    from labkit.course import dask_pool

    students = ["full", "partial", "kernel_death", "corrupt_json"]
    db_url = _course_copy(lab1_cloud_fleet_course, tmp_path, {s: s for s in students})
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        report = grade(tmp_path, ["lab1_cloud_fleet"], db_url=db_url,
                       options=GradeOptions(scheduler=cluster.scheduler_address,
                                            cell_timeout=CELL_TIMEOUT_S, progress=False))
        with distributed.Client(cluster) as client:
            served = [s for jobs in client.run(dask_pool.served).values() for s in jobs]
    assert not report.errors, report.summary()
    scores = gradebook_scores(db_url)
    for student in students:
        key = f"{student}/lab1_cloud_fleet"
        assert scores[key]["score"] == EXPECTED[key]["score"], key
    nb = nbformat.read(tmp_path / "autograded" / "full" / "lab1_cloud_fleet" /
                       "inference_economy.ipynb", as_version=4)
    assert any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
    # 4 jobs on 2 workers: a warm server (one nbgrader import) graded more than one of them
    assert sorted(s["student"] for s in served) == sorted(students)
    assert {s["status"] for s in served} == {"graded"}
    assert max(Counter(s["pid"] for s in served).values()) > 1, served


def test_a_killed_job_or_a_dying_kernel_on_a_dask_worker_fails_alone(
        tmp_path, lab1_cloud_fleet_course):
    """One worker, one thread: its jobs run in order. A job past its limit gets an error
    and its server is replaced; a kernel that dies costs its own cell, and the next job on
    the same server still grades. The sleeper runs alone under a short limit (whatever it
    was doing when the limit came, its error is its whole outcome); the others follow on
    the same worker under the default limit, so no honest grade races a clock."""
    import distributed

    from labkit.course import dask_pool

    a = "lab1_cloud_fleet"
    db_url = _course_copy(lab1_cloud_fleet_course, tmp_path, {})
    _sleeper(tmp_path, a, "a_sleeper")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        first = grade(tmp_path, [a], db_url=db_url, options=GradeOptions(
            scheduler=cluster.scheduler_address, cell_timeout=120,
            job_timeout=SLEEPER_LIMIT, progress=False))
        shutil.rmtree(tmp_path / "submitted" / "a_sleeper")   # (an error is graded again)
        _submit(tmp_path, {"b_kernel_death": "kernel_death", "c_partial": "partial"})
        second = grade(tmp_path, [a], db_url=db_url, options=GradeOptions(
            scheduler=cluster.scheduler_address, cell_timeout=CELL_TIMEOUT_S,
            progress=False))
        with distributed.Client(cluster) as client:
            (served,) = client.run(dask_pool.served).values()
    outcome = {o.student: o for o in first.outcomes + second.outcomes}
    assert outcome["a_sleeper"].status == "error"
    assert f"{SLEEPER_LIMIT} s limit" in outcome["a_sleeper"].error
    died = outcome["b_kernel_death"]
    assert died.status == "graded" and "kernel-failure" in died.findings and died.flagged
    assert died.score == EXPECTED[f"kernel_death/{a}"]["score"]
    assert outcome["c_partial"].status == "graded"
    assert outcome["c_partial"].score == EXPECTED[f"partial/{a}"]["score"]
    assert [s["student"] for s in served] == list(outcome)  # in order, one at a time
    assert [s["status"] for s in served] == ["error", "graded", "graded"]
    pids = [s["pid"] for s in served]
    assert pids[0] != pids[1] == pids[2], served  # killed, replaced; survived the kernel
    with Gradebook(db_url, "labkit") as gb:
        assert sorted(s.student.id for s in gb.find_assignment(a).submissions) == [
            "b_kernel_death", "c_partial"]


def test_bad_requests_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="workers"):
        GradeOptions(workers=-1)
    with pytest.raises(ValueError, match="cell_timeout"):
        GradeOptions(cell_timeout=0)
    with pytest.raises(GradeError, match="no gradebook"):
        grade(tmp_path, ["lab1_cloud_fleet"])
    db_url = new_course(tmp_path, ["lab1_cloud_fleet"])
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


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_plumbing_faults_cost_only_their_own_submission(tmp_path, lab1_cloud_fleet_course):
    """A FIFO, a name that is not UTF-8, a 2 GiB sparse file, a 150 MB notebook, a lone
    surrogate, an answer too large to export and hand-written answers files, beside one
    honest submission: the run finishes, each earns exactly what its honest parts earn
    with its findings, and the coordinator never reads a big file whole. A submission that
    sleeps past the job limit gets an error naming the limit and nothing in the gradebook,
    while the other worker grades the rest (its 20 s are spent beside them, not alone).
    A planted ``$TMPDIR/lkg-*`` run (what the old sweep trusted) makes it kill nobody."""
    import resource
    import tempfile

    from labkit.course.fixtures.faults import fault_attacks
    from labkit.course.fixtures.honest import grade_cells
    from labkit.course.fixtures.hostile import expected, write_hostile
    from labkit.course.sandbox import KERNEL_UID_BASE

    a = "lab1_cloud_fleet"
    db_url = _course_copy(lab1_cloud_fleet_course, tmp_path, {"full": "full"})
    specs = {s.name: s for s in fault_attacks("lab1")}
    for spec in specs.values():
        write_hostile(spec, tmp_path, a, tmp_path / "submitted" / spec.name / a)
    _sleeper(tmp_path, a, "a_sleeper")  # graded first (by name): its wait overlaps the rest
    points = grade_cells(tmp_path, a)
    planted = Path(tempfile.mkdtemp(prefix="lkg-"))
    victim = None
    if os.geteuid() == 0:  # the old sweep killed this uid's processes: a bystander here
        victim = subprocess.Popen(["sleep", "300"], user=KERNEL_UID_BASE + 7)
        (planted / "owner.pid").write_text(str(_dead_pid()))
        (planted / "j" / "0000").mkdir(parents=True)
        (planted / "j" / "0000" / "job.json").write_text(
            json.dumps({"uid": KERNEL_UID_BASE + 7}))
    try:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        report = grade(tmp_path, [a], db_url=db_url,
                       options=GradeOptions(workers=2, cell_timeout=CELL_TIMEOUT_S,
                                            job_timeout=JOB_LIMIT, progress=False))
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KiB
        assert victim is None or victim.poll() is None, "a planted run made the sweep kill"
        assert planted.exists()
    finally:
        if victim is not None:
            victim.kill()
            victim.wait()
        shutil.rmtree(planted, ignore_errors=True)
    # the job's own limit ended the sleeper (its error says so), not the cell timeout; no
    # wall-clock bound is asserted (a busy machine must not fail the test)
    assert [o.student for o in report.errors] == ["a_sleeper"], report.summary()
    assert f"{JOB_LIMIT} s limit" in report.errors[0].error
    outcome = {o.student: o for o in report.outcomes}
    assert outcome["full"].score == sum(points.values()) and not outcome["full"].findings
    scores = gradebook_scores(db_url)
    assert "a_sleeper/" + a not in scores
    for name, spec in specs.items():
        got = outcome[name]
        assert got.score == scores[f"{name}/{a}"]["score"] == expected(spec, points), name
        assert set(spec.findings) <= set(got.findings), (name, got.findings)
        assert got.flagged == spec.flagged, (name, got.findings)
    notes = json.loads((tmp_path / "autograded" / "odd_name" / a / "labkit_grading.json")
                       .read_text())
    assert any(f["code"] == "file-skipped" and "notes-\\xe9t\\xe9.txt" in f["message"]
               for f in notes["findings"]), notes  # the odd name, escaped for people
    assert grown < 512 * 1024, f"the coordinator grew by {grown // 1024} MiB"
    assert not list((tmp_path / ".labkit" / "runs").iterdir()), "run folder left behind"
    print(f"coordinator peak RSS grew by {grown // 1024} MiB grading {len(specs) + 1} "
          f"submissions (peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} "
          "MiB)")
