"""The course gradebook as ``labkit course grade`` uses it: nbgrader's database at a
``sqlite:///`` or ``postgresql://`` URL (nbgrader recommends PostgreSQL when several
graders work at once).

The contract, whatever the URL:

- **checked before a run** (:func:`check_gradebook`): the URL is one of the two kinds, the
  database answers, holds nbgrader's tables and every assignment to grade; each failure is
  a :class:`GradeError` naming ``db_url`` (password hidden) and the command that fixes it.
- **one writer** (:func:`writer_lock`): the grading process alone writes the gradebook,
  through nbgrader's ``Gradebook`` API (:func:`write_result`, one submission per
  transaction, committed by the caller). The course folder's lock keeps out a second run
  on the same folder; on PostgreSQL a session advisory lock per course also keeps out a
  run from another folder or host, and the server drops it when the process dies, even by
  SIGKILL, so a resumed run never waits for a dead one.
- **workers read a file** (:func:`snapshot_gradebook`): the jobs grade against a new SQLite
  file holding the course's definition rows (courses, assignments, notebooks, cells),
  copied through SQLAlchemy from whichever database, with no student, submission, grade or
  comment. Workers never connect to the server, and a student's kernel never sees another
  student's grade.
"""

from __future__ import annotations

import contextlib
import hashlib
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # nbgrader and SQLAlchemy are imported only when a run starts
    from nbgrader.api import Gradebook
    from sqlalchemy.engine import URL

BACKENDS = ("sqlite", "postgresql")
# What a job may not see: every row about a student.
STUDENT_TABLES = frozenset({"student", "submitted_assignment", "submitted_notebook",
                            "grade", "comment"})


class GradeError(RuntimeError):
    """The grading run cannot start (missing assignment, no sandbox, bad option)."""


def parse_url(db_url: str) -> URL:
    """``db_url`` as SQLAlchemy reads it; a GradeError unless SQLite on a file or
    PostgreSQL."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(db_url)
    except ArgumentError:
        raise GradeError(f"db_url {db_url!r} is not a database URL; use "
                         "sqlite:///PATH/gradebook.db or "
                         "postgresql://USER:PASSWORD@HOST:PORT/DATABASE") from None
    if url.get_backend_name() not in BACKENDS:
        raise GradeError(f"db_url must be a sqlite:/// or postgresql:// URL, got "
                         f"{shown(db_url)!r}")
    if url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:"):
        raise GradeError(f"db_url {db_url!r} names no file: use sqlite:///PATH/gradebook.db")
    return url


def shown(db_url: str) -> str:
    """``db_url`` fit for a message or a log: its password replaced by ``***``."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(db_url).render_as_string(hide_password=True)
    except ArgumentError:
        return db_url


def _engine(db_url: str) -> Any:
    """A SQLAlchemy engine holding no idle connection (NullPool): closing is closing."""
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    url = parse_url(db_url)
    try:
        return create_engine(url, poolclass=NullPool)
    except ImportError as exc:
        raise GradeError(f"db_url {shown(db_url)} needs the {url.get_driver_name()} driver, "
                         f"which is not installed ({exc}): pip install "
                         "'labkit[postgres]'") from None


def _unreachable(db_url: str, exc: Exception) -> GradeError:
    detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return GradeError(f"db_url {shown(db_url)}: cannot open the gradebook "
                      f"({detail[0] if detail else type(exc).__name__})")


def check_gradebook(db_url: str, course_id: str, assignments: Sequence[str]) -> None:
    """Refuse to start unless the gradebook answers, exists and knows ``assignments``."""
    from sqlalchemy import inspect
    from sqlalchemy.exc import SQLAlchemyError

    url = parse_url(db_url)
    fix = f"run `labkit course init --db {shown(db_url)}` first (it registers every assignment)"
    if url.get_backend_name() == "sqlite" and not Path(str(url.database)).exists():
        raise GradeError(f"no gradebook at {db_url}: {fix}")
    engine = _engine(db_url)
    try:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
    except SQLAlchemyError as exc:
        raise _unreachable(db_url, exc) from None
    finally:
        engine.dispose()
    if "assignment" not in tables:
        raise GradeError(f"no gradebook at {shown(db_url)} (the database has no nbgrader "
                         f"tables): {fix}")
    from nbgrader.api import MissingEntry

    with open_gradebook(db_url, course_id) as gb:
        for name in assignments:
            try:
                gb.find_assignment(name)
            except MissingEntry:
                known = ", ".join(sorted(a.name for a in gb.assignments)) or "none"
                raise GradeError(f"assignment {name!r} is not in the gradebook "
                                 f"{shown(db_url)} (known: {known}); run `labkit course "
                                 f"init --db {shown(db_url)}` first") from None


@contextlib.contextmanager
def open_gradebook(db_url: str, course_id: str) -> Iterator[Gradebook]:
    """nbgrader's ``Gradebook`` on ``db_url``; on exit its session and every connection
    of its engine are closed (nbgrader's ``close`` leaves them pooled)."""
    from nbgrader.api import Gradebook

    gb = Gradebook(db_url, course_id)
    try:
        yield gb
    finally:
        gb.close()
        gb.engine.dispose()


def _lock_key(course_id: str) -> int:
    """The advisory lock's key: a signed 64-bit integer from the course id."""
    digest = hashlib.sha256(f"labkit-grade:{course_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@contextlib.contextmanager
def writer_lock(db_url: str, course_id: str) -> Iterator[None]:
    """Hold the gradebook's writer lock for the run: on PostgreSQL a session advisory
    lock on course ``course_id`` (the server frees it when the connection drops); on
    SQLite nothing beyond the course folder's lock."""
    if parse_url(db_url).get_backend_name() != "postgresql":
        yield
        return
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    engine = _engine(db_url)
    try:
        try:
            conn = engine.connect()
        except SQLAlchemyError as exc:
            raise _unreachable(db_url, exc) from None
        with conn:  # closing it ends the session, and with it the lock
            got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"),
                               {"k": _lock_key(course_id)}).scalar()
            conn.commit()  # the lock is the session's: no transaction stays open for it
            if not got:
                raise GradeError(f"another `labkit course grade` is writing course "
                                 f"{course_id!r} of the gradebook {shown(db_url)}; wait for "
                                 "it to finish")
            yield
    finally:
        engine.dispose()


def snapshot_gradebook(db_url: str, dest: Path) -> Path:
    """Write to ``dest`` a new SQLite gradebook holding the course definition rows of
    ``db_url`` (every table but :data:`STUDENT_TABLES`) and its alembic version: what a
    job may see."""
    from nbgrader.api import Base
    from sqlalchemy import MetaData, Table, insert, inspect, select

    source, out = _engine(db_url), _engine(f"sqlite:///{dest}")
    try:
        Base.metadata.create_all(out)
        with source.connect() as src, out.begin() as dst:
            for table in Base.metadata.sorted_tables:
                if table.name in STUDENT_TABLES:
                    continue
                rows = [dict(r) for r in src.execute(select(table)).mappings()]
                if rows:
                    dst.execute(insert(table), rows)
            if inspect(src).has_table("alembic_version"):
                version = Table("alembic_version", MetaData(), autoload_with=src)
                version.create(dst)
                rows = [dict(r) for r in src.execute(select(version)).mappings()]
                if rows:
                    dst.execute(insert(version), rows)
    finally:
        source.dispose()
        out.dispose()
    return dest


def is_graded(gb: Gradebook, assignment: str, student: str) -> bool:
    """Whether every autograded (code) cell of the submission has a score."""
    from nbgrader.api import MissingEntry

    try:
        sub = gb.find_submission(assignment, student)
    except MissingEntry:
        return False
    grades = [g for nb in sub.notebooks for g in nb.grades if g.cell.cell_type == "code"]
    return bool(grades) and all(g.auto_score is not None for g in grades)


def write_result(gb: Gradebook, assignment: str, student: str, result: Mapping[str, Any],
                 flagged: bool) -> tuple[float, float]:
    """Write a worker's graded ``result`` into the session of ``gb`` (the caller commits
    or rolls back); return (score, max score) over the code cells, in points. Writing
    the same result twice leaves the same rows."""
    from datetime import datetime

    with warnings.catch_warnings():  # nbgrader's own autoflush chatter (SAWarning)
        warnings.simplefilter("ignore")
        gb.update_or_create_student(student)
        stamp = result.get("timestamp")
        kwargs = {"timestamp": datetime.fromisoformat(stamp)} if stamp else {}
        sub = gb.update_or_create_submission(assignment, student, **kwargs)
        # The worker applied the course's late penalty against a snapshot without this
        # student's rows: an extension granted here (formgrader) it could not see. On time
        # with it, no penalty, as nbgrader's AssignLatePenalties decides.
        late = sub.total_seconds_late > 0
        score = max_score = 0.0
        for nb_name, nb in result["notebooks"].items():
            snb = gb.find_submission_notebook(nb_name, assignment, student)
            snb.late_submission_penalty = nb["late_penalty"] if late else None
            snb.flagged = flagged  # nbgrader's "flag for review", shown in the formgrader
            for gid, g in nb["grades"].items():
                grade = gb.find_grade(gid, nb_name, assignment, student)
                grade.auto_score = g["auto_score"]
                grade.needs_manual_grade = bool(g["needs_manual_grade"]
                                                or grade.manual_score is not None)
                if g["cell_type"] == "code":
                    score += g["auto_score"] or 0.0
                    max_score += g["max_score"] or 0.0
            for gid, text in nb["comments"].items():
                gb.find_comment(gid, nb_name, assignment, student).auto_comment = text
    return score, max_score
