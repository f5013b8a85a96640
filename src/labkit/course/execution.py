"""nbgrader's ``Execute`` preprocessor, hardened for hostile notebooks.

Stock autograde gives up on a whole submission when its kernel dies or stops answering,
and keeps every byte a cell prints. :class:`GradingExecute` instead

* starts the kernel inside :mod:`labkit.course.sandbox` (:class:`SandboxKernelManager`);
* when a cell kills the kernel (``os._exit``, a segfault, the memory or CPU limit) or hangs
  past the timeout without answering an interrupt, marks that cell as failed with the
  reason, and re-runs the notebook in a fresh kernel *skipping* it: every other cell earns
  what it earns (at most ``max_kernel_failures`` such restarts);
* keeps at most ``max_output_bytes`` of output per cell and says so in the cell;
* never lets the kernel run a test cell: they are blanked, the answers are exported as
  data by one appended cell, and :mod:`labkit.course.judge` runs the tests in a trusted
  process; each test cell's output is the judge's verdict (``judged = False`` restores
  nbgrader's in-kernel tests, for comparison only).

It also times the kernel start and the execution for the grading report.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_output
from nbgrader.preprocessors import Execute, SaveAutoGrades
from traitlets import Bool, Integer, Unicode

from labkit.course import judge as judging
from labkit.course.sandbox import INFO_FILE, Policy, demote_strays, kill_user, stray_count
from labkit.course.sockets import PinnedSockets, box_pid


def files_of(folder: Path) -> dict[str, tuple[int, int]]:
    """Regular files directly in ``folder`` (never through a link): name -> (dev, inode)."""
    out = {}
    with contextlib.suppress(FileNotFoundError), os.scandir(folder) as it:
        for entry in it:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode):
                out[entry.name] = (st.st_dev, st.st_ino)
    return out


def scrub(folder: Path, keep: dict[str, tuple[int, int]]) -> list[str]:
    """Remove from ``folder`` whatever the kernel left that is not one of ``keep``'s
    regular files: new files, links, FIFOs, devices, folders (nothing is followed).
    nbgrader later ``chmod``s and copies this folder as the grader. Returns the names of
    what was neither a regular file nor a folder (links, FIFOs, sockets, devices)."""
    removed: list[str] = []
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except FileNotFoundError:
        return removed
    for entry in entries:
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISREG(st.st_mode) and keep.get(entry.name) == (st.st_dev, st.st_ino):
            continue
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            removed.append(entry.name)
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
    return removed


class SandboxKernelManager(AsyncKernelManager):
    """Starts the kernel through the sandbox launcher; talks to it over Unix sockets.

    The kernel binds its sockets in the box's own tmpfs. Once bwrap reports the box's
    pid and the sockets exist, the manager pins them (:class:`~labkit.course.sockets.
    PinnedSockets`: opened without following links, checked to be the kernel's sockets)
    and connects, and ZMQ reconnects, only through the pins: a kernel that swaps its
    socket files for links cannot point the grader anywhere else. Interrupts go as
    messages: a signal to the launcher's process group would reach bwrap, not the kernel
    inside its own session.
    """

    policy_path: str | None = None  # set by the grading worker for each job
    box_timeout = 20.0              # seconds for bwrap to report the box
    socket_timeout = 60.0           # seconds for the kernel to bind its sockets
    demote_every = 0.25             # seconds between looks for the kernel's children
    # Per kernel of the job: the most CPU seconds its box's other processes (children,
    # daemons) had used at one look; reset per job by the worker (a stray-processes hint).
    stray_cpu_seconds: list[float] = []  # noqa: RUF012
    # ... and the most of them alive at one look (the same hint, not depending on how
    # much CPU the machine had to spare for them)
    stray_processes: list[int] = []  # noqa: RUF012

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.policy_path is None:
            raise RuntimeError("SandboxKernelManager.policy_path is not set")
        self.policy = Policy.load(self.policy_path)
        self.transport = "ipc"
        self.ip = os.path.join(self.policy.ipc_dir, "k")
        self.connection_file = os.path.join(self.policy.ipc_dir, "kernel.json")
        self.pins: PinnedSockets | None = None
        self._demoter: asyncio.Task[None] | None = None

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        if cmd[1:3] == ["-m", "ipykernel_launcher"]:  # the same kernel, no debugger
            cmd = [cmd[0], "-m", "labkit.course.kernel", *cmd[3:]]
        return [sys.executable, "-m", "labkit.course.sandbox", str(self.policy_path), "--", *cmd]

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        info = Path(self.policy.ipc_dir, INFO_FILE)
        info.unlink(missing_ok=True)
        self._release()
        self.ip = os.path.join(self.policy.ipc_dir, "k")
        await super()._async_launch_kernel(kernel_cmd, **kw)
        if not self.policy.isolate:
            return
        try:
            init = await self._pin_sockets()
        except BaseException:
            self._release()
            with contextlib.suppress(Exception):
                await self._async_kill_kernel()
            raise
        if self.kernel_spec is not None:
            self.kernel_spec.interrupt_mode = "message"
        self._demoter = asyncio.ensure_future(self._demote(init))

    async def _demote(self, init: int) -> None:
        """While the kernel lives, lower every other process of its box to the strays'
        priority (sandbox.demote_strays): its own children never starve the kernel."""
        done: set[int] = set()
        type(self).stray_cpu_seconds.append(0.0)
        type(self).stray_processes.append(0)
        while True:
            used = await asyncio.to_thread(demote_strays, init, done)
            alive = await asyncio.to_thread(stray_count, init)
            seconds, counts = type(self).stray_cpu_seconds, type(self).stray_processes
            seconds[-1] = max(seconds[-1], used)
            counts[-1] = max(counts[-1], alive)
            await asyncio.sleep(self.demote_every)

    async def _wait_for(self, what: str, deadline: float) -> None:
        """Sleep a moment; raise when ``deadline`` (monotonic) is past or the kernel is
        gone."""
        if not await self._async_is_alive():
            raise RuntimeError(f"the sandboxed kernel exited before {what}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the sandboxed kernel timed out before {what}")
        await asyncio.sleep(0.02)

    async def _pin_sockets(self) -> int:
        """Wait for bwrap's report, then for the kernel's five sockets, and pin them;
        refused (UnsafeSocketError) when one is a link or not the kernel's socket.
        Returns the box's init pid."""
        start = time.monotonic()
        while (pid := box_pid(self.policy.ipc_dir)) is None:
            await self._wait_for("the sandbox reported its box", start + self.box_timeout)
        ports = [self.shell_port, self.iopub_port, self.stdin_port, self.control_port,
                 self.hb_port]
        owner = self.policy.uid if os.geteuid() == 0 else os.geteuid()
        pins = PinnedSockets(self.policy.ipc_dir)
        self.pins = pins
        while True:
            try:
                pins.pin(pid, ports, owner)
                break
            except FileNotFoundError:
                await self._wait_for("it bound its sockets", start + self.socket_timeout)
        self.ip = pins.ip
        return pid

    def _release(self) -> None:
        """Stop watching the box; close the pinned descriptors, remove their links."""
        if self._demoter is not None:
            self._demoter.cancel()
            self._demoter = None
        if self.pins is not None:
            self.pins.close()
            self.pins = None

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        """jupyter_client's cleanup, then the pinned descriptors and their links."""
        try:
            await super()._async_cleanup_resources(restart=restart)
        finally:
            self._release()

    cleanup_resources = _async_cleanup_resources

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        """jupyter_client's wait for the killed kernel, polled every 5 ms instead of 100:
        a graded kernel is killed, never asked to shut down, and it dies at once."""
        await super()._async_wait(pollinterval=min(pollinterval, 0.005))


class GradingExecute(Execute):
    """Execute a submission cell by cell; one bad cell costs only itself."""

    sandboxed = Bool(True, help="start kernels through labkit.course.sandbox").tag(config=True)
    max_output_bytes = Integer(256 * 1024, help="output kept per cell (bytes)").tag(config=True)
    max_notebook_output_bytes = Integer(4 * 1024 * 1024, help="output kept per notebook "
                                        "(bytes), every cell and message kind together"
                                        ).tag(config=True)
    max_kernel_failures = Integer(3, help="fresh kernels per notebook before giving up"
                                  ).tag(config=True)
    checkpoint_credit = Unicode("correct", help="how a checkpoint earns its point "
                                "(c.LabkitGrade.checkpoint_credit)").tag(config=True)
    judged = Bool(True, help="run test cells in labkit.course.judge, not in the kernel"
                  ).tag(config=True)

    # The submitted labkit_answers.json (read before any kernel runs); set per job.
    answers_path: str | None = None

    # Filled while running; read by the worker for its timing report (seconds).
    timings: dict[str, float] = {}  # noqa: RUF012 -- per-process report, reset per job
    failures: list[str] = []  # noqa: RUF012
    planted: list[str] = []  # noqa: RUF012 -- links and special files the kernel left
    unjudged: list[str] = []  # noqa: RUF012 -- test cells the judge process could not run
    oversized: list[str] = []  # noqa: RUF012 -- answers voided as too large to grade

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.sandboxed:
            self.kernel_manager_class = SandboxKernelManager
        self.store_widget_state = False  # a grade needs no widget state; a flood of it no room
        # Killed, not asked: a graceful shutdown would run the student's exit hooks in the
        # kernel and wait for them (every process of the box is killed after it anyway).
        self.shutdown_kernel = "immediate"

    # -- tests outside the kernel ----------------------------------------------------
    def preprocess(self, nb: NotebookNode, resources: Any = None,
                   km: Any = None) -> tuple[NotebookNode, Any]:
        workdir = Path((resources or {}).get("metadata", {}).get("path") or ".")
        before = files_of(workdir)
        try:
            return self._judged(nb, resources, km) if self.judged else self._execute(
                nb, resources, km)
        finally:
            self._end_kernel_processes()  # nothing of the kernel's may act after this
            type(self).planted.extend(scrub(workdir, before))

    def _end_kernel_processes(self) -> None:
        """Kill every process of the sandboxed kernel's uid (daemons, forks) before the
        grader reads the kernel's folder."""
        if self.sandboxed and SandboxKernelManager.policy_path:
            kill_user(Policy.load(SandboxKernelManager.policy_path).uid)

    def _judged(self, nb: NotebookNode, resources: Any,
                km: Any) -> tuple[NotebookNode, Any]:
        plan = judging.plan_notebook(nb)
        answers_file = Path(self.answers_path or os.devnull)
        # the answers that count and their first values: one audit of the file, not two
        firsts = judging.first_answers(answers_file, plan.lab_id)
        committed = list(firsts)
        marker = f"@@labkit-answers-{secrets.token_hex(16)}@@"
        for t in plan.tests:
            nb.cells[t.index].source = ""  # the kernel never sees a test, hidden or not
        nb.cells.append(new_code_cell(judging.export_source(plan.answer_names, marker)))
        try:
            result = self._execute(nb, resources, km)
        finally:
            export = nb.cells.pop()
            for t in plan.tests:
                nb.cells[t.index].source = t.source
        answers = judging.parse_export(export.get("outputs", []), marker, plan.answer_names)
        type(self).oversized.extend(name for name, a in answers.items()
                                    if isinstance(a, judging.Unusable) and a.too_large)
        start = time.perf_counter()
        verdicts = judging.judge(plan, answers, committed, firsts=firsts,
                                 checkpoint_credit=self.checkpoint_credit)
        for t, verdict in zip(plan.tests, verdicts, strict=True):
            nb.cells[t.index].outputs = verdict.outputs()
            nb.cells[t.index].execution_count = None
            if verdict.ename == judging.GRADING_ERROR:
                type(self).unjudged.append(t.grade_id)
        timings = type(self).timings
        timings["judge"] = timings.get("judge", 0.0) + time.perf_counter() - start
        return result

    # -- kernel failures --------------------------------------------------------------
    def _execute(self, nb: NotebookNode, resources: Any,
                 km: Any) -> tuple[NotebookNode, Any]:
        self._skip: dict[int, str] = {}
        for attempt in range(self.max_kernel_failures + 1):
            self._current: int | None = None
            self._out_bytes: dict[int, int] = {}
            self._nb_bytes = 0
            self._nb_full = False
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
            self._start = time.perf_counter()
            self._ready: float | None = None
            try:
                result = super().preprocess(nb, resources, km=km)
            except (DeadKernelError, CellTimeoutError, RuntimeError) as exc:
                index = self._current
                if index is None or index in self._skip:
                    raise
                reason = self._reason(exc)
                type(self).failures.append(f"cell {index + 1}: {reason}")
                if attempt + 1 >= self.max_kernel_failures:  # give up on the rest
                    for later in range(index, len(nb.cells)):
                        self._skip.setdefault(later, f"not run: the kernel failed "
                                              f"{attempt + 1} times ({reason})")
                self._skip[index] = reason
                continue
            finally:
                end = time.perf_counter()
                ready = self._ready or end
                timings = type(self).timings
                timings["kernel_start"] = timings.get("kernel_start", 0.0) + ready - self._start
                timings["execute"] = timings.get("execute", 0.0) + end - ready
            return result
        raise RuntimeError("the kernel failed on every attempt")

    @staticmethod
    def _reason(exc: BaseException) -> str:
        if isinstance(exc, DeadKernelError):
            return ("the kernel died while this cell ran (exit, crash, or the memory/CPU "
                    "limit): the grader skipped it and ran the rest in a fresh kernel")
        return (f"this cell did not finish or answer an interrupt ({type(exc).__name__}): "
                "the grader skipped it and ran the rest in a fresh kernel")

    def preprocess_cell(self, cell: NotebookNode, resources: Any,
                        index: int) -> tuple[NotebookNode, Any]:
        self._current = index
        if self._ready is None:  # kernel started and answered kernel_info
            self._ready = time.perf_counter()
        if index in self._skip:
            if cell.cell_type == "code":
                cell.outputs = [new_output("error", ename="GradingError",
                                           evalue=self._skip[index],
                                           traceback=[f"GradingError: {self._skip[index]}"])]
            return cell, resources
        return super().preprocess_cell(cell, resources, index)

    # -- output flood -----------------------------------------------------------------
    def _spend(self, cell_index: int, size: int) -> bool:
        """Count ``size`` bytes of output against the cell's and the notebook's budgets;
        False when either is spent (the output is then dropped)."""
        used = self._out_bytes.get(cell_index, 0)
        self._out_bytes[cell_index] = used + size
        if used + size > self.max_output_bytes:
            return False
        if self._nb_bytes + size > self.max_notebook_output_bytes:
            return False
        self._nb_bytes += size
        return True

    def output(self, outs: list[NotebookNode], msg: dict[str, Any], display_id: str | None,
               cell_index: int) -> NotebookNode | None:
        size = len(json.dumps(msg.get("content", {}), default=str))
        used = self._out_bytes.get(cell_index, 0)
        if self._spend(cell_index, size):
            return super().output(outs, msg, display_id, cell_index)
        if used <= self.max_output_bytes and not self._nb_full:  # first overflow: say so once
            self._nb_full = self._nb_bytes + size > self.max_notebook_output_bytes
            limit = (self.max_notebook_output_bytes if self._nb_full
                     else self.max_output_bytes) // 1024
            outs.append(new_output("stream", name="stdout",
                                   text=f"\n[output truncated by the grader after {limit} KiB"
                                        f"{' for the notebook' if self._nb_full else ''}]\n"))
        return None

    def _update_display_id(self, display_id: str, msg: dict[str, Any]) -> None:
        """An update rewrites every output shown with ``display_id``: each copy is charged
        to its cell and the notebook, and an update past a budget is dropped."""
        size = len(json.dumps(msg.get("content", {}), default=str))
        targets = getattr(self, "_display_id_map", {}).get(display_id, {})
        for cell_index, indices in targets.items():
            if not self._spend(cell_index, size * len(indices)):
                return
        super()._update_display_id(display_id, msg)


class TimedSaveAutoGrades(SaveAutoGrades):
    """nbgrader's ``SaveAutoGrades``, timed: the grading report's *database* share."""

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        start = time.perf_counter()
        try:
            return super().preprocess(nb, resources)
        finally:
            timings = GradingExecute.timings
            timings["database"] = timings.get("database", 0.0) + time.perf_counter() - start
