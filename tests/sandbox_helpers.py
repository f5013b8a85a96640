"""Shared by the sandbox and socket tests: a SandboxKernelManager on a test box, and fake
kernels (small scripts run in the box in place of ipykernel)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def run_async(coro: Coroutine[Any, Any, Any]) -> Any:
    """``asyncio.run(coro)`` in a thread of its own: a test file graded in-process before
    this one (nbclient, papermill) can leave an event loop marked running in this thread,
    where ``asyncio.run`` refuses to start."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def manager(box, fake_kernel: str | None = None):
    """A SandboxKernelManager on ``box``'s policy; ``fake_kernel`` (Python source, run in
    the box with ``-f CONNECTION_FILE``) replaces ipykernel."""
    from labkit.course.execution import SandboxKernelManager

    class Manager(SandboxKernelManager):
        policy_path = str(box.policy)
        socket_timeout = 30.0

        def format_kernel_cmd(self, extra_arguments=None):
            if fake_kernel is None:
                return super().format_kernel_cmd(extra_arguments)
            return [sys.executable, "-m", "labkit.course.sandbox", str(box.policy), "--",
                    sys.executable, "-c", fake_kernel, "-f", self.connection_file]

    return Manager(kernel_name="python3")


FAKE_PRELUDE = """
import json, os, select, socket, sys, time
info = json.load(open(sys.argv[sys.argv.index("-f") + 1]))
KEYS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
PATHS = {k: f"{info['ip']}-{info[k]}" for k in KEYS}
"""


def fake(body: str, target: str) -> str:
    return FAKE_PRELUDE + f"TARGET = {target!r}\n" + body
