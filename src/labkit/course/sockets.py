"""The grader's way to the boxed kernel's sockets, pinned so the kernel cannot redirect it.

The kernel binds its ZMQ sockets (``k-<port>``) in its own tmpfs, ``/run/labkit`` inside
the box. Connecting through ``/proc/PID/root/run/labkit/k-N`` would let the kernel swap a
socket file for a symlink: an absolute link met under ``/proc/PID/root`` resolves against
the *grader's* root, so the grader (root) would connect -- and ZMQ would keep reconnecting
-- to any host socket the student names. Instead, once the sockets exist, the grader opens
each one without following links (``O_PATH | O_NOFOLLOW``, one path component at a time
from the box's root), checks the folders are folders and the file is a socket of the
kernel's uid, and keeps those descriptors. ZMQ connects through links in a folder only the
grader can write, ``k-N -> /proc/<grader pid>/fd/<fd>``: a connect through such a link
reaches the pinned socket inode, whatever the kernel later does to its folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

BOX_IPC = "/run/labkit"                 # the kernel's socket folder, inside the box
INFO_FILE = "sandbox-info.json"         # what bwrap reports (child pid), in ipc_dir
_SUN_PATH_MAX = 107                     # a Unix socket path's bytes, less the NUL


class UnsafeSocketError(OSError):
    """A socket path of the box is a link, or not a socket of the kernel's user."""


def box_pid(ipc_dir: str | os.PathLike[str]) -> int | None:
    """The box's init pid as bwrap reported it in ``ipc_dir``; None until it has."""
    try:
        return int(json.loads(Path(ipc_dir, INFO_FILE).read_text())["child-pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _step(dir_fd: int, name: str) -> int:
    return os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)


def open_box_socket(pid: int, name: str, owner: int | None) -> int:
    """An ``O_PATH`` descriptor of the socket ``BOX_IPC/name`` in box ``pid``, opened one
    component at a time without following any link. Raises :class:`UnsafeSocketError` when a
    folder is not a folder, the file is not a socket, or ``owner`` (a uid; None: any)
    does not own it; FileNotFoundError while it does not exist yet."""
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"not a socket name: {name!r}")
    opened: list[int] = []
    try:
        opened.append(os.open(f"/proc/{pid}", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))
        # "root" is the magic link to the box's root: followed on purpose (the grader's
        # own /proc, the pid bwrap reported); nothing below it is followed.
        opened.append(os.open("root", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC,
                              dir_fd=opened[-1]))
        for part in BOX_IPC.strip("/").split("/"):
            opened.append(_step(opened[-1], part))
            if not stat.S_ISDIR(os.fstat(opened[-1]).st_mode):
                raise UnsafeSocketError(f"{part} in the box's socket path is not a folder")
        fd = _step(opened[-1], name)
    finally:
        for held in opened:
            os.close(held)
    st = os.fstat(fd)
    why = ("is not a socket" if not stat.S_ISSOCK(st.st_mode)
           else f"belongs to uid {st.st_uid}, not {owner}" if owner is not None
           and st.st_uid != owner else "")
    if why:
        os.close(fd)
        raise UnsafeSocketError(f"the box's {BOX_IPC}/{name} {why}: refused")
    return fd


class PinnedSockets:
    """The O_PATH descriptors of one kernel's sockets and the links ZMQ connects through.

    ``ip`` is what the kernel manager uses as its ``ip`` (jupyter_client connects to
    ``ipc://{ip}-{port}``). The folder is private (0700) to the grader and unknown to the
    kernel. :meth:`close` drops the descriptors and the folder; it may be called twice.
    """

    def __init__(self, parent: str | os.PathLike[str]) -> None:
        folder = tempfile.mkdtemp(prefix="pin-", dir=parent)
        if len(folder) + len("/k-65535") > _SUN_PATH_MAX:  # deep job folder: a short one
            os.rmdir(folder)
            folder = tempfile.mkdtemp(prefix="labkit-pin-")
        self.folder = Path(folder)
        self.fds: dict[int, int] = {}

    @property
    def ip(self) -> str:
        return str(self.folder / "k")

    def pin(self, pid: int, ports: Iterable[int], owner: int | None) -> None:
        """Open and link every ``k-<port>`` of box ``pid``, or none of them (the error
        of the first that failed is raised: FileNotFoundError means "not yet")."""
        fds: dict[int, int] = {}
        try:
            for port in ports:
                fds[port] = open_box_socket(pid, f"k-{port}", owner)
        except BaseException:
            for fd in fds.values():
                os.close(fd)
            raise
        self.close_fds()
        self.fds = fds
        for port, fd in fds.items():
            link, tmp = self.folder / f"k-{port}", self.folder / f".k-{port}"
            tmp.unlink(missing_ok=True)
            os.symlink(f"/proc/{os.getpid()}/fd/{fd}", tmp)
            os.replace(tmp, link)

    def close_fds(self) -> None:
        for fd in self.fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = {}

    def close(self) -> None:
        self.close_fds()
        with contextlib.suppress(FileNotFoundError):
            for entry in self.folder.iterdir():
                entry.unlink(missing_ok=True)
            self.folder.rmdir()
