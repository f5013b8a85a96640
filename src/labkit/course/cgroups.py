"""One cgroup per graded kernel: every process it starts shares one memory cap and one
process cap, and all of them are killed together when the job ends.

rlimits cap one process at a time (a kernel that forks 200 children has 200 memory
limits); a cgroup caps the kernel as a whole, its tmpfs files included (they are charged
to the memory of whoever wrote them). Two layouts are supported:

* **cgroup v1**, with ``memory`` and ``pids`` hierarchies mounted (as on this machine):
  the cage is a folder beside the grader's own cgroup in each;
* **cgroup v2**, where the grader's cgroup delegates ``memory`` and ``pids`` to its
  children (``cgroup.subtree_control``), as systemd does for a delegated service.

Making a cage needs write access to the grader's cgroup (root, or a delegated v2 tree).
Where neither layout works, :func:`make_cage` returns ``None`` and the sandbox's rlimits
are the only caps; :func:`probe` says which.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Cage:
    """The cgroup folders (one per hierarchy) a kernel joins; ``layout`` is v1 or v2."""

    folders: tuple[str, ...]
    layout: str


def _mountinfo() -> list[tuple[str, str, set[str]]]:
    """(mount point, file-system type, super-block options) of each cgroup mount."""
    rows = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                rows.append((fields[4], tail[0], set(tail[2].split(","))))
    return rows


def _own_cgroups() -> dict[str, str]:
    """The grader's cgroup per hierarchy: ``{"memory": "/a/b", "pids": "/", "": "/"}``
    (the empty key is cgroup v2's unified hierarchy)."""
    own: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                own[name] = path
    return own


def _v1_parents() -> list[Path] | None:
    own, parents = _own_cgroups(), []
    for controller in ("memory", "pids"):
        mount = next((m for m, fs, opts in _mountinfo() if fs == "cgroup" and controller in opts),
                     None)
        if mount is None or controller not in own:
            return None
        parents.append(Path(mount + own[controller]))
    return parents


def _v2_parent() -> Path | None:
    mount = next((m for m, fs, _ in _mountinfo() if fs == "cgroup2"), None)
    path = _own_cgroups().get("")
    if mount is None or path is None:
        return None
    parent = Path(mount + path)
    try:
        delegated = set((parent / "cgroup.subtree_control").read_text().split())
    except OSError:
        return None
    return parent if {"memory", "pids"} <= delegated else None


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def make_cage(name: str, *, memory_bytes: int, processes: int) -> Cage | None:
    """A fresh cgroup called ``name`` with the two caps, or None where this grader cannot
    make one. ``memory_bytes`` caps RAM (swap too, where it is accounted) and tmpfs
    pages; ``processes`` caps processes and threads together."""
    if memory_bytes <= 0:
        raise ValueError(f"memory_bytes must be positive, got {memory_bytes}")
    if processes <= 0:
        raise ValueError(f"processes must be positive, got {processes}")
    v1 = _v1_parents()
    try:
        if v1 is not None:
            memory, pids = (parent / name for parent in v1)
            for folder in (memory, pids):
                folder.mkdir(exist_ok=True)
            _write(memory / "memory.limit_in_bytes", str(memory_bytes))
            with contextlib.suppress(OSError):  # only where swap is accounted
                _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
            _write(pids / "pids.max", str(processes))
            return Cage((str(memory), str(pids)), "v1")
        v2 = _v2_parent()
        if v2 is not None:
            folder = v2 / name
            folder.mkdir(exist_ok=True)
            _write(folder / "memory.max", str(memory_bytes))
            with contextlib.suppress(OSError):
                _write(folder / "memory.swap.max", "0")
            _write(folder / "pids.max", str(processes))
            return Cage((str(folder),), "v2")
    except OSError:
        return None
    return None


def join(folders: tuple[str, ...] | list[str], pid: int = 0) -> None:
    """Move ``pid`` (0: the caller) into each folder; its children will follow."""
    for folder in folders:
        _write(Path(folder, "cgroup.procs"), str(pid or os.getpid()))


def members(cage: Cage) -> list[int]:
    """Pids in the cage (every hierarchy)."""
    pids: set[int] = set()
    for folder in cage.folders:
        with contextlib.suppress(OSError):
            pids.update(int(p) for p in Path(folder, "cgroup.procs").read_text().split())
    return sorted(pids)


def kill(cage: Cage, rounds: int = 20) -> int:
    """SIGKILL everything in the cage until it is empty; the number left (0: none)."""
    for _ in range(rounds):
        pids = members(cage)
        if not pids:
            return 0
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    return len(members(cage))


def remove(cage: Cage) -> bool:
    """Kill what is left, then delete the cage's folders; True when they are gone."""
    kill(cage)
    gone = True
    for folder in cage.folders:
        for _ in range(40):  # a killed process leaves its cgroup a moment after it dies
            try:
                os.rmdir(folder)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)
        else:
            gone = False
    return gone


def probe() -> str:
    """Which layout a cage would use here: ``"v1"``, ``"v2"`` or ``"none"``."""
    cage = make_cage(f"labkit-probe-{os.getpid()}", memory_bytes=1 << 30, processes=64)
    if cage is None:
        return "none"
    remove(cage)
    return cage.layout
