"""``labkit course grade`` on a PostgreSQL gradebook, against a real server: a throw-away
cluster (Debian's ``postgresql``: its ``initdb`` and ``pg_ctl``) in a temporary folder on
a free loopback port, run as an unprivileged user, removed at the end.

One course is made for the module (``fixture_course``, then the real ``nbgrader
generate_assignment`` into a PostgreSQL template database); each test grades a copy of
it into a database cloned from the template. The SQLite scores of the same submissions,
graded in parallel, are the reference."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg  # the dev extra installs it: the tests fail, never skip, without it
import pytest
from nbgrader.api import Gradebook

from course_helpers import BIN, free_port
from grading_helpers import fixture_course, gradebook_scores
from labkit.course.build import nbgrader
from labkit.course.grade import PAUSE_ENV, GradeError, GradeOptions, grade, read_journal
from labkit.course.gradebook import STUDENT_TABLES, snapshot_gradebook, writer_lock
from pg_helpers import Cluster, pg_cluster

ASSIGNMENT = "lab1_cloud_fleet"
STUDENTS = ["blank", "partial"]  # all zeros; some cells full marks, some none


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with pg_cluster() as pg:
        yield pg


@pytest.fixture(scope="module")
def course(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's course: submissions collected, the assignment generated into SQLite
    (``gradebook.db``) and, by the real nbgrader, into the template database ``course``."""
    root = tmp_path_factory.mktemp("course")
    fixture_course(root, [ASSIGNMENT], students=STUDENTS)
    nbgrader(root, "generate_assignment", ASSIGNMENT, "--force",
             db_url=cluster.create("course"))
    return root


@pytest.fixture(scope="module")
def sqlite_scores(course: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Per-cell scores of the submissions graded into SQLite, two workers."""
    root = _copy(course, tmp_path_factory.mktemp("sqlite"))
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    report = grade(root, [ASSIGNMENT], db_url=db_url,
                   options=GradeOptions(workers=2, progress=False))
    assert not report.errors, report.summary()
    scores = gradebook_scores(db_url)
    assert sorted(scores) == [f"{s}/{ASSIGNMENT}" for s in STUDENTS]
    assert len({v["score"] for v in scores.values()}) == len(STUDENTS), "scores differ"
    return scores


def _copy(course: Path, dest: Path) -> Path:
    shutil.copytree(course, dest, dirs_exist_ok=True, symlinks=True)
    return dest


def _labkit(*args: str, pause: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if pause is not None:   # the run holds after each journaled grade while it exists
        env[PAUSE_ENV] = str(pause)
    return subprocess.Popen([str(BIN / "labkit"), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _rows(db_url: str) -> list[tuple[str, str]]:
    with Gradebook(db_url, "labkit") as gb:
        rows = [(s.student.id, a.name) for a in gb.assignments for s in a.submissions]
    gb.engine.dispose()
    return rows


def test_postgresql_gradebook_gets_exactly_the_sqlite_scores(cluster, course, sqlite_scores,
                                                             tmp_path):
    root = _copy(course, tmp_path)
    db_url = cluster.create("exact", template="course")
    report = grade(root, [ASSIGNMENT], db_url=db_url,
                   options=GradeOptions(workers=2, progress=False))
    assert not report.errors, report.summary()
    assert gradebook_scores(db_url) == sqlite_scores  # every cell, max and flag
    assert {f"{o.student}/{o.assignment}": o.score for o in report.outcomes} == {
        k: v["score"] for k, v in sqlite_scores.items()}

    # what a job sees of it: the course's cells, no student's row
    snap = snapshot_gradebook(db_url, tmp_path / "snapshot.db")
    with sqlite3.connect(snap) as conn:
        for table in STUDENT_TABLES:
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table
        cells = conn.execute("SELECT name, max_score FROM grade_cells JOIN base_cell "
                             "USING (id) ORDER BY name").fetchall()
    with psycopg.connect(db_url) as conn:
        assert conn.execute("SELECT count(*) FROM grade").fetchone()[0] > 0
        assert cells == conn.execute("SELECT name, max_score FROM grade_cells JOIN "
                                     "base_cell USING (id) ORDER BY name").fetchall()


def test_sigkill_mid_run_then_resume_loses_and_duplicates_nothing(cluster, course,
                                                                  sqlite_scores, tmp_path):
    root = _copy(course, tmp_path)
    db_url = cluster.create("resume", template="course")
    args = ("course", "grade", "lab1", "--track", "cloud_fleet", "--root", str(root),
            "--db", db_url, "--workers", "1")
    pause = tmp_path / "hold"
    pause.touch()
    proc = _labkit(*args, pause=pause)
    deadline = time.time() + 300
    while not read_journal(root) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)   # held after its first journaled grade
    proc.wait()
    first = read_journal(root)
    assert len(first) == 1 < len(STUDENTS), "the run holds after its first grade"

    rerun = _labkit(*args)  # the server dropped the dead run's writer lock
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert f"{len(first)} already graded" in out
    assert cluster.password not in out and "labkit:***@" in out
    lines = (root / ".labkit" / "grade_journal.jsonl").read_text().splitlines()
    assert len(read_journal(root)) == len(lines) == len(STUDENTS), "each journaled once"
    rows = _rows(db_url)
    assert len(rows) == len(set(rows)) == len(STUDENTS)
    assert gradebook_scores(db_url) == sqlite_scores  # serial, resumed == parallel SQLite


def test_bad_gradebook_urls_name_db_url(cluster, course, tmp_path):
    root = _copy(course, tmp_path)
    secret = "s3cr3t-pass"
    reasons: list[str] = []
    for url, message in [
        ("mysql://labkit:s3cr3t-pass@127.0.0.1/gradebook", "db_url must be a sqlite:/// or"),
        ("gradebook.db", "is not a database URL"),
        ("sqlite://", "names no file"),
        # the server's own reason follows in brackets; its wording is PostgreSQL's, not ours
        (cluster.url("course", secret), "/course: cannot open the gradebook ("),
        (cluster.url("nowhere"), "/nowhere: cannot open the gradebook ("),
        (f"postgresql://labkit:{secret}@127.0.0.1:{free_port()}/course",
         "/course: cannot open the gradebook ("),
    ]:
        with pytest.raises(GradeError, match="db_url") as err:
            grade(root, [ASSIGNMENT], db_url=url)
        assert message in str(err.value), (url, err.value)
        assert secret not in str(err.value) and cluster.password not in str(err.value)
        reasons.append(str(err.value).partition("cannot open the gradebook (")[2])
    server = [r for r in reasons if r]
    assert len(server) == 3 and len(set(server)) == 3, server  # each failure says its own
    with pytest.raises(GradeError, match=r"no gradebook at .*labkit course init"):
        grade(root, [ASSIGNMENT], db_url=cluster.create("empty"))
    with psycopg.connect(cluster.url("empty")) as conn:  # a refused run creates no table
        assert conn.execute("SELECT count(*) FROM pg_tables "
                            "WHERE schemaname = 'public'").fetchone() == (0,)
    db_url = cluster.create("locked", template="course")
    with pytest.raises(GradeError, match="lab9_mars"):
        grade(root, ["lab9_mars"], db_url=db_url)
    with writer_lock(db_url, "labkit"), pytest.raises(GradeError, match="another"):
        grade(root, [ASSIGNMENT], db_url=db_url)  # a grader of another folder or host
    assert _rows(db_url) == []
