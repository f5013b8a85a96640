"""``labkit course grade``: autograde every collected submission, in parallel, safely.

Built on nbgrader, not beside it: each submission is graded by nbgrader's own
``Autograde`` (in :mod:`labkit.course.worker`) in a job folder of its own, against a
snapshot of the gradebook, with its kernel in :mod:`labkit.course.sandbox`. This process
is the **only writer** of the course's gradebook, SQLite or PostgreSQL
(:mod:`labkit.course.gradebook`): it merges each result through nbgrader's ``Gradebook``
API, one submission per transaction, then appends a line to a journal
(``.labkit/grade_journal.jsonl``). Killed at any point and started again, it skips
what the journal *and* the gradebook both show as graded from the same files, and grades
the rest; a submission merged twice gets the same values, never a second row.

Job folders are made in the course's private ``.labkit/runs/`` (mode 0700, this grader's
own; :mod:`labkit.course.jobs`) from bounded copies of the submissions: a file no grader
should read (a FIFO, a name that is not UTF-8, a 2 GiB sparse file) is a finding of its
own submission, never the run's failure.

Work runs on a local pool of worker processes (default: one more than the cores) or on an
existing Dask cluster (``scheduler="tcp://host:port"``); the job folders travel as tar
archives, so Dask workers need labkit but no shared file system.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from labkit.course.config import JOB_CONFIG, job_config
from labkit.course.config import GradeOptions as GradeOptions  # defined with its options
from labkit.course.gradebook import (
    GradeError,
    check_gradebook,
    is_graded,
    open_gradebook,
    shown,
    snapshot_gradebook,
    write_result,
    writer_lock,
)
from labkit.course.jobs import (
    copy_submission,
    record_run,
    start_run,
    state_dir,
    sweep_stale_runs,
)
from labkit.course.jobs import fingerprint as _fingerprint
from labkit.course.sandbox import fresh_uid
from labkit.course.worker import RESULT, end_job, ensure_bin_on_path

if TYPE_CHECKING:  # nbgrader is imported only when a run starts (its import takes ~2 s)
    from nbgrader.api import Gradebook

    from labkit.course.report import AssignmentStatus

GRADER_VERSION = "labkit-grade-2"  # 2: bounded copies, completion credit for options only
JOURNAL = Path(".labkit") / "grade_journal.jsonl"
NOTES_FILE = "labkit_grading.json"
PAUSE_ENV = "LABKIT_GRADE_PAUSE"
"""A file path in the instructor's environment: after each journaled grade the run waits
while that file exists -- a fixed point at which the resume tests kill a run (no student
code runs in, or can reach the environment of, the process that merges)."""


@dataclass(frozen=True)
class Outcome:
    """One submission's grading: status is ``graded``, ``skipped`` (already) or ``error``."""

    assignment: str
    student: str
    status: str
    score: float = 0.0
    max_score: float = 0.0
    findings: tuple[str, ...] = ()
    flagged: bool = False
    error: str = ""
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class GradeReport:
    outcomes: tuple[Outcome, ...]
    wall_seconds: float
    workers: int
    isolation: str

    @property
    def errors(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.outcomes if o.status == "error")

    def summary(self, status: Mapping[str, AssignmentStatus] | None = None) -> str:
        """The table an instructor reads at the end of a run. With ``status`` (from
        :func:`labkit.course.report.gradebook_status`) scores are totals out of the
        assignment's points, the memo included; it adds the memos waiting for a person,
        the flagged submissions and the distribution of the students' totals."""
        from labkit.course.report import total_bins

        status = status or {}
        done = [o for o in self.outcomes if o.status == "graded"]
        skipped = [o for o in self.outcomes if o.status == "skipped"]
        per = self.wall_seconds / len(done) if done else 0.0
        lines = [f"graded {len(done)} submission(s) in {self.wall_seconds:.1f} s with "
                 f"{self.workers} worker(s) ({per:.2f} s per submission); "
                 f"{len(skipped)} already graded, {len(self.errors)} failed; "
                 f"sandbox: {self.isolation}"]
        by_assignment: dict[str, list[Outcome]] = {}
        for o in self.outcomes:
            by_assignment.setdefault(o.assignment, []).append(o)
        memo = bool(by_assignment) and any(s.manual_max for s in status.values())
        lines.append(f"{'assignment':<22}{'graded':>7}{'mean':>8}{'min':>7}{'max':>7}"
                     f"{'of':>6}{'flagged':>9}{'errors':>8}" + (f"{'memos':>7}" if memo else ""))
        flagged: list[str] = []
        spreads: list[str] = []
        waiting_all = 0
        for name, items in sorted(by_assignment.items()):
            st = status.get(name)
            scored = [o for o in items if o.status in ("graded", "skipped")]
            totals = {o.student: st.totals.get(o.student, o.score) if st else o.score
                      for o in scored}
            scores = list(totals.values()) or [0.0]
            top = st.max_score if st else max((o.max_score for o in scored), default=0.0)
            marked = ({s for s in st.flagged if s in totals} if st else
                      {o.student for o in items if o.flagged})
            flagged += [f"{name}/{s}" for s in sorted(marked)]
            waiting = sum(s in totals for s in st.memos_waiting) if st else 0
            waiting_all += waiting
            lines.append(f"{name:<22}{len(scored):>7}{sum(scores) / len(scores):>8.2f}"
                         f"{min(scores):>7.1f}{max(scores):>7.1f}{top:>6.0f}{len(marked):>9}"
                         f"{sum(o.status == 'error' for o in items):>8}"
                         + (f"{waiting:>7}" if memo else ""))
            if st and totals:
                spreads.append(f"  {name:<20}" + "  ".join(
                    f"{label} {n}" for label, n in total_bins(list(totals.values()), top)))
        if memo:
            points = "/".join(sorted({f"{s.manual_max:g}" for s in status.values()
                                      if s.manual_max}))
            lines.append(f"scores: totals of the assignment's points, the memo's {points} "
                         "included (a memo scores 0 until a person grades it); memos: "
                         f"waiting for a person, {waiting_all} here (grade them in "
                         "nbgrader's formgrader, Manual Grading)")
        if spreads:
            lines += ["students per total score:", *spreads]
        if done:
            keys = ("prepare", "kernel_start", "execute", "judge", "database",
                    "nbgrader_other", "merge")
            means = {k: sum(o.timings.get(k, 0.0) for o in done) / len(done) for k in keys}
            lines.append("mean time per submission: " + ", ".join(
                f"{k.replace('_', ' ')} {v:.2f} s" for k, v in means.items()))
        codes = Counter(code for o in self.outcomes for code in o.findings)
        if codes:
            lines.append("findings: " + ", ".join(f"{c} x{n}" for c, n in codes.most_common()))
        if flagged:
            lines.append(f"flagged for review ({len(flagged)}): {', '.join(flagged)}")
        for o in self.errors:
            lines.append(f"FAILED {o.assignment}/{o.student}: {o.error.splitlines()[0][:200]}")
        return "\n".join(lines)


# -- journal ------------------------------------------------------------------------------

def read_journal(root: Path) -> dict[tuple[str, str], dict]:
    """Last journal entry per (assignment, student); a torn last line is ignored."""
    path = root / JOURNAL
    entries: dict[tuple[str, str], dict] = {}
    if not path.exists():
        return entries
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
            entries[(entry["assignment"], entry["student"])] = entry
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return entries


def _append_journal(root: Path, entry: dict) -> None:
    path = root / JOURNAL
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def fingerprint(submission: Path, release: Path) -> str:
    """Hash of what decides a grade: the release, what is copied of the submission (read
    in chunks, never through a link: :func:`labkit.course.jobs.fingerprint`), the grader."""
    return _fingerprint(GRADER_VERSION, release, submission)


# -- jobs ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Job:
    assignment: str
    student: str
    folder: Path
    fingerprint: str


def _make_job(root: Path, run_dir: Path, n: int, assignment: str, student: str,
              snapshot: Path, options: GradeOptions, course_id: str, fp: str) -> _Job:
    folder = run_dir / "j" / f"{n:04d}"
    folder.mkdir(parents=True)
    # regular files and folders only, streamed and capped: a FIFO, an odd name or a huge
    # file costs its own submission a finding (the worker adds them to its result)
    findings = copy_submission(root / "submitted" / student / assignment, folder / "raw")
    release = root / "release" / assignment
    shutil.copytree(release, folder / "release", ignore=shutil.ignore_patterns(
        "*.ipynb_checkpoints"))
    shutil.copytree(root / "source" / assignment, folder / "source",
                    ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints"))
    shutil.copy(snapshot, folder / "gradebook.db")
    notebooks = sorted(p.stem for p in release.glob("*.ipynb"))
    job = {"assignment": assignment, "student": student, "course_id": course_id,
           "notebooks": notebooks, "timeout": options.cell_timeout,
           "checkpoint_credit": options.checkpoint_credit,
           "memory_bytes": options.memory_mb * 1024**2,
           "cpu_seconds": options.job_timeout, "isolate": options.isolate,
           "cpus": options.cpus, JOB_CONFIG: job_config(root),  # the course's nbgrader config
           # a user of its own per kernel (when grading as root): kernels running side by
           # side cannot read each other's files, sockets or /proc entries
           "uid": fresh_uid(),
           "hide": [str(root.resolve())],
           "findings": [f.to_dict() for f in findings]}
    (folder / "job.json").write_text(json.dumps(job, indent=1))
    return _Job(assignment, student, folder, fp)


def _error_result(folder: Path, message: str) -> None:
    if not (folder / RESULT).exists():
        job = json.loads((folder / "job.json").read_text())
        (folder / RESULT).write_text(json.dumps({
            "assignment": job["assignment"], "student": job["student"], "status": "error",
            "error": message, "findings": []}))


class _LocalPool:
    """N long-lived ``labkit.course.worker --serve`` processes; a stuck one is killed."""

    def __init__(self, size: int, options: GradeOptions, log_dir: Path) -> None:
        self.size, self.options, self.log_dir = size, options, log_dir

    def _spawn(self, slot: int) -> subprocess.Popen:
        log = open(self.log_dir / f"worker-{slot}.log", "ab")  # noqa: SIM115 -- owned by proc
        proc = subprocess.Popen(
            [sys.executable, "-m", "labkit.course.worker", "--serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
            start_new_session=True, cwd=self.log_dir,
            env={**os.environ, "LABKIT_WORKER_MEMORY_BYTES":
                 str((self.options.memory_mb + 3072) * 1024**2)})
        log.close()
        return proc

    def _readline(self, proc: subprocess.Popen, timeout: float) -> str:
        timer = threading.Timer(timeout, self._kill, (proc,))
        timer.start()
        try:
            return proc.stdout.readline().strip() if proc.stdout else ""
        finally:
            timer.cancel()

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    def run(self, jobs: Sequence[_Job], on_done: Callable[[_Job], None]) -> None:
        todo: queue.Queue[_Job | None] = queue.Queue()
        done: queue.Queue[_Job] = queue.Queue()
        for job in jobs:
            todo.put(job)
        size = min(self.size, len(jobs))
        for _ in range(size):
            todo.put(None)

        def slot(n: int) -> None:
            proc: subprocess.Popen | None = None
            while (job := todo.get()) is not None:
                try:
                    if proc is None or proc.poll() is not None:
                        proc = self._spawn(n)
                        if self._readline(proc, 120) != "ready":
                            raise RuntimeError("the grading worker did not start (see "
                                               f"{self.log_dir}/worker-{n}.log)")
                    assert proc.stdin is not None
                    proc.stdin.write(f"{job.folder}\n")
                    proc.stdin.flush()
                    if self._readline(proc, self.options.job_timeout) != f"done {job.folder}":
                        self._kill(proc)
                        proc.wait()
                        proc = None
                        _error_result(job.folder, "grading stopped: the submission exceeded "
                                      f"the {self.options.job_timeout} s limit or crashed its "
                                      "grading worker")
                except Exception as exc:  # a broken slot reports, the others go on
                    _error_result(job.folder, f"{type(exc).__name__}: {exc}")
                    if proc is not None:
                        self._kill(proc)
                        proc = None
                done.put(job)
            if proc is not None and proc.stdin is not None:
                proc.stdin.close()
                proc.wait(timeout=30)

        threads = [threading.Thread(target=slot, args=(n,), daemon=True) for n in range(size)]
        for t in threads:
            t.start()
        for _ in jobs:
            on_done(done.get())
        for t in threads:
            t.join(timeout=60)


def _run_dask(scheduler: str, jobs: Sequence[_Job], options: GradeOptions,
              on_done: Callable[[_Job], None]) -> None:
    try:
        from labkit.course import dask_pool
    except ImportError:  # pragma: no cover - the dev extra installs it
        raise GradeError("--scheduler needs dask.distributed: pip install "
                         "'labkit[scale]'") from None

    by_folder = {job.folder: job for job in jobs}
    dask_pool.run(scheduler, list(by_folder), job_timeout=options.job_timeout,
                  memory_bytes=(options.memory_mb + 3072) * 1024**2,
                  on_done=lambda folder: on_done(by_folder[folder]))


# -- merge --------------------------------------------------------------------------------

# What of a job's autograded folder reaches the course: nbgrader's files, nothing a kernel
# could have planted (the worker scrubs the folder after execution; this is the second lock).
RESULT_FILES = re.compile(r"^([\w.-]+\.ipynb|timestamp\.txt|submission_secret\.txt|"
                          r"labkit_answers\.json)$")
MAX_RESULT_BYTES = 64 * 1024 * 1024


def _copy_results(src: Path, dest: Path) -> list[str]:
    """Copy the allow-listed regular files directly in ``src`` to ``dest``, each opened
    with ``O_NOFOLLOW`` and checked to be a regular file of bounded size; links, FIFOs,
    devices, folders and other names are left behind. Returns the names copied."""
    copied: list[str] = []
    if src.is_symlink() or not src.is_dir():
        return copied
    for name in sorted(os.listdir(src)):
        if not RESULT_FILES.match(name):
            continue
        try:
            fd = os.open(src / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue  # a link (ELOOP), gone, or unreadable
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_RESULT_BYTES:
                continue
            (dest / name).write_bytes(f.read(MAX_RESULT_BYTES + 1)[:MAX_RESULT_BYTES])
        copied.append(name)
    return copied


def _install_autograded(root: Path, job: _Job, result: dict) -> None:
    """Replace ``autograded/<student>/<assignment>`` by the job's, in one rename."""
    src = job.folder / "course" / "autograded" / job.student / job.assignment
    parent = root / "autograded" / job.student
    parent.mkdir(parents=True, exist_ok=True)
    target = parent / job.assignment
    staging = Path(tempfile.mkdtemp(prefix=f".{job.assignment}-", dir=parent))
    try:
        _copy_results(src, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    notes = {"status": result.get("status"), "findings": result.get("findings", []),
             "error": result.get("error", "")}
    (staging / NOTES_FILE).write_text(json.dumps(notes, indent=1))
    old = None
    if target.exists():
        old = parent / f".{job.assignment}-old-{os.getpid()}"
        os.replace(target, old)
    os.replace(staging, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _merge(gb: Gradebook, root: Path, job: _Job, result: dict) -> Outcome:
    """Write one graded result into the course gradebook (nbgrader API), then journal it."""
    t0 = time.perf_counter()
    findings = result.get("findings", [])
    flagged = any(f.get("flag") for f in findings)
    codes = tuple(f.get("code", "") for f in findings)
    if result.get("status") != "graded":
        return Outcome(job.assignment, job.student, "error", findings=codes, flagged=flagged,
                       error=result.get("error", "unknown error"),
                       seconds=result.get("seconds", 0.0))
    _install_autograded(root, job, result)
    score, max_score = write_result(gb, job.assignment, job.student, result, flagged)
    with warnings.catch_warnings():  # nbgrader's own autoflush chatter (SAWarning)
        warnings.simplefilter("ignore")
        gb.db.commit()
    timings = dict(result.get("timings", {}))
    timings["merge"] = time.perf_counter() - t0
    _append_journal(root, {"assignment": job.assignment, "student": job.student,
                           "fingerprint": job.fingerprint, "status": "graded",
                           "score": score, "max_score": max_score, "findings": list(codes),
                           "at": datetime.now().isoformat(timespec="seconds")})
    _hold()
    return Outcome(job.assignment, job.student, "graded", score, max_score, codes, flagged,
                   seconds=result.get("seconds", 0.0), timings=timings)


def _hold() -> None:
    """Wait while the file named by :data:`PAUSE_ENV` exists (unset: return at once)."""
    flag = os.environ.get(PAUSE_ENV)
    while flag and os.path.exists(flag):
        time.sleep(0.05)


# -- entry point --------------------------------------------------------------------------

def collected(root: Path, assignments: Iterable[str]) -> list[tuple[str, str]]:
    """(assignment, student) for every collected submission, in a stable order."""
    out = []
    submitted = root / "submitted"
    for assignment in assignments:
        if not submitted.is_dir():
            break
        for student in sorted(p.name for p in submitted.iterdir() if p.is_dir()):
            if (submitted / student / assignment).is_dir():
                out.append((assignment, student))
    return out


def grade(root: Path, assignments: Sequence[str], *, db_url: str | None = None,
          course_id: str = "labkit", options: GradeOptions | None = None,
          log: Callable[[str], None] | None = None) -> GradeReport:
    """Autograde every collected submission of ``assignments`` under course ``root``."""
    options = options or GradeOptions()
    root = Path(root).resolve()
    db_url = db_url or f"sqlite:///{root / 'gradebook.db'}"
    if not assignments:
        raise GradeError("no assignment to grade")
    ensure_bin_on_path()
    check_gradebook(db_url, course_id, assignments)
    isolation = "off (--no-isolation)"
    if options.isolate:
        from labkit.course.sandbox import describe, probe

        ok, why = probe()
        if not ok:
            raise GradeError(f"cannot isolate student kernels on this machine ({why}); "
                             "install bubblewrap (apt install bubblewrap) on a machine "
                             "with Linux namespaces, or pass --no-isolation to run "
                             "student code with your rights")
        isolation = describe(why)
    lock = _lock(root)
    try:
        with writer_lock(db_url, course_id):
            return _grade_locked(root, assignments, db_url, course_id, options, log,
                                 isolation)
    finally:
        lock.close()


def _lock(root: Path) -> IO[str]:
    """One grading run per course at a time: the gradebook has one writer."""
    import fcntl

    path = root / ".labkit" / "grade.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+")  # noqa: SIM115 -- held for the whole run
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        other = fh.read().strip() or "unknown"
        fh.close()
        raise GradeError(f"another `labkit course grade` is running on {root} (pid {other}); "
                         "wait for it to finish") from None
    fh.seek(0)
    fh.truncate()
    fh.write(str(os.getpid()))
    fh.flush()
    return fh


def _plan_jobs(root: Path, run_dir: Path, pairs: Sequence[tuple[str, str]],
               journal: Mapping[tuple[str, str], dict], snapshot: Path,
               options: GradeOptions, db_url: str, course_id: str,
               outcomes: list[Outcome]) -> list[_Job]:
    """A job folder for every submission to grade; the rest become outcomes: ``skipped``
    (the journal and the gradebook show it graded from the same files) or ``error``."""
    jobs: list[_Job] = []
    with open_gradebook(db_url, course_id) as gb:
        for n, (assignment, student) in enumerate(pairs):
            try:
                fp = fingerprint(root / "submitted" / student / assignment,
                                 root / "release" / assignment)
                entry = journal.get((assignment, student))
                if (entry and entry.get("fingerprint") == fp
                        and entry.get("status") == "graded"
                        and is_graded(gb, assignment, student)):
                    outcomes.append(Outcome(
                        assignment, student, "skipped", entry.get("score", 0.0),
                        entry.get("max_score", 0.0), tuple(entry.get("findings", ()))))
                    continue
                jobs.append(_make_job(root, run_dir, n, assignment, student, snapshot,
                                      options, course_id, fp))
            except OSError as exc:  # this submission's files: the others still grade
                outcomes.append(Outcome(assignment, student, "error", error=(
                    f"its job folder could not be made: {type(exc).__name__}: {exc}")))
    return jobs


def _grade_locked(root: Path, assignments: Sequence[str], db_url: str, course_id: str,
                  options: GradeOptions, log: Callable[[str], None] | None,
                  isolation: str) -> GradeReport:
    start = time.perf_counter()
    pairs = collected(root, assignments)
    journal = {} if options.force else read_journal(root)
    outcomes: list[Outcome] = []
    try:
        state = state_dir(root)
    except PermissionError as exc:
        raise GradeError(f"cannot keep this run's job folders safely: {exc}") from None
    sweep_stale_runs(state)  # runs killed before they could clean up
    run_dir = start_run(state)
    try:
        snapshot = snapshot_gradebook(db_url, run_dir / "snapshot.db")
        jobs = _plan_jobs(root, run_dir, pairs, journal, snapshot, options, db_url,
                          course_id, outcomes)
        # the kernel uids, recorded before any kernel starts: a sweep ends only these
        record_run(run_dir, [json.loads((job.folder / "job.json").read_text())["uid"]
                             for job in jobs])
        skipped = len(outcomes)
        if log:
            log(f"grading {len(jobs)} submission(s) ({len(outcomes)} already graded) into "
                f"{shown(db_url)} with "
                f"{options.scheduler or f'{options.pool_size} local worker(s)'}")
        bar = None
        if options.progress and jobs and sys.stderr.isatty():
            from tqdm import tqdm

            bar = tqdm(total=len(jobs), unit="submission", file=sys.stderr)
        with open_gradebook(db_url, course_id) as gb:
            def on_done(job: _Job) -> None:
                try:
                    result = json.loads((job.folder / RESULT).read_text())
                except (OSError, json.JSONDecodeError) as exc:
                    result = {"status": "error", "error": f"no result: {exc}"}
                try:
                    outcome = _merge(gb, root, job, result)
                except Exception as exc:
                    gb.db.rollback()
                    outcome = Outcome(job.assignment, job.student, "error",
                                      error=f"merge failed: {type(exc).__name__}: {exc}")
                outcomes.append(outcome)
                end_job(job.folder)  # its worker may have been killed before it could
                shutil.rmtree(job.folder, ignore_errors=True)
                label = (f"{job.assignment}/{job.student} {outcome.status}"
                         + (f" {outcome.score:g}/{outcome.max_score:g}"
                            if outcome.status == "graded" else ""))
                if bar is not None:
                    bar.update()
                    bar.set_postfix_str(label)
                elif options.progress and log:
                    log(f"[{len(outcomes) - skipped}/{len(jobs)}] {label}")

            if options.scheduler:
                _run_dask(options.scheduler, jobs, options, on_done)
            elif jobs:
                _LocalPool(options.pool_size, options, run_dir).run(jobs, on_done)
        if bar is not None:
            bar.close()
    finally:
        for job_dir in run_dir.glob("j/*"):
            end_job(job_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
    order = {pair: i for i, pair in enumerate(pairs)}
    outcomes.sort(key=lambda o: order.get((o.assignment, o.student), 0))
    workers = 0 if options.scheduler else options.pool_size
    return GradeReport(tuple(outcomes), time.perf_counter() - start, workers, isolation)
