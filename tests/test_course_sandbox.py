"""The kernel launcher, for real: bubblewrap's namespaces, a uid of its own, tmpfs scratch,
seccomp, rlimits, a scrubbed environment.

Every test starts ``python -m labkit.course.sandbox POLICY -- python -c CODE`` as a real
subprocess. Nothing the boxed code writes reaches the host's disk, so CODE reports what it
saw as one JSON line on stdout, which the policy's ``log_path`` (a host file the launcher
opens) collects. These tests need bubblewrap and namespaces on Linux; where that is
missing they fail, they are not skipped.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from labkit.course import cgroups
from labkit.course.sandbox import (
    BOX_IPC,
    FALLBACK_NICE,
    NOBODY,
    Policy,
    default_hide,
    default_keep,
    fresh_uid,
    host_ip,
    probe,
    processes_of,
)

MiB = 1024**2
ROOT = Path(__file__).resolve().parents[1]
TOKEN_VAR = "LABKIT_TEST_SECRET_TOKEN"
MARK = "LABKIT-REPORT "
IS_ROOT = os.geteuid() == 0


@dataclass
class Box:
    root: Path
    work: Path
    ipc: Path
    secret: Path       # a file the kernel must not see
    policy: Path
    log: Path


def make_box(tmp_path: Path, **limits) -> Box:
    assert str(tmp_path).startswith("/tmp/"), tmp_path  # /tmp is hidden inside the box
    work, ipc, secret_dir = tmp_path / "work", tmp_path / "ipc", tmp_path / "secret"
    for d in (work, ipc, secret_dir):
        d.mkdir()
    secret = secret_dir / "gradebook.txt"
    secret.write_text("hidden test answers")
    log = tmp_path / "kernel.log"
    limits.setdefault("uid", fresh_uid() if IS_ROOT else NOBODY)
    policy = Policy(workdir=str(work), ipc_dir=str(ipc), hide=default_hide(secret_dir),
                    keep=default_keep(), log_path=str(log), **limits)
    return Box(tmp_path, work, ipc, secret, policy.save(tmp_path / "policy.json"), log)


def set_policy(box: Box, **changes) -> Policy:
    policy = replace(Policy.load(box.policy), **changes)
    policy.save(box.policy)
    return policy


def launch(box: Box, code: str, *, env: dict[str, str] | None = None, timeout: float = 30,
           ) -> subprocess.CompletedProcess[str]:
    """Run CODE in the box. Inside, ``P`` is a dict of the box's paths and ``report(r)``
    prints ``r`` to the log."""
    params = {"work": str(box.work), "ipc": str(box.ipc), "secret": str(box.secret)}
    prelude = (f"import json, os, sys\nP = json.loads({json.dumps(params)!r})\n"
               f"def report(r):\n    print({MARK!r} + json.dumps(r), flush=True)\n")
    argv = [sys.executable, "-m", "labkit.course.sandbox", str(box.policy), "--",
            sys.executable, "-c", prelude + textwrap.dedent(code)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else os.environ.copy())


def report(box: Box, proc: subprocess.CompletedProcess[str]) -> dict:
    text = box.log.read_text() if box.log.exists() else ""
    lines = [ln for ln in text.splitlines() if ln.startswith(MARK)]
    assert lines, (f"the boxed code reported nothing (exit {proc.returncode}); "
                   f"launcher stderr: {proc.stderr[-2000:]}; kernel log: {text[-2000:]}")
    return json.loads(lines[-1][len(MARK):])


def test_probe_says_isolation_works_here():
    ok, mode = probe()
    assert ok, mode
    assert mode == ("bwrap+uid+seccomp" if IS_ROOT else "bwrap+user+seccomp")


# -- what the kernel sees -----------------------------------------------------------------

INSIDE = """
import pathlib, socket
r = {}
r["uid"], r["euid"], r["gid"] = os.getuid(), os.geteuid(), os.getgid()
r["groups"] = os.getgroups()
r["secret_exists"] = os.path.exists(P["secret"])
r["secret_dir_exists"] = os.path.exists(os.path.dirname(P["secret"]))
home = P["home"]
try:
    r["home_list"] = sorted(os.listdir(home))
except OSError:
    r["home_list"] = None  # absent, or only a path to the kept folders
r["tmp_list"] = sorted(os.listdir("/tmp"))
r["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
r["grader_visible"] = os.path.exists(f"/proc/{P['grader']}")
def connect(addr):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(addr)
        return "connected"
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        s.close()
r["net_public"] = connect(("1.1.1.1", 53))
r["net_local"] = connect(("127.0.0.1", P["port"]))
r["env"] = dict(os.environ)
def try_write(path):
    try:
        with open(path, "w") as fh:
            fh.write("x")
        return "ok"
    except OSError as exc:
        return exc.errno
r["venv_write"] = try_write(os.path.join(sys.prefix, P["venv_probe"]))
r["base_write"] = try_write(os.path.join(sys.base_prefix, P["venv_probe"]))
r["root_write"] = try_write("/" + P["venv_probe"])
r["dev_write"] = try_write("/dev/" + P["venv_probe"])
r["prefix"] = sys.prefix
r["cwd"] = os.getcwd()
r["hello"] = try_write(os.path.join(P["work"], "hello.txt"))
r["tmpx"] = try_write(P["tmpx"])
print("to the log, not the grader")
report(r)
"""


def test_inside_the_box(tmp_path):
    box = make_box(tmp_path, cpu_seconds=20)
    home = os.path.expanduser("~")
    tmpx = Path(f"/tmp/labkit-sandbox-x-{uuid.uuid4().hex}")
    venv_probe = f"labkit-sandbox-probe-{uuid.uuid4().hex}"
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    extra = {"home": home, "port": port, "tmpx": str(tmpx), "venv_probe": venv_probe,
             "grader": os.getpid()}
    code = f"P.update(json.loads({json.dumps(extra)!r}))\n" + INSIDE
    env = {**os.environ, TOKEN_VAR: "s3cr3t-token", "PATH": os.environ.get("PATH", "/usr/bin")}
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3):
            pass  # the test server really is reachable from outside the box
        proc = launch(box, code, env=env)
        r = report(box, proc)
        leaked = [p for p in (Path(sys.prefix, venv_probe), Path(sys.base_prefix, venv_probe),
                              box.work / "hello.txt", tmpx) if p.exists()]
    finally:
        server.close()
        for p in (Path(sys.prefix, venv_probe), Path(sys.base_prefix, venv_probe), tmpx):
            p.unlink(missing_ok=True)

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and "to the log" in box.log.read_text()
    policy = Policy.load(box.policy)
    if IS_ROOT:  # a uid of the job's own, no groups
        assert (r["uid"], r["euid"], r["gid"]) == (policy.uid,) * 3
        assert set(r["groups"]) <= {policy.uid}
    # its own PID namespace: bwrap's init, the code; not the grader
    assert len(r["pids"]) <= 3 and not r["grader_visible"], r["pids"]
    # hidden paths
    assert not r["secret_exists"] and not r["secret_dir_exists"]
    real_home = set(os.listdir(home))
    allowed_home = {Path(p).relative_to(home).parts[0] for p in default_keep()
                    if p.startswith(home.rstrip("/") + "/")}
    assert real_home - allowed_home, "the grader's home has nothing to hide: test is moot"
    assert r["home_list"] is None or set(r["home_list"]) <= allowed_home, r["home_list"]
    allowed_tmp = {Path(p).relative_to("/tmp").parts[0] for p in (str(box.work),
                                                                 *default_keep())
                   if p.startswith("/tmp/")}
    assert set(r["tmp_list"]) <= allowed_tmp, r["tmp_list"]
    assert set(os.listdir("/tmp")) - allowed_tmp  # the host's /tmp does have other things
    # no network, not even the loopback
    assert r["net_public"] != "connected" and r["net_local"] != "connected", r
    # a scrubbed environment
    assert TOKEN_VAR not in r["env"]
    assert r["env"].get("PATH") == env["PATH"]
    assert r["env"]["LABKIT_SANDBOX"].startswith("bwrap+")
    assert r["env"]["HOME"] == "/tmp"
    assert not {k for k in r["env"] if "TOKEN" in k or "SECRET" in k}
    # read-only everywhere but its tmpfs scratch, which the host never sees
    assert r["prefix"] == sys.prefix
    for key in ("venv_write", "base_write", "root_write", "dev_write"):
        assert r[key] in (errno.EACCES, errno.EROFS, errno.EPERM), (key, r[key])
    assert os.path.realpath(r["cwd"]) == os.path.realpath(box.work)
    assert r["hello"] == "ok" and r["tmpx"] == "ok"
    assert not leaked, leaked


def test_policy_env_reaches_the_kernel(tmp_path):
    box = make_box(tmp_path, cpu_seconds=20)
    set_policy(box, env={"LABKIT_TEST_POLICY_VAR": "yes"})
    env = report(box, launch(box, "report(dict(os.environ))"))
    assert env["LABKIT_TEST_POLICY_VAR"] == "yes"


def test_workdir_holds_copies_of_the_submission_less_masks_and_links(tmp_path):
    """The notebook being graded (hidden tests restored by nbgrader) is not in the box;
    other files are copies (a change inside never reaches the host); a link the
    submission holds is never followed; the host's /dev/null is never touched (a chmod of
    a masked path once left it at mode 0600)."""
    box = make_box(tmp_path, cpu_seconds=20)
    graded = box.work / "graded.ipynb"
    graded.write_text("hidden tests")
    (box.work / "data").mkdir()
    (box.work / "data" / "numbers.csv").write_text("1,2,3")
    (box.work / "link").symlink_to(box.secret)
    set_policy(box, mask=(str(graded),))
    before = os.stat("/dev/null")
    proc = launch(box, """
    r = {"graded": os.path.exists("graded.ipynb"), "link": os.path.lexists("link"),
         "csv": open("data/numbers.csv").read()}
    open("data/numbers.csv", "w").write("changed")
    r["listing"] = sorted(os.listdir("."))
    report(r)
    """)
    r = report(box, proc)
    after = os.stat("/dev/null")
    assert proc.returncode == 0, proc.stderr
    assert r == {"graded": False, "link": False, "csv": "1,2,3", "listing": ["data"]}
    assert (box.work / "data" / "numbers.csv").read_text() == "1,2,3"
    assert graded.read_text() == "hidden tests"
    assert (after.st_mode, after.st_uid, after.st_rdev) == (
        before.st_mode, before.st_uid, before.st_rdev)


# -- resource limits ----------------------------------------------------------------------

def test_memory_cap(tmp_path):
    box = make_box(tmp_path, memory_bytes=512 * MiB, cpu_seconds=20)
    proc = launch(box, """
    r = {}
    small = bytearray(64 * 1024**2)  # well under the cap: works
    r["small"] = len(small)
    del small
    try:
        big = bytearray(1024**3)
        r["big"] = len(big)
    except MemoryError:
        r["big"] = "MemoryError"
    import resource
    r["rlimit_as"] = resource.getrlimit(resource.RLIMIT_AS)
    report(r)
    """)
    r = report(box, proc)
    assert proc.returncode == 0, proc.stderr
    assert r["small"] == 64 * MiB
    assert r["big"] == "MemoryError"
    assert r["rlimit_as"] == [512 * MiB, 512 * MiB]


def test_cpu_cap_kills_a_busy_loop(tmp_path):
    box = make_box(tmp_path, cpu_seconds=1)
    proc = launch(box, """
    report({"started": True})
    while True:
        pass
    """, timeout=60)  # a guard: 1 s of CPU, however long a busy machine takes to give it
    assert report(box, proc) == {"started": True}
    assert proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU,
                               128 + signal.SIGKILL), proc.returncode


def test_file_size_cap(tmp_path):
    box = make_box(tmp_path, file_bytes=1 * MiB, cpu_seconds=20)
    proc = launch(box, """
    import signal
    r = {"sigxfsz": str(signal.getsignal(signal.SIGXFSZ))}
    try:
        with open("big.bin", "wb") as fh:
            fh.write(b"x" * (2 * 1024**2))
        r["write"] = "ok"
    except OSError as exc:
        r["write"] = exc.errno
    r["size"] = os.path.getsize("big.bin")
    report(r)
    """)
    r = report(box, proc)
    assert proc.returncode == 0, proc.stderr
    # Python ignores SIGXFSZ, so the write fails with EFBIG instead of killing the kernel.
    assert r["sigxfsz"] == str(signal.SIG_IGN)
    assert r["write"] == errno.EFBIG and r["size"] <= 1 * MiB


def test_disk_fill_stops_at_the_scratch_size_and_never_reaches_the_disk(tmp_path):
    """Every writable folder is a size-limited tmpfs: a kernel writing until it fails
    fills only those, and the host's disk (where the gradebook is) does not change."""
    box = make_box(tmp_path, scratch_bytes=8 * MiB, file_bytes=4 * MiB, cpu_seconds=20)
    free_before = shutil.disk_usage(tmp_path).free
    proc = launch(box, f"""
    r = {{}}
    for folder in (".", "/tmp", "/dev/shm", {BOX_IPC!r}):
        written, err = 0, None
        for i in range(100):
            try:
                with open(os.path.join(folder, f"fill{{i}}"), "wb") as fh:
                    fh.write(b"x" * 1024**2)
                written += 1
            except OSError as exc:
                err = exc.errno
                break
        r[folder] = [written, err]
    report(r)
    """)
    r = report(box, proc)
    free_after = shutil.disk_usage(tmp_path).free
    assert proc.returncode == 0, proc.stderr
    for folder in (".", "/tmp", "/dev/shm"):
        written, err = r[folder]
        assert written <= 8 and err == errno.ENOSPC, (folder, r[folder])
    assert r[BOX_IPC][0] <= 1 and r[BOX_IPC][1] == errno.ENOSPC, r[BOX_IPC]
    assert list(box.work.iterdir()) == []
    assert free_before - free_after < 4 * MiB  # noise only: nothing reached this disk


def test_fork_fan_out_is_capped(tmp_path):
    box = make_box(tmp_path, processes=24, cpu_seconds=20)
    proc = launch(box, """
    import time
    children, err = [], None
    for _ in range(200):
        try:
            pid = os.fork()
        except OSError as exc:
            err = exc.errno
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        children.append(pid)
    report({"forked": len(children), "err": err})
    """, timeout=60)
    r = report(box, proc)
    assert r["forked"] < 24 and r["err"] == errno.EAGAIN, r


def test_every_process_dies_with_the_box(tmp_path):
    """A double-forked daemon in a new session is still in the box's PID namespace: when
    the kernel exits, bwrap (the namespace's init) exits and the kernel kills the rest."""
    box = make_box(tmp_path, cpu_seconds=20)
    # a sleep no other test's process has on its command line (test_course_cgroups sleeps
    # 60 s too, on the other worker): the search below finds this box's daemon or nothing
    nap = f"60.{uuid.uuid4().int % 10**9:09d}"
    proc = launch(box, f"""
    import time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep({nap})
        os._exit(0)
    time.sleep(0.3)
    report({{"daemon": "started"}})
    """)
    assert report(box, proc) == {"daemon": "started"}
    uid = Policy.load(box.policy).uid
    deadline = time.monotonic() + 30  # a guard: they die with bwrap, at once
    while IS_ROOT and processes_of(uid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if IS_ROOT:
        assert processes_of(uid) == []
    # only this box's processes: its uid (as root) and its own sleep
    scope = ["-U", str(uid)] if IS_ROOT else []
    pattern = f"time.sleep\\({re.escape(nap)}\\)"
    leftover = subprocess.run(["pgrep", *scope, "-f", pattern],
                              capture_output=True, text=True).stdout.split()
    assert leftover == [], leftover


def test_seccomp_refuses_namespaces_ptrace_and_bpf(tmp_path):
    box = make_box(tmp_path, cpu_seconds=20)
    proc = launch(box, """
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    def call(name, *args):
        rc = getattr(libc, name)(*args)
        return 0 if rc == 0 else ctypes.get_errno()
    r = {"unshare_user": call("unshare", 0x10000000), "unshare_net": call("unshare", 0x40000000),
         "ptrace": call("ptrace", 0, 0, 0, 0), "bpf": call("syscall", 321, 0, 0, 0),
         "keyctl": call("syscall", 250, 0, 0, 0), "getpid": os.getpid() > 0}
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    r["fork"] = "ok"
    report(r)
    """)
    r = report(box, proc)
    assert proc.returncode == 0, proc.stderr
    for name in ("unshare_user", "unshare_net", "ptrace", "bpf", "keyctl"):
        assert r[name] == errno.EPERM, (name, r)
    assert r["fork"] == "ok" and r["getpid"]


def test_without_a_cpu_quota_the_kernel_runs_at_a_lower_priority(tmp_path):
    box = make_box(tmp_path, cpu_seconds=20)
    r = report(box, launch(box, "report({'nice': os.getpriority(os.PRIO_PROCESS, 0)})"))
    assert r == {"nice": FALLBACK_NICE}


@pytest.mark.skipif(not IS_ROOT, reason="cgroups are the root grader's")
def test_a_kernel_in_a_cpu_cage_keeps_its_priority_and_its_quota(tmp_path):
    uid = fresh_uid()
    cage = cgroups.make_cage(f"labkit-test-{uid}", memory_bytes=512 * MiB, processes=64,
                             cpus=0.5)
    assert cage is not None and cage.cpus == 0.5, cage
    try:
        box = make_box(tmp_path, uid=uid, cpu_seconds=20, cpus=0.5, cgroups=cage.folders)
        r = report(box, launch(box, "report({'nice': os.getpriority(os.PRIO_PROCESS, 0)})"))
        assert r == {"nice": 0}
    finally:
        assert cgroups.remove(cage)


@pytest.mark.skipif(not IS_ROOT, reason="cgroups are the root grader's")
def test_a_cgroup_caps_the_kernel_as_a_whole(tmp_path):
    """Four children of 150 MiB each stay under a 512 MiB rlimit one by one, but not
    under a 384 MiB cage together: the cage's OOM killer ends one of them."""
    uid = fresh_uid()
    cage = cgroups.make_cage(f"labkit-test-{uid}", memory_bytes=384 * MiB, processes=64)
    assert cage is not None, "no cgroup layout on this machine"
    try:
        box = make_box(tmp_path, uid=uid, memory_bytes=512 * MiB, cpu_seconds=30,
                       cgroups=cage.folders)
        proc = launch(box, """
        import time
        pids = []
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                block = bytearray(150 * 1024**2)
                for i in range(0, len(block), 4096):
                    block[i] = 1
                time.sleep(3)
                os._exit(0)
            pids.append(pid)
        codes = [os.waitpid(p, 0)[1] for p in pids]
        report({"killed": sum(1 for c in codes if os.WIFSIGNALED(c)),
                "mode": os.environ["LABKIT_SANDBOX"]})
        """, timeout=60)
        r = report(box, proc)
        assert r["killed"] >= 1 and r["mode"].endswith("+cgroup"), r
    finally:
        assert cgroups.remove(cage)
    assert all(not Path(f).exists() for f in cage.folders)


# -- the unprivileged grader ----------------------------------------------------------------

UNPRIVILEGED = """
import json, os, socket, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from labkit.course.sandbox import Policy, host_ip, box_ip
base = sys.argv[2]
policy = Policy(workdir=base + "/work", ipc_dir=base + "/ipc", keep=(sys.argv[1],),
                hide=("/tmp", base + "/secret"), log_path=base + "/kernel.log",
                cpu_seconds=20)
policy.save(__import__("pathlib").Path(base, "policy.json"))
server = '''
import os, socket, json
s = socket.socket(socket.AF_UNIX)
s.bind({ip!r} + "-1")
s.listen(1)
c, _ = s.accept()
c.send(json.dumps({{"uid": os.getuid(), "mode": os.environ["LABKIT_SANDBOX"],
                    "secret": os.path.exists({secret!r}),
                    "pids": sum(p.isdigit() for p in os.listdir("/proc"))}}).encode())
'''.format(ip=box_ip(), secret=base + "/secret/x")
boot = ("import sys; sys.path.insert(0, sys.argv[1]); "
        "from labkit.course.sandbox import main; main(sys.argv[2:])")
proc = subprocess.Popen([sys.executable, "-I", "-c", boot, sys.argv[1], base + "/policy.json",
                         "--", sys.executable, "-I", "-c", server])
deadline = time.monotonic() + 20
reply = None
while time.monotonic() < deadline and reply is None:
    ip = host_ip(base + "/ipc")
    if ip:
        try:
            c = socket.socket(socket.AF_UNIX)
            c.connect(ip + "-1")
            reply = json.loads(c.recv(4096))
        except OSError:
            time.sleep(0.05)
    else:
        time.sleep(0.05)
proc.wait(10)
print(json.dumps({"grader_uid": os.getuid(), "reply": reply}))
"""


@pytest.mark.skipif(not IS_ROOT, reason="needs root to become a non-root grader")
def test_a_non_root_grader_boxes_its_kernel_in_a_user_namespace():
    """Graded by a plain user (no root, no cgroup): bwrap makes an unprivileged user
    namespace, the kernel still has no view of hidden paths or host processes, and the
    grader reaches its sockets through /proc/PID/root. Runs Debian's python with a copy
    of labkit.course (stdlib and pyseccomp only), as a fresh uid with no rights here."""
    uid = fresh_uid()
    base = Path(tempfile.mkdtemp(prefix="labkit-unpriv-", dir="/tmp"))
    try:
        lib = base / "lib"
        shutil.copytree(ROOT / "src" / "labkit", lib / "labkit",
                        ignore=shutil.ignore_patterns("__pycache__"))
        import pyseccomp

        shutil.copy(pyseccomp.__file__, lib / "pyseccomp.py")
        for sub in ("work", "ipc", "secret"):
            (base / sub).mkdir()
        (base / "secret" / "x").write_text("hidden")
        for path in [base, *base.rglob("*")]:
            os.lchown(path, uid, uid)
        (base / "secret").chmod(0o700)
        out = subprocess.run(
            ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--",
             "/usr/bin/python3", "-I", "-c", UNPRIVILEGED, str(lib), str(base)],
            capture_output=True, text=True, timeout=60, cwd=str(base))
        assert out.returncode == 0, out.stderr + (base / "kernel.log").read_text()
        r = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        subprocess.run(["pkill", "-KILL", "-U", str(uid)], check=False)
        shutil.rmtree(base, ignore_errors=True)
    assert r["grader_uid"] == uid
    reply = r["reply"]
    assert reply is not None, "the grader never reached the box's socket"
    assert reply["mode"] == "bwrap+user+seccomp", reply
    assert reply["uid"] == uid and not reply["secret"] and reply["pids"] <= 4, reply


# -- misuse -------------------------------------------------------------------------------

def run_launcher(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "labkit.course.sandbox", *args],
                          capture_output=True, text=True, timeout=30)


def test_missing_policy_file_is_an_error(tmp_path):
    marker = tmp_path / "ran"
    proc = run_launcher(str(tmp_path / "nope.json"), "--", sys.executable, "-c",
                        f"open({str(marker)!r}, 'w')")
    assert proc.returncode != 0
    assert "labkit sandbox" in proc.stderr and "nope.json" in proc.stderr
    assert not marker.exists()


def test_unparsable_policy_is_an_error(tmp_path):
    bad = tmp_path / "policy.json"
    bad.write_text("{not json")
    marker = tmp_path / "ran"
    proc = run_launcher(str(bad), "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')")
    assert proc.returncode != 0 and proc.stderr.strip()
    assert not marker.exists()


def test_a_root_kernel_uid_is_refused(tmp_path):
    with pytest.raises(ValueError, match="uid"):
        Policy(workdir=str(tmp_path), ipc_dir=str(tmp_path), uid=0)


@pytest.mark.parametrize("field", ["memory_bytes", "scratch_bytes", "processes", "cpus"])
def test_a_non_positive_limit_names_the_field(tmp_path, field):
    with pytest.raises(ValueError, match=field):
        Policy(workdir=str(tmp_path), ipc_dir=str(tmp_path), **{field: 0})


@pytest.mark.parametrize("shape", ["no-separator", "no-kernel", "nothing"])
def test_bad_command_line_prints_usage(tmp_path, shape):
    box = make_box(tmp_path)
    marker = tmp_path / "ran"
    kernel = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    args = {"no-separator": [str(box.policy), *kernel],
            "no-kernel": [str(box.policy), "--"],
            "nothing": []}[shape]
    proc = run_launcher(*args)
    assert proc.returncode != 0
    assert "usage: python -m labkit.course.sandbox POLICY.json -- KERNEL ARGV" in proc.stderr
    assert not marker.exists()


def test_only_an_allow_list_of_the_machine_exists_inside(tmp_path):
    """Not a block-list: course material anywhere else on the machine (another checkout,
    another course under /srv, this repository's own source notebooks) is simply absent."""
    other = Path(tempfile.mkdtemp(prefix="labkit-other-course-", dir="/srv"
                                  if os.access("/srv", os.W_OK) else "/var/lib"))
    home_file = Path.home() / "labkit-secret-unset"
    try:
        (other / "hidden.ipynb").write_text("BEGIN HIDDEN TESTS")
        home_file = Path.home() / f"labkit-secret-{uuid.uuid4().hex[:8]}"
        home_file.write_text("instructor token")
        box = make_box(tmp_path)
        targets = {"other": str(other / "hidden.ipynb"),
                   "repo_source": str(ROOT / "source"), "repo_labs": str(ROOT / "course"),
                   "home_file": str(home_file)}
        proc = launch(box, f"""
            T = {targets!r}
            seen = {{k: os.path.exists(v) for k, v in T.items()}}
            seen["root"] = sorted(os.listdir("/"))
            report(seen)
        """)
        seen = report(box, proc)
        assert not any(seen[k] for k in targets), seen
        allowed = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev",
                   "proc", "tmp", "run"} | {Path(p).parts[1] for p in default_keep()}
        assert set(seen["root"]) <= allowed, seen["root"]
    finally:
        shutil.rmtree(other, ignore_errors=True)
        home_file.unlink(missing_ok=True)


def test_host_ip_waits_for_bwraps_report(tmp_path):
    assert host_ip(tmp_path) is None
    (tmp_path / "sandbox-info.json").write_text('{"child-pid": 4242}')
    assert host_ip(tmp_path) == f"/proc/4242/root{BOX_IPC}/k"
    (tmp_path / "sandbox-info.json").write_text('{"child-pid": "x"}')
    assert host_ip(tmp_path) is None


# -- the kernel's own children -------------------------------------------------------------

# Binds its sockets (so the grader pins them), then starts a busy child and a busy daemon.
_FORKS_BUSY = """
held = []
for path in PATHS.values():
    held.append(socket.socket(socket.AF_UNIX))
    held[-1].bind(path)
    held[-1].listen(8)
if os.fork() == 0:
    while True:
        pass
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            pass
    os._exit(0)
time.sleep(90)
"""


def test_the_kernels_own_children_run_below_it(tmp_path):
    """Every process of the box but the kernel (a child, a daemon reparented to the box's
    init) is lowered to STRAY_NICE by the grader while the kernel lives: within its CPU
    quota the kernel goes first, and its children run on what it leaves. The CPU time
    they use is counted for the job."""
    import asyncio

    from labkit.course.sandbox import STRAY_NICE, box_processes
    from labkit.course.sockets import box_pid
    from sandbox_helpers import fake, manager, run_async

    box = make_box(tmp_path, cpu_seconds=60)

    def nice(pid: int) -> int:
        return os.getpriority(os.PRIO_PROCESS, pid)

    def idle(pid: int) -> bool:
        return os.sched_getscheduler(pid) == os.SCHED_IDLE

    async def run() -> tuple[int | None, int, dict[int, int]]:
        km = manager(box, fake(_FORKS_BUSY, ""))
        km.demote_every = 0.05
        await km.start_kernel(cwd=str(box.work))
        try:
            init = box_pid(box.ipc)
            assert init is not None
            deadline = time.monotonic() + 30  # a guard: the grader looks every 0.05 s
            while time.monotonic() < deadline:
                kernel, strays = box_processes(init)
                seen = {pid: nice(pid) if idle(pid) else None for pid in strays}
                if len(seen) >= 2 and all(n == STRAY_NICE for n in seen.values()) \
                        and km.stray_cpu_seconds[-1] > 0:  # busy: their CPU time shows
                    break
                await asyncio.sleep(0.05)
            assert kernel is not None and not idle(kernel)
            return kernel, nice(kernel), seen
        finally:
            await km.shutdown_kernel(now=True)

    kernel, kernel_nice, strays = run_async(run())
    assert len(strays) >= 2 and set(strays.values()) == {STRAY_NICE}, strays
    assert kernel not in strays and kernel_nice == FALLBACK_NICE  # no cgroup in this box
