"""One judge process per grading worker, asked one notebook at a time.

Starting ``python -I -m labkit.course.judge`` for every notebook cost about 0.15 s of CPU
a submission (an interpreter and ``labkit.grading``'s imports) for a few milliseconds of
tests. :class:`JudgeProcess` keeps one ``--serve`` process: a request is one JSON line on
its stdin, the verdicts one line on its stdout. It never runs student code (answers reach
it as checked data, each test runs in a namespace of its own), so a process can serve the
worker's jobs one after another. Whatever goes wrong -- no answer within the timeout, a
crash, the per-request CPU limit, an unreadable line -- the process is killed and the next
request starts a fresh one; the request that failed gets ``None`` (its tests are then
graded as the grader's failure, never the student's).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import subprocess
import sys
import threading
import time


class JudgeProcess:
    """A long-lived judge process started on first use by :meth:`ask`."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def ask(self, request: str, timeout: float) -> str | None:
        """Send ``request`` (one line of JSON) and return the reply line, or None (the
        process is then gone; the next request starts another)."""
        with self._lock:
            proc = self._running()
            assert proc.stdin is not None
            try:
                proc.stdin.write(request.encode() + b"\n")
                proc.stdin.flush()
            except OSError:
                self.close()
                return None
            reply = _readline(proc, time.monotonic() + timeout)
            if reply is None:
                self.close()
            return reply

    def _running(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self.close()
        self._proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return self._proc

    def close(self) -> None:
        """Kill the process (if any) and reap it."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        proc.wait()


def _readline(proc: subprocess.Popen[bytes], deadline: float) -> str | None:
    """One line of ``proc``'s stdout before ``deadline`` (monotonic), or None."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    chunks: list[bytes] = []
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if not sel.select(left):
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None  # the process ended
            chunks.append(chunk)
            if chunk.endswith(b"\n"):
                return b"".join(chunks).decode("utf-8", "replace").rstrip("\n")
    return None


JUDGE = JudgeProcess([sys.executable, "-I", "-m", "labkit.course.judge", "--serve"])
"""This process's judge (a grading worker's: one for all of its jobs)."""
atexit.register(JUDGE.close)
