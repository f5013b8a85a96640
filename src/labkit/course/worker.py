"""Grade one submission in a folder of its own, with the real nbgrader autograde.

A *job folder* holds everything one grading needs and nothing else::

    job.json        assignment, student, limits, the course's nbgrader settings
    gradebook.db    a snapshot of the course gradebook without any student's grades
    raw/            the files exactly as the student submitted them
    release/        the release notebooks (what the student was given)
    source/         the assignment's non-notebook files (nbgrader copies them over)

The worker rebuilds the submission from the release (:mod:`labkit.course.submission`),
runs nbgrader's ``Autograde`` in-process against the snapshot, with kernels started in
:mod:`labkit.course.sandbox`, and writes ``result.json`` (scores per grade cell read back
through nbgrader's ``Gradebook`` API, findings, timings) next to ``course/autograded/``.
The snapshot is thrown away: only the grading process (never student code) writes the
course gradebook, from ``result.json``.

``python -m labkit.course.worker JOB`` grades one job; ``--serve`` reads job folders from
stdin, one per line, and answers ``done JOB`` on stdout, so a pool (the local pool, and
each Dask worker's :class:`~labkit.course.dask_pool.GraderPlugin`) pays nbgrader's
two-second import once per worker process rather than once per submission.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from labkit.course.submission import ANSWERS_FILE, SECRET_FILE, Finding, prepare

if TYPE_CHECKING:
    from traitlets.config import Config

RESULT = "result.json"


def _write_json(path: Path, payload: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=1, default=str))
    os.replace(tmp, path)


def write_error(job_dir: Path, message: str) -> None:
    """Give a job that did not finish an error ``result.json`` (one it wrote is kept)."""
    if not (job_dir / RESULT).exists():
        job = json.loads((job_dir / "job.json").read_text())
        _write_json(job_dir / RESULT, {"assignment": job["assignment"],
                                       "student": job["student"], "status": "error",
                                       "error": message, "findings": []})


def _read_results(db_url: str, course_id: str, assignment: str, student: str) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(db_url, course_id) as gb:
        sub = gb.find_submission(assignment, student)
        notebooks = {}
        for nb in sub.notebooks:
            notebooks[nb.name] = {
                "late_penalty": nb.late_submission_penalty,
                "grades": {g.name: {"auto_score": g.auto_score, "max_score": g.max_score,
                                    "needs_manual_grade": bool(g.needs_manual_grade),
                                    "cell_type": g.cell.cell_type} for g in nb.grades},
                "comments": {c.name: c.auto_comment for c in nb.comments},
            }
        return {"timestamp": sub.timestamp.isoformat() if sub.timestamp else None,
                "notebooks": notebooks}


def ensure_bin_on_path() -> None:
    """nbgrader shells out to ``alembic``: this interpreter's bin must be on PATH."""
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def _course_repository() -> list[str]:
    """The course repository labkit runs from, if any (an editable install): it holds
    the lab specs and source notebooks, so student kernels must not see it."""
    import labkit

    for parent in Path(labkit.__file__).resolve().parents:
        if (parent / "course" / "labs").is_dir() and (parent / "pyproject.toml").is_file():
            return [str(parent)]
    return []


def run_job(job_dir: Path) -> dict:
    """Grade the job in ``job_dir``; always writes and returns its ``result.json``."""
    from labkit.course.execution import GradingExecute
    from labkit.course.sanitize import SanitizeNotebook

    t0 = time.perf_counter()
    ensure_bin_on_path()
    job = json.loads((job_dir / "job.json").read_text())
    assignment, student = job["assignment"], job["student"]
    # what copying the raw submission left out (the coordinator's findings), kept even
    # when this job fails
    findings: list[Finding] = [Finding(str(f["code"]), str(f["message"]), bool(f["flag"]))
                               for f in job.get("findings", [])]
    result: dict = {"assignment": assignment, "student": student, "status": "error"}
    GradingExecute.timings, GradingExecute.failures, GradingExecute.planted = {}, [], []
    GradingExecute.unjudged, GradingExecute.oversized = [], []
    SanitizeNotebook.removed = []
    try:
        findings += _prepare_job(job_dir, job)
        t_prepared = time.perf_counter()
        db_url = _autograde(job_dir, job)
        t_graded = time.perf_counter()
        result.update(_read_results(db_url, job["course_id"], assignment, student))
        findings += _run_findings()
        result["status"] = "graded"
        result["timings"] = _timings(GradingExecute.timings, prepare=t_prepared - t0,
                                     nbgrader=t_graded - t_prepared)
    except Exception as exc:  # a broken job is reported, never raised to the pool
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()[-4000:]
    finally:
        end_job(job_dir)
    result["findings"] = [f.to_dict() for f in findings]
    result["seconds"] = time.perf_counter() - t0
    _write_json(job_dir / RESULT, result)
    return result


# A kernel whose other processes burned more CPU than this (seconds, the most of any
# kernel of the job), or that had this many alive at once, ran work beside its answers
# (a fork fan-out, busy children): honest lab cells start none. One detached helper
# process is not flagged.
STRAY_CPU_SECONDS = 10.0
STRAY_PROCESSES = 8
# What the page cleaner says when it removed something that could run or fetch, as
# opposed to trimming an honest output (a cut, a widget view, text nested too deeply).
_HOSTILE_CLEANING = ("could run or fetch", "metadata", "not a valid image", "of type",
                     "javascript", "svg")


def _run_findings() -> list[Finding]:
    """What the grading of one job saw besides the scores, from the per-job records of
    the executor, the judge, the page cleaner and the kernel manager."""
    from labkit.course import judge
    from labkit.course.execution import GradingExecute, SandboxKernelManager
    from labkit.course.sanitize import SanitizeNotebook

    found = [Finding("kernel-failure", failure, flag=True)
             for failure in GradingExecute.failures]
    if GradingExecute.unjudged:
        found.append(Finding(
            "judge-failure", f"the grader's test process failed on "
            f"{', '.join(GradingExecute.unjudged)}: those tests scored 0 without being "
            "run; re-grade this submission (`labkit course grade --force`)", flag=True))
    if GradingExecute.oversized:
        found.append(Finding(
            "answer-too-large", f"{', '.join(sorted(set(GradingExecute.oversized)))}: too large "
            f"to grade (over {judge.MAX_EXPORT_BYTES // 1024} KB as JSON); the tests "
            "reading it failed, every other answer was graded"))
    if GradingExecute.planted:
        shown = ", ".join(GradingExecute.planted[:5])
        found.append(Finding(
            "planted-links", f"the kernel left {len(GradingExecute.planted)} links or "
            f"special files in its folder ({shown}, ...): removed unread before nbgrader "
            "saved the results", flag=True))
    hostile = [n for n in SanitizeNotebook.removed if any(h in n for h in _HOSTILE_CLEANING)]
    if hostile:
        found.append(Finding(
            "content-cleaned", f"{len(hostile)} piece(s) of the notebook could run or fetch "
            f"in a page ({'; '.join(hostile[:3])}, ...): removed before the formgrader or "
            "feedback could show them", flag=True))
    stray = max(SandboxKernelManager.stray_cpu_seconds, default=0.0)
    alive = max(SandboxKernelManager.stray_processes, default=0)
    if stray > STRAY_CPU_SECONDS or alive >= STRAY_PROCESSES:
        found.append(Finding(
            "stray-processes", f"the kernel started processes that outlived their cells "
            f"({alive} at once, {stray:.0f} s of CPU): held to the kernel's CPU share at "
            "the lowest priority, then killed", flag=True))
    return found


def end_job(job_dir: Path) -> None:
    """Kill whatever the job's kernels left running and remove the job's cgroup (the
    box's namespace dies with its kernel; this is the second lock): every process in the
    job's cgroup, then every process of the job's uid when grading as root (the uid is
    the job's alone). Reads only the job's files, so the coordinator can call it for a
    worker that was killed; safe to call twice."""
    from labkit.course import cgroups
    from labkit.course.sandbox import NOBODY, Policy, kill_user

    try:
        uid = json.loads((job_dir / "job.json").read_text()).get("uid", NOBODY)
        folders = Policy.load(job_dir / "policy.json").cgroups
    except (OSError, ValueError, TypeError):
        uid, folders = NOBODY, ()
    cage = cgroups.Cage(tuple(folders), "") if folders else None
    if cage is not None:
        cgroups.kill(cage)
    if isinstance(uid, int) and uid != NOBODY:
        kill_user(uid)
    if cage is not None:
        cgroups.remove(cage)


def _prepare_job(job_dir: Path, job: dict) -> list[Finding]:
    """Lay out the job's nbgrader course (the canonical submission, the source files) and
    point the sandboxed kernel manager at the job's policy; return the submission's
    findings."""
    from labkit.course import cgroups
    from labkit.course.execution import GradingExecute, SandboxKernelManager
    from labkit.course.sandbox import NOBODY, Policy, default_hide, default_keep

    assignment, student = job["assignment"], job["student"]
    course = job_dir / "course"
    submitted = course / "submitted" / student / assignment
    findings = prepare(job_dir / "raw", job_dir / "release", submitted, job["notebooks"])
    source = course / "source" / assignment
    shutil.copytree(job_dir / "source", source, dirs_exist_ok=True)
    ipc = job_dir / "ipc"
    ipc.mkdir(exist_ok=True)
    workdir = course / "autograded" / student / assignment
    uid = job.get("uid", NOBODY)
    cpus = float(job.get("cpus", 1.0))  # the kernel's CPU quota, in cores
    cage = (cgroups.make_cage(f"labkit-{uid}", memory_bytes=job["memory_bytes"],
                              processes=Policy.processes, cpus=cpus)
            if job["isolate"] and os.geteuid() == 0 and uid != NOBODY else None)
    policy = Policy(workdir=str(workdir), ipc_dir=str(ipc),
                    hide=default_hide(job_dir.parent, *job.get("hide", []),
                                      *_course_repository()),
                    keep=default_keep(),
                    # the notebooks being graded (hidden tests restored) and the submit
                    # secret never enter the box; the kernel needs neither
                    mask=(*(str(workdir / f"{n}.ipynb") for n in job["notebooks"]),
                          str(workdir / SECRET_FILE)),
                    uid=uid, memory_bytes=job["memory_bytes"],
                    cpu_seconds=job["cpu_seconds"], cpus=cpus, isolate=job["isolate"],
                    cgroups=cage.folders if cage else ())
    SandboxKernelManager.policy_path = str(policy.save(job_dir / "policy.json"))
    SandboxKernelManager.stray_cpu_seconds = []
    SandboxKernelManager.stray_processes = []
    # Completion credit is read from the answers as submitted, before any kernel runs.
    GradingExecute.answers_path = str(submitted / ANSWERS_FILE)
    return findings


def _autograde(job_dir: Path, job: dict) -> str:
    """Run nbgrader's autograde on the prepared job against its gradebook snapshot;
    return the snapshot's database URL. Raises when nbgrader reports a failure."""
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import (
        AssignLatePenalties,
        ClearOutput,
        DeduplicateIds,
        IgnorePattern,
        LimitOutput,
        OverwriteCells,
        OverwriteKernelspec,
    )

    from labkit.course.config import JOB_CONFIG, config_from_json
    from labkit.course.execution import GradingExecute, TimedSaveAutoGrades
    from labkit.course.metadata import CheckCellMetadata  # nbgrader's, schema compiled once
    from labkit.course.sanitize import SanitizeNotebook

    db_url = f"sqlite:///{job_dir / 'gradebook.db'}"
    # The course's nbgrader settings (its nbgrader_config.py as the coordinator read it),
    # then, over them, what labkit owns: the job's folder and gradebook, the steps a grade
    # rests on, the limits of the grade options. The rest applies as in stock autograde.
    cfg = config_from_json(job.get(JOB_CONFIG, {}))
    cfg.CourseDirectory.root = str(job_dir / "course")
    cfg.CourseDirectory.db_url = db_url
    cfg.CourseDirectory.course_id = job["course_id"]
    cfg.Autograde.autograde_preprocessors = [
        GradingExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
        SanitizeNotebook, TimedSaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
    # nbgrader's default: OverwriteCells restores the hidden tests the release lacks
    cfg.Autograde.sanitize_preprocessors = [
        ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata]
    # no student file but the answers reaches the job (submission.py): nothing to keep
    cfg.Autograde.exclude_overwriting = {}
    # c.LabkitGrade.cell_timeout (--cell-timeout), not c.Execute.timeout: one setting
    cfg.GradingExecute.timeout = job["timeout"]
    cfg.GradingExecute.checkpoint_credit = job.get("checkpoint_credit", "correct")
    cfg.GradingExecute.interrupt_on_timeout = True  # else every hung cell costs a kernel
    cfg.GradingExecute.force_raise_errors = False  # a cell's error costs that cell only
    cfg.GradingExecute.sandboxed = True
    cfg.GradingExecute.judged = True
    cfg.GradingExecute.max_output_bytes = job.get("output_bytes", 256 * 1024)
    # nbconvert validates the whole notebook after every step (about 6 per pass, 40 ms of
    # a job's CPU); once after the last step finds the same invalid notebook
    cfg.Exporter.optimistic_validation = True
    _own_layout_and_steps(cfg)
    api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
    outcome = api.autograde(job["assignment"], job["student"], force=True, create=True)
    if not outcome.get("success"):
        errors = [line for line in str(outcome.get("log", "")).splitlines()
                  if "ERROR" in line or "Error" in line]
        raise RuntimeError("nbgrader autograde failed: " + " | ".join(errors[-6:])
                           + "\n" + str(outcome.get("log", ""))[-3000:])
    return db_url


# Steps a course may switch off (``c.LimitOutput.enabled = False``), as with stock
# autograde: they shape outputs or apply the course's late penalty. Every other step of the
# two lists always runs: running the code, restoring the tests, saving the scores.
OPTIONAL_STEPS = frozenset({"IgnorePattern", "ClearMetadataPreprocessor", "LimitOutput",
                            "AssignLatePenalties"})


def _own_layout_and_steps(cfg: Config) -> None:
    """Set in ``cfg`` the job folder's layout (:func:`_prepare_job` writes nbgrader's
    default one, every notebook of one student) and switch on every step of
    ``cfg.Autograde``'s preprocessor lists but :data:`OPTIONAL_STEPS`."""
    course = cfg.CourseDirectory
    course.directory_structure = os.path.join("{nbgrader_step}", "{student_id}",
                                              "{assignment_id}")
    for step in ("source", "release", "submitted", "autograded"):
        course[f"{step}_directory"] = step
    course.notebook_id = "*"
    course.student_id_exclude = ""
    for pp in (*cfg.Autograde.sanitize_preprocessors, *cfg.Autograde.autograde_preprocessors):
        if pp.__name__ not in OPTIONAL_STEPS:
            cfg[pp.__name__].enabled = True


def _timings(phases: Mapping[str, float], *, prepare: float,
             nbgrader: float) -> dict[str, float]:
    """The kernel phases timed during grading, plus ``prepare`` and the rest of the
    ``nbgrader`` run (whatever of it the kernel phases and the database do not explain)."""
    timings = dict(phases)
    timings["prepare"] = prepare
    timings["nbgrader_other"] = max(0.0, nbgrader
                                    - timings.get("kernel_start", 0.0)
                                    - timings.get("execute", 0.0)
                                    - timings.get("judge", 0.0)
                                    - timings.get("database", 0.0))
    return timings


def serve() -> None:
    """Grade job folders named on stdin, one per line; answer ``done <folder>``."""
    import ctypes
    import resource
    import signal

    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the grader
    if os.getppid() == 1:  # the grader died before we could ask
        sys.exit(1)
    limit = int(os.environ.get("LABKIT_WORKER_MEMORY_BYTES", "0"))
    if limit > 0:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printing to stdout lands in stderr, not the protocol
    import nbgrader.apps.api  # noqa: F401 -- pay the import once, before the first job

    proto.write("ready\n")
    for line in sys.stdin:
        job_dir = Path(line.strip())
        if not line.strip():
            continue
        run_job(job_dir)
        proto.write(f"done {job_dir}\n")


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--serve"]:
        serve()
    elif len(args) == 1:
        result = run_job(Path(args[0]))
        sys.exit(0 if result["status"] == "graded" else 1)
    else:
        sys.exit("usage: python -m labkit.course.worker (--serve | JOB_DIR)")


if __name__ == "__main__":
    main()
