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
    deadline = time.monotonic() + 10
    while len(cgroups.members(cage)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(cgroups.members(cage)) == 4
    assert parent.pid in cgroups.members(cage)
    assert cgroups.kill(cage) == 0
    parent.wait(5)
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
