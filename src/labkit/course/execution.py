"""nbgrader's ``Execute`` preprocessor, hardened for hostile notebooks.

Stock autograde gives up on a whole submission when its kernel dies or stops answering,
and keeps every byte a cell prints. :class:`GradingExecute` instead

* starts the kernel inside :mod:`labkit.course.sandbox` (:class:`SandboxKernelManager`);
* when a cell kills the kernel (``os._exit``, a segfault, the memory or CPU limit) or hangs
  past the timeout without answering an interrupt, marks that cell as failed with the
  reason, and re-runs the notebook in a fresh kernel *skipping* it: every other cell earns
  what it earns (at most ``max_kernel_failures`` such restarts);
* keeps at most ``max_output_bytes`` of output per cell and says so in the cell.

It also times the kernel start and the execution for the grading report.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute, SaveAutoGrades
from traitlets import Bool, Integer

from labkit.course.sandbox import Policy


class SandboxKernelManager(AsyncKernelManager):
    """Starts the kernel through the sandbox launcher; talks to it over Unix sockets."""

    policy_path: str | None = None  # set by the grading worker for each job

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.policy_path is None:
            raise RuntimeError("SandboxKernelManager.policy_path is not set")
        policy = Policy.load(self.policy_path)
        self.transport = "ipc"
        self.ip = os.path.join(policy.ipc_dir, "k")
        self.connection_file = os.path.join(policy.ipc_dir, "kernel.json")

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        return [sys.executable, "-m", "labkit.course.sandbox", str(self.policy_path), "--", *cmd]


class GradingExecute(Execute):
    """Execute a submission cell by cell; one bad cell costs only itself."""

    sandboxed = Bool(True, help="start kernels through labkit.course.sandbox").tag(config=True)
    max_output_bytes = Integer(256 * 1024, help="output kept per cell (bytes)").tag(config=True)
    max_kernel_failures = Integer(3, help="fresh kernels per notebook before giving up"
                                  ).tag(config=True)

    # Filled while running; read by the worker for its timing report (seconds).
    timings: dict[str, float] = {}  # noqa: RUF012 -- per-process report, reset per job
    failures: list[str] = []  # noqa: RUF012

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.sandboxed:
            self.kernel_manager_class = SandboxKernelManager

    # -- kernel failures --------------------------------------------------------------
    def preprocess(self, nb: NotebookNode, resources: Any = None,
                   km: Any = None) -> tuple[NotebookNode, Any]:
        self._skip: dict[int, str] = {}
        for attempt in range(self.max_kernel_failures + 1):
            self._current: int | None = None
            self._out_bytes: dict[int, int] = {}
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
    def output(self, outs: list[NotebookNode], msg: dict[str, Any], display_id: str | None,
               cell_index: int) -> NotebookNode | None:
        size = len(json.dumps(msg.get("content", {}), default=str))
        used = self._out_bytes.get(cell_index, 0)
        self._out_bytes[cell_index] = used + size
        if used + size <= self.max_output_bytes:
            return super().output(outs, msg, display_id, cell_index)
        if used <= self.max_output_bytes:  # first overflow: say so once
            note = new_output("stream", name="stdout",
                              text=f"\n[output truncated by the grader after "
                                   f"{self.max_output_bytes // 1024} KiB]\n")
            outs.append(note)
        return None


class TimedSaveAutoGrades(SaveAutoGrades):
    """nbgrader's ``SaveAutoGrades``, timed: the grading report's *database* share."""

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        start = time.perf_counter()
        try:
            return super().preprocess(nb, resources)
        finally:
            timings = GradingExecute.timings
            timings["database"] = timings.get("database", 0.0) + time.perf_counter() - start
