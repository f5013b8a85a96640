"""One cgroup per graded kernel: every process it starts shares one memory cap, one
process cap and one CPU quota, and all of them are killed together when the job ends.

rlimits cap one process at a time (a kernel that forks 200 children has 200 memory
limits); a cgroup caps the kernel as a whole, its tmpfs files included (they are charged
to the memory of whoever wrote them). Two layouts are supported:

* **cgroup v1**, with ``memory`` and ``pids`` hierarchies mounted (as on this machine):
  the cage is a folder beside the grader's own cgroup in each, and in the ``cpu``
  hierarchy too where it is mounted and writable (``cpu.cfs_quota_us``);
* **cgroup v2**, where the grader's cgroup delegates ``memory`` and ``pids`` to its
  children (``cgroup.subtree_control``), as systemd does for a delegated service, and
  ``cpu`` where delegated as well (``cpu.max``).

The CPU quota is what keeps a kernel that forks busy children (in sessions of their own,
so no process group or rlimit holds them together) to its own share of the machine: the
kernel and everything it starts get ``cpus`` cores' worth of time per period together.
Making a cage needs write access to the grader's cgroup (root, or a delegated v2 tree).
Where neither layout works, :func:`make_cage` returns ``None`` and the sandbox's rlimits
are the only caps; where the CPU controller alone is missing, the cage caps memory and
processes and :attr:`Cage.cpus` is None (the sandbox then lowers the kernel's priority,
:func:`caps_cpu`). :func:`probe` says which.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CPU_PERIOD_US = 100_000  # the quota's period: 0.1 s, the kernel's default


@dataclass(frozen=True)
class Cage:
    """The cgroup folders (one per hierarchy) a kernel joins; ``layout`` is v1 or v2;
    ``cpus`` the CPU quota it holds (cores), None where the CPU controller was not ours."""

    folders: tuple[str, ...]
    layout: str
    cpus: float | None = None


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


def _v1_parent(controller: str) -> Path | None:
    """The grader's own folder in the v1 hierarchy holding ``controller``."""
    own = _own_cgroups()
    mount = next((m for m, fs, opts in _mountinfo() if fs == "cgroup" and controller in opts),
                 None)
    return None if mount is None or controller not in own else Path(mount + own[controller])


def _v1_parents() -> list[Path] | None:
    parents = [_v1_parent(controller) for controller in ("memory", "pids")]
    return None if None in parents else [p for p in parents if p is not None]


def _v2_parent() -> tuple[Path, bool] | None:
    """The grader's v2 cgroup when it delegates memory and pids, and whether cpu too."""
    mount = next((m for m, fs, _ in _mountinfo() if fs == "cgroup2"), None)
    path = _own_cgroups().get("")
    if mount is None or path is None:
        return None
    parent = Path(mount + path)
    try:
        delegated = set((parent / "cgroup.subtree_control").read_text().split())
    except OSError:
        return None
    return (parent, "cpu" in delegated) if {"memory", "pids"} <= delegated else None


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _quota(cpus: float) -> int:
    return max(1000, round(cpus * CPU_PERIOD_US))  # the kernel refuses under 1 ms


def _v1_cpu(name: str, cpus: float) -> Path | None:
    """A folder ``name`` in the v1 cpu hierarchy holding the quota, or None (not mounted,
    not writable: delegated cgroups without it): the cage is made without it."""
    parent = _v1_parent("cpu")
    if parent is None:
        return None
    folder = parent / name
    try:
        folder.mkdir(exist_ok=True)
        _write(folder / "cpu.cfs_period_us", str(CPU_PERIOD_US))
        _write(folder / "cpu.cfs_quota_us", str(_quota(cpus)))
    except OSError:
        with contextlib.suppress(OSError):
            folder.rmdir()
        return None
    return folder


def _make_v1(v1: list[Path], name: str, memory_bytes: int, processes: int,
             cpus: float | None) -> Cage:
    memory, pids = (parent / name for parent in v1)
    for folder in (memory, pids):
        folder.mkdir(exist_ok=True)
    _write(memory / "memory.limit_in_bytes", str(memory_bytes))
    with contextlib.suppress(OSError):  # only where swap is accounted
        _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
    _write(pids / "pids.max", str(processes))
    cpu = _v1_cpu(name, cpus) if cpus is not None else None
    folders = (str(memory), str(pids)) + ((str(cpu),) if cpu is not None else ())
    return Cage(folders, "v1", cpus if cpu is not None else None)


def _make_v2(parent: Path, has_cpu: bool, name: str, memory_bytes: int, processes: int,
             cpus: float | None) -> Cage:
    folder = parent / name
    folder.mkdir(exist_ok=True)
    _write(folder / "memory.max", str(memory_bytes))
    with contextlib.suppress(OSError):
        _write(folder / "memory.swap.max", "0")
    _write(folder / "pids.max", str(processes))
    capped = None
    if cpus is not None and has_cpu:
        with contextlib.suppress(OSError):
            _write(folder / "cpu.max", f"{_quota(cpus)} {CPU_PERIOD_US}")
            capped = cpus
    return Cage((str(folder),), "v2", capped)


def make_cage(name: str, *, memory_bytes: int, processes: int,
              cpus: float | None = None) -> Cage | None:
    """A fresh cgroup called ``name`` with the caps, or None where this grader cannot
    make one. ``memory_bytes`` caps RAM (swap too, where it is accounted) and tmpfs
    pages; ``processes`` caps processes and threads together; ``cpus`` (cores, 1.0 is
    one core's time; None: no CPU cap) caps the CPU time of all of them together, where
    the CPU controller is ours (:attr:`Cage.cpus` says whether it was)."""
    if memory_bytes <= 0:
        raise ValueError(f"memory_bytes must be positive, got {memory_bytes}")
    if processes <= 0:
        raise ValueError(f"processes must be positive, got {processes}")
    if cpus is not None and not cpus > 0:
        raise ValueError(f"cpus must be positive, got {cpus}")
    try:
        v1 = _v1_parents()
        if v1 is not None:
            return _make_v1(v1, name, memory_bytes, processes, cpus)
        v2 = _v2_parent()
        if v2 is not None:
            return _make_v2(*v2, name, memory_bytes, processes, cpus)
    except OSError:
        return None
    return None


def caps_cpu(folders: tuple[str, ...] | list[str]) -> bool:
    """Whether one of ``folders`` holds a CPU quota (v1 ``cpu.cfs_quota_us`` > 0, v2
    ``cpu.max`` not "max"): the sandbox falls back to a lower priority when none does."""
    for folder in folders:
        with contextlib.suppress(OSError, ValueError):
            if int(Path(folder, "cpu.cfs_quota_us").read_text()) > 0:
                return True
        with contextlib.suppress(OSError, IndexError):
            if Path(folder, "cpu.max").read_text().split()[0] != "max":
                return True
    return False


def cpu_stat(cage: Cage) -> dict[str, int]:
    """The cage's ``cpu.stat`` (v1: nr_periods, nr_throttled, throttled_time in ns; v2
    also usage_usec, throttled_usec); empty where it holds no CPU folder."""
    for folder in cage.folders:
        with contextlib.suppress(OSError):
            rows = Path(folder, "cpu.stat").read_text().split("\n")
            return {k: int(v) for k, v in (r.split() for r in rows if len(r.split()) == 2)}
    return {}


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


def probe_caps() -> tuple[str, bool]:
    """Which layout a cage would use here (``"v1"``, ``"v2"`` or ``"none"``) and whether
    it would cap CPU time."""
    cage = make_cage(f"labkit-probe-{os.getpid()}", memory_bytes=1 << 30, processes=64,
                     cpus=1.0)
    if cage is None:
        return "none", False
    remove(cage)
    return cage.layout, cage.cpus is not None


def probe() -> str:
    """Which layout a cage would use here: ``"v1"``, ``"v2"`` or ``"none"``."""
    return probe_caps()[0]
