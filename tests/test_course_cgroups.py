"""labkit.course.cgroups on this machine's real cgroup tree: a cage caps, holds, kills and
goes away. Root only (a cage is made beside the grader's own cgroup)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from labkit.course import cgroups

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are the root grader's")


@pytest.fixture
def cage():
    made = cgroups.make_cage(f"labkit-test-{uuid.uuid4().hex[:8]}", memory_bytes=256 << 20,
                             processes=16)
    assert made is not None, "no cgroup layout on this machine"
    yield made
    cgroups.remove(made)


def test_probe_names_this_machines_layout():
    assert cgroups.probe() in ("v1", "v2")


def test_a_cage_holds_its_limits(cage):
    if cage.layout == "v1":
        memory, pids = (Path(f) for f in cage.folders)
        assert int((memory / "memory.limit_in_bytes").read_text()) == 256 << 20
        assert (pids / "pids.max").read_text().strip() == "16"
    else:
        (folder,) = (Path(f) for f in cage.folders)
        assert int((folder / "memory.max").read_text()) == 256 << 20
        assert (folder / "pids.max").read_text().strip() == "16"


def test_join_then_kill_then_remove(cage):
    """A process that joins the cage takes its children along; kill ends every one of
    them, remove leaves no folder behind."""
    parent = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time\n"
        f"sys.path[:0] = {sys.path!r}\n"
        "from labkit.course import cgroups\n"
        f"cgroups.join({list(cage.folders)!r})\n"
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(60)\n"
        "        os._exit(0)\n"
        "time.sleep(60)\n")])
    deadline = time.monotonic() + 60  # a guard: a Python start and fork, on a busy machine
    while len(cgroups.members(cage)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(cgroups.members(cage)) == 4
    assert parent.pid in cgroups.members(cage)
    assert cgroups.kill(cage) == 0
    parent.wait(30)
    assert cgroups.members(cage) == []
    assert cgroups.remove(cage)
    assert not any(Path(f).exists() for f in cage.folders)


def test_the_process_cap_refuses_the_seventeenth(cage):
    proc = subprocess.run([sys.executable, "-c", (
        "import os, sys, time\n"
        f"sys.path[:0] = {sys.path!r}\n"
        "from labkit.course import cgroups\n"
        f"cgroups.join({list(cage.folders)!r})\n"
        "n = 0\n"
        "for _ in range(64):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        os.close(1)\n"
        "        os.close(2)\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "    n += 1\n"
        "print(n)\n")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) < 16
    assert cgroups.kill(cage) == 0


@pytest.mark.parametrize(("field", "kwargs"), [
    ("memory_bytes", {"memory_bytes": 0, "processes": 1}),
    ("processes", {"memory_bytes": 1 << 20, "processes": -1}),
])
def test_bad_limits_name_the_parameter(field, kwargs):
    with pytest.raises(ValueError, match=field):
        cgroups.make_cage("labkit-test-bad", **kwargs)


def test_bad_cpus_names_the_parameter():
    with pytest.raises(ValueError, match="cpus"):
        cgroups.make_cage("labkit-test-bad", memory_bytes=1 << 20, processes=1, cpus=0)


@pytest.fixture
def cpu_cage():
    made = cgroups.make_cage(f"labkit-test-{uuid.uuid4().hex[:8]}", memory_bytes=256 << 20,
                             processes=16, cpus=0.05)
    assert made is not None, "no cgroup layout on this machine"
    yield made
    cgroups.remove(made)


def test_a_cage_holds_its_cpu_quota(cpu_cage):
    assert cpu_cage.cpus == 0.05, "this machine's CPU controller is ours: the quota is set"
    assert cgroups.caps_cpu(cpu_cage.folders)
    if cpu_cage.layout == "v1":
        (cpu,) = (Path(f) for f in cpu_cage.folders if Path(f, "cpu.cfs_quota_us").exists())
        assert int((cpu / "cpu.cfs_period_us").read_text()) == cgroups.CPU_PERIOD_US
        assert int((cpu / "cpu.cfs_quota_us").read_text()) == 5000
    else:
        (folder,) = (Path(f) for f in cpu_cage.folders)
        assert (folder / "cpu.max").read_text().split() == ["5000", "100000"]


_BURN = """
import os, resource, sys
sys.path[:0] = {path!r}
from labkit.course import cgroups
cgroups.join({folders!r})
for _ in range(2):
    if os.fork() == 0:
        while os.times().user + os.times().system < {budget}:
            pass
        os._exit(0)
for _ in range(2):
    os.wait()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(usage.ru_utime + usage.ru_stime)
"""


def test_the_cpu_quota_throttles_busy_processes(cpu_cage):
    """Two processes each burn a fixed CPU-time budget (no clock is read): 0.2 s of CPU
    at 0.05 cores is at least 40 periods of 5 ms, and the cage's own count says the
    kernel throttled it -- however busy the machine is."""
    proc = subprocess.run([sys.executable, "-c", _BURN.format(
        path=sys.path, folders=list(cpu_cage.folders), budget=0.1)],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    burned = float(proc.stdout)
    stat = cgroups.cpu_stat(cpu_cage)
    assert burned >= 0.2
    assert stat["nr_throttled"] > 0, stat
    # every period gave the cage at most its 5 ms quota: the periods cover what it burned
    assert stat["nr_periods"] * 0.005 >= 0.9 * burned, (stat, burned)


def test_without_the_cpu_controller_the_cage_still_caps_memory_and_processes(monkeypatch,
                                                                              tmp_path):
    """Where the cpu hierarchy is not the grader's (not mounted, not delegated), the cage
    is made without it: memory and processes still capped, ``cpus`` None."""
    own_v1, own_v2 = cgroups._v1_parent, cgroups._v2_parent

    def v2_without_cpu():
        found = own_v2()
        return None if found is None else (found[0], False)

    monkeypatch.setattr(cgroups, "_v1_parent", lambda controller: tmp_path / "absent" / "cpu"
                        if controller == "cpu" else own_v1(controller))
    monkeypatch.setattr(cgroups, "_v2_parent", v2_without_cpu)
    made = cgroups.make_cage(f"labkit-test-{uuid.uuid4().hex[:8]}", memory_bytes=256 << 20,
                             processes=16, cpus=1.0)
    assert made is not None
    try:
        assert made.cpus is None and not cgroups.caps_cpu(made.folders)
        assert len(made.folders) == (2 if made.layout == "v1" else 1)
        assert not (tmp_path / "absent").exists()
    finally:
        assert cgroups.remove(made)
