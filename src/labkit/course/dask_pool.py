"""Grade on a Dask cluster, each Dask worker keeping long-lived graders.

The contract, coordinator side (:func:`run`, called by ``labkit course grade --scheduler``):

* every job folder (laid out as :mod:`labkit.course.worker` says) travels to a Dask task
  as a gzip tar of ``job.json``, ``gradebook.db``, ``raw/``, ``release/`` and ``source/``
  (links left out); the task answers a tar of ``result.json`` and ``course/autograded``,
  unpacked into the folder. No shared file system is needed; workers need labkit.
* ``on_done(folder)`` is called once per folder, in completion order, from the calling
  thread: the caller stays the only writer of the gradebook. A task that fails (its Dask
  worker died, the archive did not arrive) leaves an error ``result.json`` for that job.

Worker side (:class:`GraderPlugin`, registered once per cluster under :data:`NAME`,
idempotent: later runs reuse it and its warm processes):

* each Dask worker keeps idle ``python -m labkit.course.worker --serve`` processes, each
  having imported nbgrader once (about 2 s); a task takes one (or starts one), unpacks its
  archive in the worker's own temporary folder, names the job on the server's stdin and
  waits for ``done`` at most ``job_timeout`` seconds;
* a server past the limit or dead is killed with its process group, the job's kernels
  with :func:`~labkit.course.worker.end_job`, and that job alone gets an error result; the
  next job starts a new server. Jobs side by side on one worker sit in one folder hidden
  from every kernel (the worker's ``default_hide`` of the job's parent);
* servers idle for ``idle_seconds`` exit; teardown (worker closing, plugin removed) stops
  them all and removes the folder. :func:`served` lists what a worker's servers graded.

:func:`grade_in_fresh_process` is the path before the plugin (one interpreter per job),
kept as the baseline of ``benchmarks/bench_dask.py`` (``run(..., persistent=False)``).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from distributed import Client, Worker, WorkerPlugin, as_completed, get_worker

from labkit.course.jobs import private_dir, record_run, start_run, sweep_stale_runs
from labkit.course.worker import RESULT, end_job, write_error

NAME = "labkit-grader-1"
IDLE_SECONDS = 600.0   # a warm server unused this long exits (it holds ~150 MB)
START_SECONDS = 120.0  # a server must answer ``ready`` within this
HISTORY = 1000         # jobs remembered per worker by :func:`served`
JOB_FILES = ("job.json", "gradebook.db", "raw", "release", "source")


# -- archives ------------------------------------------------------------------------------

def pack_job(folder: Path) -> bytes:
    """The job's inputs as a gzip tar; links are never graded, so they are left out."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in JOB_FILES:
            tar.add(folder / name, arcname=name,
                    filter=lambda info: None if info.issym() or info.islnk() else info)
    return buf.getvalue()


def pack_answer(folder: Path) -> bytes:
    """``result.json`` and ``course/autograded`` of a graded job folder, as a gzip tar."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(folder / RESULT, arcname=RESULT)
        if (folder / "course" / "autograded").is_dir():
            tar.add(folder / "course" / "autograded", arcname="course/autograded")
    return buf.getvalue()


def unpack(payload: bytes, folder: Path) -> None:
    """Extract an archive into ``folder`` (tarfile's ``data`` filter: no links out, no
    devices, no absolute names)."""
    with tarfile.open(fileobj=io.BytesIO(payload), mode="r:gz") as tar:
        tar.extractall(folder, filter="data")


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


# -- worker side ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Served:
    """One job a Dask worker graded: which server process (``pid``), how it ended."""

    assignment: str
    student: str
    status: str
    pid: int
    seconds: float


@dataclass
class _Server:
    """A ``worker --serve`` process and what it has done (mutable, worker-local)."""

    proc: subprocess.Popen[str]
    memory_bytes: int
    ready: bool = False
    idle_since: float = field(default_factory=time.monotonic)


class GraderPlugin(WorkerPlugin):
    """Warm ``labkit.course.worker --serve`` processes on each Dask worker.

    ``memory_bytes`` caps each server's address space (0: none), as the local pool does.
    One server per worker thread starts when the plugin is set up, so its imports overlap
    the first archives' transfer."""

    idempotent = True
    name = NAME

    def __init__(self, memory_bytes: int = 0, *, idle_seconds: float = IDLE_SECONDS) -> None:
        if memory_bytes < 0:
            raise ValueError(f"memory_bytes must be >= 0, got {memory_bytes!r}")
        if idle_seconds <= 0:
            raise ValueError(f"idle_seconds must be positive, got {idle_seconds!r}")
        self.memory_bytes, self.idle_seconds = memory_bytes, idle_seconds

    def setup(self, worker: Worker) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Server] = []
        self._busy: list[_Server] = []
        self._count = itertools.count()
        self._stop = threading.Event()
        self.history: deque[Served] = deque(maxlen=HISTORY)
        self.base = worker_run_dir()
        self._uids: set[int] = set()
        # Servers die with the thread that started them (PR_SET_PDEATHSIG), so one thread
        # that lives as long as the plugin starts them all, never a task's thread.
        self._spawner = ThreadPoolExecutor(1, thread_name_prefix="labkit-grader-spawn")
        for _ in range(worker.state.nthreads):
            self._idle.append(self._start(self.memory_bytes))
        threading.Thread(target=self._reap, name="labkit-grader-reap", daemon=True).start()

    def teardown(self, worker: Worker) -> None:
        self._stop.set()
        with self._lock:
            idle, busy, self._idle, self._busy = self._idle, self._busy, [], []
        for server in busy:
            _kill(server.proc)  # its task answers an error for its job
        for server in idle:
            self._close(server)
        self._spawner.shutdown(wait=False)
        shutil.rmtree(self.base, ignore_errors=True)

    def _start(self, memory_bytes: int) -> _Server:
        log = self.base / f"server-{next(self._count)}.log"

        def spawn() -> subprocess.Popen[str]:
            with open(log, "ab") as err:
                return subprocess.Popen(
                    [sys.executable, "-m", "labkit.course.worker", "--serve"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                    start_new_session=True, cwd=self.base,
                    env={**os.environ, "LABKIT_WORKER_MEMORY_BYTES": str(memory_bytes)})

        return _Server(self._spawner.submit(spawn).result(), memory_bytes)

    @staticmethod
    def _close(server: _Server) -> None:
        if server.proc.stdin is not None:
            with contextlib.suppress(OSError):
                server.proc.stdin.close()  # the server leaves its loop
        try:
            server.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _kill(server.proc)
            server.proc.wait()

    def _reap(self) -> None:
        while not self._stop.wait(min(30.0, self.idle_seconds)):
            now = time.monotonic()
            with self._lock:
                old = [s for s in self._idle if now - s.idle_since > self.idle_seconds]
                self._idle = [s for s in self._idle if s not in old]
            for server in old:
                self._close(server)

    def _acquire(self, memory_bytes: int) -> _Server:
        with self._lock:
            for server in self._idle:
                if server.memory_bytes == memory_bytes and server.proc.poll() is None:
                    self._idle.remove(server)
                    self._busy.append(server)
                    return server
        server = self._start(memory_bytes)
        with self._lock:
            self._busy.append(server)
        return server

    def _release(self, server: _Server, *, healthy: bool) -> None:
        with self._lock:
            if server in self._busy:
                self._busy.remove(server)
            if healthy and not self._stop.is_set():
                server.idle_since = time.monotonic()
                self._idle.append(server)
                return
        _kill(server.proc)
        server.proc.wait()

    def _record_uid(self, folder: Path) -> None:
        """Add the job's kernel uid to this worker's run record before its kernel starts:
        a sweep after this worker dies ends that uid's processes (and only labkit's)."""
        try:
            uid = json.loads((folder / "job.json").read_text()).get("uid")
        except (OSError, ValueError, AttributeError):
            return
        if isinstance(uid, int) and not isinstance(uid, bool):
            with self._lock:
                self._uids.add(uid)
                record_run(self.base, sorted(self._uids))

    @staticmethod
    def _readline(server: _Server, timeout: float) -> str:
        timer = threading.Timer(timeout, _kill, (server.proc,))
        timer.start()
        try:
            return server.proc.stdout.readline().strip() if server.proc.stdout else ""
        finally:
            timer.cancel()

    def _ask(self, server: _Server, folder: Path, timeout: float) -> bool:
        """Have ``server`` grade ``folder``; False when it did not answer in time."""
        if not server.ready:
            if self._readline(server, START_SECONDS) != "ready":
                raise RuntimeError(f"the grading worker did not start (see {self.base} on "
                                   "the Dask worker)")
            server.ready = True
        assert server.proc.stdin is not None
        try:
            server.proc.stdin.write(f"{folder}\n")
            server.proc.stdin.flush()
        except OSError:  # it died since its last job
            return False
        return self._readline(server, timeout) == f"done {folder}"

    def grade(self, payload: bytes, timeout: float, memory_bytes: int) -> bytes:
        """Grade one archived job on a warm server; the answer archive (see the module)."""
        t0 = time.perf_counter()
        folder = self.base / "j" / f"{next(self._count):06d}"
        folder.mkdir(parents=True)
        try:
            unpack(payload, folder)
            self._record_uid(folder)
            server = self._acquire(memory_bytes)
            healthy = False
            try:
                healthy = self._ask(server, folder, timeout)
            finally:
                self._release(server, healthy=healthy)
            if not healthy:
                end_job(folder)  # the kernels a killed server left
                write_error(folder, "grading stopped: the submission exceeded the "
                            f"{timeout} s limit or crashed its grading worker")
            self._remember(folder, server.proc.pid, time.perf_counter() - t0)
            return pack_answer(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _remember(self, folder: Path, pid: int, seconds: float) -> None:
        try:
            result = json.loads((folder / RESULT).read_text())
        except (OSError, ValueError):
            result = {}
        self.history.append(Served(str(result.get("assignment", "?")),
                                   str(result.get("student", "?")),
                                   str(result.get("status", "error")), pid, seconds))


def grade_on_worker(payload: bytes, timeout: float, memory_bytes: int) -> bytes:
    """Dask task: grade an archived job with this worker's :class:`GraderPlugin`."""
    plugin = get_worker().plugins.get(NAME)
    if not isinstance(plugin, GraderPlugin):
        raise RuntimeError(f"the Dask worker has no {NAME} plugin (register GraderPlugin)")
    return plugin.grade(payload, timeout, memory_bytes)


def worker_run_dir() -> Path:
    """A run folder for this Dask worker: in a 0700 state folder of this user's under the
    temporary folder, after sweeping the runs a dead worker left there (their kernels
    too: :func:`labkit.course.jobs.sweep_stale_runs`). Where another user holds that
    name, a private temporary folder with no sweep."""
    try:
        state = private_dir(Path(tempfile.gettempdir()) / f"labkit-runs-{os.geteuid()}")
    except PermissionError:
        return Path(tempfile.mkdtemp(prefix="labkit-run-"))
    sweep_stale_runs(state)
    return start_run(state)


def served(dask_worker: Worker) -> list[dict[str, Any]]:
    """For ``client.run``: the jobs this worker's servers graded, oldest first."""
    plugin = dask_worker.plugins.get(NAME)
    return [asdict(s) for s in plugin.history] if isinstance(plugin, GraderPlugin) else []


def grade_in_fresh_process(payload: bytes, timeout: float) -> bytes:
    """Dask task, the baseline: grade an archived job in a new interpreter (it pays
    nbgrader's import, about 2 s, every time)."""
    base = worker_run_dir()
    try:
        folder = base / "j" / "0"
        folder.mkdir(parents=True)
        unpack(payload, folder)
        try:
            subprocess.run([sys.executable, "-m", "labkit.course.worker", str(folder)],
                           timeout=timeout, start_new_session=True, capture_output=True)
        except subprocess.TimeoutExpired:
            end_job(folder)
            write_error(folder, f"grading stopped: the submission exceeded the {timeout} s "
                        "limit")
        return pack_answer(folder)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- coordinator side ----------------------------------------------------------------------

def run(scheduler: str, folders: Sequence[Path], *, job_timeout: float, memory_bytes: int,
        on_done: Callable[[Path], None], persistent: bool = True) -> None:
    """Grade every job folder on the Dask cluster at ``scheduler`` (see the module)."""
    if job_timeout <= 0:
        raise ValueError(f"job_timeout must be positive, got {job_timeout!r}")
    with Client(scheduler, timeout=30) as client:
        if persistent:
            client.register_plugin(GraderPlugin(memory_bytes))
        futures = {}
        for folder in folders:
            key = f"labkit-grade-{folder.name}-{os.urandom(4).hex()}"
            args = ((grade_on_worker, pack_job(folder), job_timeout, memory_bytes)
                    if persistent else (grade_in_fresh_process, pack_job(folder), job_timeout))
            futures[client.submit(*args, pure=False, key=key)] = folder
        for future in as_completed(futures):
            folder = futures[future]
            receive(future.result, folder)
            on_done(folder)


def receive(answer: Callable[[], bytes], folder: Path) -> None:
    """Unpack a finished task's answer into its job folder; a task that raised, or a folder
    that cannot take the answer (removed under the run), fails that job alone: an error
    result when the folder can hold one, else none (the merge then records "no result")."""
    try:
        unpack(answer(), folder)
    except Exception as exc:  # this job alone fails; the others go on
        with contextlib.suppress(OSError):
            write_error(folder, f"dask: {type(exc).__name__}: {exc}")
