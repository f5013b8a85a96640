"""labkit.course.sockets on a real box: the grader opens the kernel's socket files one
path component at a time without following links, and refuses anything but a socket of
the kernel's own user (root grader: the job's uid; a plain grader: its own). Then the
kernel manager (execution.SandboxKernelManager) on hostile fake kernels that swap their
socket files for absolute links to a Unix socket the test listens on at a host path:
neither the first connection nor ZMQ's reconnects ever reach it; an honest ipykernel
still answers through the pins."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labkit.course.sandbox import BOX_IPC, Policy
from labkit.course.sockets import PinnedSockets, UnsafeSocketError, box_pid, open_box_socket
from sandbox_helpers import fake, manager, run_async
from test_course_sandbox import IS_ROOT, make_box

_KERNEL = f"""
import os, socket, time
s = socket.socket(socket.AF_UNIX)
s.bind("{BOX_IPC}/k-1")
s.listen(1)
os.symlink("/etc/hostname", "{BOX_IPC}/k-2")
os.mkfifo("{BOX_IPC}/ready")
time.sleep(90)
"""


@pytest.fixture
def box_with_sockets(tmp_path):
    """A box whose code binds ``k-1`` and links ``k-2``; yields (box pid, its uid)."""
    box = make_box(tmp_path, cpu_seconds=30)
    proc = subprocess.Popen([sys.executable, "-m", "labkit.course.sandbox", str(box.policy),
                             "--", sys.executable, "-c", _KERNEL])
    try:
        deadline = time.monotonic() + 30  # a guard: the box is ready in well under 1 s
        while (pid := box_pid(box.ipc)) is None or not os.path.lexists(
                f"/proc/{pid}/root{BOX_IPC}/ready"):
            assert time.monotonic() < deadline and proc.poll() is None, "the box never started"
            time.sleep(0.02)
        yield pid, Policy.load(box.policy).uid if IS_ROOT else os.geteuid()
    finally:
        proc.kill()
        proc.wait(10)


def test_a_socket_of_the_kernel_is_opened_without_following(box_with_sockets):
    pid, uid = box_with_sockets
    fd = open_box_socket(pid, "k-1", uid)
    os.close(fd)


def test_a_link_a_stranger_or_a_missing_file_is_refused(box_with_sockets):
    pid, uid = box_with_sockets
    with pytest.raises(UnsafeSocketError, match="not a socket"):
        open_box_socket(pid, "k-2", uid)
    with pytest.raises(UnsafeSocketError, match="belongs to uid"):
        open_box_socket(pid, "k-1", uid + 1)
    with pytest.raises(FileNotFoundError):
        open_box_socket(pid, "k-3", uid)
    with pytest.raises(ValueError, match="not a socket name"):
        open_box_socket(pid, "../k-1", uid)


def test_pins_are_all_or_nothing_and_close_twice(box_with_sockets, tmp_path):
    pid, uid = box_with_sockets
    pins = PinnedSockets(tmp_path)
    with pytest.raises(UnsafeSocketError):
        pins.pin(pid, [1, 2], uid)
    assert pins.fds == {} and list(pins.folder.iterdir()) == []
    pins.pin(pid, [1], uid)
    link = pins.folder / "k-1"
    assert os.readlink(link) == f"/proc/{os.getpid()}/fd/{pins.fds[1]}"
    assert oct(pins.folder.stat().st_mode & 0o777) == "0o700"
    pins.close()
    pins.close()
    assert not pins.folder.exists()


def test_a_deep_job_folder_gets_a_short_pin_folder(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    pins = PinnedSockets(deep)
    try:
        assert len(f"{pins.ip}-65535") <= 107 and not str(pins.folder).startswith(str(deep))
    finally:
        pins.close()
    assert list(deep.iterdir()) == [] and not Path(pins.folder).exists()


# -- the grader's connection, through the kernel manager -------------------------------------

def _host_listener(tmp_path: Path) -> tuple[socket.socket, str]:
    """A Unix socket on a host path, as a student would name it."""
    path = str(tmp_path / "host.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(64)
    server.setblocking(False)
    return server, path


def _connections(server: socket.socket) -> int:
    n = 0
    while True:
        try:
            server.accept()[0].close()
        except BlockingIOError:
            return n
        n += 1


# Binds nothing: every socket of its connection file is a link to the host's socket.
_LINKS_FIRST = """
for path in PATHS.values():
    os.symlink(TARGET, path)
time.sleep(90)
"""

# Binds its five sockets, waits for the grader's shell connection, then swaps every
# socket file for a link to the host's socket and drops every connection.
_SWAP_LATER = """
listeners = {}
for key, path in PATHS.items():
    listeners[key] = socket.socket(socket.AF_UNIX)
    listeners[key].bind(path)
    listeners[key].listen(8)
conns = []
while not any(k == "shell_port" for k, _ in conns):
    ready, _, _ = select.select(list(listeners.values()), [], [], 30)
    conns += [(k, s.accept()[0]) for k, s in listeners.items() if s in ready]
for path in PATHS.values():
    os.unlink(path)
    os.symlink(TARGET, path)
for _, c in conns:
    c.close()
for s in listeners.values():
    s.close()
time.sleep(90)
"""


def test_the_grader_talks_to_an_honest_kernel_through_pinned_sockets(tmp_path):

    box = make_box(tmp_path, cpu_seconds=60)
    outputs: list[dict] = []

    async def run() -> tuple[dict, list[str], Path, str]:
        km = manager(box)
        await km.start_kernel(cwd=str(box.work))
        try:
            folder, ip = km.pins.folder, km.ip
            links = [os.readlink(p) for p in folder.iterdir()]
            kc = km.client()
            kc.start_channels()
            await kc.wait_for_ready(timeout=60)
            reply = await kc.execute_interactive("print(6 * 7)", timeout=60,
                                                 output_hook=outputs.append)
            kc.stop_channels()
        finally:
            await km.shutdown_kernel(now=True)
        return reply["content"], links, folder, ip

    content, links, folder, ip = run_async(run())
    assert content["status"] == "ok", content
    assert any(o["content"].get("text") == "42\n" for o in outputs), outputs
    assert len(links) == 5 and all(ln.startswith(f"/proc/{os.getpid()}/fd/") for ln in links)
    assert ip == f"{folder}/k" and not folder.exists()  # unpinned at shutdown


def test_a_kernel_whose_sockets_are_links_never_starts(tmp_path):
    """Socket files that are absolute links before the grader connects: the start is
    refused, the box is ended, and the host socket they name never sees a connection."""

    from labkit.course.sockets import UnsafeSocketError

    box = make_box(tmp_path, cpu_seconds=60)
    server, target = _host_listener(tmp_path)

    async def run() -> None:
        km = manager(box, fake(_LINKS_FIRST, target))
        with pytest.raises(UnsafeSocketError, match="not a socket"):
            await km.start_kernel(cwd=str(box.work))
        assert km.pins is None and not await km.is_alive()

    try:
        run_async(run())
        assert _connections(server) == 0
    finally:
        server.close()


def _reconnected_or_retried(events: list[int]) -> bool:
    """After the first disconnect: a connect again, or five failed retries."""
    import zmq

    if zmq.EVENT_DISCONNECTED not in events:
        return False
    after = events[events.index(zmq.EVENT_DISCONNECTED):]
    return zmq.EVENT_CONNECTED in after or after.count(zmq.EVENT_CONNECT_RETRIED) >= 5


def test_zmq_reconnects_never_follow_sockets_swapped_for_links(tmp_path):
    """The kernel swaps its socket files for links after the grader connected and drops
    every connection: ZMQ reconnects (seen on its monitor socket) through the pins reach
    the closed socket and fail; none reaches the host socket the links name."""

    import zmq
    from zmq.utils.monitor import recv_monitor_message

    box = make_box(tmp_path, cpu_seconds=60)
    server, target = _host_listener(tmp_path)

    def watch_reconnects(url: str) -> list[int]:
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.RECONNECT_IVL, 20)
        monitor = sock.get_monitor_socket()
        monitor.setsockopt(zmq.RCVTIMEO, 20_000)  # a guard only: events come in ms
        sock.connect(url)
        events: list[int] = []
        try:
            while not _reconnected_or_retried(events):
                events.append(recv_monitor_message(monitor)["event"])
        finally:
            sock.disable_monitor()
            monitor.close(0)
            sock.close(0)
            ctx.term()
        return events

    async def run() -> list[int]:
        km = manager(box, fake(_SWAP_LATER, target))
        await km.start_kernel(cwd=str(box.work))
        try:
            return await asyncio.to_thread(watch_reconnects, f"ipc://{km.ip}-{km.shell_port}")
        finally:
            await km.shutdown_kernel(now=True)

    try:
        events = run_async(run())
        assert _connections(server) == 0
    finally:
        server.close()
    assert events[0] == zmq.EVENT_CONNECTED, events  # through the pins, to the kernel
    after = events[events.index(zmq.EVENT_DISCONNECTED):]
    assert after.count(zmq.EVENT_CONNECT_RETRIED) >= 5 and zmq.EVENT_CONNECTED not in after
